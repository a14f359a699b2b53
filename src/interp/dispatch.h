// Maps a runtime DType to a C++ element type, and defines how values convert between them.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "uop/dtype.h"
#include "uop/error.h"

namespace ow::interp {

template <class T> struct Tag { using type = T; };

// bool is stored as uint8_t 0/1; index and int64 share int64_t.
template <class F> decltype(auto) dispatch(DType d, F&& f) {
  if (d.ptr) throw Error("the interpreter has no values of pointer dtype " + to_string(d));
  switch (d.scalar) {
    case Scalar::Bool: return f(Tag<uint8_t>{});
    case Scalar::Int32: return f(Tag<int32_t>{});
    case Scalar::Int64: case Scalar::Index: return f(Tag<int64_t>{});
    case Scalar::Uint32: return f(Tag<uint32_t>{});
    case Scalar::Uint64: return f(Tag<uint64_t>{});
    case Scalar::Float32: return f(Tag<float>{});
    case Scalar::Float64: return f(Tag<double>{});
    default: throw Error("the interpreter does not compute with dtype " + to_string(d));
  }
}

// Conversion rule (SEMANTICS.md "CAST"): to bool is x != 0; float to int truncates toward zero and
// saturates at the type's limits (0 and the max for unsigned), NaN gives 0; everything else is the
// C++ conversion (modulo 2^bits between integers).
template <class To, class From> To convert(From x) {
  if constexpr (std::is_same_v<To, uint8_t>) {
    return x != From(0) ? 1 : 0;
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (std::isnan(x)) return 0;
    if (x <= static_cast<From>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (x >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace ow::interp
