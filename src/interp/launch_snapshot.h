// LaunchSnapshot (kernel_eval.cpp): a kernel's LOADs read every buffer as it was at launch, also
// one the kernel stores to (LOWERING.md). Copying such a buffer at launch costs its whole size
// at every launch: a scan step storing one slot of a 10,000-slot buffer it also reads would copy
// all of it at each step, quadratic in the steps. Instead the first store to an element keeps
// the element's old value and poison bit, and a load of that element reads them back. A launch
// that stores to more than an eighth of the elements copies the buffer after all (once: the
// live buffer with the kept elements put back is the buffer at launch), so a large in-place
// kernel costs a copy, as before, and not a hash entry per element.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <utility>

#include "interp/interp.h"

namespace ow::interp {

class LaunchSnapshot {
 public:
  explicit LaunchSnapshot(BufferData& live) : live_(live), itemsize_(static_cast<size_t>(live.data->dtype.itemsize())), limit_(live.data->size / 8 + 16) {}

  // Before a store to element k of the live buffer.
  void before_store(int64_t k) {
    if (copy_ || kept_.count(k)) return;
    Old o;
    std::memcpy(&o.bits, live_.data->bytes.data() + static_cast<size_t>(k) * itemsize_, itemsize_);
    o.poison = live_.poison && live_.poison->bytes.data()[k];
    kept_.emplace(k, o);
    if (static_cast<int64_t>(kept_.size()) > limit_) take_copy();
  }

  // Element k as it was at launch: its value and whether it was poison.
  template <class T> T load(int64_t k, bool& poison) const {
    T v;
    if (copy_) {
      v = copy_->as<T>()[k];
      poison = poison_copy_ && poison_copy_->bytes.data()[k];
    } else if (auto it = kept_.find(k); it != kept_.end()) {
      std::memcpy(&v, &it->second.bits, sizeof v);
      poison = it->second.poison;
    } else {
      v = std::as_const(*live_.data).as<T>()[k];
      poison = live_.poison && live_.poison->bytes.data()[k];
    }
    return v;
  }

 private:
  struct Old {
    uint64_t bits = 0;
    bool poison = false;
  };

  void take_copy() {
    copy_ = std::make_shared<Storage>(*live_.data);
    if (live_.poison) poison_copy_ = std::make_shared<Storage>(*live_.poison);
    for (auto& [k, o] : kept_) {
      std::memcpy(copy_->bytes.data() + static_cast<size_t>(k) * itemsize_, &o.bits, itemsize_);
      if (o.poison && !poison_copy_) {  // the live buffer had no mask: one is made for the copy
        poison_copy_ = std::make_shared<Storage>(dtypes::bool_, live_.data->size);
        std::memset(poison_copy_->bytes.data(), 0, poison_copy_->bytes.size());
      }
      if (poison_copy_) poison_copy_->bytes.data()[k] = o.poison;
    }
    kept_.clear();
  }

  BufferData& live_;
  size_t itemsize_;
  int64_t limit_;
  std::unordered_map<int64_t, Old> kept_;
  StoragePtr copy_, poison_copy_;
};

}  // namespace ow::interp
