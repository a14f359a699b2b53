// The random graph generator of ow fuzz (see generate.h). Top-down: expr(S, D) returns a tensor
// of the static shape S and dtype D, choosing an op and generating its sources' shapes from S, so
// every graph type-checks by construction. Ranges are opened by the constructs that close them
// (REDUCE over a range, vmap pad+reduce, collecting EXPAND, END, assign scans); while a range is
// open, leaves may index or slice buffers with it.
#include "fuzz/generate.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <optional>

#include "tensor/random.h"
#include "tensor/tensor.h"
#include "uop/error.h"
#include "uop/symbolic.h"
#include "uop/text.h"
#include "uop/verify.h"

namespace ow::fuzz {

namespace {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Dims dims(const Shape& s) {
  Dims d;
  for (int64_t x : s) d.push_back(Dim(x));
  return d;
}

bool same_shape(const Tensor& t, const Shape& s) {
  if (t.uop()->shape.kind != ShapeInfo::Kind::Shaped) return false;
  std::vector<UOp> d = t.shape();
  if (d.size() != s.size()) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (d[i]->op != Ops::CONST || static_cast<int64_t>(d[i].const_value()) != s[i]) return false;
  return true;
}

bool depends_on(const Tensor& t, UOp r) {
  for (UOp f : free_ranges(t.uop()))
    if (f == r) return true;
  return false;
}

class Gen {
 public:
  Gen(uint64_t seed, const GenOptions& o, bool smooth) : o_(o), smooth_(smooth) {
    rng_.seed(seed * 0x9e3779b97f4a7c15ULL + 0x5eed);
    budget_ = 3 + static_cast<int>(pick(static_cast<uint64_t>(std::max(1, o.max_ops - 2))));
  }

  Generated run() { return smooth_ ? run_gradient() : run_values(); }

  Generated run_values() {
    int nout = 1;
    if (o_.max_outputs > 1 && chance(0.3)) nout = 2 + static_cast<int>(pick(static_cast<uint64_t>(o_.max_outputs - 1)));
    std::vector<UOp> outs;
    ArgTuple names;
    for (int i = 0; i < nout; ++i) {
      Shape s = rand_shape(3, 256);
      DType d = rand_dtype();
      int depth = 2 + static_cast<int>(pick(4));
      uint64_t k = pick(100);
      outs.push_back(output(s, d, depth, k).uop());
      names.emplace_back("out" + std::to_string(i));
    }
    return finish(UOp::sink(outs, Arg(names)));
  }

  // One output of a form chosen by k in [0, 100).
  Tensor output(const Shape& s, DType d, int depth, uint64_t k) {
    return k < 44 ? expr(s, d, depth) : k < 48 ? collect_output(s, d, depth) : k < 64 ? assign_form(s, d, depth)
         : k < 76 ? scan(s, d, depth) : k < 85 ? fold(s, d, depth) : k < 92 ? effect_in_fold(s, d, depth)
         : effect_then_expr(s, d, depth);
  }

  Generated finish(UOp root) {
    Generated g;
    g.root = root;
    std::sort(forms_.begin(), forms_.end());
    forms_.erase(std::unique(forms_.begin(), forms_.end()), forms_.end());
    g.forms = forms_;
    return g;
  }

  // A loss of one or two outputs (their sums added), its gradients with respect to up to four of
  // the buffers it reads or writes, and sometimes the gradient of a gradient.
  Generated run_gradient() {
    form("gradient");
    int nout = chance(0.25) ? 2 : 1;
    std::optional<Tensor> loss;
    for (int i = 0; i < nout; ++i) {
      Shape s = rand_shape(3, 64);
      int depth = 2 + static_cast<int>(pick(3));
      uint64_t k = pick(115);
      Tensor t = k >= 100 ? vmap_layers(s, depth) : output(s, dtypes::float64, depth, k);
      loss = nout == 1 ? t : i == 0 ? t.sum() : *loss + t.sum();
    }
    std::vector<Tensor> vars = grad_vars();
    if (chance(0.1)) {
      form("gradient-second-order");
      Tensor g(UOp::make(Ops::GRADIENT, dtypes::float64, {loss->uop(), vars[0].uop()}));
      loss = (g * g).sum();
    }
    std::vector<UOp> outs;
    ArgTuple names;
    for (const Tensor& v : vars) {
      outs.push_back(UOp::make(Ops::GRADIENT, dtypes::float64, {loss->uop(), v.uop()}));
      names.emplace_back("g" + std::to_string(names.size()));
    }
    Generated g = finish(UOp::sink(outs, Arg(names)));
    g.loss = loss->uop();
    for (const Tensor& v : vars) g.vars.push_back(v.uop());
    return g;
  }

  // Input and target buffers, at most four; a fresh input the loss does not read if there are
  // none (its gradient is zeros).
  std::vector<Tensor> grad_vars() {
    std::vector<Tensor> all = inputs_;
    all.insert(all.end(), targets_.begin(), targets_.end());
    for (size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[pick(i)]);
    if (all.size() > 4) all.erase(all.begin() + 4, all.end());
    if (all.empty()) {
      form("gradient-unused-var");
      all.push_back(buffer_view("in" + std::to_string(next_buf_++), rand_shape(2, 16), dtypes::float64));
    }
    return all;
  }

