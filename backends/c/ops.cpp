// The C of each value op (render.h's exactness rules, reference/SEMANTICS.md S2.1): every node
// one C operation in its dtype, so each op rounds once; integer ADD/SUB/MUL/NEG through unsigned
// arithmetic unless the node's bounds prove they cannot overflow; MAX, float<->int casts,
// IDIV/MOD, shifts, bitcasts and THREEFRY through the prelude's helpers (prelude.cpp), which copy
// the interpreter (src/interp/elementwise.cpp, dispatch.h, scalar_ops.h); the narrow floats computed
// in float32 and rounded back. An op that can fail emits its check first (kernel_abi.h).
#include <cmath>
#include <limits>

#include "kernel_renderer.h"
#include "uop/floats.h"

namespace ow::backend::detail {

// A signed integer op whose result the bounds do not prove representable (C leaves signed
// overflow undefined; unsigned arithmetic wraps by definition).
bool KernelRenderer::may_wrap(UOp u) const {
  DType d = u->dtype;
  if (!d.is_signed_int()) return false;
  auto [lo, hi] = int_limits(d);
  return !(u.vmin() > lo && u.vmax() < hi);
}

// The prelude's name for a dtype in its helpers: ow_max_u32, ow_f64_to_i64, ow_f16_to_f32, ...
// The 8- and 16-bit integers use the 32-bit helpers (C computes them as int) and are cast back.
std::string KernelRenderer::suffix(DType d) {
  if (d.is_bool()) return "u8";
  switch (d.scalar) {
    case Scalar::Float16: return "f16";
    case Scalar::BFloat16: return "bf16";
    case Scalar::Fp8e4m3: return "e4m3";
    case Scalar::Fp8e5m2: return "e5m2";
    default: break;
  }
  std::string bits = d.itemsize() == 8 ? "64" : "32";
  return (d.is_float() ? "f" : d.is_unsigned() ? "u" : "i") + bits;
}

// SHL wraps (computed unsigned), SHR of a signed value is arithmetic (what gcc and tcc do for
// C's implementation-defined >> of a negative value); a count outside [0, bits) fails (kernel_abi.h).
std::string KernelRenderer::shift(UOp u, int lv, const std::string& a, const std::string& b) {
  DType d = u->dtype;
  if (!d.is_int()) fail(u, "shifts need an integer dtype");
  std::string bits = std::to_string(d.itemsize() * 8);
  if (may_fail(u, false)) {
    std::string bad = d.is_unsigned() ? b + " >= " + bits : b + " < 0 || " + b + " >= " + bits;
    emit(lv, "if (" + bad + ") " + fail_at(abi::shift_kind(d.itemsize() * 8), u, "(long long)" + b));
  }
  if (u->op == Ops::SHR) return "(" + a + " >> " + b + ")";
  if (d.is_unsigned() || narrow_int(d)) return "(" + a + " << " + b + ")";  // narrow: in int, cast back by alu
  std::string un = d.itemsize() == 4 ? "(unsigned)" : "(unsigned long long)";
  return "(" + ctype(d, u) + ")(" + un + a + " << " + b + ")";
}

std::string KernelRenderer::binop(Ops op, DType d, const std::string& a, const std::string& b, bool wrap, UOp at) {
  const char* sym = op == Ops::ADD ? "+" : op == Ops::SUB ? "-" : "*";
  switch (op) {
    case Ops::ADD: case Ops::SUB: case Ops::MUL:
      if (d.is_bool()) return "(" + a + (op == Ops::ADD ? " | " : op == Ops::SUB ? " ^ " : " & ") + b + ")";
      if (d.is_narrow_float()) return narrow_float_op(op, d, {a, b}, at);
      // 8- and 16-bit integers: in unsigned int (int would overflow for uint16 65535 * 65535), cast back
      if (narrow_int(d)) return "((" + ctype(d, at) + ")((unsigned)" + a + " " + sym + " (unsigned)" + b + "))";
      if (d.is_signed_int() && wrap) {
        std::string un = is32(d) ? "(unsigned)" : "(unsigned long long)";
        return "(" + ctype(d, at) + ")(" + un + a + " " + sym + " " + un + b + ")";
      }
      return "(" + a + " " + sym + " " + b + ")";
    case Ops::MAX:
      if (d.is_narrow_float()) return narrow_float_op(op, d, {a, b}, at);
      if (narrow_int(d)) return "((" + ctype(d, at) + ")ow_max_" + suffix(d) + "(" + a + ", " + b + "))";
      return "ow_max_" + suffix(d) + "(" + a + ", " + b + ")";
    default: fail(at, std::string("no C rendering of ") + std::string(op_name(op)));
  }
}

// An op on narrow floats as SEMANTICS S2.1 defines it: the operands widened exactly to float32,
// the float32 op, the result rounded back (comparisons give their bool as it is).
std::string KernelRenderer::narrow_float_op(Ops op, DType n, std::vector<std::string> s, UOp at) {
  std::string sfx = suffix(n);
  for (std::string& x : s) x = "ow_" + sfx + "_to_f32(" + x + ")";
  std::string r;
  switch (op) {
    case Ops::ADD: case Ops::SUB: case Ops::MUL: case Ops::MAX: r = binop(op, dtypes::float32, s[0], s[1], false, at); break;
    case Ops::NEG: r = "ow_neg_f32(" + s[0] + ")"; break;
    case Ops::CMPLT: return "(" + s[0] + " < " + s[1] + ")";
    case Ops::CMPNE: return "(" + s[0] + " != " + s[1] + ")";
    case Ops::CMPEQ: return "(" + s[0] + " == " + s[1] + ")";
    case Ops::FDIV: r = "(" + s[0] + " / " + s[1] + ")"; break;
    case Ops::RECIPROCAL: r = "(1.0f / " + s[0] + ")"; break;
    case Ops::EXP2: r = "exp2f(" + s[0] + ")"; break;
    case Ops::LOG2: r = "log2f(" + s[0] + ")"; break;
    case Ops::SIN: r = "sinf(" + s[0] + ")"; break;
    case Ops::SQRT: r = "sqrtf(" + s[0] + ")"; break;
    case Ops::POW: r = "powf(" + s[0] + ", " + s[1] + ")"; break;
    case Ops::TRUNC: r = "truncf(" + s[0] + ")"; break;
    default: fail(at, std::string(op_name(op)) + " on " + to_string(n) + " is not supported by the C backend");
  }
  return "ow_f32_to_" + sfx + "(" + r + ")";
}

std::string KernelRenderer::alu(UOp u, int lv) {
  Ops op = u->op;
  DType d = u->dtype, sd = u->src.at(op == Ops::WHERE ? 1 : 0)->dtype;
  if (u->src.size() != static_cast<size_t>(alu_arity(op))) fail(u, "wrong number of sources");
  ctype(d, u);
  ctype(sd, u);
  bool isdiv = (op == Ops::IDIV || op == Ops::MOD) && sd.is_int();
  UOp den = isdiv ? u->src[1] : UOp();
  bool safe_den = isdiv && (den.vmin() > 0 || den.vmax() < -1);
  bool checked_count = (op == Ops::SHL || op == Ops::SHR || op == Ops::POW) && may_fail(u, false);  // the count or exponent is checked
  std::vector<std::string> s;
  for (size_t i = 0; i < u->src.size(); ++i)
    s.push_back(val(u->src[i], lv, i == 1 && ((isdiv && !safe_den && !den.is_const()) || checked_count)));
  if (sd.is_narrow_float() && op != Ops::WHERE && op != Ops::MULACC) return narrow_float_op(op, sd, s, u);
  // 8- and 16-bit integers compute in int (C's promotion) and are cast back to their width
  if (narrow_int(d) && op != Ops::WHERE) return "((" + ctype(d, u) + ")" + int_alu(u, lv, s, den, safe_den) + ")";
  return int_alu(u, lv, s, den, safe_den);
}

// alu's ops on everything but the narrow floats.
std::string KernelRenderer::int_alu(UOp u, int lv, std::vector<std::string>& s, UOp den, bool safe_den) {
  Ops op = u->op;
  DType d = u->dtype, sd = u->src.at(op == Ops::WHERE ? 1 : 0)->dtype;
  auto fl = [&](const char* f32, const char* f64) {
    if (!sd.is_float()) fail(u, std::string(op_name(op)) + " needs a float dtype in the C backend");
    std::string args = s[0];
    for (size_t i = 1; i < s.size(); ++i) args += ", " + s[i];
    return std::string(is32(sd) ? f32 : f64) + "(" + args + ")";
  };
  switch (op) {
    case Ops::ADD: case Ops::SUB: case Ops::MUL: case Ops::MAX: return binop(op, d, s[0], s[1], may_wrap(u), u);
    case Ops::MULACC: {
      UOp m = u->src[0].alu(Ops::MUL, {u->src[1]});
      return binop(Ops::ADD, d, binop(Ops::MUL, d, s[0], s[1], may_wrap(m), u), s[2], may_wrap(u), u);
    }
    case Ops::NEG:
      if (d.is_bool()) return s[0];
      if (narrow_int(d)) return "(-(unsigned)" + s[0] + ")";
      if (d.is_float()) return "ow_neg_" + suffix(d) + "(" + s[0] + ")";
      if (may_wrap(u)) return "(" + ctype(d, u) + ")-(" + (is32(d) ? "unsigned" : "unsigned long long") + ")" + s[0];
      return "(-" + s[0] + ")";
    case Ops::CMPLT: return "(" + s[0] + " < " + s[1] + ")";
    case Ops::CMPNE: return "(" + s[0] + " != " + s[1] + ")";
    case Ops::CMPEQ: return "(" + s[0] + " == " + s[1] + ")";
    case Ops::AND: case Ops::OR: case Ops::XOR:
      if (sd.is_float()) fail(u, "bitwise ops need an integer or bool dtype");
      return "(" + s[0] + (op == Ops::AND ? " & " : op == Ops::OR ? " | " : " ^ ") + s[1] + ")";
    // TCC 0.9.27 miscompiles `(c ? 0 : 0) ? a : b` (garbage, fuzz seed 215582): a condition that
    // is itself a WHERE is compared with 0 first, which it compiles right.
    case Ops::WHERE: return "(" + (u->src[0]->op == Ops::WHERE ? "(" + s[0] + " != 0)" : s[0]) + " ? " + s[1] + " : " + s[2] + ")";
    case Ops::FDIV: fl("", ""); return "(" + s[0] + " / " + s[1] + ")";
    case Ops::RECIPROCAL: fl("", ""); return std::string(is32(sd) ? "(1.0f / " : "(1.0 / ") + s[0] + ")";
    case Ops::EXP2: return fl("exp2f", "exp2");
    case Ops::LOG2: return fl("log2f", "log2");
    case Ops::SIN: return fl("sinf", "sin");
    case Ops::SQRT: return fl("sqrtf", "sqrt");
    case Ops::POW:  // integers: a^b modulo 2^bits (S2.1); a negative exponent fails (kernel_abi.h)
      if (sd.is_float()) return fl("powf", "pow");
      if (!sd.is_int()) fail(u, "POW needs a float or integer dtype");
      if (may_fail(u, false)) emit(lv, "if (" + s[1] + " < 0) " + fail_at(abi::kNegativeExponent, u, "(long long)" + s[1]));
      return "ow_ipow_" + suffix(sd) + "(" + s[0] + ", " + s[1] + ")";
    case Ops::TRUNC: return sd.is_float() ? fl("truncf", "trunc") : s[0];
    case Ops::IDIV: case Ops::MOD:
      if (sd.is_float()) return op == Ops::MOD ? fl("fmodf", "fmod") : (is32(sd) ? "truncf(" : "trunc(") + s[0] + " / " + s[1] + ")";
      if (!sd.is_int()) fail(u, std::string(op_name(op)) + " on bool is not supported by the C backend");
      if (den.is_const() && den.const_value() == 0) fail(u, "integer division by a constant zero");
      if (!den.is_const() && may_fail(u, false)) emit(lv, "if (" + s[1] + " == 0) " + fail_at(abi::kDivisionByZero, u, "0"));
      if (safe_den || sd.is_unsigned()) return "(" + s[0] + (op == Ops::IDIV ? " / " : " % ") + s[1] + ")";
      return (op == Ops::IDIV ? "ow_idiv_" : "ow_mod_") + suffix(sd) + "(" + s[0] + ", " + s[1] + ")";
    case Ops::SHL: case Ops::SHR: return shift(u, lv, s[0], s[1]);
    case Ops::THREEFRY:
      if (sd != dtypes::uint64) fail(u, "THREEFRY needs uint64 operands");
      return "ow_threefry(" + s[0] + ", " + s[1] + ")";
    default: fail(u, std::string(op_name(op)) + " is not supported by the C backend");
  }
}

std::string KernelRenderer::cast(UOp u, const std::string& x) {
  DType to = u->dtype, from = u->src.at(0)->dtype;
  std::string ty = ctype(to, u);
  ctype(from, u);
  if (to == from) return x;
  if (to.is_narrow_float() || from.is_narrow_float()) return narrow_float_cast(u, x);
  if (u->op == Ops::BITCAST) {
    if (to.itemsize() != from.itemsize() || to.is_bool() || to.is_index() || from.is_bool() || from.is_index())
      fail(u, "BITCAST between " + to_string(from) + " and " + to_string(to));
    if (from.is_float() == to.is_float()) return "((" + ty + ")" + x + ")";
    if (from.is_float()) return "ow_" + suffix(from) + "_as_" + suffix(to) + "(" + x + ")";
    if (to.is_float()) return to.scalar == Scalar::Float32 ? "ow_f32_bits((unsigned int)" + x + ")" : "ow_f64_bits((unsigned long long)" + x + ")";
  }
  if (to.is_bool()) return "(" + x + " != 0)";
  if (from.is_float() && to.is_int()) return float_to_int(from, to, x, u);
  if (from.is_unsigned() && !narrow_int(from) && to.is_float()) return "ow_" + suffix(from) + "_to_" + suffix(to) + "(" + x + ")";
  return "((" + ty + ")" + x + ")";
}

// CAST and BITCAST to or from a narrow float (C holds it as its bits): bits are reinterpreted as
// they are; a conversion widens the source exactly to float32 first, and rounds once into a
// narrow target from the exact source value (prelude: ow_f64_to_f16, ow_i64_to_bf16, ...).
// float32/float64 -> any integer: truncate and saturate (prelude); an 8- or 16-bit target clamps
// the saturated 64-bit value to its limits.
std::string KernelRenderer::float_to_int(DType from, DType to, const std::string& x, UOp at) const {
  if (!narrow_int(to)) return "ow_" + suffix(from) + "_to_" + suffix(to) + "(" + x + ")";
  auto [lo, hi] = int_limits(to);
  return "((" + ctype(to, at) + ")ow_clamp_i64(ow_" + suffix(from) + "_to_i64(" + x + "), " + std::to_string(lo) + "LL, " + std::to_string(hi) + "LL))";
}

std::string KernelRenderer::narrow_float_cast(UOp u, const std::string& x) {
  DType to = u->dtype, from = u->src.at(0)->dtype;
  std::string ty = ctype(to, u);
  if (u->op == Ops::BITCAST) {
    if (to.itemsize() != from.itemsize() || to.is_bool() || to.is_index() || from.is_bool() || from.is_index())
      fail(u, "BITCAST between " + to_string(from) + " and " + to_string(to));
    return "((" + ty + ")" + x + ")";  // both sides are integers in C, of one size
  }
  if (from.is_narrow_float()) {
    std::string wide = "ow_" + suffix(from) + "_to_f32(" + x + ")";
    if (to == dtypes::float32) return wide;
    if (to.is_narrow_float()) return "ow_f32_to_" + suffix(to) + "(" + wide + ")";
    if (to.is_bool()) return "(" + wide + " != 0)";
    if (to == dtypes::float64) return "((double)" + wide + ")";
    return float_to_int(dtypes::float32, to, wide, u);
  }
  std::string sfx = suffix(to);
  if (from.is_float()) return "ow_" + suffix(from) + "_to_" + sfx + "(" + x + ")";
  if (from.is_unsigned()) return "ow_u64_to_" + sfx + "((unsigned long long)" + x + ")";
  return "ow_i64_to_" + sfx + "((long long)" + x + ")";  // signed integers and bool
}

}  // namespace ow::backend::detail
