// The interpreter's semantics, through the Tensor API: every tinygrad outerworld test ported
// line for line (with tinygrad's own expected values), the extra rules of SEMANTICS.md, and
// each diagnostic. Rule numbers in brackets cite reference/SEMANTICS.md.
#include <catch2/catch.hpp>

#include "test_support.h"

#include <cmath>
#include <cstring>

#include "interp/budget.h"
#include "interp/compare.h"
#include "interp/inputs.h"
#include "tensor/tensor.h"
#include "uop/error.h"
#include "uop/text.h"

using namespace ow;
using ow::test::error_of;

namespace {

std::vector<float> vals(Tensor t) { return t.tolist(); }

void check_all(Tensor t, float want, float tol = 0) {
  for (float v : vals(t)) CHECK(std::fabs(v - want) <= tol);
}

void check_close(Tensor got, Tensor want, float atol = 1e-6f) {
  std::vector<float> g = vals(got), w = vals(want);
  REQUIRE(g.size() == w.size());
  for (size_t i = 0; i < g.size(); ++i) CHECK(std::fabs(g[i] - w[i]) <= atol + 1e-5f * std::fabs(w[i]));
}

struct Scan {
  Tensor vec, mats, ref;
};

// tinygrad's _test_scan: three chained vector-matrix products and their stack.
Scan make_scan() {
  Tensor vec = Tensor::randn({1, 10}), mats = Tensor::randn({3, 10, 10});
  Tensor vec1 = vec.matmul(mats[0]);
  Tensor vec2 = vec1.matmul(mats[1]);
  Tensor vec3 = vec2.matmul(mats[2]);
  Tensor ref = Tensor::stack({vec1, vec2, vec3});
  ref.realize();
  return {vec, mats, ref};
}

// The seed's scan with assign, with a configurable axis type and target.
Tensor scan_graph(const Scan& s, AxisType axis, Tensor buf_out, bool with_assign = true) {
  UOp a = UOp::range(3, -1, axis);
  Tensor phi(a.eq(0).where(s.vec.uop(), buf_out[(a - 1).maximum(0)].uop()));
  Tensor out = phi.matmul(s.mats.reduce_backward({a}, Ops::ADD)[a]);
  out = out.reshape({1, 1, 10}).pad({std::make_pair(Dim(a), Dim(3 - a - 1)), std::nullopt, std::nullopt});
  out = out.reduce({a}, Ops::ADD);
  return with_assign ? buf_out.assign(out) : out;
}

}  // namespace

// ---------------- tinygrad's tests, ported ----------------

TEST_CASE("test_reduce: REDUCE(ADD) over a REDUCE range folds the rows [S3.1]") {
  Tensor x = Tensor::ones({5, 5}).contiguous();
  UOp a = UOp::range(5, -1, AxisType::REDUCE);
  Tensor out = x[a];
  Tensor t(UOp::make(Ops::REDUCE, out.dtype(), {out.uop(), a}, Arg(Ops::ADD)));
  CHECK(vals(t) == std::vector<float>{5, 5, 5, 5, 5});
}

TEST_CASE("test_simple_range: a fold with after/store/end over an OUTER range [S5.2]") {
  Tensor a = Tensor::ones({10}).contiguous();
  Tensor acc = Tensor::zeros({}).contiguous();
  Tensor::realize_all({&a, &acc});
  UOp i = UOp::range(10, -100, AxisType::OUTER);
  Tensor acc_i = acc.after({i});
  UOp vi = UOp::variable("i", i.vmin(), i.vmax()).bind(i);
  Tensor out = acc.after({acc_i.store(acc_i + a[vi]).end({i}).uop()});
  CHECK(out.item() == 10.0f);
}

TEST_CASE("test_inner_range: the fold adds a column per step [S5.2]") {
  Tensor a = Tensor::ones({10, 10}).contiguous();
  Tensor acc = Tensor::zeros({10}).contiguous();
  Tensor::realize_all({&a, &acc});
  UOp i = UOp::range(10, -100, AxisType::OUTER);
  Tensor acc_i = acc.after({i});
  UOp vi = UOp::variable("i", i.vmin(), i.vmax()).bind(i);
  Tensor out = acc.after({acc_i.store(acc_i + a.at({All{}, vi})).end({i}).uop()});
  check_all(out, 10.0f);
}

TEST_CASE("test_range_matmul: three matmuls stored back in place [S5.2]") {
  Tensor vec = Tensor::randn({1, 10}), mats = Tensor::randn({3, 10, 10});
  Tensor ref = vec.matmul(mats[0]).matmul(mats[1]).matmul(mats[2]);
  ref.realize();
  UOp i = UOp::range(3, -100, AxisType::OUTER);
  Tensor vec_i = vec.after({i});
  Tensor comp = vec_i.contiguous().matmul(mats[i]);
  Tensor store = vec_i.store(comp).end({i});
  Tensor out = vec.after({store.uop()});
  check_close(out, ref);
}