  // A multi-layer perceptron vmapped over a range (an OUTER one more often than not), as in
  // tinygrad's test_vmap_gemm_grad: row r of x through 1-3 layers h @ W.T with a smooth
  // activation, collected by pad + reduce into the rows of an (n, m) result.
  Tensor vmap_layers(const Shape& s0, int depth) {
    DType d = dtypes::float64;
    Shape s = s0.size() == 2 && s0[0] >= 1 && s0[1] >= 1 ? s0 : Shape{1 + static_cast<int64_t>(pick(4)), 1 + static_cast<int64_t>(pick(5))};
    form("vmap-layers");
    int layers = 1 + static_cast<int>(pick(3));
    int64_t in = 1 + static_cast<int64_t>(pick(6));
    Tensor x = input({s[0], in}, d);
    Tensor t = vmap(s, d, depth, 0, [&](const Shape&, const Range& R) {
      Tensor h = x.at({Dim(R.r)}).reshape(dims({1, in}));
      int64_t k = in;
      for (int l = 0; l < layers; ++l) {
        int64_t n = l == layers - 1 ? s[1] : 1 + static_cast<int64_t>(pick(6));
        h = h.matmul(input({n, k}, d).T());
        h = chance(0.5) ? Tensor(h.uop().alu(Ops::SIN, {})) : h * h * 0.25 + h;
        k = n;
      }
      return h;
    }, s[0]);
    return same_shape(t, s0) ? t : t.sum();
  }

 private:
  struct Range {
    UOp r;
    int64_t n;
  };

  Random rng_;
  GenOptions o_;
  bool smooth_;  // gradient graphs: float64, differentiable ops only (no kinks for central differences)
  int budget_;
  int next_range_ = 1, next_buf_ = 0;
  std::vector<std::string> forms_;
  std::vector<Range> scope_;         // ranges open at this point (leaves may use them)
  std::vector<Tensor> special_;      // leaves of the current effect construct (acc, prev, target)
  std::vector<Tensor> inputs_;       // input buffers, reused by shape and dtype
  std::vector<Tensor> targets_;      // buffers the effects write

  uint64_t pick(uint64_t n) { return n == 0 ? 0 : rng_.next() % n; }
  bool chance(double p) { return rng_.uniform() < p; }
  void form(const char* f) { forms_.emplace_back(f); }

  int64_t rand_dim() {
    uint64_t r = pick(100);
    if (r < 5) return 0;
    if (r < 27) return 1;
    if (r < 82) return 2 + static_cast<int64_t>(pick(4));
    return 6 + static_cast<int64_t>(pick(5));
  }

  Shape rand_shape(int max_rank, int64_t limit) {
    uint64_t r = pick(100);
    int rank = r < 10 ? 0 : r < 40 ? 1 : r < 75 ? 2 : r < 95 ? 3 : 4;
    rank = std::min(rank, max_rank);
    Shape s;
    for (int i = 0; i < rank; ++i) s.push_back(rand_dim());
    while (numel(s) > limit)
      for (int64_t& d : s) d = std::max<int64_t>(1, d / 2);
    return s;
  }

  DType rand_dtype() {
    if (smooth_) return dtypes::float64;
    uint64_t r = pick(100);
    return r < 70 ? dtypes::float32 : r < 82 ? dtypes::int32 : r < 85 ? dtypes::uint32 : r < 87 ? dtypes::uint64 : dtypes::bool_;
  }

  double rand_value(DType d) {
    if (d == dtypes::bool_) return static_cast<double>(pick(2));
    if (d.is_unsigned()) {  // small values, the max (-1 wraps), and for uint64 values past 2^32 and 2^63
      static const double v[] = {0, 1, 2, 3, 7, 8, -1, 4294967296.0 * 3, 1.0e19};
      return v[pick(chance(0.1) ? (d == dtypes::uint64 ? 9 : 7) : 6)];
    }
    if (d.is_int()) {
      static const double v[] = {0, 1, -1, 2, 3, 7, -8, 2147483647.0, -2147483648.0};
      return v[pick(chance(0.1) ? 9 : 7)];
    }
    static const double v[] = {0.0, 1.0, -1.0, 0.5, 2.0, -3.0, 3.25, -0.0, 1e30, -1e-30, INFINITY, -INFINITY, NAN};
    return v[pick(chance(0.15) && !smooth_ ? 13 : 7)];
  }

  // ---- leaves ----

  Tensor input(const Shape& s, DType d) {
    if (chance(0.35))
      for (const Tensor& t : inputs_)
        if (t.dtype() == d && same_shape(t, s)) return t;
    if (numel(s) > o_.max_elems) return Tensor::full(dims(s), rand_value(d), d);
    std::string name = "in" + std::to_string(next_buf_++);
    Tensor t = buffer_view(name, s, d);
    inputs_.push_back(t);
    return t;
  }

  static Tensor buffer_view(const std::string& name, const Shape& s, DType d) {
    UOp buf = UOp::make(Ops::BUFFER, d, {}, Arg(ArgTuple{Arg(name), Arg(numel(s))}));
    std::vector<UOp> src{buf};
    for (int64_t x : s) src.push_back(UOp::index(x));
    return Tensor(UOp::make(Ops::RESHAPE, d, src));
  }

  Tensor target(const Shape& s, DType d) {
    targets_.push_back(buffer_view("tgt" + std::to_string(next_buf_++), s, d));
    return targets_.back();
  }

  Tensor constant(const Shape& s, DType d) {
    form("const");
    return Tensor::full(dims(s), rand_value(d), d);
  }

  // An index in [0, vmax] that depends on the range.
  UOp index_expr(const Range& R) {
    UOp r = R.r;
    switch (pick(7)) {
      case 0: return simplify(UOp::index(R.n - 1) - r);
      case 1: return simplify(r + static_cast<int64_t>(pick(3)));
      case 2: return simplify(r.idiv(2));
      case 3: return simplify((r - 1).maximum(0));
      case 4: return simplify(r * 2);
      default: return r;
    }
  }

