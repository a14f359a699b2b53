#include "cases.h"

#include <functional>
#include <map>

#include "tensor/tensor.h"
#include "uop/error.h"

namespace ow::cases {

namespace {

using F = std::function<UOp()>;

UOp outputs(const std::vector<std::pair<std::string, Tensor>>& outs) {
  std::vector<UOp> src;
  ArgTuple names;
  for (const auto& [n, t] : outs) {
    src.push_back(t.uop());
    names.emplace_back(n);
  }
  return UOp::sink(src, Arg(names));
}

Tensor input(const std::vector<int64_t>& shape, const std::string& name) { return Tensor::empty(shape, dtypes::float32, name); }

// test_reduce: a REDUCE-typed range indexes rows; REDUCE(ADD) over it sums the columns.
UOp reduce() {
  Tensor x = input({5, 5}, "x");
  UOp a = UOp::range(5, -1, AxisType::REDUCE);
  Tensor out = x[a];
  return outputs({{"out", out.reduce({a}, Ops::ADD)}});
}

// test_simple_range / test_inner_range: a fold with AFTER/STORE/END over an OUTER range.
UOp fold(bool inner) {
  Tensor a = inner ? input({10, 10}, "a") : input({10}, "a");
  Tensor acc = inner ? input({10}, "acc0") : input({}, "acc0");
  UOp i = UOp::range(10, -100, AxisType::OUTER);
  Tensor acc_i = acc.after({i});
  UOp vi = UOp::variable("i", i.vmin(), i.vmax()).bind(i);
  Tensor ai = inner ? a.at({All{}, vi}) : a[vi];
  return outputs({{"out", acc.after({acc_i.store(acc_i + ai).end({i}).uop()})}});
}

// test_range_matmul: vec = vec @ M_i, stored in place, three times.
UOp range_matmul() {
  Tensor vec = input({1, 10}, "vec"), mats = input({3, 10, 10}, "mats");
  UOp i = UOp::range(3, -100, AxisType::OUTER);
  Tensor vec_i = vec.after({i});
  Tensor comp = vec_i.contiguous().matmul(mats[i]);
  Tensor store = vec_i.store(comp).end({i});
  return outputs({{"out", vec.after({store.uop()})}});
}

// test_uop_scan_matmul: out[i] = (i == 0 ? vec : out[i-1]) @ M_i via STORE/END.
UOp uop_scan_matmul() {
  Tensor vec = input({1, 10}, "vec"), mats = input({3, 10, 10}, "mats");
  UOp i = UOp::range(3, -100, AxisType::OUTER);
  Tensor out = input({3, 1, 10}, "out");
  Tensor phi(i.eq(0).where(vec.uop(), out[(i - 1).maximum(0)].uop()));
  Tensor comp = phi.matmul(mats[i]);
  Tensor store = out[i].store(comp).end({i});
  return outputs({{"out", out.after({store.uop()})}});
}

// test_range_plus_1 (and _transpose): a LOOP range as a dimension collects t[a] + 1.
UOp range_plus_1(bool transpose) {
  Tensor t = input({10, 10}, "t");
  UOp a = UOp::range(10, -1);
  Tensor sel = t[a] + 1.0;
  Tensor cpy = transpose ? sel.reshape({10, 1}).expand({10, a}) : sel.reshape({1, 10}).expand({a, 10});
  return outputs({{"out", cpy.contiguous()}});
}

// test_flip_range: t[9-a] collected along a is t flipped.
UOp flip_range() {
  Tensor t = input({10, 10}, "t");
  UOp a = UOp::range(10, -1);
  return outputs({{"out", t[9 - a].reshape({1, 10}).expand({a, 10}).contiguous()}});
}

// test_vmap: f(x) = x.sum(0) * 2 mapped over the first axis.
UOp vmap() {
  Tensor x = input({3, 10, 2}, "x");
  UOp a = UOp::range(3, -1);
  Tensor out = (x[a].sum(std::vector<int64_t>{0}) * 2.0).reshape({1, 2}).expand({a, 2}).contiguous();
  return outputs({{"out", out}});
}

// test_fancy_vmap: x[:, a] + y[a, :] collected along a.
UOp fancy_vmap() {
  Tensor x = input({3, 3}, "x"), y = input({3, 3}, "y");
  UOp a = UOp::range(3, -1);
  Tensor out = (x.at({All{}, a}) + y.at({a, All{}})).reshape({1, 3}).expand({a, 3}).contiguous();
  return outputs({{"out", out}});
}

// test_vmap_inner: x @ mats[a] with mats marked by REDUCE_BACKWARD, padded to row a and
// reduced over a; optionally *2 and with gradients of out.mean().
UOp vmap_inner(AxisType axis, bool fuse, bool grad) {
  Tensor x = input({1, 10}, "x"), mats = input({3, 10, 10}, "mats");
  if (grad) {
    x.requires_grad();
    mats.requires_grad();
  }
  UOp a = UOp::range(3, -1, axis);
  Tensor out = x.matmul(mats.reduce_backward({a}, Ops::ADD)[a]);
  out = out.reshape({1, 10}).pad({std::make_pair(Dim(a), Dim(3 - a - 1)), std::nullopt});
  out = out.reduce({a}, Ops::ADD);
  if (fuse) out = out * 2.0;
  if (!grad) return outputs({{"out", out}});
  out.mean().backward();
  return outputs({{"out", out}, {"mats_grad", *mats.grad()}, {"x_grad", *x.grad()}});
}

// test_vmap_convs / test_vmap_gemm / the large MLP: layers applied to img[a:a+1] per OUTER
// iteration, padded back to row a and reduced over a.
UOp vmap_layers(const std::vector<int64_t>& img_shape, const std::vector<std::function<Tensor(const Tensor&)>>& layers) {
  Tensor img = input(img_shape, "img");
  int64_t n = img_shape[0];
  UOp a = UOp::range(n, -1, AxisType::OUTER);
  Tensor out = img.at({Slice{Dim(a), Dim(a + 1)}}).sequential(layers);
  std::vector<std::optional<std::pair<Dim, Dim>>> widths(out.ndim());
  widths[0] = std::make_pair(Dim(a), Dim(n - a - 1));
  return outputs({{"out", out.pad(widths).reduce({a}, Ops::ADD)}});
}

UOp vmap_convs() {
  Tensor w1 = input({8, 1, 3, 3}, "w1"), b1 = input({8}, "b1"), w2 = input({8, 8, 3, 3}, "w2"), b2 = input({8}, "b2");
  return vmap_layers({4, 1, 16, 16}, {[=](const Tensor& x) { return x.conv2d(w1, b1); }, [](const Tensor& x) { return x.relu(); },
                                      [=](const Tensor& x) { return x.conv2d(w2, b2); }, [](const Tensor& x) { return x.relu(); }});
}

UOp vmap_mlp(int64_t rows, int64_t width) {
  Tensor w1 = input({width, width}, "w1"), w2 = input({width, width}, "w2");
  return vmap_layers({rows, width}, {[=](const Tensor& x) { return x.linear(w1.T()); }, [](const Tensor& x) { return x.relu(); },
                                     [=](const Tensor& x) { return x.linear(w2.T()); }, [](const Tensor& x) { return x.relu(); }});
}

// test_vmap_gemm_grad (tinygrad: skipped as "broken"): gradients of the vmapped MLP's mean with
// respect to both weights; the true derivative sums every OUTER iteration's contribution.
UOp vmap_gemm_grad() {
  Tensor w1 = input({16, 16}, "w1"), w2 = input({16, 16}, "w2");
  w1.requires_grad();
  w2.requires_grad();
  UOp out = vmap_layers({4, 16}, {[=](const Tensor& x) { return x.linear(w1.T()); }, [](const Tensor& x) { return x.relu(); },
                                  [=](const Tensor& x) { return x.linear(w2.T()); }, [](const Tensor& x) { return x.relu(); }});
  Tensor o(out->src[0]);
  o.mean().backward();
  return outputs({{"out", o}, {"w1_grad", *w1.grad()}, {"w2_grad", *w2.grad()}});
}

// tinygrad's test_outerworld_range, test_model_bound_range, made to work: a whole SGD training
// loop in one graph. Step i computes the loss of batch X[i] with the weights W0 holds, its
// gradient, and the update, inside one range: OUTER, each step sees the previous step's weights
// (sgd_baseline); LOOP (tinygrad's default), every step reads the initial weights and the last
// write wins (sgd_snapshot: data-parallel steps).
UOp sgd(AxisType axis) {
  Tensor X = input({5, 20, 64}, "X"), Y = input({5, 20, 8}, "Y"), W = input({8, 64}, "W0");
  nn::SGD opt({W}, 0.1);
  UOp rng = UOp::range(5, -1, axis);
  UOp vib = UOp::variable("i", 0, 4).bind(rng);
  Tensor loss = (X[vib].linear(W.T()) - Y[vib]).square().mean();
  loss.backward();
  Tensor losses = input({5}, "losses");
  losses.setitem({vib}, loss);
  std::vector<Tensor> params = opt.schedule_step();
  return Tensor::graph({{"losses", losses}, {"W_final", params[0]}});
}

const std::map<std::string, F>& table() {
  static const std::map<std::string, F> t = {
      {"reduce", reduce},
      {"simple_range", [] { return fold(false); }},
      {"inner_range", [] { return fold(true); }},
      {"range_matmul", range_matmul},
      {"uop_scan_matmul", uop_scan_matmul},
      {"scan_with_assign", [] { return scan_with_assign(3, 10); }},
      {"range_plus_1", [] { return range_plus_1(false); }},
      {"range_plus_1_transpose", [] { return range_plus_1(true); }},
      {"flip_range", flip_range},
      {"vmap", vmap},
      {"fancy_vmap", fancy_vmap},
      {"vmap_inner_loop", [] { return vmap_inner(AxisType::LOOP, false, false); }},
      {"vmap_inner_loop_fuse", [] { return vmap_inner(AxisType::LOOP, true, false); }},
      {"vmap_inner_loop_grad", [] { return vmap_inner(AxisType::LOOP, false, true); }},
      {"vmap_inner_loop_fuse_grad", [] { return vmap_inner(AxisType::LOOP, true, true); }},
      {"vmap_inner_outer", [] { return vmap_inner(AxisType::OUTER, false, false); }},
      {"vmap_inner_outer_fuse", [] { return vmap_inner(AxisType::OUTER, true, false); }},
      {"vmap_inner_outer_grad", [] { return vmap_inner(AxisType::OUTER, false, true); }},
      {"vmap_inner_outer_fuse_grad", [] { return vmap_inner(AxisType::OUTER, true, true); }},
      {"vmap_convs", vmap_convs},
      {"vmap_gemm", [] { return vmap_mlp(4, 16); }},
      {"vmap_gemm_grad", vmap_gemm_grad},
      {"sgd_baseline", [] { return sgd(AxisType::OUTER); }},
      {"sgd_snapshot", [] { return sgd(AxisType::LOOP); }},
      {"scan_big_64x128", [] { return scan_with_assign(64, 128); }},
      {"scan_big_16x256", [] { return scan_with_assign(16, 256); }},
      {"vmap_mlp_32x128", [] { return vmap_mlp(32, 128); }},
  };
  return t;
}

}  // namespace

// (cases.h) test_scan_with_assign (the seed): the same scan as the assign of an OUTER-range REDUCE.
UOp scan_with_assign(int64_t n, int64_t d, AxisType axis) {
  Tensor vec = input({1, d}, "vec"), mats = input({n, d, d}, "mats");
  UOp a = UOp::range(n, -1, axis);
  Tensor buf_out = input({n, 1, d}, "out");
  Tensor phi(a.eq(0).where(vec.uop(), buf_out[(a - 1).maximum(0)].uop()));
  Tensor out = phi.matmul(mats.reduce_backward({a}, Ops::ADD)[a]);
  out = out.reshape({1, 1, d}).pad({std::make_pair(Dim(a), Dim(n - a - 1)), std::nullopt, std::nullopt});
  out = out.reduce({a}, Ops::ADD);
  return outputs({{"out", buf_out.assign(out)}});
}

// (cases.h)
std::string axpb_text(int64_t n) {
  std::string size = std::to_string(n);
  return "%0 = BUFFER float32 () (\"a\", " + size + ")\n"
         "%1 = BUFFER float32 () (\"b\", " + size + ")\n"
         "%2 = MUL float32 (%0, %1)\n"
         "%3 = CONST float32 () 1.0\n"
         "%4 = ADD float32 (%2, %3)\n"
         "%5 = SINK void (%4) (\"c\",)\n";
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const auto& [n, f] : table()) out.push_back(n);
  return out;
}

UOp build(const std::string& name) {
  auto it = table().find(name);
  if (it == table().end()) throw Error("no reference case named '" + name + "'");
  return it->second();
}

}  // namespace ow::cases
