// The per-element arithmetic of SEMANTICS.md S2.1, shared by the tensor-level kernels
// (kernels.cpp) and the scalar kernel evaluator (kernel_eval.cpp) so the two cannot drift.
// Every function computes in T with one rounding; files including this must be compiled with
// -ffp-contract=off (the ow_interp library is).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "uop/ops.h"

namespace ow::interp::sop {

// Thrown by idiv/mod on an integer zero divisor; callers turn it into a diagnostic.
struct DivByZero {};

template <class T> T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, uint8_t>) return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b));
  else if constexpr (std::is_same_v<T, uint8_t>) return a | b;
  else return a + b;
}
template <class T> T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, uint8_t>) return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) - static_cast<std::make_unsigned_t<T>>(b));
  else if constexpr (std::is_same_v<T, uint8_t>) return a ^ b;
  else return a - b;
}
template <class T> T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, uint8_t>) return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) * static_cast<std::make_unsigned_t<T>>(b));
  else if constexpr (std::is_same_v<T, uint8_t>) return a & b;
  else return a * b;
}
// MAX propagates NaN (SEMANTICS.md "MAX").
template <class T> T max_op(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
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
template <class T> T pow_op(T a, T b) { return static_cast<T>(std::pow(a, b)); }
template <class T> uint8_t cmplt_op(T a, T b) { return a < b; }
template <class T> uint8_t cmpne_op(T a, T b) { return a != b; }
template <class T> uint8_t cmpeq_op(T a, T b) { return a == b; }
template <class T> T and_op(T a, T b) { return a & b; }  // integral T only
template <class T> T or_op(T a, T b) { return a | b; }
template <class T> T xor_op(T a, T b) { return a ^ b; }

// IEEE negation flips the sign (-(+0) is -0, as in C); integers wrap (0 - x).
template <class T> T neg_op(T x) {
  if constexpr (std::is_floating_point_v<T>) return -x;
  else return wrap_sub<T>(T(0), x);
}
template <class T> T recip_op(T x) { return T(1) / x; }
template <class T> T sqrt_op(T x) { return static_cast<T>(std::sqrt(x)); }
template <class T> T exp2_op(T x) { return static_cast<T>(std::exp2(x)); }
template <class T> T log2_op(T x) { return static_cast<T>(std::log2(x)); }
template <class T> T sin_op(T x) { return static_cast<T>(std::sin(x)); }
template <class T> T trunc_op(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::trunc(x);
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
template <class T> T identity(Ops op) {
  return op == Ops::MUL ? T(1)
         : op == Ops::MAX ? (std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest())
                          : T(0);
}

}  // namespace ow::interp::sop
