// with_error_bounds (error_bound.h): one pass over the graph in topological order (no recursion),
// building for each node u its shadows: e(u), a float64 bound on |u - exact u| (null when u is
// exact by construction: inputs, constants, integer arithmetic on exact values), and o(u), the
// float64 number of the first node that did something invalid (-1 when none).
#include "grad/error_bound.h"

#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "grad/build.h"
#include "uop/error.h"
#include "uop/floats.h"
#include "uop/shape.h"
#include "uop/text.h"

namespace ow::grad {

namespace {

const DType f64 = dtypes::float64;

// Unit roundoff u and the absolute error a rounding near zero may add (half the smallest
// subnormal, eta): |fl(x) - x| <= u|x| + eta.
std::pair<double, double> rounding(DType d) {
  if (d == dtypes::float64) return {0x1p-53, 0x1p-1074};
  if (d == dtypes::float32) return {0x1p-24, 0x1p-150};
  const fp::Format& f = fp::format_of(d);
  return {std::ldexp(1.0, -(f.man_bits + 1)), std::ldexp(1.0, f.emin() - f.man_bits - 1)};
}

class Bounds {
 public:
  explicit Bounds(UOp root) : printed_(number_graph(root)) {}

  // Shadows of every node of root (its sources first).
  void run(UOp root) {
    for (UOp u : toposort(root)) shadow(u);
  }
  UOp bound(UOp u) { return e_.at(u.get()) ? e_.at(u.get()) : zero(u); }
  UOp origin(UOp u) { return o_.at(u.get()); }

 private:
  Printed printed_;
  std::unordered_map<const UOpNode*, UOp> e_, o_;
  // p(u): true where u is undefined in real numbers: a pole of exact operands (x/0, log2(0)) in
  // it or below it. Null where it cannot be (most nodes).
  std::unordered_map<const UOpNode*, UOp> p_;

  static UOp c(double v) { return cnst(f64, v); }
  static UOp zero(UOp like) { return shaped(like) ? full(dims_of(like), f64, 0) : c(0); }
  static UOp val(UOp u) { return u->dtype == f64 ? u : cast(u, f64); }
  static UOp abs(UOp x) { return alu(Ops::MAX, x, UOp::make(Ops::NEG, x->dtype, {x})); }
  static UOp max(UOp a, UOp b) { return alu(Ops::MAX, a, b); }
  static UOp sub(UOp a, UOp b) { return alu(Ops::SUB, a, b); }
  static UOp div(UOp a, UOp b) { return alu(Ops::FDIV, a, b); }
  static UOp isnan(UOp x) { return alu(Ops::CMPNE, x, x); }
  static UOp negate(UOp b) { return alu(Ops::CMPNE, b, UOp::cnst(dtypes::bool_, 1)); }
  static UOp either(UOp a, UOp b) { return a ? (b ? alu(Ops::OR, a, b) : a) : b; }
  static UOp both(UOp a, UOp b) { return a ? (b ? alu(Ops::AND, a, b) : a) : b; }
  // Where s is a real number without rounding error: finite, and bound 0 (inputs, constants).
  UOp exact(UOp s) {
    UOp finite = alu(Ops::CMPLT, abs(val(s)), c(std::numeric_limits<double>::infinity()));  // false for inf and NaN
    return e(s) ? alu(Ops::AND, finite, alu(Ops::CMPLT, e(s), c(std::numeric_limits<double>::min()))) : finite;
  }
  static UOp unary(Ops op, UOp x) { return UOp::make(op, x->dtype, {x}); }
  UOp e(UOp s) { return e_.at(s.get()); }
  UOp eor0(UOp s) { return e(s) ? e(s) : zero(s); }

  // The rounding of a result z of dtype d: u|z| + eta (inf when z overflowed).
  static UOp rounding_of(UOp z, DType d) {
    auto [u, eta] = rounding(d);
    return add(mul(abs(val(z)), c(u * 1.0001)), c(eta));
  }

  [[noreturn]] void no_rule(UOp u, const std::string& why) const {
    throw Error("error bound: no rule for " + why + "\n  at " + printed_.line(u));
  }

