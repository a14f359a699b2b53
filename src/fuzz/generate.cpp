// The random graph generator of ow fuzz (see generate.h). Top-down: expr(S, D) returns a tensor
// of the static shape S and dtype D, choosing an op and generating its sources' shapes from S, so
// every graph type-checks by construction. Ranges are opened by the constructs that close them
// (REDUCE over a range, vmap pad+reduce, collecting EXPAND, END, assign scans); while a range is
// open, leaves may index or slice buffers with it.
#include "fuzz/generate.h"

#include "fuzz/gen.h"

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

namespace detail {

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

Gen::Gen(uint64_t seed, const GenOptions& o, bool smooth)
    : o_(o), smooth_(smooth) {
  rng_.seed(seed * 0x9e3779b97f4a7c15ULL + 0x5eed);
  budget_ = 3 + static_cast<int>(pick(static_cast<uint64_t>(std::max(1, o.max_ops - 2))));
}

Generated Gen::run() {
return smooth_ ? run_gradient() : run_values();
}

Generated Gen::run_values() {
  int nout = 1;
  if (o_.max_outputs > 1 && chance(0.3)) nout = 2 + static_cast<int>(pick(static_cast<uint64_t>(o_.max_outputs - 1)));
  std::vector<UOp> outs;
  ArgTuple names;
  for (int i = 0; i < nout; ++i) {
    Shape s = rand_shape(3, 256);
    DType d = rand_dtype();
    int depth = 2 + static_cast<int>(pick(4));
    uint64_t k = pick(100);
    outs.push_back(k < 3 ? wide_transpose(d, depth).uop() : output(s, d, depth, k).uop());
    names.emplace_back("out" + std::to_string(i));
  }
  return finish(UOp::sink(outs, Arg(names)));
}

Tensor Gen::output(const Shape& s, DType d, int depth, uint64_t k) {
  return k < 44 ? expr(s, d, depth) : k < 48 ? collect_output(s, d, depth) : k < 64 ? assign_form(s, d, depth)
       : k < 76 ? scan(s, d, depth) : k < 85 ? fold(s, d, depth) : k < 92 ? effect_in_fold(s, d, depth)
       : effect_then_expr(s, d, depth);
}

Generated Gen::finish(UOp root) {
  Generated g;
  g.root = root;
  std::sort(forms_.begin(), forms_.end());
  forms_.erase(std::unique(forms_.begin(), forms_.end()), forms_.end());
  g.forms = forms_;
  return g;
}

Generated Gen::run_gradient() {
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

std::vector<Tensor> Gen::grad_vars() {
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

Tensor Gen::vmap_layers(const Shape& s0, int depth) {
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

uint64_t Gen::pick(uint64_t n) {
return n == 0 ? 0 : rng_.next() % n;
}

bool Gen::chance(double p) {
return rng_.uniform() < p;
}

void Gen::form(const char* f) {
forms_.emplace_back(f);
}

int64_t Gen::rand_dim() {
  uint64_t r = pick(100);
  if (r < 5) return 0;
  if (r < 27) return 1;
  if (r < 82) return 2 + static_cast<int64_t>(pick(4));
  return 6 + static_cast<int64_t>(pick(5));
}

Shape Gen::rand_shape(int max_rank, int64_t limit) {
  uint64_t r = pick(100);
  int rank = r < 10 ? 0 : r < 40 ? 1 : r < 75 ? 2 : r < 95 ? 3 : 4;
  rank = std::min(rank, max_rank);
  Shape s;
  for (int i = 0; i < rank; ++i) s.push_back(rand_dim());
  while (numel(s) > limit)
    for (int64_t& d : s) d = std::max<int64_t>(1, d / 2);
  return s;
}

DType Gen::rand_dtype() {
  if (smooth_) return dtypes::float64;
  uint64_t r = pick(100);
  if (r >= 84) {  // the narrow dtypes, 2% each: wrap-around in int arithmetic, one rounding per op
    static const DType narrow[] = {dtypes::int8, dtypes::uint8, dtypes::int16, dtypes::uint16, dtypes::float16, dtypes::bfloat16, dtypes::fp8e4m3, dtypes::fp8e5m2};
    return narrow[(r - 84) / 2];
  }
  return r < 62 ? dtypes::float32 : r < 72 ? dtypes::int32 : r < 75 ? dtypes::uint32 : r < 77 ? dtypes::uint64 : dtypes::bool_;
}

double Gen::rand_value(DType d) {
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

Tensor Gen::input(const Shape& s, DType d) {
  if (chance(0.35))
    for (const Tensor& t : inputs_)
      if (t.dtype() == d && same_shape(t, s)) return t;
  if (numel(s) > o_.max_elems) return Tensor::full(dims(s), rand_value(d), d);
  std::string name = "in" + std::to_string(next_buf_++);
  Tensor t = buffer_view(name, s, d);
  inputs_.push_back(t);
  return t;
}

Tensor Gen::buffer_view(const std::string& name, const Shape& s, DType d) {
  UOp buf = UOp::make(Ops::BUFFER, d, {}, Arg(ArgTuple{Arg(name), Arg(numel(s))}));
  std::vector<UOp> src{buf};
  for (int64_t x : s) src.push_back(UOp::index(x));
  return Tensor(UOp::make(Ops::RESHAPE, d, src));
}

Tensor Gen::target(const Shape& s, DType d) {
  targets_.push_back(buffer_view("tgt" + std::to_string(next_buf_++), s, d));
  return targets_.back();
}

Tensor Gen::constant(const Shape& s, DType d) {
  form("const");
  return Tensor::full(dims(s), rand_value(d), d);
}

UOp Gen::index_expr(const Range& R) {
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

Tensor Gen::leaf(const Shape& s, DType d, int depth) {
  for (const Tensor& t : special_)
    if (t.dtype() == d && same_shape(t, s) && chance(0.5)) return t;
  if (!scope_.empty() && chance(0.55)) return range_leaf(s, d, scope_[pick(scope_.size())], depth);
  if (chance(0.15)) return constant(s, d);
  return input(s, d);
}

Tensor Gen::range_leaf(const Shape& s, DType d, const Range& R, int depth) {
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
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error&) {
    return input(s, d);
  }
}

Tensor Gen::self_cancel(const Tensor& a) {
  form("self-cancel");
  static const Ops ops[] = {Ops::ADD, Ops::SUB, Ops::XOR};
  Ops op = ops[pick(3)];
  return Tensor(a.uop().alu(op, {op == Ops::ADD ? a.uop().neg() : a.uop()}));
}

Tensor Gen::combine(const Tensor& a0, const Tensor& b) {
  Tensor a = a0.dtype().is_int() && !smooth_ && chance(0.15) ? self_cancel(a0) : a0;
  Ops op = a.dtype() == dtypes::bool_ ? Ops::XOR : (chance(0.5) ? Ops::ADD : smooth_ ? Ops::MUL : Ops::MAX);
  return Tensor(a.uop().alu(op, {b.cast(a.dtype()).uop()}));
}

Tensor Gen::ensure_dep(Tensor t, const Shape& s, DType d, const Range& R) {
  if (has_free_range(t.uop(), R.r)) return t;
  return combine(t, range_leaf(s, d, R, 0));
}

Gen::Range Gen::new_range(int64_t n, bool outer_bias) {
  static const AxisType others[] = {AxisType::GLOBAL, AxisType::WARP, AxisType::LOCAL, AxisType::GROUP_REDUCE, AxisType::UPCAST, AxisType::UNROLL, AxisType::THREAD};
  uint64_t k = pick(100);
  AxisType ax = k < (outer_bias ? 60u : 25u) ? AxisType::OUTER : k < 70 ? AxisType::LOOP : k < 82 ? AxisType::REDUCE : others[pick(7)];
  form(("axis-" + std::string(axis_name(ax))).c_str());
  return Range{UOp::range(n, -(next_range_++), ax), n};
}

int64_t Gen::range_extent() {
  uint64_t r = pick(100);
  return r < 3 ? 0 : r < 13 ? 1 : 2 + static_cast<int64_t>(pick(4));
}

Tensor Gen::expr(const Shape& s, DType d, int depth) {
  if (depth <= 0 || budget_ <= 0) return leaf(s, d);
  --budget_;
  // Sources are generated by the chosen form; a form that cannot apply (a Tensor API error)
  // falls back to a leaf, so the graph stays valid.
  try {
    Tensor t = choose(s, d, depth);
    if (same_shape(t, s) && t.dtype() == d) return t;
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error&) {
  }
  return leaf(s, d);
}

Tensor Gen::choose(const Shape& s, DType d, int depth) {
  uint64_t k = pick(100);
  bool ranges_ok = depth >= 2 && scope_.size() < 3 && budget_ >= 2;
  if (k < 8) return leaf(s, d, depth);
  if (k < 20) return unary(s, d, depth);
  if (k < 40) return binary(s, d, depth);
  if (k < 46) return smooth_ && scope_.empty() ? binary(s, d, depth) : where(s, d, depth);
  if (k < 52) return smooth_ ? unary(s, d, depth) : cast(s, d, depth);
  if (k < 70) return movement(s, d, depth);
  if (k < 73) return reduce_axis(s, d, depth);
  if (k < 75) return cumsum_window(s, d, depth);
  if (k < 78) return matmul(s, d, depth);
  if (k < 81) {
    form("contiguous");
    return expr(s, d, depth - 1).contiguous();
  }
  if (ranges_ok) return range_form(s, d, depth);
  return binary(s, d, depth);
}

}  // namespace detail

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
      detail::Gen g(seed + static_cast<uint64_t>(attempt) * 0x1000193ULL, opts, smooth);
      Generated out = g.run();
      out.attempts = attempt + 1;
      if (verify(out.root).empty()) return out;
    } catch (const InternalError&) {
      throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
    } catch (const Error&) {
    }
    if (attempt > 50) throw Error("fuzz: the generator found no valid graph for seed " + std::to_string(seed));
  }
}

}  // namespace ow::fuzz
