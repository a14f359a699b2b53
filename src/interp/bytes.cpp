#include "interp/bytes.h"
#include "interp/budget.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace ow::interp {

namespace {

constexpr size_t kMapAtLeast = size_t(4) << 20;  // numpy's threshold for asking for huge pages
constexpr size_t kAlign = 64;                     // a cache line: vector loads never split one

}  // namespace

Bytes::Bytes(size_t n) : size_(n) {
  charge_memory(n);  // throws when over the budget (interp/budget.h)
  try {
    allocate();
  } catch (...) {
    release_memory(n);
    throw;
  }
}

void Bytes::allocate() {
  size_t n = size_;
  if (n >= kMapAtLeast) {
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      madvise(p, n, MADV_HUGEPAGE);  // advice only: ignored where THP is off
      data_ = static_cast<uint8_t*>(p), mapped_ = true;
      return;
    }
  }
  size_t rounded = (n + kAlign - 1) / kAlign * kAlign;
  data_ = static_cast<uint8_t*>(std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded));
  if (!data_) throw std::bad_alloc();
  std::memset(data_, 0, n);
}

Bytes::Bytes(const Bytes& other) : Bytes(other.size_) {
  if (size_) std::memcpy(data_, other.data_, size_);
}

Bytes::~Bytes() {
  if (mapped_) munmap(data_, size_);
  else std::free(data_);
  release_memory(size_);
}

}  // namespace ow::interp