  void shadow(UOp u) {
    p_[u.get()] = pole_of(u);
    o_[u.get()] = origin_of(u);
    bool inexact = false;
    for (UOp s : u->src) inexact = inexact || (e_.count(s.get()) && e_.at(s.get()));
    if (!inexact && !u->dtype.is_float()) return void(e_[u.get()] = UOp());  // exact by construction
    e_[u.get()] = bound_of(u);
  }

  UOp bound_of(UOp u) {
    Ops op = u->op;
    switch (op) {
      case Ops::BUFFER: case Ops::CONST: case Ops::DEFINE_VAR: case Ops::BIND: case Ops::RANGE: return UOp();
      case Ops::SINK: return UOp();
      case Ops::CONTIGUOUS: case Ops::DETACH: case Ops::CONTIGUOUS_BACKWARD: case Ops::REDUCE_BACKWARD: return e(u->src[0]);
      case Ops::CAST: return cast_bound(u);
      case Ops::BITCAST: if (e(u->src[0])) no_rule(u, "a BITCAST of an inexact value"); return UOp();
      case Ops::REDUCE_AXIS: return reduce_axis_bound(u);
      default: break;
    }
    if (is_movement(op)) {
      if (!e(u->src[0])) return UOp();
      std::vector<UOp> src = u->src;
      src[0] = e(u->src[0]);
      return UOp::make(op, f64, src, u->arg);
    }
    if (is_alu(op)) return alu_bound(u);
    no_rule(u, std::string(op_name(op)));
  }

  UOp cast_bound(UOp u) {
    UOp x = u->src[0];
    DType to = u->dtype, from = x->dtype;
    UOp ex = e(x);
    if (to.is_float()) {
      bool narrows = from.is_int() || (from.is_float() && from.itemsize() > to.itemsize()) || from == dtypes::bfloat16 || to == dtypes::bfloat16;
      UOp r = narrows ? rounding_of(u, to) : UOp();
      if (!ex) return r;
      return r ? add(ex, r) : ex;
    }
    if (!ex) return UOp();
    if (to.is_bool()) return where(alu(Ops::CMPLT, c(0), ex), c(1), c(0));            // may flip
    return where(alu(Ops::CMPLT, c(0), ex), add(ex, c(1)), c(0));                      // truncation may move by 1
  }

  // Any order of the n terms: |sum - exact| <= sum e + (n-1) u (sum |x| + sum e) + n eta.
  UOp reduce_axis_bound(UOp u) {
    const ArgTuple* t = u->arg.tuple();
    Ops rop = (*t)[0].as<Ops>();
    std::vector<int64_t> axes;
    for (const Arg& a : *(*t)[1].tuple()) axes.push_back(a.as<int64_t>());
    UOp x = u->src[0], ex = eor0(x);
    auto fold = [&](Ops o, UOp v) { return UOp::make(Ops::REDUCE_AXIS, f64, {v}, Arg(ArgTuple{Arg(o), (*t)[1]})); };
    if (rop == Ops::MAX) return u->dtype.is_float() || e(x) ? fold(Ops::MAX, ex) : UOp();
    if (!u->dtype.is_float()) {
      if (rop != Ops::ADD) no_rule(u, "a product of inexact integers");
      return fold(Ops::ADD, ex);
    }
    auto [uu, eta] = rounding(u->dtype);
    UOp n = fold(Ops::ADD, cast(ones_like(x), f64));
    UOp mag = add(abs(val(x)), ex);
    if (rop == Ops::ADD)
      return add(add(fold(Ops::ADD, ex), mul(mul(sub(n, c(1)), c(uu * 1.0001)), fold(Ops::ADD, mag))), mul(n, c(eta)));
    // MUL: |prod x - prod x*| <= prod(|x| + e) - prod |x|, plus (n-1) u prod(|x| + e) for the roundings
    UOp hi = fold(Ops::MUL, mag);
    UOp err = sub(hi, abs(val(u)));
    return add(add(max(err, c(0)), mul(mul(sub(n, c(1)), c(uu * 1.0001)), hi)), mul(n, c(eta)));
  }