TEST_CASE("test_uop_scan_matmul: a scan with store/end into an empty buffer [S5.2, S7.2]") {
  Scan s = make_scan();
  UOp i = UOp::range(3, -100, AxisType::OUTER);
  Tensor out = Tensor::empty({3, 1, 10});
  Tensor phi(i.eq(0).where(s.vec.uop(), out[(i - 1).maximum(0)].uop()));
  Tensor comp = phi.matmul(s.mats[i]);
  Tensor store = out[i].store(comp).end({i});
  check_close(out.after({store.uop()}), s.ref);
}

TEST_CASE("test_scan_with_assign: the seed's scan gives the prefix products [S6.1]") {
  Scan s = make_scan();
  Tensor out = scan_graph(s, AxisType::OUTER, Tensor::empty({3, 1, 10}));
  check_close(out, s.ref);
}

TEST_CASE("test_range_plus_1: a LOOP range as a dimension collects t[a] + 1 [S4.1]") {
  Tensor t = Tensor::arange(100).reshape({10, 10});
  t.realize();
  UOp a = UOp::range(10, -1);
  Tensor sel = t[a] + 1.0;
  CHECK(sel.static_shape() == std::vector<int64_t>{10});
  Tensor cpy = sel.reshape({1, 10}).expand({a, 10}).contiguous();
  check_close(cpy, t + 1.0, 0);
}

TEST_CASE("test_range_plus_1_transpose: collecting along the second axis transposes [S4.1]") {
  Tensor t = Tensor::arange(100).reshape({10, 10});
  t.realize();
  UOp a = UOp::range(10, -1);
  Tensor cpy = (t[a] + 1.0).reshape({10, 1}).expand({10, a}).contiguous();
  check_close(cpy, (t + 1.0).T(), 0);
}

TEST_CASE("test_flip_range: t[9-a] collected along a is t flipped [S4.1]") {
  Tensor t = Tensor::rand({10, 10});
  UOp a = UOp::range(10, -1);
  Tensor cpy = t[9 - a].reshape({1, 10}).expand({a, 10}).contiguous();
  check_close(cpy, t.flip({0}), 0);
}

TEST_CASE("test_vmap: x.sum(0)*2 mapped over a range is a 3x2 grid of 20 [S4.1]") {
  Tensor x = Tensor::ones({3, 10, 2}).contiguous();
  UOp a = UOp::range(3, -1);
  Tensor out = (x[a].sum(std::vector<int64_t>{0}) * 2.0).reshape({1, 2}).expand({a, 2}).contiguous();
  CHECK(out.static_shape() == std::vector<int64_t>{3, 2});
  check_all(out, 20.0f);
}

TEST_CASE("test_fancy_vmap: x[:, a] + y[a, :] [S4.1]") {
  Tensor x = Tensor::arange(9).reshape({3, 3}).contiguous(), y = Tensor::arange(9).reshape({3, 3}).contiguous();
  UOp a = UOp::range(3, -1);
  Tensor out = (x.at({All{}, a}) + y.at({a, All{}})).reshape({1, 3}).expand({a, 3}).contiguous();
  CHECK(vals(out) == std::vector<float>{0, 4, 8, 4, 8, 12, 8, 12, 16});
}

TEST_CASE("test_vmap_inner: LOOP and OUTER, plain and fused, with and without grad [S3.3, S9.1, S9.2]") {
  for (AxisType axis : {AxisType::LOOP, AxisType::OUTER})
    for (bool fuse : {false, true})
      for (bool grad : {false, true}) {
        DYNAMIC_SECTION("axis " << (axis == AxisType::LOOP ? "LOOP" : "OUTER") << " fuse " << fuse << " grad " << grad) {
          Tensor x = Tensor::ones({1, 10}).contiguous();
          Tensor mats = Tensor::ones({3, 10, 10}).contiguous();
          x.requires_grad();
          mats.requires_grad();
          Tensor ref = x.matmul(mats);
          if (fuse) ref = ref * 2.0;
          UOp a = UOp::range(3, -1, axis);
          Tensor out = x.matmul(mats.reduce_backward({a}, Ops::ADD)[a]);
          out = out.reshape({1, 10}).pad({std::make_pair(Dim(a), Dim(3 - a - 1)), std::nullopt});
          out = out.reduce({a}, Ops::ADD);
          if (fuse) out = out * 2.0;
          double s = fuse ? 2.0 : 1.0;
          if (grad) {
            out.mean().backward();
            check_all(*mats.grad(), static_cast<float>(s / 30), 1e-7f);
            // the true derivative: each of the 3 bindings contributes s/30 * 10 (tinygrad keeps only a=0)
            check_all(*x.grad(), static_cast<float>(s), 1e-6f);
          }
          check_close(out, ref.reshape({3, 10}));
        }
      }
}