  Tensor leaf(const Shape& s, DType d, int depth = 0) {
    for (const Tensor& t : special_)
      if (t.dtype() == d && same_shape(t, s) && chance(0.5)) return t;
    if (!scope_.empty() && chance(0.55)) return range_leaf(s, d, scope_[pick(scope_.size())], depth);
    if (chance(0.15)) return constant(s, d);
    return input(s, d);
  }

  // A leaf that depends on the range: x[e(r)], x sliced [e(r), e(r)+k) on an axis, or e(r) itself.
  Tensor range_leaf(const Shape& s, DType d, const Range& R, int depth) {
    uint64_t mode = R.n == 0 ? 2 : pick(10);
    try {
      if (mode < 5 || (mode < 8 && s.empty())) {
        UOp e = index_expr(R);
        Shape big{e.vmax() + 1 + static_cast<int64_t>(pick(2))};
        big.insert(big.end(), s.begin(), s.end());
        if (numel(big) <= o_.max_elems) {
          form("index-by-range");
          Tensor src = depth > 0 && chance(0.25) && budget_ > 0 ? expr(big, d, depth - 1) : input(big, d);
          return src.at({Dim(e)});
        }
      } else if (mode < 8) {
        size_t k = pick(s.size());
        UOp e = index_expr(R);
        Shape big = s;
        big[k] = e.vmax() + s[k] + static_cast<int64_t>(pick(2));
        if (numel(big) <= o_.max_elems) {
          form("slice-by-range");
          Tensor src = depth > 0 && chance(0.25) && budget_ > 0 ? expr(big, d, depth - 1) : input(big, d);
          std::vector<std::optional<std::pair<Dim, Dim>>> b(s.size());
          b[k] = std::make_pair(Dim(e), Dim(simplify(e + s[k])));
          return src.shrink(b);
        }
      }
      form("range-value");
      UOp e = chance(0.5) ? R.r : index_expr(R);
      Tensor v(e.cast(d));
      return v.reshape(Dims(s.size(), Dim(1))).expand(dims(s));
    } catch (const Error&) {
      return input(s, d);
    }
  }

  // ---- combining ----

  // a + -a, a - a or a ^ a: the simplifier cancels these to constants, which must not lose the
  // poison of an uninitialized a, such as a target read before it is written (fuzz seed 103805)
  Tensor self_cancel(const Tensor& a) {
    form("self-cancel");
    static const Ops ops[] = {Ops::ADD, Ops::SUB, Ops::XOR};
    Ops op = ops[pick(3)];
    return Tensor(a.uop().alu(op, {op == Ops::ADD ? a.uop().neg() : a.uop()}));
  }

  Tensor combine(const Tensor& a0, const Tensor& b) {
    Tensor a = a0.dtype().is_int() && !smooth_ && chance(0.15) ? self_cancel(a0) : a0;
    Ops op = a.dtype() == dtypes::bool_ ? Ops::XOR : (chance(0.5) ? Ops::ADD : smooth_ ? Ops::MUL : Ops::MAX);
    return Tensor(a.uop().alu(op, {b.cast(a.dtype()).uop()}));
  }

  Tensor ensure_dep(Tensor t, const Shape& s, DType d, const Range& R) {
    if (depends_on(t, R.r)) return t;
    return combine(t, range_leaf(s, d, R, 0));
  }

  Range new_range(int64_t n, bool outer_bias = false) {
    static const AxisType others[] = {AxisType::GLOBAL, AxisType::WARP, AxisType::LOCAL, AxisType::GROUP_REDUCE, AxisType::UPCAST, AxisType::UNROLL, AxisType::THREAD};
    uint64_t k = pick(100);
    AxisType ax = k < (outer_bias ? 60u : 25u) ? AxisType::OUTER : k < 70 ? AxisType::LOOP : k < 82 ? AxisType::REDUCE : others[pick(7)];
    form(("axis-" + std::string(axis_name(ax))).c_str());
    return Range{UOp::range(n, -(next_range_++), ax), n};
  }

  int64_t range_extent() {
    uint64_t r = pick(100);
    return r < 3 ? 0 : r < 13 ? 1 : 2 + static_cast<int64_t>(pick(4));
  }

  // ---- expressions ----

  Tensor expr(const Shape& s, DType d, int depth) {
    if (depth <= 0 || budget_ <= 0) return leaf(s, d);
    --budget_;
    // Sources are generated by the chosen form; a form that cannot apply (a Tensor API error)
    // falls back to a leaf, so the graph stays valid.
    try {
      Tensor t = choose(s, d, depth);
      if (same_shape(t, s) && t.dtype() == d) return t;
    } catch (const Error&) {
    }
    return leaf(s, d);
  }

  Tensor choose(const Shape& s, DType d, int depth) {
    uint64_t k = pick(100);
    bool ranges_ok = depth >= 2 && scope_.size() < 3 && budget_ >= 2;
    if (k < 8) return leaf(s, d, depth);
    if (k < 20) return unary(s, d, depth);
    if (k < 40) return binary(s, d, depth);
    if (k < 46) return smooth_ && scope_.empty() ? binary(s, d, depth) : where(s, d, depth);
    if (k < 52) return smooth_ ? unary(s, d, depth) : cast(s, d, depth);
    if (k < 70) return movement(s, d, depth);
    if (k < 75) return reduce_axis(s, d, depth);
    if (k < 78) return matmul(s, d, depth);
    if (k < 81) {
      form("contiguous");
      return expr(s, d, depth - 1).contiguous();
    }
    if (ranges_ok) return range_form(s, d, depth);
    return binary(s, d, depth);
  }