  UOp alu_bound(UOp u) {
    Ops op = u->op;
    std::vector<UOp> v, ev;
    for (UOp s : u->src) {
      v.push_back(val(s));
      ev.push_back(eor0(s));
    }
    DType d = u->dtype;
    if (is_comparison(op)) {  // a float comparison whose operands' bounds overlap may flip
      UOp gap = abs(sub(v[0], v[1]));
      return where(alu(Ops::CMPLT, add(ev[0], ev[1]), gap), c(0), c(1));
    }
    if (op == Ops::WHERE) {
      UOp chosen = where(u->src[0], ev[1], ev[2]);
      UOp flipped = add(max(ev[1], ev[2]), abs(sub(v[1], v[2])));
      return e(u->src[0]) ? where(alu(Ops::CMPLT, c(0), ev[0]), flipped, chosen) : chosen;
    }
    if (!d.is_float()) return int_bound(u, v, ev);
    UOp z = val(u), r = rounding_of(u, d), ulps = add(mul(abs(z), c(kTranscendentalUlps * rounding(d).first * 2)), c(rounding(d).second));
    switch (op) {
      case Ops::ADD: case Ops::SUB: return add(add(ev[0], ev[1]), r);
      case Ops::NEG: return ev[0];
      case Ops::MAX: return max(ev[0], ev[1]);
      case Ops::TRUNC: return where(alu(Ops::CMPLT, c(0), ev[0]), add(ev[0], c(1)), c(0));
      case Ops::MUL: return add(add(add(mul(abs(v[0]), ev[1]), mul(abs(v[1]), ev[0])), mul(ev[0], ev[1])), r);
      case Ops::MULACC: {
        UOp p = add(add(mul(abs(v[0]), ev[1]), mul(abs(v[1]), ev[0])), mul(ev[0], ev[1]));
        return add(add(add(p, ev[2]), rounding_of(mul(v[0], v[1]), d)), r);
      }
      case Ops::FDIV: case Ops::RECIPROCAL: {  // |a/b - a*/b*| <= (|a| e_b + |b| e_a) / (|b| (|b| - e_b)) while |b| > e_b
        UOp a = op == Ops::FDIV ? v[0] : c(1), ea = op == Ops::FDIV ? ev[0] : c(0), b = op == Ops::FDIV ? v[1] : v[0], eb = op == Ops::FDIV ? ev[1] : ev[0];
        UOp room = sub(abs(b), eb);
        UOp q = div(add(mul(abs(a), eb), mul(abs(b), ea)), mul(abs(b), room));
        return add(where(alu(Ops::CMPLT, c(0), room), q, c(INFINITY)), r);
      }
      case Ops::SQRT: {  // |sqrt a - sqrt a*| <= min(sqrt e, e / sqrt(a - e))
        UOp lo = sub(v[0], ev[0]);
        UOp steep = where(alu(Ops::CMPLT, c(0), lo), div(ev[0], unary(Ops::SQRT, lo)), c(INFINITY));
        UOp flat = unary(Ops::SQRT, ev[0]);
        return add(alu(Ops::MAX, c(0), UOp::make(Ops::NEG, f64, {max(UOp::make(Ops::NEG, f64, {steep}), UOp::make(Ops::NEG, f64, {flat}))})), ulps);
      }
      case Ops::EXP2:  // 2^(a + e) - 2^a bounds both directions
        return add(mul(unary(Ops::EXP2, v[0]), sub(unary(Ops::EXP2, ev[0]), c(1))), ulps);
      case Ops::LOG2: {  // log2(a / (a - e)) while a > e
        UOp lo = sub(v[0], ev[0]);
        UOp q = sub(unary(Ops::LOG2, v[0]), unary(Ops::LOG2, lo));
        return add(where(alu(Ops::CMPLT, c(0), lo), q, c(INFINITY)), ulps);
      }
      case Ops::SIN: return add(alu(Ops::MAX, c(0), UOp::make(Ops::NEG, f64, {max(UOp::make(Ops::NEG, f64, {ev[0]}), c(-2))})), ulps);
      case Ops::POW: return add(pow_propagated(v[0], v[1], ev[0], ev[1], !e(u->src[0]) && !e(u->src[1])), add(pow_own(z, v[0], v[1], d), ulps));
      default: no_rule(u, std::string(op_name(op)) + " of " + to_string(d));
    }
  }