TEST_CASE("test_vmap_convs: conv layers per OUTER iteration equal the batched network [S4.2]") {
  nn::Conv2d c1(1, 8, 3), c2(8, 8, 3);
  std::vector<std::function<Tensor(const Tensor&)>> layers = {c1, [](const Tensor& t) { return t.relu(); }, c2, [](const Tensor& t) { return t.relu(); }};
  Tensor img = Tensor::randn({4, 1, 16, 16});
  UOp a = UOp::range(4, -1, AxisType::OUTER);
  Tensor out = img.at({Slice{Dim(a), Dim(a + 1)}}).sequential(layers);
  out = out.pad({std::make_pair(Dim(a), Dim(4 - a - 1)), std::nullopt, std::nullopt, std::nullopt}).reduce({a}, Ops::ADD);
  check_close(out, img.sequential(layers));
}

TEST_CASE("test_vmap_gemm: linear layers per OUTER iteration equal the batched network [S4.2]") {
  nn::Linear l1(16, 16, false), l2(16, 16, false);
  std::vector<std::function<Tensor(const Tensor&)>> layers = {l1, [](const Tensor& t) { return t.relu(); }, l2, [](const Tensor& t) { return t.relu(); }};
  Tensor img = Tensor::randn({4, 16});
  UOp a = UOp::range(4, -1, AxisType::OUTER);
  Tensor out = img.at({Slice{Dim(a), Dim(a + 1)}}).sequential(layers);
  out = out.pad({std::make_pair(Dim(a), Dim(4 - a - 1)), std::nullopt}).reduce({a}, Ops::ADD);
  check_close(out, img.sequential(layers));
}

// ---------------- rules beyond the seed ----------------

TEST_CASE("the seed's scan with a LOOP range reads the old buffer: old[k-1] @ M_k [S5.3, S6.2]") {
  Scan s = make_scan();
  Tensor old = Tensor::randn({3, 1, 10});
  std::vector<float> before = vals(old);
  Tensor out = scan_graph(s, AxisType::LOOP, old);
  std::vector<float> got = vals(out);
  std::vector<float> ref = vals(s.ref);
  for (int j = 0; j < 10; ++j) CHECK(std::fabs(got[j] - ref[j]) < 1e-5f);  // row 0 = vec @ M0
  for (int k = 1; k < 3; ++k) {
    Tensor prev(std::vector<float>(before.begin() + (k - 1) * 10, before.begin() + k * 10), {1, 10});
    std::vector<float> want = vals(prev.matmul(s.mats[k]));
    for (int j = 0; j < 10; ++j) CHECK(std::fabs(got[k * 10 + j] - want[j]) < 1e-5f);
  }
}

TEST_CASE("with a LOOP range and an empty buffer, rows read uninitialized memory: an error [S7.3]") {
  Scan s = make_scan();
  Tensor out = scan_graph(s, AxisType::LOOP, Tensor::empty({3, 1, 10}));
  CHECK_THAT(error_of([&] { out.realize(); }), Catch::Contains("uninitialized"));
}

TEST_CASE("the seed's scan without assign is a map over the old buffer [S6.2]") {
  Scan s = make_scan();
  Tensor old = Tensor::randn({3, 1, 10});
  std::vector<float> before = vals(old);
  Tensor out = scan_graph(s, AxisType::OUTER, old, false);
  std::vector<float> got = vals(out), ref = vals(s.ref);
  for (int j = 0; j < 10; ++j) CHECK(std::fabs(got[j] - ref[j]) < 1e-5f);
  Tensor prev(std::vector<float>(before.begin() + 10, before.begin() + 20), {1, 10});
  std::vector<float> want = vals(prev.matmul(s.mats[2]));
  for (int j = 0; j < 10; ++j) CHECK(std::fabs(got[20 + j] - want[j]) < 1e-5f);
  CHECK(vals(old) == before);  // nothing was written
}

TEST_CASE("REDUCE(MAX) over a range takes the column maximum [S3.1]") {
  Tensor x({1, -2, 3, 4, 5, -6, -7, 8, 0}, {3, 3});
  UOp a = UOp::range(3, -1, AxisType::REDUCE);
  CHECK(vals(x[a].reduce({a}, Ops::MAX)) == std::vector<float>{4, 8, 3});
  CHECK(vals(x[a].reduce({a}, Ops::MUL)) == std::vector<float>{-28, -80, 0});
}

TEST_CASE("an assign scan may read two steps back: Fibonacci [S6.1]") {
  Tensor seed({1, 1, 0, 0, 0, 0, 0, 0}, {8});
  Tensor fib = Tensor::empty({8});
  UOp a = UOp::range(8, -1, AxisType::OUTER);
  Tensor prev1 = fib[(a - 1).maximum(0)], prev2 = fib[(a - 2).maximum(0)];
  Tensor step(a.lt(2).where(seed[a].uop(), (prev1 + prev2).uop()));
  Tensor contrib = step.reshape({1}).pad({std::make_pair(Dim(a), Dim(8 - a - 1))}).reduce({a}, Ops::ADD);
  CHECK(vals(fib.assign(contrib)) == std::vector<float>{1, 1, 2, 3, 5, 8, 13, 21});
}