  Tensor unary(const Shape& s, DType d, int depth) {
    if (d == dtypes::bool_) {
      form("not");
      return Tensor(expr(s, d, depth - 1).uop().ne(UOp::cnst(d, 1)));
    }
    Tensor x = expr(s, d, depth - 1);
    if (smooth_) return smooth_unary(x);
    if (d.is_int()) {
      form("NEG");
      return -x;
    }
    static const Ops ops[] = {Ops::NEG, Ops::RECIPROCAL, Ops::SQRT, Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::TRUNC};
    uint64_t k = pick(8);
    if (k == 7) {
      form("relu");
      return x.relu();
    }
    form(op_name(ops[k]).data());
    return Tensor(x.uop().alu(ops[k], {}));
  }

  // Differentiable everywhere: SQRT, LOG2 and RECIPROCAL of x*x + 1 > 0.
  Tensor smooth_unary(const Tensor& x) {
    static const Ops ops[] = {Ops::NEG, Ops::SIN, Ops::EXP2, Ops::SQRT, Ops::LOG2, Ops::RECIPROCAL};
    Ops op = ops[pick(6)];
    form(("smooth-" + std::string(op_name(op))).c_str());
    UOp a = op == Ops::SQRT || op == Ops::LOG2 || op == Ops::RECIPROCAL ? x.uop() * x.uop() + UOp::cnst(x.dtype(), 1) : x.uop();
    return Tensor(a.alu(op, {}));
  }

  // The second operand: same shape, a broadcast shape, or an unshaped scalar.
  UOp operand(const Shape& s, DType d, int depth, bool nonzero) {
    uint64_t k = pick(100);
    if (k < 15) {
      double v = rand_value(d);
      if (nonzero && v == 0) v = 3;
      form("scalar-operand");
      return UOp::cnst(d, v);
    }
    UOp u;
    if (k < 35 && !s.empty()) {
      Shape sb = s;
      for (int64_t& x : sb)
        if (chance(0.5)) x = 1;
      size_t drop = pick(sb.size() + 1);
      sb.erase(sb.begin(), sb.begin() + static_cast<std::ptrdiff_t>(drop));
      form("broadcast");
      u = expr(sb, d, depth - 1).expand(dims(s)).uop();
    } else {
      u = expr(s, d, depth - 1).uop();
    }
    if (!nonzero) return u;
    form("safe-divisor");
    if (chance(0.5) && !smooth_) return u.eq(UOp::cnst(d, 0)).where(UOp::cnst(d, 1), u);
    return u * u + UOp::cnst(d, 1);  // x*x+1 is never 0 mod 2^32
  }

  Tensor binary(const Shape& s, DType d, int depth) {
    if (d == dtypes::bool_ && chance(0.6)) {
      DType od = chance(0.6) ? dtypes::float32 : (chance(0.7) ? dtypes::int32 : dtypes::bool_);
      static const Ops cmps[] = {Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ};
      Ops op = cmps[pick(3)];
      form(op_name(op).data());
      UOp a = expr(s, od, depth - 1).uop();
      UOp b = operand(s, od, depth, false);
      if (chance(0.2)) std::swap(a, b);
      if (a->shape.kind != ShapeInfo::Kind::Shaped && b->shape.kind != ShapeInfo::Kind::Shaped) std::swap(a, b);
      return Tensor(a.alu(op, {b}));
    }
    Ops op;
    if (d == dtypes::bool_) {
      static const Ops ops[] = {Ops::AND, Ops::OR, Ops::XOR, Ops::ADD, Ops::MUL, Ops::MAX, Ops::CMPNE, Ops::CMPEQ};
      op = ops[pick(8)];
    } else if (d.is_int()) {
      static const Ops ops[] = {Ops::ADD, Ops::SUB, Ops::MUL, Ops::MAX, Ops::IDIV, Ops::MOD, Ops::AND, Ops::OR, Ops::XOR, Ops::THREEFRY};
      op = ops[pick(d == dtypes::uint64 ? 10 : 9)];
    } else if (smooth_) {
      static const Ops ops[] = {Ops::ADD, Ops::SUB, Ops::MUL, Ops::FDIV};
      op = ops[pick(4)];
    } else {
      static const Ops ops[] = {Ops::ADD, Ops::SUB, Ops::MUL, Ops::FDIV, Ops::MAX, Ops::ADD, Ops::MUL, Ops::POW};
      op = ops[pick(8)];
    }
    form(op_name(op).data());
    UOp a = expr(s, d, depth - 1).uop();
    UOp b = operand(s, d, depth, op == Ops::IDIV || op == Ops::MOD || (smooth_ && op == Ops::FDIV));
    if (d.is_int() && !smooth_ && chance(0.05)) return self_cancel(Tensor(a));
    if (op != Ops::IDIV && op != Ops::MOD && b->shape.kind != ShapeInfo::Kind::Shaped && chance(0.3)) std::swap(a, b);
    return Tensor(a.alu(op, {b}));
  }

  Tensor where(const Shape& s, DType d, int depth) {
    form("WHERE");
    UOp c = (chance(0.15) || smooth_) && !scope_.empty() ? scope_[pick(scope_.size())].r.eq(0) : expr(s, dtypes::bool_, depth - 1).uop();
    UOp t = expr(s, d, depth - 1).uop();
    UOp f = chance(0.2) ? UOp::cnst(d, rand_value(d)) : expr(s, d, depth - 1).uop();
    if (c->shape.kind != ShapeInfo::Kind::Shaped && f->shape.kind != ShapeInfo::Kind::Shaped && chance(0.5)) std::swap(t, f);
    return Tensor(UOp::make(Ops::WHERE, d, {c, t, f}));
  }