  // POW a^b, the operands' errors carried (a' within ea of a, b' within eb of b). Where a' keeps
  // one sign (|a| > ea), |a'|^b' = 2^(b' log2|a'|): b' log2|a'| is bilinear in (b', log2|a'|),
  // log2 and exp2 are monotone, so over the box [|a| - ea, |a| + ea] x [b - eb, b + eb] the
  // extremes of |a'|^b' are at its four corners, and |a'^b' - a^b| is at most the largest
  // distance of a corner from |a|^b. A negative a' has a real power only for an integer b' (the
  // sign then fixed), so b' exact there (eb = 0) keeps the corner rule and an inexact b' is
  // unbounded (inf). Where the interval of a' reaches 0 (|a| <= ea), a'^b may change sign: the
  // largest |a'|^b' plus |a^b| (inf for b' < 0, where a' -> 0 makes it infinite). The corners are
  // float64 powers: their own rounding (2^-53 relative) is far below the result's 16 ulps that
  // pow_own adds (and a float64 graph's ulps cover it as well). A NaN (inf - inf) is inf.
  static UOp pow_propagated(UOp a, UOp b, UOp ea, UOp eb, bool exact) {
    if (exact) return c(0);
    auto pw = [](UOp x, UOp y) { return alu(Ops::POW, x, y); };
    UOp A = abs(a), at = pw(A, b);
    UOp lo = max(sub(A, ea), c(0)), hi = add(A, ea), blo = sub(b, eb), bhi = add(b, eb);
    std::vector<UOp> corners{pw(lo, blo), pw(lo, bhi), pw(hi, blo), pw(hi, bhi)};
    UOp far = c(0), top = c(0);
    for (UOp k : corners) far = max(far, abs(sub(k, at))), top = max(top, k);
    UOp bound = where(alu(Ops::CMPLT, ea, A), far, add(top, at));
    UOp real_undefined = alu(Ops::AND, alu(Ops::CMPLT, sub(a, ea), c(0)), alu(Ops::CMPLT, c(0), eb));
    bound = where(real_undefined, c(INFINITY), bound);
    return where(isnan(bound), c(INFINITY), bound);
  }

  // POW's own error beyond the ulps every transcendental gets: another legal evaluation is the
  // decomposition exp2(b * log2|a|) (tinygrad's xpow). Its log2, within kTranscendentalUlps ulps
  // (2 kTranscendentalUlps u relative), times b, rounded once more (u), moves the exponent
  // t = b log2|a| by up to k u |t| with k = 2 kTranscendentalUlps + 1, and the result by
  // |z| (2^(k u |t|) - 1): the amplification grows with |b log(a)|, not with the result. Where t
  // is not finite (a = 0 or inf, b infinite) the result is 0, 1 or inf in every evaluation: 0.
  static UOp pow_own(UOp z, UOp a, UOp b, DType d) {
    UOp t = abs(mul(b, unary(Ops::LOG2, abs(a))));
    double k = (2 * kTranscendentalUlps + 1) * rounding(d).first;
    UOp amp = mul(abs(z), sub(unary(Ops::EXP2, mul(t, c(k))), c(1)));
    return where(alu(Ops::CMPLT, t, c(INFINITY)), amp, c(0));
  }

  // Integers that depend on floats: ADD/SUB/NEG/MAX/MUL carry the bound; anything else of an
  // inexact operand is unbounded (inf). (Exact integers never get here.)
  UOp int_bound(UOp u, const std::vector<UOp>& v, const std::vector<UOp>& ev) {
    switch (u->op) {
      case Ops::ADD: case Ops::SUB: return add(ev[0], ev[1]);
      case Ops::NEG: return ev[0];
      case Ops::MAX: case Ops::AND: case Ops::OR: case Ops::XOR:
        if (u->dtype.is_bool() || u->op == Ops::MAX) return max(ev[0], ev[1]);
        break;
      case Ops::MUL: return add(add(mul(abs(v[0]), ev[1]), mul(abs(v[1]), ev[0])), mul(ev[0], ev[1]));
      default: break;
    }
    UOp any = ev[0];
    for (size_t i = 1; i < ev.size(); ++i) any = add(any, ev[i]);
    return where(alu(Ops::CMPLT, c(0), any), c(INFINITY), c(0));
  }