TEST_CASE("overlapping scan contributions: reads see the partial fold [S6.1]") {
  // Each of 3 OUTER iterations contributes target + 1 over the whole target (no pad), so
  // iteration k reads the sum of the earlier contributions: 1, then 1+2, then final 1+2+4.
  Tensor t = Tensor::zeros({2}).contiguous();
  t.realize();
  UOp a = UOp::range(3, -1, AxisType::OUTER);
  Tensor c = (t.after({a}) + 1.0).reduce({a}, Ops::ADD);
  CHECK(vals(t.assign(c)) == std::vector<float>{7, 7});
}

TEST_CASE("a scan reading a slot before it is written sees the original content [S6.1]") {
  Tensor t({10, 20, 30}, {3});
  UOp a = UOp::range(3, -1, AxisType::OUTER);
  // iteration a writes slot a with t[2] + a; slot 2 is read before iteration 2 writes it
  Tensor v = t[2] + Tensor(a.cast(dtypes::float32));
  Tensor c = v.reshape({1}).pad({std::make_pair(Dim(a), Dim(3 - a - 1))}).reduce({a}, Ops::ADD);
  CHECK(vals(t.assign(c)) == std::vector<float>{30, 31, 32});
}

TEST_CASE("poison discarded by WHERE stays legal, poison at an output is an error [S7.1, S7.3]") {
  Tensor e = Tensor::empty({3});
  Tensor ok = Tensor(UOp::cnst(dtypes::bool_, 1)).where(Tensor::ones({3}), e);
  check_all(ok, 1.0f);
  std::string err = error_of([&] { (e + 1.0).realize(); });
  CHECK_THAT(err, Catch::Contains("reads uninitialized memory") && Catch::Contains("3 of 3"));
}

TEST_CASE("END over a LOOP range is a parallel map: no iteration sees another's writes [S5.3]") {
  // acc[0] += 1 for 4 iterations: sequential (OUTER) gives 4, parallel (LOOP) gives 1.
  for (AxisType axis : {AxisType::OUTER, AxisType::LOOP}) {
    Tensor acc = Tensor::zeros({1}).contiguous();
    acc.realize();
    UOp i = UOp::range(4, -1, axis);
    Tensor acc_i = acc.after({i});
    Tensor out = acc.after({acc_i.store(acc_i + 1.0).end({i}).uop()});
    CHECK(out.item() == (axis == AxisType::OUTER ? 4.0f : 1.0f));
  }
}

// ---------------- order of effects and reads (S5.5) ----------------

TEST_CASE("a read not ordered after an assign sees the contents before it, in either output order [S5.5]") {
  for (bool assign_first : {true, false}) {
    Tensor b({1, 2, 3}, {3});
    Tensor doubled = b * 2.0;  // built before the assign, as tinygrad's loss before the optimizer step
    b.assign(b + 1.0);
    if (assign_first) Tensor::realize_all({&b, &doubled});
    else Tensor::realize_all({&doubled, &b});
    CHECK(vals(doubled) == std::vector<float>{2, 4, 6});
    CHECK(vals(b) == std::vector<float>{2, 3, 4});
  }
}

TEST_CASE("a read built after the assign reads the assign [S5.5]") {
  Tensor b({1, 2, 3}, {3});
  b.assign(b + 1.0);
  Tensor doubled = b * 2.0;
  Tensor::realize_all({&doubled, &b});
  CHECK(vals(doubled) == std::vector<float>{4, 6, 8});
}

TEST_CASE("the unordered sources of one node: a read beside an assign sees the old contents [S5.5]") {
  for (bool read_first : {true, false}) {
    Tensor b({1, 2, 3}, {3});
    Tensor old(b.uop());  // a handle on the buffer that the assign does not change
    b.assign(b * 10.0);
    Tensor sum = read_first ? old + b : b + old;
    CHECK(vals(sum) == std::vector<float>{11, 22, 33});
    CHECK(vals(old) == std::vector<float>{10, 20, 30});
  }
}

TEST_CASE("two unordered writes of one buffer race: an error naming the buffer [S5.5]") {
  Tensor b = Tensor::zeros({2}).contiguous();
  b.realize();
  Tensor one(b.uop()), two(b.uop());
  one.assign(Tensor::ones({2}));
  two.assign(Tensor::ones({2}) * 2.0);
  std::string err = error_of([&] { Tensor::realize_all({&one, &two}); });
  CHECK_THAT(err, Catch::Contains("race") && Catch::Contains("ordered after its earlier write"));
}

