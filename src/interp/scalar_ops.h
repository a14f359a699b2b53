// The per-element arithmetic of SEMANTICS.md S2.1, shared by the tensor-level kernels
// (elementwise.cpp, reductions.cpp) and the scalar kernel evaluator (kernel_eval.cpp) so the two cannot drift.
// Every function computes in T with one rounding (a narrow float T computes in the float32 it
// widens to and rounds the result back, interp/narrow.h); files including this must be compiled with
// -ffp-contract=off (the ow_interp library is).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "interp/narrow.h"
#include "uop/ops.h"

namespace ow::interp::sop {

// Thrown by idiv/mod on an integer zero divisor; callers turn it into a diagnostic.
struct DivByZero {};
// Thrown by shl/shr on a shift count outside [0, bits) (C leaves those undefined).
struct BadShift {
  std::string count;
  int bits;
  std::string message() const { return "shift count " + count + " outside [0, " + std::to_string(bits) + ")"; }
};
// Thrown by pow_op on an integer POW with a negative exponent (SEMANTICS S2.1: it has no integer value).
struct NegativeExponent {
  std::string exponent;
  std::string message() const { return "integer POW with negative exponent " + exponent; }
};

// Integer arithmetic is computed in uint64_t and keeps the low bits: the narrow types would be
// promoted to int, where uint16 65535 * 65535 overflows.
template <class T> T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, uint8_t>) return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else if constexpr (std::is_same_v<T, uint8_t>) return a | b;
  else return a + b;
}
template <class T> T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, uint8_t>) return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  else if constexpr (std::is_same_v<T, uint8_t>) return a ^ b;
  else return a - b;
}
template <class T> T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, uint8_t>) return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else if constexpr (std::is_same_v<T, uint8_t>) return a & b;
  else return a * b;
}
// MAX propagates NaN (SEMANTICS.md "MAX").
template <class T> T max_op(T a, T b) {
  if constexpr (is_float_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  }
  return a > b ? a : b;
}
template <class T> T idiv_op(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) throw DivByZero{};
    if constexpr (std::is_signed_v<T>)
      if (b == -1) return wrap_sub<T>(0, a);
    return a / b;
  } else {
    return std::trunc(a / b);
  }
}
template <class T> T mod_op(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) throw DivByZero{};
    if constexpr (std::is_signed_v<T>)
      if (b == -1) return 0;
    return a % b;
  } else {
    return std::fmod(a, b);
  }
}
template <class T> T fdiv_op(T a, T b) { return a / b; }
// POW (SEMANTICS S2.1): floats call the C library's pow in T. Integers (exponent >= 0) compute
// a^b modulo 2^bits by square and multiply in uint64_t, which is exact modulo 2^64 and so modulo
// 2^bits (the sign-extended a is congruent to a); 0^0 is 1. What tinygrad's codegen builds for
// x ** n (simplify_pow: repeated squaring in wrapping multiplies) gives the same bits.
template <class T> T pow_op(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>)
      if (b < 0) throw NegativeExponent{std::to_string(static_cast<long long>(b))};
    uint64_t base = static_cast<uint64_t>(a), r = 1;
    for (uint64_t e = static_cast<uint64_t>(b); e; e >>= 1, base *= base)
      if (e & 1) r *= base;
    return static_cast<T>(r);
  } else {
    return static_cast<T>(std::pow(a, b));
  }
}
template <class T> uint8_t cmplt_op(T a, T b) { return a < b; }
template <class T> uint8_t cmpne_op(T a, T b) { return a != b; }
template <class T> uint8_t cmpeq_op(T a, T b) { return a == b; }
template <class T> T and_op(T a, T b) { return a & b; }  // integral T only
template <class T> T or_op(T a, T b) { return a | b; }
template <class T> T xor_op(T a, T b) { return a ^ b; }

// Integer types other than bool (stored as uint8_t): those with shifts.
template <class T> inline constexpr bool is_integer_v = std::is_integral_v<T> && !std::is_same_v<T, uint8_t>;

