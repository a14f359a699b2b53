#include "uop/floats.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "uop/error.h"

namespace ow::fp {

const Format& format_of(DType d) {
  switch (d.ptr ? Scalar::Void : d.scalar) {
    case Scalar::Float16: return kFloat16;
    case Scalar::BFloat16: return kBFloat16;
    case Scalar::Fp8e4m3: return kFp8e4m3;
    case Scalar::Fp8e5m2: return kFp8e5m2;
    default: throw InternalError("fp::format_of: " + to_string(d) + " is not a narrow float");
  }
}

namespace {

// m >> k rounded to nearest, ties to even (k >= 0, any size).
uint64_t shift_round(uint64_t m, int k) {
  if (k == 0) return m;
  if (k > 64) return 0;  // m < 2^64 <= 2^(k-1): below half of the quantum
  uint64_t q = k == 64 ? 0 : m >> k;
  uint64_t rem = k == 64 ? m : m & ((uint64_t{1} << k) - 1);
  uint64_t half = uint64_t{1} << (k - 1);
  return (rem > half || (rem == half && (q & 1))) ? q + 1 : q;
}

uint32_t overflow(const Format& f, uint32_t sign) { return sign | (f.saturate ? f.max_finite_bits() : f.inf_bits()); }
uint32_t infinity(const Format& f, uint32_t sign) { return f.has_inf ? sign | f.inf_bits() : sign | f.inf_bits() | ((1u << f.man_bits) - 1); }

}  // namespace

uint32_t round_exact(const Format& f, bool neg, uint64_t m, int e) {
  uint32_t sign = neg ? f.sign_bit() : 0;
  if (m == 0) return sign;
  int p = f.man_bits + 1;                       // precision, the implicit bit included
  int top = 63 - std::countl_zero(m);           // value in [2^(top+e), 2^(top+e+1))
  int exponent = top + e;
  int quantum = (exponent < f.emin() ? f.emin() : exponent) - (p - 1);  // exponent of the last kept bit
  if (exponent > f.emax() + 1) return overflow(f, sign);  // also keeps the shift below in range
  uint64_t s = quantum >= e ? shift_round(m, quantum - e) : m << (e - quantum);
  if (s >> p) {  // rounding carried into a new binade: s is 2^p exactly
    s >>= 1;
    ++quantum;
  }
  if (s == 0) return sign;
  int biased = s >> (p - 1) ? quantum + (p - 1) + f.bias() : 0;  // 0: subnormal
  uint32_t bits = static_cast<uint32_t>(biased) << f.man_bits | static_cast<uint32_t>(s & ((uint64_t{1} << f.man_bits) - 1));
  if (quantum + (p - 1) > f.emax() || bits > f.max_finite_bits()) return overflow(f, sign);
  return sign | bits;
}

uint32_t from_double(const Format& f, double x) {
  uint64_t u = std::bit_cast<uint64_t>(x);
  bool neg = u >> 63;
  int biased = static_cast<int>(u >> 52 & 0x7ff);
  uint64_t mant = u & ((uint64_t{1} << 52) - 1);
  uint32_t sign = neg ? f.sign_bit() : 0;
  if (biased == 0x7ff) {
    if (mant == 0) return infinity(f, sign);
    if (!f.has_inf) return sign | f.inf_bits() | ((1u << f.man_bits) - 1);  // the only NaN
    return sign | f.inf_bits() | f.quiet_bit() | static_cast<uint32_t>(mant >> (52 - f.man_bits));
  }
  if (biased == 0) return round_exact(f, neg, mant, -1074);
  return round_exact(f, neg, mant | (uint64_t{1} << 52), biased - 1075);
}

uint32_t from_int(const Format& f, int64_t x) {
  uint64_t mag = x < 0 ? uint64_t{0} - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
  return round_exact(f, x < 0, mag, 0);
}
uint32_t from_uint(const Format& f, uint64_t x) { return round_exact(f, false, x, 0); }

bool is_nan(const Format& f, uint32_t bits) {
  uint32_t mag = bits & (f.sign_bit() - 1);
  return f.has_inf ? mag > f.inf_bits() : mag == (f.inf_bits() | ((1u << f.man_bits) - 1));
}

float to_float(const Format& f, uint32_t bits) {
  bool neg = bits & f.sign_bit();
  uint32_t sign = neg ? 0x80000000u : 0;
  uint32_t mant = bits & ((1u << f.man_bits) - 1);
  int biased = static_cast<int>(bits >> f.man_bits & ((1u << f.exp_bits) - 1));
  if (is_nan(f, bits)) return std::bit_cast<float>(sign | 0x7fc00000u | mant << (23 - f.man_bits));
  if (f.has_inf && (bits & (f.sign_bit() - 1)) == f.inf_bits()) return std::bit_cast<float>(sign | 0x7f800000u);
  float mag = biased == 0 ? std::ldexp(static_cast<float>(mant), f.emin() - f.man_bits)
                          : std::ldexp(static_cast<float>(mant | (1u << f.man_bits)), biased - f.bias() - f.man_bits);
  return neg ? -mag : mag;
}

double round_to(DType d, double x) {
  if (d.scalar == Scalar::Float32 && !d.ptr) return static_cast<float>(x);
  if (!d.is_narrow_float()) return x;
  const Format& f = format_of(d);
  return to_float(f, from_double(f, x));
}

}  // namespace ow::fp
