// Bytes: the zero-initialized memory behind every Storage.
//
// Why not std::vector<uint8_t>: a vector zero-fills by writing every byte, so a fresh 64 MB
// buffer takes 16384 4 KB page faults on the spot (about 175 ms on our CI's virtual machines).
// Large blocks here come straight from mmap, which hands out pages that are already zero, with
// transparent huge pages requested (numpy does the same): 32 faults of 2 MB, taken lazily when
// a kernel first writes. Small blocks are ordinary 64-byte aligned heap memory.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ow::interp {

class Bytes {
 public:
  explicit Bytes(size_t n);
  Bytes(const Bytes& other);
  Bytes& operator=(const Bytes&) = delete;
  ~Bytes();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void allocate();

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

}  // namespace ow::interp
