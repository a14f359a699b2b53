// Element types of the interpreter for the dtypes C++ has no arithmetic type for: the narrow
// floats, stored as their bits and computed as SEMANTICS.md S2.1 says: widened exactly to float32
// (operator float), the float32 operation, the result rounded once back (the constructors, by
// fp::round_exact). uint8 elements are char8_t, an unsigned 8-bit integer type distinct from the
// uint8_t that holds bools, so dispatch and the scalar ops can tell the two apart.
#pragma once
#include <concepts>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "uop/dtype.h"
#include "uop/floats.h"

namespace ow::interp {

using u8 = char8_t;

template <Scalar S> struct NarrowFloat {
  using Bits = std::conditional_t<S == Scalar::Float16 || S == Scalar::BFloat16, uint16_t, uint8_t>;
  Bits bits;  // no initializer: a trivial type (memcpy and unions take it), zeroed as T{} like a float

  static const fp::Format& format() { return fp::format_of(DType(S)); }
  static NarrowFloat from_bits(uint32_t b) {
    NarrowFloat x;
    x.bits = static_cast<Bits>(b);
    return x;
  }

  NarrowFloat() = default;
  NarrowFloat(float x) : bits(static_cast<Bits>(fp::from_double(format(), x))) {}  // NOLINT: results round back implicitly
  NarrowFloat(double x) : bits(static_cast<Bits>(fp::from_double(format(), x))) {}  // NOLINT
  template <std::integral I> explicit NarrowFloat(I x)
      : bits(static_cast<Bits>(std::is_signed_v<I> ? fp::from_int(format(), static_cast<int64_t>(x)) : fp::from_uint(format(), static_cast<uint64_t>(x)))) {}
  operator float() const { return fp::to_float(format(), bits); }  // NOLINT: exact
};

using f16 = NarrowFloat<Scalar::Float16>;
using bf16 = NarrowFloat<Scalar::BFloat16>;
using f8e4m3 = NarrowFloat<Scalar::Fp8e4m3>;
using f8e5m2 = NarrowFloat<Scalar::Fp8e5m2>;

template <class T> inline constexpr bool is_narrow_float_v = false;
template <Scalar S> inline constexpr bool is_narrow_float_v<NarrowFloat<S>> = true;
// Floats of every width: what the S2.1 float rules (NaN, infinities, truncation) apply to.
template <class T> inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_narrow_float_v<T>;

}  // namespace ow::interp

// Limits as the formats define them, so the REDUCE identities and saturating casts read alike
// for every float (fp8e4m3 has no infinity: its MAX identity is the lowest finite value).
template <ow::Scalar S> struct std::numeric_limits<ow::interp::NarrowFloat<S>> {
  using T = ow::interp::NarrowFloat<S>;
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool has_infinity = S != ow::Scalar::Fp8e4m3;
  static constexpr bool has_quiet_NaN = true;
  static T infinity() { return T::from_bits(T::format().inf_bits()); }
  static T max() { return T::from_bits(T::format().max_finite_bits()); }
  static T lowest() { return T::from_bits(T::format().sign_bit() | T::format().max_finite_bits()); }
  static T quiet_NaN() { return T(std::numeric_limits<float>::quiet_NaN()); }
};
