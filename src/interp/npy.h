// Reading and writing NumPy .npy files (format versions 1-3, C order), in either byte order: bool,
// every integer, float16/32/64 as numpy has them, and bfloat16, fp8e4m3 and fp8e5m2 (no numpy
// dtype) as their raw bits in a one-field structured dtype named after them:
// [('bfloat16', '<u2')], [('fp8e4m3', '|u1')], [('fp8e5m2', '|u1')].
#pragma once
#include <string>
#include <vector>

#include "interp/value.h"

namespace ow::interp {

struct NpyArray {
  std::string descr;  // the file's dtype as written, e.g. '>f4'
  DType dtype;        // what `data` holds
  std::vector<int64_t> shape;
  StoragePtr data;
};

// Throws ow::Error naming the file and what is wrong with it.
NpyArray load_npy(const std::string& path);
NpyArray parse_npy(const std::string& bytes, const std::string& path);  // path: for messages
// The data as dtype `to`, converted only where every element is exact (int32 data for a float64
// buffer, float64 data that are all float32 values); otherwise an error naming the element and
// the astype that would convert it.
StoragePtr npy_as(const NpyArray& a, DType to, const std::string& path, const std::string& buffer);
void save_npy(const std::string& path, const Value& v);
std::string npy_bytes(const Value& v);  // the file's content, for tests and tools

}  // namespace ow::interp