TEST_CASE("writes ordered by AFTER do not race, and the later one wins [S5.5]") {
  Tensor b = Tensor::zeros({2}).contiguous();
  b.realize();
  Tensor one(b.uop());
  one.assign(Tensor::ones({2}));
  Tensor two(b.after({one.uop()}));
  two.assign(Tensor::ones({2}) * 2.0);
  Tensor::realize_all({&two, &one});
  CHECK(vals(b) == std::vector<float>{2, 2});
  CHECK(vals(one) == std::vector<float>{2, 2});  // realized, an assign is the memory it wrote (as in tinygrad)
}

TEST_CASE("as a graph's output, an assign is the contents right after its write [S5.5]") {
  Tensor b = Tensor::zeros({2}).contiguous();
  b.realize();
  UOp one = UOp::make(Ops::ASSIGN, dtypes::float32, {b.uop(), Tensor::ones({2}).uop()});
  UOp two = UOp::make(Ops::ASSIGN, dtypes::float32, {b.uop().after({one}), (Tensor::ones({2}) * 2.0).uop()});
  UOp graph = UOp::sink({one, two}, Arg(ArgTuple{Arg("one"), Arg("two")}));
  interp::BufferMap buffers = interp::buffers_for(graph, buffer_store());
  auto outs = interp::run(graph, buffers);
  CHECK(interp::get_element(outs[0].value, 0) == 1.0f);
  CHECK(interp::get_element(outs[1].value, 0) == 2.0f);
}

TEST_CASE("a fold whose buffer is first initialised by a store runs the store once [S5.2, S5.4]") {
  // shared/repro/after_chain.uop: acc = 0, then four times acc = acc + 1 over an OUTER range.
  Tensor acc = Tensor::empty({});
  Tensor init = acc.store(Tensor(UOp::cnst(dtypes::float32, 0)));
  Tensor acc0 = acc.after({init.uop()});
  UOp i = UOp::range(4, -1, AxisType::OUTER);
  Tensor acc_i = acc0.after({i});
  Tensor loop = acc_i.store(acc_i + 1.0).end({i});
  CHECK(acc.after({loop.uop()}).item() == 4.0f);
}

// ---------------- diagnostics ----------------

TEST_CASE("diagnostic: an out-of-bounds read is rejected, naming the bounds [S8]") {
  Tensor x = Tensor::ones({10, 4}).contiguous();
  UOp a = UOp::range(10, -1);
  CHECK_THAT(error_of([&] { (void)x[a + 1]; }), Catch::Contains("SHRINK") && Catch::Contains("does not fit dim 0 of size 10"));
}

TEST_CASE("diagnostic: an out-of-bounds write is rejected too [S8]") {
  Tensor out = Tensor::empty({3, 4});
  UOp i = UOp::range(3, -1, AxisType::OUTER);
  CHECK_THAT(error_of([&] { (void)out[i + 1].store(Tensor::ones({4})).end({i}); }), Catch::Contains("does not fit dim 0 of size 3"));
}

TEST_CASE("diagnostic: a range used outside its scope [S1.3, S8]") {
  Tensor x = Tensor::ones({3, 4}).contiguous();
  UOp a = UOp::range(3, -1);
  Tensor leak = x[a] * 2.0;
  CHECK_THAT(error_of([&] { leak.realize(); }), Catch::Contains("scope") && Catch::Contains("m1"));
}

// tinygrad's a[:vi] with vi = Variable("i", 1, 10).bind(2): a SHRINK to the bound variable, a
// row sum EXPANDed back to it and subtracted from `rows` rows of a (the first half of
// Tensor.var). The SHRINK's size is `BIND - 0` and the EXPAND's the bare BIND: both are the
// bound value, 2.
std::string bound_rows_graph(const std::string& rows, const std::string& extra = "") {
  return "%a = BUFFER float32 () (\"a\", 30)\n%c10 = CONST index () 10\n%c3 = CONST index () 3\n"
         "%x = RESHAPE float32 (%a, %c10, %c3)\n%v = DEFINE_VAR index () (\"i\", 1, 10)\n%c2 = CONST index () 2\n"
         "%b = BIND index (%v, %c2)\n%c0 = CONST index () 0\n%s = SHRINK float32 (%x, %c0, %b, %c0, %c3)\n"
         "%r = REDUCE_AXIS float32 (%s) (Ops.ADD, (1,))\n%e = EXPAND float32 (%r, %b, %c3)\n" + extra +
         "%t = SHRINK float32 (%x, %c0, " + rows + ", %c0, %c3)\n%d = SUB float32 (%t, %e)\n%out = SINK void (%d) (\"out\",)\n";
}

interp::BufferMap arange_buffer(const std::string& name, int n) {
  interp::BufferData d{dtypes::float32, std::make_shared<interp::Storage>(dtypes::float32, n), nullptr};
  for (int i = 0; i < n; ++i) d.data->as<float>()[i] = static_cast<float>(i);
  return {{name, d}};
}