  UOp number(UOp u) const { return c(static_cast<double>(printed_.number.at(u.get()))); }

  // A float that truncates outside the integer type of CAST u, or a NaN (undefined in C; S2.1
  // saturates): inside is lo - 1 < x < hi + 1, every bound a double exactly (int64's lower one,
  // -2^63 - 1, is not: there lo <= x).
  static UOp out_of_range(UOp u) {
    auto [lo, hi] = int_limits(u->dtype);  // (uint64's are int64's: its own are 0 and 2^64 - 1)
    if (u->dtype == dtypes::uint64) lo = 0;
    UOp x = val(u->src[0]);
    UOp t = UOp::cnst(dtypes::bool_, 1);
    double top = u->dtype == dtypes::uint64 ? 0x1p64 : u->dtype.itemsize() == 8 ? 0x1p63 : static_cast<double>(hi) + 1;
    UOp low_ok = u->dtype.is_signed_int() && u->dtype.itemsize() == 8 ? alu(Ops::CMPNE, alu(Ops::CMPLT, x, c(static_cast<double>(lo))), t)
                                                                       : alu(Ops::CMPLT, c(static_cast<double>(lo) - 1), x);
    UOp inside = alu(Ops::AND, low_ok, alu(Ops::CMPLT, x, c(top)));  // false for NaN
    return alu(Ops::CMPNE, inside, t);
  }

  // o(u): u's own number where u is NaN and none of its operands is, or where u converts a float
  // out of its integer range (or a NaN) to an integer; else the largest origin of its operands
  // (-1: none).
  UOp origin_of(UOp u) {
    Ops op = u->op;
    bool value = u->dtype.is_float() || u->dtype.is_bool() || (u->dtype.is_int() && !u->dtype.is_index());
    if (!value || u->src.empty() || op == Ops::BIND || op == Ops::BUFFER) return shaped(u) ? full(dims_of(u), f64, -1) : c(-1);
    if (is_movement(op)) {
      std::vector<UOp> src = u->src;
      if (op == Ops::PAD) {  // the fill is no NaN: shift so that PAD's zeros mean -1
        src[0] = add(o_.at(u->src[0].get()), c(1));
        return sub(UOp::make(op, f64, src, u->arg), c(1));
      }
      src[0] = o_.at(u->src[0].get());
      return UOp::make(op, f64, src, u->arg);
    }
    if (op == Ops::REDUCE_AXIS) {
      const ArgTuple* t = u->arg.tuple();
      auto fold = [&](Ops o, UOp v) { return UOp::make(Ops::REDUCE_AXIS, f64, {v}, Arg(ArgTuple{Arg(o), (*t)[1]})); };
      UOp x = u->src[0];
      UOp inherited = fold(Ops::MAX, o_.at(x.get()));
      if (!u->dtype.is_float()) return inherited;
      UOp any_nan = fold(Ops::MAX, cast(isnan(val(x)), f64));
      UOp here = alu(Ops::AND, isnan(val(u)), alu(Ops::CMPLT, any_nan, c(0.5)));
      return where(here, number(u), inherited);
    }
    if (!is_alu(op) && op != Ops::CAST && op != Ops::BITCAST && op != Ops::CONTIGUOUS && op != Ops::DETACH &&
        op != Ops::CONTIGUOUS_BACKWARD && op != Ops::REDUCE_BACKWARD)
      no_rule(u, std::string(op_name(op)));
    UOp inherited = o_.at(u->src[0].get());
    for (size_t i = 1; i < u->src.size(); ++i) inherited = max(inherited, o_.at(u->src[i].get()));
    if (op == Ops::CAST && u->src[0]->dtype.is_float() && u->dtype.is_int()) return where(out_of_range(u), number(u), inherited);
    if (!u->dtype.is_float() || op == Ops::BITCAST || !is_alu(op)) return inherited;
    UOp operand_nan;
    for (UOp s : u->src) {
      if (!s->dtype.is_float()) continue;
      UOp n = isnan(val(s));
      operand_nan = either(operand_nan, n);
    }
    UOp here = isnan(val(u));
    if (operand_nan) here = alu(Ops::AND, here, negate(operand_nan));
    // Where real numbers make the NaN too, it is the exact value: no rewrite may remove it, and
    // the node is no invalid origin (a result other than NaN then disagrees: tinygrad's x/x = 1
    // at x = 0). That is so when every float operand is finite and exact (bound 0: 0/0 of exact
    // zeros, sqrt(-1)) or one is undefined in real numbers (x/x at x = 0 is x * (1/x), 0 * inf
    // where the inf is 1/0 of an exact zero). An inf operand otherwise (inf*0: an overflow the
    // exact evaluation does not make) or one with rounding error (0/0 of underflowed values)
    // keeps the node an origin.
    UOp all_exact, undefined;
    for (UOp s : u->src) {
      if (!s->dtype.is_float()) continue;
      all_exact = both(all_exact, exact(s));
      undefined = either(undefined, p_.at(s.get()));
    }
    if (UOp real_nan = either(all_exact, undefined)) here = alu(Ops::AND, here, negate(real_nan));
    return where(here, number(u), inherited);
  }