  // Another dtype of d's size (BITCAST's partner), or d itself when there is none.
  static DType same_size(DType d, bool second) {
    if (d == dtypes::float32) return second ? dtypes::int32 : dtypes::uint32;
    if (d == dtypes::uint32) return second ? dtypes::int32 : dtypes::float32;
    if (d == dtypes::int32) return second ? dtypes::uint32 : dtypes::float32;
    if (d == dtypes::uint64) return dtypes::float64;
    if (d == dtypes::float64) return dtypes::uint64;
    return d;
  }

  Tensor cast(const Shape& s, DType d, int depth) {
    if (!smooth_ && same_size(d, false) != d && chance(0.25)) {
      form("BITCAST");
      return expr(s, same_size(d, chance(0.5)), depth - 1).bitcast(d);
    }
    DType from = rand_dtype();
    if (from == d) from = d == dtypes::float32 ? dtypes::int32 : dtypes::float32;
    form("CAST");
    return expr(s, from, depth - 1).cast(d);
  }

  Tensor movement(const Shape& s, DType d, int depth) {
    size_t n = s.size();
    uint64_t k = pick(6);
    if (k == 0 || n == 0) {  // RESHAPE from another factorization of the same count
      form("RESHAPE");
      int64_t total = numel(s);
      Shape s2;
      if (total == 0) {
        s2 = rand_shape(3, 64);
        if (numel(s2) != 0) s2.insert(s2.begin() + static_cast<std::ptrdiff_t>(pick(s2.size() + 1)), 0);
      } else {
        int64_t rest = total;
        for (int64_t f = 2; f <= rest && s2.size() < 3;)
          if (rest % f == 0 && chance(0.6)) {
            s2.push_back(f);
            rest /= f;
          } else {
            ++f;
          }
        if (rest > 1 || s2.empty()) s2.push_back(rest);
        if (chance(0.3)) s2.insert(s2.begin() + static_cast<std::ptrdiff_t>(pick(s2.size() + 1)), 1);
        for (size_t i = s2.size(); i > 1; --i) std::swap(s2[i - 1], s2[pick(i)]);
      }
      return expr(s2, d, depth - 1).reshape(dims(s));
    }
    if (k == 1 && n >= 2) {
      form("PERMUTE");
      std::vector<int64_t> p(n);
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(i);
      for (size_t i = n - 1; i > 0; --i) std::swap(p[i], p[pick(i + 1)]);
      Shape s2(n);
      for (size_t i = 0; i < n; ++i) s2[static_cast<size_t>(p[i])] = s[i];
      return expr(s2, d, depth - 1).permute(p);
    }
    if (k == 2) {
      form("EXPAND");
      Shape s2 = s;
      for (int64_t& x : s2)
        if (chance(0.5)) x = 1;
      if (chance(0.3)) s2.erase(s2.begin(), s2.begin() + static_cast<std::ptrdiff_t>(pick(n + 1)));
      return expr(s2, d, depth - 1).expand(dims(s));
    }
    if (k == 3) {
      form("PAD");
      Shape s2 = s;
      std::vector<std::optional<std::pair<Dim, Dim>>> w(n);
      for (size_t i = 0; i < n; ++i) {
        int64_t b = static_cast<int64_t>(pick(static_cast<uint64_t>(std::min<int64_t>(s[i], 3) + 1)));
        int64_t e = static_cast<int64_t>(pick(static_cast<uint64_t>(std::min<int64_t>(s[i] - b, 3) + 1)));
        s2[i] = s[i] - b - e;
        w[i] = std::make_pair(Dim(b), Dim(e));
      }
      return expr(s2, d, depth - 1).pad(w);
    }
    if (k == 4) {
      form("SHRINK");
      Shape s2 = s;
      std::vector<std::optional<std::pair<Dim, Dim>>> b(n);
      for (size_t i = 0; i < n; ++i) {
        int64_t extra = static_cast<int64_t>(pick(4));
        if (numel(s2) > o_.max_elems / 4) extra = 0;
        int64_t lo = static_cast<int64_t>(pick(static_cast<uint64_t>(extra + 1)));
        s2[i] = s[i] + extra;
        b[i] = std::make_pair(Dim(lo), Dim(lo + s[i]));
      }
      return expr(s2, d, depth - 1).shrink(b);
    }
    form("FLIP");
    std::vector<int64_t> axes;
    for (size_t i = 0; i < n; ++i)
      if (chance(0.5)) axes.push_back(static_cast<int64_t>(i));
    if (axes.empty()) axes.push_back(static_cast<int64_t>(pick(n)));
    return expr(s, d, depth - 1).flip(axes);
  }

  Ops rand_reduce_op(bool bias_add) {
    uint64_t k = rng_.next() % 100;
    if (k < (bias_add ? 70u : 45u)) return Ops::ADD;
    return k < 85 && !smooth_ ? Ops::MAX : Ops::MUL;
  }

  Tensor reduce_axis(const Shape& s, DType d, int depth) {
    Ops op = rand_reduce_op(false);
    form(("REDUCE_AXIS-" + std::string(op_name(op))).c_str());
    Shape s2 = s;
    ArgTuple axes;
    std::vector<size_t> ones;
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] == 1) ones.push_back(i);
    bool keep = !ones.empty() && chance(0.4);
    if (keep) {
      size_t a = ones[pick(ones.size())];
      s2[a] = rand_dim();
      axes.emplace_back(static_cast<int64_t>(a));
    } else {
      int k = 1 + static_cast<int>(pick(2));
      std::vector<size_t> pos;
      for (int i = 0; i < k; ++i) {
        size_t p = pick(s2.size() + 1);
        s2.insert(s2.begin() + static_cast<std::ptrdiff_t>(p), std::min<int64_t>(rand_dim(), 6));
        for (size_t& q : pos)
          if (q >= p) ++q;
        pos.push_back(p);
      }
      std::sort(pos.begin(), pos.end());
      for (size_t p : pos) axes.emplace_back(static_cast<int64_t>(p));
    }
    if (numel(s2) > o_.max_elems) return expr(s, d, depth - 1);
    Tensor x = expr(s2, d, depth - 1);
    Tensor r(UOp::make(Ops::REDUCE_AXIS, d, {x.uop()}, Arg(ArgTuple{Arg(op), Arg(axes)})));
    return keep ? r : r.reshape(dims(s));
  }

