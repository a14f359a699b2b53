// Reading and writing NumPy .npy files (format versions 1-3, little-endian, C order).
#pragma once
#include <string>
#include <vector>

#include "interp/value.h"

namespace ow::interp {

struct NpyArray {
  DType dtype;
  std::vector<int64_t> shape;
  StoragePtr data;
};

// Throws ow::Error naming the file and what is wrong with it.
NpyArray load_npy(const std::string& path);
void save_npy(const std::string& path, const Value& v);
std::string npy_bytes(const Value& v);  // the file's content, for tests and tools

}  // namespace ow::interp
