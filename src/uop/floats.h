// The narrow float formats (float16, bfloat16, fp8e4m3, fp8e5m2) and the one rounding rule every
// conversion to a float uses (SEMANTICS.md S2.1 "CAST"): the exact source value rounded once to
// the nearest representable value, ties to even; what happens past the largest finite value and
// to infinities and NaNs depends on the format (Format below). The interpreter, the simplifier and
// the C prelude (backends/c/prelude.cpp, its own C text of the same rule) agree on every bit
// pattern: reference/narrow/make_narrow.py computes the expectations apart from all three.
#pragma once
#include <cstdint>

#include "uop/dtype.h"

namespace ow::fp {

struct Format {
  int exp_bits, man_bits;
  // Finite values whose rounding passes the largest finite one: false gives +-inf (IEEE),
  // true gives +-the largest finite (the fp8s, as tinygrad's float_to_fp8 and CUDA's SATFINITE).
  bool saturate;
  // fp8e4m3 (OCP E4M3FN) has no infinities: the top exponent holds finite values and only
  // S.1111.111 is NaN, so an infinite source gives NaN.
  bool has_inf;

  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  int bits() const { return 1 + exp_bits + man_bits; }
  uint32_t sign_bit() const { return 1u << (exp_bits + man_bits); }
  uint32_t quiet_bit() const { return 1u << (man_bits - 1); }
  uint32_t inf_bits() const { return ((1u << exp_bits) - 1) << man_bits; }  // formats with infinities
  uint32_t max_finite_bits() const { return has_inf ? inf_bits() - 1 : (inf_bits() | ((1u << man_bits) - 1)) - 1; }
  int emax() const { return has_inf ? (1 << exp_bits) - 2 - bias() : (1 << exp_bits) - 1 - bias(); }
  int emin() const { return 1 - bias(); }
};

inline constexpr Format kFloat16{5, 10, false, true};
inline constexpr Format kBFloat16{8, 7, false, true};
inline constexpr Format kFp8e4m3{4, 3, true, false};
inline constexpr Format kFp8e5m2{5, 2, true, true};
inline constexpr Format kFloat32{8, 23, false, true};

// The format of a narrow float dtype (is_narrow_float()).
const Format& format_of(DType d);

// Bit patterns of the format from exact values: (-1)^neg * m * 2^e, from a double, from
// integers. A NaN source gives a quiet NaN with its sign and leading payload bits.
uint32_t round_exact(const Format& f, bool neg, uint64_t m, int e);
uint32_t from_double(const Format& f, double x);
uint32_t from_int(const Format& f, int64_t x);
uint32_t from_uint(const Format& f, uint64_t x);
// The value of a bit pattern, exactly (every narrow value is a float32). NaN: sign and payload
// kept, the quiet bit set.
float to_float(const Format& f, uint32_t bits);
bool is_nan(const Format& f, uint32_t bits);

// x rounded to the dtype's values (float32 and float64 too) and given back as a double: what a
// CONST of that dtype holds.
double round_to(DType d, double x);

}  // namespace ow::fp