  // x @ w with x (..., k) and w (k, n) or, as in a Linear layer, the transpose of a (n, k) one:
  // the reductions the renderer interchanges, blocks and (for tcc) hands to the axpy loops.
  Tensor matmul(const Shape& s, DType d, int depth) {
    if (s.empty() || d == dtypes::bool_) return reduce_axis(s, d, depth);
    form("matmul");
    int64_t k = std::max<int64_t>(rand_dim(), 1), n = s.back();
    Shape xs = s;
    xs.back() = k;
    if (numel(xs) * n > o_.max_elems || k * n > o_.max_elems) return expr(s, d, depth - 1);
    auto operand = [&](const Shape& os) { return chance(0.5) ? input(os, d) : expr(os, d, depth - 1); };
    Tensor x = operand(xs);
    Tensor w = chance(0.5) ? operand({k, n}) : operand({n, k}).T();
    return x.matmul(w);
  }

  // ---- range forms (pure) ----

  Tensor range_form(const Shape& s, DType d, int depth) {
    uint64_t k = pick(100);
    if (k < 35 && !s.empty()) {
      size_t ax = pick(s.size());
      if (s[ax] >= 2 && chance(0.25)) return shifted_row_vmap(s, d, depth, ax);
      if (s[ax] >= 1) return vmap(s, d, depth, ax, [&](const Shape& s1, const Range&) { return expr(s1, d, depth - 1); });
    }
    if (k < 60 && !s.empty()) {
      size_t ax = pick(s.size());
      if (s[ax] >= 1) {
        // the verifier rejects reshaping (r, ...) to a static shape unless a dim is 0, so this
        // collect survives only then; collect_output makes the others
        Tensor out = collect(s, d, depth, ax);
        return same_shape(out, s) ? out : out.reshape(dims(s));
      }
    }
    // REDUCE over one or two ranges
    Range R = new_range(range_extent());
    std::vector<UOp> rs{R.r};
    scope_.push_back(R);
    bool two = chance(0.2);
    Range R2{};
    if (two) {
      R2 = new_range(1 + static_cast<int64_t>(pick(3)));
      scope_.push_back(R2);
      rs.push_back(R2.r);
    }
    Tensor inner = ensure_dep(expr(s, d, depth - 1), s, d, R);
    if (two) {
      inner = ensure_dep(inner, s, d, R2);
      scope_.pop_back();
    }
    scope_.pop_back();
    Ops op = rand_reduce_op(false);
    form(two ? "range-reduce-2" : ("range-reduce-" + std::string(op_name(op))).c_str());
    return inner.reduce(rs, op);
  }

  // collecting EXPAND: f(x[r]) gathered along axis ax, which has the range r itself as its
  // dimension (SEMANTICS S4.1)
  Tensor collect(const Shape& s, DType d, int depth, size_t ax) {
    Range R = new_range(s[ax]);
    Shape s1 = s;
    s1.erase(s1.begin() + static_cast<std::ptrdiff_t>(ax));
    scope_.push_back(R);
    Tensor inner = ensure_dep(expr(s1, d, depth - 1), s1, d, R);
    scope_.pop_back();
    Shape one = s;
    one[ax] = 1;
    Dims to = dims(s);
    to[ax] = Dim(R.r);
    form("vmap-collect");
    return inner.reshape(dims(one)).expand(to);
  }

  // A collect as an output, as the reference cases use one: no other tensor has its range as a
  // dimension, so only unshaped operands combine with it.
  Tensor collect_output(const Shape& s, DType d, int depth) {
    size_t ax = pick(s.size());
    if (s.empty() || s[ax] == 0) return expr(s, d, depth);
    form("collect-output");
    Tensor t = collect(s, d, depth, ax);
    if (chance(0.3)) t = Tensor(t.uop().alu(d == dtypes::bool_ ? Ops::XOR : Ops::ADD, {UOp::cnst(d, rand_value(d))}));
    return chance(0.5) ? t.contiguous() : t;
  }

  // vmap by pad + reduce: REDUCE(PAD(f(r), (before + r, n - before - r - 1)), r) over m <= n
  // iterations, so the rows before + m .. n - 1 (and the first `before`) are the pad's zeros.
  // `body(s1, R)` builds f(r) of shape s1 with R open.
  template <class Body> Tensor vmap(const Shape& s, DType d, int /*depth*/, size_t ax, Body body, int64_t m = -1) {
    int64_t n = s[ax], before = 0;
    if (m < 0) m = n >= 2 && chance(0.25) ? 1 + static_cast<int64_t>(pick(static_cast<uint64_t>(n - 1))) : n;
    if (m < n) {
      form("vmap-fewer-slots");
      before = static_cast<int64_t>(pick(static_cast<uint64_t>(n - m + 1)));
    }
    Range R = new_range(m, true);
    Shape s1 = s;
    s1[ax] = 1;
    scope_.push_back(R);
    Tensor inner = ensure_dep(body(s1, R), s1, d, R);
    scope_.pop_back();
    std::vector<std::optional<std::pair<Dim, Dim>>> w(s.size());
    w[ax] = std::make_pair(Dim(simplify(R.r + before)), Dim(simplify(UOp::index(n - 1 - before) - R.r)));
    Ops op = rand_reduce_op(true);
    form(op == Ops::ADD ? "vmap-pad-reduce" : "vmap-pad-reduce-maxmul");
    return inner.pad(w).reduce({R.r}, op);
  }