// Shifts of integers by a count in [0, bits): SHL wraps (computed unsigned), SHR is arithmetic
// for signed T (floor division by 2^b, as C++20 defines >>).
template <class T> T shift_count(T b) {
  constexpr int bits = 8 * sizeof(T);
  bool negative = false;
  if constexpr (std::is_signed_v<T>) negative = b < 0;
  if (negative || b >= static_cast<T>(bits)) throw BadShift{std::to_string(b), bits};
  return b;
}
template <class T> T shl_op(T a, T b) { return static_cast<T>(static_cast<uint64_t>(a) << shift_count(b)); }
template <class T> T shr_op(T a, T b) { return static_cast<T>(a >> shift_count(b)); }

// THREEFRY (SEMANTICS.md S2.1): Threefry-2x32 with 20 rounds (Salmon et al. 2011, Random123) of
// the counter (low word of x, high word of x) under the key (low word of key, high word of key);
// the result packs the two output words the same way. Used by the interpreter and the kernel
// evaluator; the C prelude has the same function (backends/c/prelude.cpp).
inline uint64_t threefry2x32_20(uint64_t x, uint64_t key) {
  constexpr int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  auto rotl = [](uint32_t v, int r) { return static_cast<uint32_t>((v << r) | (v >> (32 - r))); };
  const uint32_t ks[3] = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32),
                          static_cast<uint32_t>(key) ^ static_cast<uint32_t>(key >> 32) ^ 0x1BD11BDAu};
  uint32_t x0 = static_cast<uint32_t>(x) + ks[0], x1 = static_cast<uint32_t>(x >> 32) + ks[1];
  for (int r = 0; r < 20; ++r) {
    x0 += x1;
    x1 = rotl(x1, kRot[r % 8]) ^ x0;
    if (r % 4 == 3) {  // key injection s = 1..5 after every four rounds
      uint32_t s = static_cast<uint32_t>(r / 4 + 1);
      x0 += ks[s % 3];
      x1 += ks[(s + 1) % 3] + s;
    }
  }
  return static_cast<uint64_t>(x1) << 32 | x0;
}

// BITCAST: the same bits read as another type of the same size.
template <class To, class From> To bitcast_op(From x) {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  std::memcpy(&out, &x, sizeof out);
  return out;
}

// IEEE negation flips the sign (-(+0) is -0, as in C); integers wrap (0 - x).
template <class T> T neg_op(T x) {
  if constexpr (is_float_v<T>) return -x;
  else return wrap_sub<T>(T(0), x);
}
template <class T> T recip_op(T x) { return T(1) / x; }
template <class T> T sqrt_op(T x) { return static_cast<T>(std::sqrt(x)); }
template <class T> T exp2_op(T x) { return static_cast<T>(std::exp2(x)); }
template <class T> T log2_op(T x) { return static_cast<T>(std::log2(x)); }
template <class T> T sin_op(T x) { return static_cast<T>(std::sin(x)); }
template <class T> T trunc_op(T x) {
  if constexpr (is_float_v<T>) return std::trunc(x);
  else return x;
}
template <class T> T mulacc_op(T x, T y, T z) { return wrap_add<T>(wrap_mul<T>(x, y), z); }

// Reductions: the fold step and its identity (0 for ADD, 1 for MUL, -inf / lowest for MAX).
template <class T> T fold(Ops op, T a, T b) {
  switch (op) {
    case Ops::ADD: return wrap_add<T>(a, b);
    case Ops::MUL: return wrap_mul<T>(a, b);
    default: return max_op<T>(a, b);
  }
}
// g called with the fold step of op as a function (for loops that apply it to many elements).
template <class T, class G> void with_fold(Ops op, G g) {
  switch (op) {
    case Ops::ADD: return g(wrap_add<T>);
    case Ops::MUL: return g(wrap_mul<T>);
    default: return g(max_op<T>);
  }
}
template <class T> T identity(Ops op) {
  return op == Ops::MUL ? T(1)
         : op == Ops::MAX ? (std::numeric_limits<T>::has_infinity ? T(-std::numeric_limits<T>::infinity()) : std::numeric_limits<T>::lowest())
                          : T(0);
}

}  // namespace ow::interp::sop