TEST_CASE("a size holding a variable bound to a constant is that value, bare or in arithmetic [S2.2]") {
  // realized through the Tensor API's evaluator, so interp-on-tcc and interp-on-cc run it compiled too
  std::string text = bound_rows_graph("%b");
  text.replace(text.find("(\"a\", 30)"), 9, "(\"bound_rows_a\", 30)");
  buffer_store()["bound_rows_a"] = arange_buffer("a", 30).at("a");
  Tensor d(parse_graph(text, "<test>").root->src[0]);
  REQUIRE(d.static_shape() == std::vector<int64_t>{2, 3});
  // a = arange(30).reshape(10, 3); a[:2] - a[:2].sum(1, keepdims=True): rows 0 1 2 (sum 3), 3 4 5 (sum 12)
  CHECK(vals(d) == std::vector<float>{-3, -2, -1, -9, -8, -7});
}

TEST_CASE("diagnostic: shapes that differ at the variables' bound values are rejected [S2.2, S8]") {
  // 3 rows against i = 2 rows
  auto run_text = [](const std::string& text) {
    interp::BufferMap bufs = arange_buffer("a", 30);
    interp::run(parse_graph(text, "<test>").root, bufs);
  };
  std::string err = error_of([&] { run_text(bound_rows_graph("%c3")); });
  CHECK_THAT(err, Catch::Contains("sources have different shapes (3, 3) and (2, 3)") && Catch::Contains("SUB"));
  // another variable, bound to another value: j = 4 rows against i = 2 rows
  err = error_of([&] {
    run_text(bound_rows_graph("%bj", "%vj = DEFINE_VAR index () (\"j\", 1, 10)\n%c4 = CONST index () 4\n%bj = BIND index (%vj, %c4)\n"));
  });
  CHECK_THAT(err, Catch::Contains("sources have different shapes (4, 3) and (2, 3)") && Catch::Contains("SUB"));
}

TEST_CASE("diagnostic: shapes that do not broadcast [S2.2, S8]") {
  CHECK_THAT(error_of([] { (void)(Tensor::ones({3}) + Tensor::ones({4})); }), Catch::Contains("cannot be broadcast"));
  CHECK_THAT(error_of([] { (void)Tensor::ones({3, 4}).reshape({5, 2}); }), Catch::Contains("element count changes"));
}

TEST_CASE("diagnostic: a reduced value whose shape changes across the range [S3.1, S8]") {
  Tensor x = Tensor::ones({4}).contiguous();
  UOp a = UOp::range(4, -1, AxisType::REDUCE);
  Tensor grow = x.shrink({std::make_pair(Dim(0), Dim(a + 1))});  // shape (a+1,)
  std::string err = error_of([&] { grow.reduce({a}, Ops::ADD).realize(); });
  CHECK_THAT(err, Catch::Contains("shape changes across the range") && Catch::Contains("m1=1"));
}

TEST_CASE("diagnostic: dtype mismatch names the node [S2.1, S8]") {
  UOp f = UOp::cnst(dtypes::float32, 1.0), i = UOp::int_const(dtypes::int32, 1);
  UOp bad = UOp::make(Ops::ADD, dtypes::float32, {f, i});
  CHECK_THAT(error_of([&] { Tensor(bad).realize(); }), Catch::Contains("alu.dtype") && Catch::Contains("ADD"));
}

TEST_CASE("diagnostic: buffers given the wrong size or dtype [S8]") {
  Tensor x = Tensor::empty({4}, dtypes::float32, "diag_x");
  interp::BufferMap bufs;
  bufs["diag_x"] = interp::BufferData{dtypes::float64, std::make_shared<interp::Storage>(dtypes::float64, 4), nullptr};
  CHECK_THAT(error_of([&] { interp::run(UOp::sink({(x + 1.0).uop()}), bufs); }), Catch::Contains("float64") && Catch::Contains("diag_x"));
  bufs["diag_x"] = interp::BufferData{dtypes::float32, std::make_shared<interp::Storage>(dtypes::float32, 5), nullptr};
  CHECK_THAT(error_of([&] { interp::run(UOp::sink({(x + 1.0).uop()}), bufs); }), Catch::Contains("5 elements"));
}

TEST_CASE("diagnostic: integer division by zero names the node and bindings [S2.1, S8]") {
  Tensor n = Tensor::arange(4, dtypes::int32);
  UOp a = UOp::range(4, -1, AxisType::REDUCE);
  Tensor q = (n / n[a]).reduce({a}, Ops::ADD);
  std::string err = error_of([&] { q.realize(); });
  CHECK_THAT(err, Catch::Contains("division by zero") && Catch::Contains("IDIV") && Catch::Contains("m1=0"));
}

// ---------------- the remaining rules of SEMANTICS.md ----------------

TEST_CASE("ranges are named by their ids [S1.2]") {
  CHECK(range_name(UOp::range(3, -1)) == "m1");
  CHECK(range_name(UOp::range(3, 3, AxisType::LOOP, {0})) == "3_0");
  CHECK(range_name(UOp::range(3, -100, AxisType::OUTER)) == "m100");
}