  // The gradient of a scan's read of row r-1 has this shape: a vmap of m < n iterations whose
  // slot r is f(src[r + k]), src a value of m + k rows built outside the vmap (often a vmap
  // itself, so a realized one, as in tests/fuzz/lower/fuzz-repro-old-grad-segv.uop).
  Tensor shifted_row_vmap(const Shape& s, DType d, int depth, size_t ax) {
    int64_t n = s[ax], m = 1 + static_cast<int64_t>(pick(static_cast<uint64_t>(n - 1))), k = 1 + static_cast<int64_t>(pick(2));
    Shape big = s;
    big[ax] = m + k;
    if (numel(big) > o_.max_elems) return expr(s, d, depth - 1);
    form("vmap-shifted-row");
    Tensor src = chance(0.5) && depth >= 3 ? vmap(big, d, depth - 1, ax, [&](const Shape& s1, const Range&) { return expr(s1, d, depth - 2); })
                                           : expr(big, d, depth - 1);
    if (chance(0.3)) src = src.contiguous();
    return vmap(s, d, depth, ax, [&](const Shape& s1, const Range& R) {
      std::vector<std::optional<std::pair<Dim, Dim>>> b(s.size());
      b[ax] = std::make_pair(Dim(simplify(R.r + k)), Dim(simplify(R.r + k + 1)));
      Tensor row = src.shrink(b);
      return chance(0.5) ? row : combine(row, expr(s1, d, depth - 1));
    }, m);
  }

  // ---- effects (outputs only; each writes a fresh target buffer) ----

  DType effect_dtype() { return smooth_ ? dtypes::float64 : chance(0.8) ? dtypes::float32 : dtypes::int32; }

  // acc.after(i).store(op(acc.after(i), f(x[i]))).end(i), then acc.after(that)
  Tensor fold(const Shape& s, DType, int depth) {
    DType d = effect_dtype();
    Tensor acc = target(s, d);
    Range R = new_range(range_extent(), true);
    if (range_axis(R.r) == AxisType::OUTER) form("fold-outer");
    else form("fold-parallel");
    Tensor acc_i = acc.after({R.r});
    scope_.push_back(R);
    special_ = {acc_i};
    Tensor v = expr(s, d, depth);
    special_.clear();
    scope_.pop_back();
    Tensor val = chance(0.8) ? combine(acc_i, v) : v;
    Tensor st = acc_i.store(val).end({R.r});
    return acc.after({st.uop()});
  }

  // REDUCE(g(side'), i) with side' = side.after(side.store(h(side, x[i]))): the side buffer is
  // written in every iteration before the contribution reads it, or once when h does not
  // depend on i (SEMANTICS S5.4); any axis, a REDUCE folds in order whatever its axis.
  Tensor effect_in_fold(const Shape& s, DType, int depth) {
    DType d = effect_dtype();
    Tensor side = target(s, d);
    Range R = new_range(range_extent(), true);
    form(range_axis(R.r) == AxisType::OUTER ? "effect-in-fold-outer" : "effect-in-fold-other");
    scope_.push_back(R);
    special_ = {side};
    Tensor h = expr(s, d, depth - 1);
    special_.clear();
    if (chance(0.75)) h = ensure_dep(h, s, d, R);
    Tensor val = chance(0.8) ? combine(side, h) : h;
    Tensor after = side.after({side.store(val).uop()});
    special_ = {after};
    Tensor g = expr(s, d, depth - 1);
    special_.clear();
    if (!mentions(g.uop(), after.uop())) g = combine(g, after);
    scope_.pop_back();
    return g.reduce({R.r}, rand_reduce_op(false));
  }

  // out[t(i)].store(f(i == 0 ? init : out[t(i-1)], x[i])).end(i), then out.after(that)
  Tensor scan(const Shape& s, DType, int depth) {
    DType d = effect_dtype();
    int64_t n = 1 + static_cast<int64_t>(pick(5));
    Shape big{n};
    big.insert(big.end(), s.begin(), s.end());
    if (numel(big) > o_.max_elems) return expr(s, d, depth);
    Tensor out = target(big, d);
    Range R = new_range(n, true);
    form(range_axis(R.r) == AxisType::OUTER ? "scan-store-outer" : "scan-store-parallel");
    UOp i = R.r;
    bool rev = chance(0.3);
    UOp prev_i = simplify((i - 1).maximum(0));
    UOp t_idx = rev ? simplify(UOp::index(n - 1) - i) : i;
    UOp p_idx = rev ? simplify(UOp::index(n - 1) - prev_i) : prev_i;
    scope_.push_back(R);
    Tensor init = expr(s, d, 1);
    Tensor src = chance(0.5) ? out : out.after({i});
    Tensor prev(i.eq(0).where(init.uop(), src.at({Dim(p_idx)}).uop()));
    special_ = {prev};
    Tensor comp = expr(s, d, depth);
    special_.clear();
    if (!mentions(comp.uop(), prev.uop())) comp = combine(comp, prev);
    scope_.pop_back();
    Tensor st = out.at({Dim(t_idx)}).store(comp).end({i});
    return out.after({st.uop()});
  }

