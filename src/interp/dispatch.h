// Maps a runtime DType to a C++ element type, and defines how values convert between them.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "interp/narrow.h"
#include "uop/dtype.h"
#include "uop/error.h"

namespace ow::interp {

template <class T> struct Tag { using type = T; };

// bool is stored as uint8_t 0/1, uint8 as char8_t (u8); index and int64 share int64_t; the
// narrow floats are NarrowFloat (interp/narrow.h).
template <class F> decltype(auto) dispatch(DType d, F&& f) {
  if (d.ptr) throw Error("the interpreter has no values of pointer dtype " + to_string(d));
  switch (d.scalar) {
    case Scalar::Bool: return f(Tag<uint8_t>{});
    case Scalar::Int8: return f(Tag<int8_t>{});
    case Scalar::Uint8: return f(Tag<u8>{});
    case Scalar::Int16: return f(Tag<int16_t>{});
    case Scalar::Uint16: return f(Tag<uint16_t>{});
    case Scalar::Int32: return f(Tag<int32_t>{});
    case Scalar::Int64: case Scalar::Index: return f(Tag<int64_t>{});
    case Scalar::Uint32: return f(Tag<uint32_t>{});
    case Scalar::Uint64: return f(Tag<uint64_t>{});
    case Scalar::Float32: return f(Tag<float>{});
    case Scalar::Float64: return f(Tag<double>{});
    case Scalar::Float16: return f(Tag<f16>{});
    case Scalar::BFloat16: return f(Tag<bf16>{});
    case Scalar::Fp8e4m3: return f(Tag<f8e4m3>{});
    case Scalar::Fp8e5m2: return f(Tag<f8e5m2>{});
    default: throw Error("the interpreter does not compute with dtype " + to_string(d));
  }
}

// Conversion rule (SEMANTICS.md "CAST"): to bool is x != 0; float to int truncates toward zero and
// saturates at the type's limits (0 and the max for unsigned), NaN gives 0; to a narrow float the
// exact value rounds once (NarrowFloat's constructors); a narrow float converts as the float32 it
// widens to; everything else is the C++ conversion (modulo 2^bits between integers).
template <class To, class From> To convert(From x) {
  if constexpr (is_narrow_float_v<From> && !std::is_same_v<To, uint8_t>) {
    return convert<To>(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, uint8_t>) {
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
