// Bit-for-bit comparison of values (compare.h).
#include "interp/compare.h"

#include <cmath>
#include <type_traits>

#include "interp/dispatch.h"

namespace ow::interp {

namespace {

template <class T> bool same(T x, T y) {
  if constexpr (is_float_v<T>) return (std::isnan(x) && std::isnan(y)) || (x == y && std::signbit(x) == std::signbit(y));
  else return x == y;
}

template <class T> std::optional<Difference> scan(const Value& a, const Value& b, const uint8_t* poison) {
  std::vector<int64_t> index(a.shape().size(), 0);
  const T* pa = a.data->as<T>();
  const T* pb = b.data->as<T>();
  int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t oa = a.view.offset_of(index), ob = b.view.offset_of(index);
    if (!(poison && poison[oa]) && !same(pa[oa], pb[ob])) return Difference{i, static_cast<double>(pa[oa]), static_cast<double>(pb[ob])};
    for (size_t d = index.size(); d-- > 0;) {  // next row-major index
      if (++index[d] < a.shape()[d]) break;
      index[d] = 0;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<Difference> first_difference(const Value& a, const Value& b, bool skip_poison_of_a) {
  if (a.shape() != b.shape() || a.dtype != b.dtype) return Difference{-1, 0, 0};
  const uint8_t* poison = skip_poison_of_a && a.poison ? a.poison->as<uint8_t>() : nullptr;
  return dispatch(a.dtype, [&](auto tag) { return scan<typename decltype(tag)::type>(a, b, poison); });
}

}  // namespace ow::interp