  Tensor assign_form(const Shape& s, DType, int depth) {
    DType d = effect_dtype();
    uint64_t k = pick(100);
    if (k < 45) {  // rows: iteration r contributes row r, reading rows r-1 (and r-2)
      int64_t n = 1 + static_cast<int64_t>(pick(5));
      Shape big{n};
      big.insert(big.end(), s.begin(), s.end());
      if (numel(big) > o_.max_elems) return expr(s, d, depth);
      Tensor tgt = target(big, d);
      Range R = new_range(n, true);
      form(range_axis(R.r) == AxisType::OUTER ? "assign-scan-rows" : "assign-rows-parallel");
      UOp r = R.r;
      scope_.push_back(R);
      std::vector<Tensor> sp;
      if (chance(0.7)) {
        Tensor init = expr(s, d, 1);
        sp.push_back(Tensor(r.eq(0).where(init.uop(), tgt.at({Dim(simplify((r - 1).maximum(0)))}).uop())));
        if (chance(0.3)) {
          form("assign-read-two-back");
          sp.push_back(Tensor(r.lt(2).where(init.uop(), tgt.at({Dim(simplify((r - 2).maximum(0)))}).uop())));
        }
      }
      special_ = sp;
      Tensor f = expr(s, d, depth);
      special_.clear();
      if (!sp.empty() && !mentions(f.uop(), sp[0].uop())) f = combine(f, sp[0]);
      f = ensure_dep(f, s, d, R);
      scope_.pop_back();
      Shape one{1};
      one.insert(one.end(), s.begin(), s.end());
      std::vector<std::optional<std::pair<Dim, Dim>>> w(big.size());
      w[0] = std::make_pair(Dim(r), Dim(simplify(UOp::index(n - 1) - r)));
      Ops op = rand_reduce_op(true);
      return Tensor(tgt.uop()).assign(f.reshape(dims(one)).pad(w).reduce({r}, op));
    }
    if (k < 65) {  // overlapping windows: iteration r contributes rows r .. r+w-1
      int64_t w = 1 + static_cast<int64_t>(pick(3)), n = 1 + static_cast<int64_t>(pick(4)), m = n + w - 1;
      Shape big{m}, win{w};
      big.insert(big.end(), s.begin(), s.end());
      win.insert(win.end(), s.begin(), s.end());
      if (numel(big) > o_.max_elems) return expr(s, d, depth);
      Tensor tgt = target(big, d);
      Range R = new_range(n, true);
      form("assign-overlap-window");
      scope_.push_back(R);
      special_ = {tgt.shrink(window_bounds(big.size(), R.r, w))};
      Tensor f = ensure_dep(expr(win, d, depth), win, d, R);
      special_.clear();
      scope_.pop_back();
      std::vector<std::optional<std::pair<Dim, Dim>>> pw(big.size());
      pw[0] = std::make_pair(Dim(R.r), Dim(simplify(UOp::index(n - 1) - R.r)));
      return Tensor(tgt.uop()).assign(f.pad(pw).reduce({R.r}, rand_reduce_op(true)));
    }
    if (k < 85) {  // whole-target contributions: every iteration adds to every element
      Tensor tgt = target(s, d);
      Range R = new_range(range_extent(), true);
      form("assign-overlap-whole");
      scope_.push_back(R);
      special_ = {tgt};
      Tensor f = ensure_dep(expr(s, d, depth), s, d, R);
      special_.clear();
      scope_.pop_back();
      return Tensor(tgt.uop()).assign(f.reduce({R.r}, rand_reduce_op(false)));
    }
    form("assign-plain");  // no range: evaluates the value (reading the old target), then writes
    Tensor tgt = target(s, d);
    special_ = {tgt};
    Tensor v = expr(s, d, depth);
    special_.clear();
    return Tensor(tgt.uop()).assign(v);
  }

  static std::vector<std::optional<std::pair<Dim, Dim>>> window_bounds(size_t n, UOp r, int64_t w) {
    std::vector<std::optional<std::pair<Dim, Dim>>> b(n);
    b[0] = std::make_pair(Dim(r), Dim(simplify(r + w)));
    return b;
  }

  // An effect whose result is then used inside a computation.
  Tensor effect_then_expr(const Shape& s, DType d, int depth) {
    form("effect-then-expr");
    Tensor e = chance(0.5) ? assign_form(s, d, depth - 1) : (chance(0.5) ? scan(s, d, depth - 1) : fold(s, d, depth - 1));
    Shape es;
    for (UOp x : e.shape()) es.push_back(static_cast<int64_t>(x.const_value()));
    if (es != s) {
      if (es.size() == s.size() + 1 && es[0] >= 1) e = e.at({Dim(static_cast<int64_t>(pick(static_cast<uint64_t>(es[0]))))});
      else return e;
    }
    special_ = {e};
    Tensor t = expr(s, e.dtype(), depth);
    special_.clear();
    if (!mentions(t.uop(), e.uop())) t = combine(t, e);
    return t.cast(d);
  }
};

}  // namespace

bool is_gradient_seed(uint64_t seed, const GenOptions& opts) {
  Random r;
  r.seed(seed ^ 0x67726164ULL);  // "grad"
  return static_cast<int>(r.next() % 100) < opts.gradient_percent;
}

Generated generate(uint64_t seed, const GenOptions& opts0) {
  bool smooth = is_gradient_seed(seed, opts0);
  GenOptions opts = opts0;
  if (smooth) opts.max_elems = std::min<int64_t>(opts.max_elems, 256), opts.max_ops = std::min(opts.max_ops, 25);
  for (int attempt = 0;; ++attempt) {
    try {
      Gen g(seed + static_cast<uint64_t>(attempt) * 0x1000193ULL, opts, smooth);
      Generated out = g.run();
      out.attempts = attempt + 1;
      if (verify(out.root).empty()) return out;
    } catch (const Error&) {
    }
    if (attempt > 50) throw Error("fuzz: the generator found no valid graph for seed " + std::to_string(seed));
  }
}

}  // namespace ow::fuzz