TEST_CASE("several ranges iterate row-major, the first outermost [S1.4, S5.2]") {
  // acc = acc*10 + (2a + b) over (a, b) in 2x2 records the visiting order as digits.
  Tensor acc = Tensor::zeros({1}).contiguous();
  acc.realize();
  UOp a = UOp::range(2, 0, AxisType::OUTER), b = UOp::range(2, 1, AxisType::OUTER);
  Tensor acc_i = acc.after({a, b});
  Tensor step(((a * 2 + b).cast(dtypes::float32)));
  Tensor out = acc.after({acc_i.store(acc_i * 10.0 + step).end({a, b}).uop()});
  CHECK(out.item() == 123.0f);  // visited (0,0), (0,1), (1,0), (1,1)
}

TEST_CASE("movement ops are views with the documented meaning [S2.3]") {
  Tensor t = Tensor::arange(6).reshape({2, 3});
  CHECK(vals(t.flip({1})) == std::vector<float>{2, 1, 0, 5, 4, 3});
  CHECK(vals(t.T()) == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK(vals(t.shrink({std::nullopt, std::make_pair(Dim(1), Dim(3))})) == std::vector<float>{1, 2, 4, 5});
  CHECK(vals(t.pad({std::make_pair(Dim(0), Dim(1)), std::make_pair(Dim(1), Dim(0))})) ==
        std::vector<float>{0, 0, 1, 2, 0, 3, 4, 5, 0, 0, 0, 0});
  CHECK(vals(t.reshape({3, 2}).at({1})) == std::vector<float>{2, 3});
}

TEST_CASE("shapes above 2^32 elements are refused, not allocated [S2.4]") {
  CHECK_THAT(error_of([] { (void)Tensor::empty({1 << 20, 1 << 20}); }), Catch::Contains("2^32"));
  // ones() is a broadcast view (never stored, S3.4): it may be larger, but realizing it is an error
  Tensor big = Tensor::ones({1 << 20, 1 << 20});
  interp::BufferMap none;
  CHECK_THAT(error_of([&] { (void)interp::run(UOp::sink({big.uop()}, Arg(ArgTuple{Arg(std::string("out"))})), none); }),
             Catch::Contains("over the limit of 2^32 stored elements"));
}

TEST_CASE("REDUCE_AXIS folds sequentially in index order [S3.2]") {
  // float32: ((1e8 + 1) - 1e8) + 1 = 1 sequentially; a pairwise sum would give 0.
  Tensor x({1e8f, 1.0f, -1e8f, 1.0f}, {4});
  CHECK(x.sum().item() == 1.0f);
  Tensor y({1e8f, 1.0f, -1e8f, 1.0f}, {1, 4});
  CHECK(y.sum(std::vector<int64_t>{1}).item() == 1.0f);
}

TEST_CASE("writes go through views; never through EXPAND; values may alias targets [S5.1]") {
  Tensor t = Tensor::arange(4).contiguous();
  t.realize();
  CHECK(vals(t.assign(t.flip({0}))) == std::vector<float>{3, 2, 1, 0});
  Tensor b = Tensor::zeros({1}).contiguous();
  b.realize();
  CHECK_THAT(error_of([&] { b.expand({3}).assign(Tensor::ones({3})).realize(); }), Catch::Contains("EXPAND"));
}

TEST_CASE("writing clean data over poison clears it [S7.2]") {
  Tensor e = Tensor::empty({3});
  e.assign(Tensor::ones({3})).realize();
  CHECK(vals(e + 1.0) == std::vector<float>{2, 2, 2});
}

TEST_CASE("evaluation is deterministic: the same graph twice is bit-identical [S1.1, S10]") {
  Scan s = make_scan();
  std::vector<float> first = vals(scan_graph(s, AxisType::OUTER, Tensor::empty({3, 1, 10})));
  std::vector<float> second = vals(scan_graph(s, AxisType::OUTER, Tensor::empty({3, 1, 10})));
  CHECK(std::memcmp(first.data(), second.data(), first.size() * sizeof(float)) == 0);
}

TEST_CASE("Storage: small and large (mmap'd) blocks start zeroed, are aligned, and copy deeply") {
  for (int64_t n : {int64_t(0), int64_t(3), int64_t(1000), int64_t(3) << 20}) {  // 3M float32 = 12 MB: the mmap path
    ow::interp::Storage s(ow::dtypes::float32, n);
    REQUIRE(s.bytes.size() == static_cast<size_t>(n) * 4);
    CHECK(reinterpret_cast<uintptr_t>(s.bytes.data()) % 64 == 0);
    float* f = s.as<float>();
    bool zero = true;
    for (int64_t i = 0; i < n; ++i) zero &= f[i] == 0.0f && !std::signbit(f[i]);
    CHECK(zero);
    if (n == 0) continue;
    f[0] = 1.5f, f[n - 1] = -2.0f;
    ow::interp::Storage copy(s);
    f[0] = 7.0f;
    CHECK(copy.as<float>()[0] == 1.5f);
    CHECK(copy.as<float>()[n - 1] == -2.0f);
    CHECK(copy.bytes.data() != s.bytes.data());
  }
}

TEST_CASE("first_difference: bit for bit, integers in their own type, poison skipped on request", "[interp][compare]") {
  using interp::first_difference;
  auto i64 = [](std::vector<int64_t> xs) {
    interp::Value v = interp::alloc(dtypes::int64, {static_cast<int64_t>(xs.size())});
    std::memcpy(v.data->as<int64_t>(), xs.data(), xs.size() * sizeof(int64_t));
    return v;
  };
  auto f32 = [](std::vector<float> xs) {
    interp::Value v = interp::alloc(dtypes::float32, {static_cast<int64_t>(xs.size())});
    std::memcpy(v.data->as<float>(), xs.data(), xs.size() * sizeof(float));
    return v;
  };
  // 2^53 + 1 and 2^53 are the same double: a comparison through double would call them equal.
  auto d = first_difference(i64({1, 9007199254740993}), i64({1, 9007199254740992}));
  REQUIRE(d);
  CHECK(d->index == 1);
  CHECK(!first_difference(i64({5, -7}), i64({5, -7})));
  CHECK(!first_difference(f32({NAN, 1.5f}), f32({NAN, 1.5f})));  // a NaN matches a NaN
  auto z = first_difference(f32({1.0f, 0.0f}), f32({1.0f, -0.0f}));  // +0 and -0 divide differently
  REQUIRE(z);
  CHECK(z->index == 1);
  auto shape = first_difference(f32({1, 2}), f32({1, 2, 3}));
  REQUIRE(shape);
  CHECK(shape->index == -1);
  // a strided view (a flip) is compared element by element in row-major order of the view
  interp::Value flipped = interp::flip_view(f32({3, 2, 1}), {true});
  CHECK(!first_difference(flipped, f32({1, 2, 3})));
  // poison in the first operand: skipped only when asked
  interp::Value p = f32({1, 99});
  p.poison = std::make_shared<interp::Storage>(dtypes::bool_, 2);
  p.poison->as<uint8_t>()[1] = 1;
  CHECK(first_difference(p, f32({1, 2})));
  CHECK(!first_difference(p, f32({1, 2}), /*skip_poison_of_a=*/true));
}

TEST_CASE("a value no one will ask for again is dropped: a long chain runs in a few of its intermediates' memory [S3.4]") {
  // 40 elementwise steps over 2^20 floats: 4 MB each, 160 MB if every intermediate were kept.
  // Under a 48 MB budget the chain must hold only a few at a time (before, the memo kept them
  // all until the graph ended and the run was refused at about the 11th). A value used twice
  // (`a`, read again after `b`) stays until its last consumer has it. The other two forms are
  // tinygrad's Tensor.rand, which reads its counter buffer and assigns it in the same graph:
  // the chain reads a buffer the graph then writes, or starts from the assign's value (as from
  // the second rand on), so every value depends on a write; they are dropped all the same.
  enum Form { pure, assign_after, chain_of_assign };
  const Form form = GENERATE(pure, assign_after, chain_of_assign);
  INFO("form " << form);
  const int64_t n = int64_t{1} << 20;
  Tensor x = Tensor::arange(n);
  Tensor start = form == chain_of_assign ? x.assign(x + 5.0) : x;
  Tensor a = start + 1.0;
  Tensor b = a * 2.0;
  Tensor y = b - a;  // start + 1, exactly
  for (int k = 0; k < 40; ++k) y = y + 1.0;
  std::vector<UOp> outs{y.uop()};
  ArgTuple names{Arg(std::string("out"))};
  std::vector<int64_t> adds{form == chain_of_assign ? 46 : 41};
  if (form == assign_after) {
    outs.push_back(x.assign(x + 5.0).uop());
    names.push_back(Arg(std::string("x_after")));
    adds.push_back(5);  // the chain read x before the assign: the graph's order (S5.5)
  }
  struct Limit {
    uint64_t old = interp::memory_limit();
    ~Limit() { interp::set_memory_limit(old); }
  } restore;
  interp::set_memory_limit(uint64_t{48} << 20);
  UOp graph = UOp::sink(outs, Arg(names));
  interp::BufferMap inputs = interp::buffers_for(graph, buffer_store());
  std::vector<interp::Output> out = interp::run(graph, inputs);
  REQUIRE(out.size() == outs.size());
  for (size_t o = 0; o < out.size(); ++o) {
    interp::Value v = interp::contiguous(out[o].value);
    const float* p = std::as_const(*v.data).as<float>();
    REQUIRE(v.numel() == n);
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) wrong += p[i] != static_cast<float>(i + adds[o]);  // exact: all below 2^24
    CHECK(wrong == 0);
  }
}