  // p(u) (see p_): a RECIPROCAL or FDIV by an exact zero, a LOG2 of one, or any source's.
  UOp pole_of(UOp u) {
    Ops op = u->op;
    if (u->src.empty() || op == Ops::BIND || op == Ops::BUFFER) return UOp();
    UOp x = u->src[0];
    if (is_movement(op)) {  // a PAD's fill is defined: false, as padding gives
      if (!p_.at(x.get())) return UOp();
      std::vector<UOp> src = u->src;
      src[0] = p_.at(x.get());
      return UOp::make(op, dtypes::bool_, src, u->arg);
    }
    if (op == Ops::REDUCE_AXIS) {
      if (!p_.at(x.get())) return UOp();
      UOp any = UOp::make(Ops::REDUCE_AXIS, f64, {cast(p_.at(x.get()), f64)}, Arg(ArgTuple{Arg(Ops::MAX), (*u->arg.tuple())[1]}));
      return alu(Ops::CMPLT, c(0.5), any);
    }
    UOp inherited;
    for (UOp s : u->src) inherited = either(inherited, p_.at(s.get()));
    if (!u->dtype.is_float() || (op != Ops::RECIPROCAL && op != Ops::FDIV && op != Ops::LOG2)) return inherited;
    UOp d = op == Ops::FDIV ? u->src[1] : x;
    return either(inherited, alu(Ops::AND, exact(d), alu(Ops::CMPLT, abs(val(d)), c(std::numeric_limits<double>::min()))));
  }
};

}  // namespace

UOp with_error_bounds(UOp root) {
  if (root->op != Ops::SINK) throw Error("error bound: the graph's root must be a SINK of outputs");
  const ArgTuple* names = root->arg.tuple();
  Bounds b(root);
  b.run(root);
  std::vector<UOp> outs;
  ArgTuple out_names;
  for (size_t i = 0; i < root->src.size(); ++i) {
    UOp o = root->src[i];
    std::string name = names && i < names->size() && (*names)[i].is<std::string>() ? (*names)[i].as<std::string>() : "out" + std::to_string(i);
    outs.push_back(o);
    out_names.emplace_back(name);
    if (!o->dtype.is_float() && !(o->dtype.is_int() && !o->dtype.is_index())) continue;
    outs.push_back(b.bound(o));
    out_names.emplace_back(name + ":bound");
    outs.push_back(cast(b.origin(o), dtypes::int64));
    out_names.emplace_back(name + ":invalid_origin");
  }
  return UOp::sink(outs, Arg(out_names));
}

}  // namespace ow::grad
