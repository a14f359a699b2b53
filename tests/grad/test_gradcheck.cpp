// Gradient checks in the manner of JAX's testScanGrad: for every form of loop the graph language
// has (folds and scans, store/end and assign, OUTER and LOOP ranges, vmaps, a training loop),
// GRADIENT is compared with central finite differences of the loss in float64, and, where the
// loop can be unrolled, with the gradient of the unrolled graph. Every gradient runs on the
// interpreter, tcc and cc (the compiled tiers also checked against the interpreter bit for bit).
#include <catch2/catch.hpp>

#include "interp/inputs.h"
#include "test_support.h"

#include <cmath>
#include <functional>
#include <map>

#include "backends/program.h"
#include "grad/gradient.h"
#include "uop/text.h"
#include "tensor/random.h"
#include "tensor/tensor.h"

using namespace ow;

namespace {

const DType F64 = dtypes::float64;

struct Form {
  UOp loss;                          // any shape: the gradient is of the sum of its elements
  std::vector<Tensor> vars;          // buffer views, as the graph reads them
  std::optional<Tensor> unrolled;    // the same loss, its loops written out
};

using Inputs = interp::BufferMap;

Tensor var(const std::string& name, const std::vector<int64_t>& shape) { return Tensor::empty(shape, F64, name); }

Inputs random_inputs(UOp graph, uint64_t seed) {
  Random rng;
  rng.seed(seed);
  Inputs in;
  for (UOp u : toposort(graph)) {
    if (u->op != Ops::BUFFER || u->arg.tuple()->at(0).as<std::string>().rfind('_', 0) == 0) continue;
    const std::string& name = u->arg.tuple()->at(0).as<std::string>();
    if (in.count(name)) continue;
    auto s = std::make_shared<interp::Storage>(F64, u->arg.tuple()->at(1).as<int64_t>());
    for (int64_t i = 0; i < s->size; ++i) s->as<double>()[i] = 0.5 * rng.normal();
    in[name] = interp::BufferData{F64, s, nullptr};
  }
  return in;
}

Inputs copy(const Inputs& b) {
  Inputs out;
  for (auto& [n, d] : b) out[n] = interp::BufferData{d.dtype, std::make_shared<interp::Storage>(*d.data), nullptr};
  return out;
}

std::vector<double> values(const interp::Value& v) {
  std::vector<double> out;
  for (int64_t i = 0; i < v.numel(); ++i) out.push_back(interp::get_element(v, i));
  return out;
}

double total(UOp loss, const Inputs& in) {
  UOp graph = UOp::sink({loss}, Arg(ArgTuple{Arg("loss")}));
  Inputs b = copy(interp::buffers_for(graph, in));  // `in` covers every graph of the form
  double s = 0;
  for (double x : values(interp::run(graph, b).at(0).value)) s += x;
  return s;
}

const std::string& buffer_of(const Tensor& v) { return v.uop()->src[0]->arg.tuple()->at(0).as<std::string>(); }

// d sum(loss) / d var by central differences: h = 1e-6 in float64, so the truncation error
// (h^2 f''') and the rounding error (1e-16 |f| / h) are both below 1e-9 of the gradient's size.
std::vector<double> finite_differences(UOp loss, const Tensor& v, const Inputs& in) {
  const double h = 1e-6;
  std::vector<double> out;
  const std::string& name = buffer_of(v);
  for (int64_t i = 0; i < in.at(name).data->size; ++i) {
    Inputs p = copy(in), m = copy(in);
    p[name].data->as<double>()[i] += h;
    m[name].data->as<double>()[i] -= h;
    out.push_back((total(loss, p) - total(loss, m)) / (2 * h));
  }
  return out;
}

// The gradients of `loss` with respect to `vars`, on one tier.
std::vector<std::vector<double>> gradients(UOp loss, const std::vector<Tensor>& vars, const Inputs& in, const std::string& tier) {
  std::vector<UOp> outs;
  ArgTuple names;
  for (size_t i = 0; i < vars.size(); ++i) {
    outs.push_back(UOp::make(Ops::GRADIENT, F64, {loss, vars[i].uop()}));
    names.emplace_back("g" + std::to_string(i));
  }
  UOp graph = UOp::sink(outs, Arg(names));
  Inputs b = copy(interp::buffers_for(graph, in));
  backend::RunOptions o;
  o.backend = tier == "interp" ? backend::Backend::Interp : backend::Backend::Check;
  o.compiler = backend::parse_backend(tier);
  std::vector<std::vector<double>> out;
  for (const interp::Output& r : backend::run_graph(graph, b, o)) out.push_back(values(r.value));
  return out;
}

// |a - b| <= tol * max |b|, elementwise: relative to the gradient's scale, so an element that is
// almost zero is not held to a tolerance below the arithmetic's.
void require_close(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  REQUIRE(a.size() == b.size());
  double scale = 0;
  for (double x : b) scale = std::max(scale, std::fabs(x));
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i << ": " << a[i] << " vs " << b[i] << " (scale " << scale << ")");
    CHECK(std::fabs(a[i] - b[i]) <= tol * std::max(scale, 1e-12));
  }
}

void check_form(const Form& f, uint64_t seed = 1) {
  UOp all = f.unrolled ? UOp::sink({f.loss, f.unrolled->uop()}) : UOp::sink({f.loss});
  Inputs in = random_inputs(all, seed);
  std::vector<std::vector<double>> fd;
  for (const Tensor& v : f.vars) fd.push_back(finite_differences(f.loss, v, in));
  for (const char* tier : {"interp", "tcc", "cc"}) {
    INFO("tier " << tier);
    std::vector<std::vector<double>> g = gradients(f.loss, f.vars, in, tier);
    for (size_t k = 0; k < f.vars.size(); ++k) {
      INFO("d loss / d " << buffer_of(f.vars[k]));
      require_close(g[k], fd[k], 1e-6);
    }
  }
  if (f.unrolled) {  // the unrolled graph's gradient: the same numbers up to float64 reassociation
    std::vector<std::vector<double>> g = gradients(f.loss, f.vars, in, "interp"), u = gradients(f.unrolled->uop(), f.vars, in, "interp");
    for (size_t k = 0; k < f.vars.size(); ++k) require_close(g[k], u[k], 1e-12);
  }
}

Tensor sin(const Tensor& x) { return Tensor(x.uop().alu(Ops::SIN, {})); }

// ---- the forms ----

// A fold acc = sin(acc) * a[i] + acc over i: state carried through every iteration.
Form fold(AxisType axis) {
  Tensor acc = var("acc", {3}), a = var("a", {5, 3});
  UOp i = UOp::range(5, -1, axis);
  Tensor acc_i = acc.after({i});
  Tensor loss = acc.after({acc_i.store(sin(acc_i) * a[i] + acc_i).end({i}).uop()}) * 2.0;
  Form f{loss.uop(), {acc, a}, std::nullopt};
  if (axis == AxisType::OUTER) {
    Tensor s = acc * 1.0;
    for (int k = 0; k < 5; ++k) s = sin(s) * a[k] + s;
    f.unrolled = s * 2.0;
  } else {  // every iteration from the start; the last write wins
    f.unrolled = (sin(acc) * a[4] + acc) * 2.0;
  }
  return f;
}

// A scan with store/end: out[i] = sin(i == 0 ? vec : out[i-1]) @ M[i].
Form scan_store_end(AxisType axis) {
  Tensor vec = var("vec", {1, 4}), mats = var("mats", {3, 4, 4}), out = var("out", {3, 1, 4});
  UOp i = UOp::range(3, -1, axis);
  Tensor phi(i.eq(0).where(vec.uop(), out[(i - 1).maximum(0)].uop()));
  Tensor loss = out.after({out[i].store(sin(phi).matmul(mats[i])).end({i}).uop()});
  Form f{loss.uop(), {vec, mats, out}, std::nullopt};
  if (axis == AxisType::OUTER) {
    std::vector<Tensor> rows;
    Tensor p = vec;
    for (int k = 0; k < 3; ++k) rows.push_back(p = sin(p).matmul(mats[k]));
    f.unrolled = Tensor::stack(rows);
  } else {  // a parallel map over the old rows
    std::vector<Tensor> rows{sin(vec).matmul(mats[0])};
    for (int k = 1; k < 3; ++k) rows.push_back(sin(out[k - 1]).matmul(mats[k]));
    f.unrolled = Tensor::stack(rows);
  }
  return f;
}

// The seed's scan, target.assign(REDUCE(PAD(sin(phi) @ M[a]), a)) (S6.1); with a LOOP range an
// assign of a map over the old target (S6.2).
Form assign_scan(AxisType axis) {
  Tensor vec = var("vec", {1, 4}), mats = var("mats", {3, 4, 4}), buf = var("buf", {3, 1, 4});
  UOp a = UOp::range(3, -1, axis);
  Tensor phi(a.eq(0).where(vec.uop(), buf[(a - 1).maximum(0)].uop()));
  Tensor row = sin(phi).matmul(mats.reduce_backward({a}, Ops::ADD)[a]);
  row = row.reshape({1, 1, 4}).pad({std::make_pair(Dim(a), Dim(3 - a - 1)), std::nullopt, std::nullopt});
  Tensor target(buf.uop());
  Tensor loss = target.assign(row.reduce({a}, Ops::ADD));
  Form f{loss.uop(), {vec, mats, buf}, std::nullopt};
  if (axis == AxisType::OUTER) {
    std::vector<Tensor> rows;
    Tensor p = vec;
    for (int k = 0; k < 3; ++k) rows.push_back(p = sin(p).matmul(mats[k]));
    f.unrolled = Tensor::stack(rows);
  }
  return f;
}

// A vmap over an OUTER range: x @ mats[a], each binding in its own row (S4.2).
Form vmap() {
  Tensor x = var("x", {1, 4}), mats = var("mats", {3, 4, 4});
  UOp a = UOp::range(3, -1, AxisType::OUTER);
  Tensor out = sin(x.matmul(mats.reduce_backward({a}, Ops::ADD)[a])).reshape({1, 4}).pad({std::make_pair(Dim(a), Dim(3 - a - 1)), std::nullopt});
  Form f{out.reduce({a}, Ops::ADD).uop(), {x, mats}, sin(x.matmul(mats)).reshape({3, 4})};
  return f;
}

// Two linear layers with relu per OUTER iteration (test_vmap_gemm_grad, smaller).
Form vmap_mlp() {
  Tensor img = var("img", {3, 4}), w1 = var("w1", {4, 4}), w2 = var("w2", {4, 4});
  UOp a = UOp::range(3, -1, AxisType::OUTER);
  auto net = [&](const Tensor& x) { return sin(x.linear(w1.T())).linear(w2.T()); };
  Tensor out = net(img.at({Slice{Dim(a), Dim(a + 1)}})).pad({std::make_pair(Dim(a), Dim(3 - a - 1)), std::nullopt});
  return Form{out.reduce({a}, Ops::ADD).uop(), {img, w1, w2}, net(img)};
}

// The whole training loop in one OUTER range (sgd_baseline, smaller), differentiated with
// respect to the initial weights and the data: through every update, each a GRADIENT itself.
// (The update is written out: nn::SGD, like tinygrad's, detaches the weights it updates, and a
// detached value has no gradient by definition, which finite differences would not see.)
Form training_loop() {
  Tensor X = var("X", {3, 4, 5}), Y = var("Y", {3, 4, 2}), W = var("W", {2, 5});
  Tensor W0(W.uop());
  UOp rng = UOp::range(3, -1, AxisType::OUTER);
  UOp vib = UOp::variable("i", 0, 2).bind(rng);
  Tensor loss = (X[vib].linear(W.T()) - Y[vib]).square().mean();
  Tensor losses = Tensor::empty({3}, F64, "losses");
  losses.setitem({vib}, loss);
  W.assign(W - loss.gradient({W})[0] * 0.1);
  UOp graph = Tensor::graph({{"losses", losses}, {"W", W}});
  Tensor both = Tensor(graph->src[0]).sum() + Tensor(graph->src[1]).sum();
  // unrolled: three steps written out in one graph
  Tensor w = W0 * 1.0, ls = Tensor::zeros({}, F64);
  for (int s = 0; s < 3; ++s) {
    Tensor l = (X[s].linear(w.T()) - Y[s]).square().mean();
    w = w - l.gradient({w})[0] * 0.1;
    ls = ls + l;
  }
  return Form{both.uop(), {W0, X}, ls + w.sum()};
}

}  // namespace

TEST_CASE("gradient check: folds over OUTER and LOOP ranges [S9.3]", "[gradcheck]") {
  check_form(fold(AxisType::OUTER));
  check_form(fold(AxisType::LOOP));
}

TEST_CASE("gradient check: scans with store/end over OUTER and LOOP ranges [S9.3]", "[gradcheck]") {
  check_form(scan_store_end(AxisType::OUTER));
  check_form(scan_store_end(AxisType::LOOP));
}

TEST_CASE("gradient check: assign scans over OUTER and LOOP ranges [S9.3]", "[gradcheck]") {
  check_form(assign_scan(AxisType::OUTER));
  check_form(assign_scan(AxisType::LOOP));
}

TEST_CASE("gradient check: vmaps over OUTER ranges [S9.2]", "[gradcheck]") {
  check_form(vmap());
  check_form(vmap_mlp());
}

TEST_CASE("gradient check: a whole training loop in one OUTER range, through every update [S9.3]", "[gradcheck]") {
  check_form(training_loop());
}

TEST_CASE("gradient check: second order through a scan [S9.4]", "[gradcheck]") {
  // d/dvec of sum((d sum(scan)/d mats)^2): the inner gradient runs its own backward loop over
  // buffers, and the outer one differentiates through it (tapes, working copies and all).
  Form s = scan_store_end(AxisType::OUTER);
  Tensor inner(UOp::make(Ops::GRADIENT, F64, {s.loss, s.vars[1].uop()}));
  Tensor outer_loss = inner.square().sum();
  check_form(Form{outer_loss.uop(), {s.vars[0], s.vars[1]}, std::nullopt});
}

// ---- what is refused: never a number that is not the derivative ----

// The error of the graph that outputs GRADIENT(loss, var); a variable that depends on a range
// (a per-binding variable) has its gradient stored row by row in a buffer `gout` under an END
// over that range, so the graph is valid and the refusal is the gradient pass's.
std::string refusal(UOp loss, const Tensor& var, UOp per = UOp()) {
  UOp g = UOp::make(Ops::GRADIENT, F64, {loss, var.uop()});
  UOp root = UOp::sink({g}, Arg(ArgTuple{Arg("g")}));
  if (per) {
    std::vector<int64_t> shape{per->src[0].const_value() > 0 ? static_cast<int64_t>(per->src[0].const_value()) : 1};
    for (UOp d : var.shape()) shape.push_back(static_cast<int64_t>(d.const_value()));
    Tensor out = ::var("gout", shape);
    root = UOp::sink({out.after({out[per].store(Tensor(g)).end({per}).uop()}).uop()}, Arg(ArgTuple{Arg("g")}));
  }
  Inputs in = random_inputs(root, 1);
  try {
    interp::run(root, in);
  } catch (const grad::NotDifferentiable& e) {
    return std::string(e.what()) + "\nreason: " + grad::reason_name(e.reason);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_CASE("gradient refusals name the node and the reason [S9.5]", "[gradcheck]") {
  Tensor b = var("b", {3}), a = var("a", {4, 3});
  SECTION("a read that does not name an earlier write of its buffer sees the contents before it") {
    // b is doubled; the loss reads b after the doubling and b bare (S5.5: the bare read is not
    // ordered after the store, so it sees b as given). Reverse mode rebuilds b only after the
    // store, so it would differentiate the bare read at the wrong state.
    Tensor doubled = b.store(b * 2.0);
    Tensor loss = b.after({doubled.uop()}) * b;
    std::string e = refusal(loss.uop(), b);
    CHECK_THAT(e, Catch::Contains("a read of buffer 'b' is not ordered after a write of it"));
    CHECK_THAT(e, Catch::Contains("(at %2 = RESHAPE float64 (%0, %1))"));
    CHECK_THAT(e, Catch::EndsWith("reason: unordered-read"));
  }
  SECTION("a per-binding variable whose loss sums over the loop") {
    UOp i = UOp::range(4, -1, AxisType::OUTER);
    Tensor b_i = b.after({i});
    Tensor loss = b.after({b_i.store(b_i * a[i]).end({i}).uop()});
    std::string e = refusal(loss.uop(), b_i, i);
    CHECK_THAT(e, Catch::Contains("the variable depends on range m1 but the loss does not"));
    CHECK_THAT(e, Catch::EndsWith("reason: per-binding-through-effects"));
  }
  SECTION("an effect that a loop's value runs in every iteration") {
    UOp i = UOp::range(4, -1, AxisType::OUTER);
    Tensor t = var("t", {3});
    Tensor t_i = t.after({t.store(a[i] * 2.0).uop()});  // rewritten in every iteration
    Tensor b_i = b.after({i});
    Tensor loss = b.after({b_i.store(b_i * t_i).end({i}).uop()});
    std::string e = refusal(loss.uop(), a);
    CHECK_THAT(e, Catch::Contains("an effect run in every iteration of a loop by a node inside the loop's values"));
    CHECK_THAT(e, Catch::EndsWith("reason: effect-in-loop-value"));
  }
}

// Fuzz seed 820925: tgt0 := tgt0 * tgt1.after(tgt1 := 0) over a LOCAL range. S5.3 pins the read
// of tgt1 to the loop's start (the forward multiplies by tgt1's old value), but the backward used
// the written 0: d/d tgt0 came out 0 against finite differences 0.179. Refused now, naming the END.
TEST_CASE("a parallel END that reads what an effect inside it wrote is not differentiated", "[gradcheck][fuzz]") {
  UOp root = parse_graph(test::slurp(test::source_root() / "tests" / "fuzz" / "refused" / "fuzz-820925.uop"), "fuzz-820925.uop").root;
  interp::BufferMap b;
  for (const char* name : {"tgt0", "tgt1"}) {
    auto st = std::make_shared<interp::Storage>(dtypes::float64, 1);
    st->as<double>()[0] = 0.5;
    b[name] = {dtypes::float64, st, nullptr};
  }
  try {
    interp::run(root, b);
    FAIL("differentiated without refusing");
  } catch (const grad::NotDifferentiable& e) {
    CHECK_THAT(e.what(), Catch::Contains("a parallel END whose stored value reads a buffer after an effect inside the loop writes it"));
    CHECK_THAT(e.what(), Catch::Contains("%14 = END"));
    CHECK(std::string(grad::reason_name(e.reason)) == "read-after-loop-effect");
  }
}

TEST_CASE("gradients of one loss for a target and a value target above it: the paths through the upper one count [S9.1]", "[gradcheck]") {
  // loss = 3 t with t = x * x: d loss/dx = 6x, d loss/dt = 3 (hand-derived). Both asked of one
  // loss, one backward serves them; it stopped at t, so d/dx came out 0 (ow fuzz, seed 9101545).
  const char* text = R"(%x = BUFFER float64 () ("x", 2)
%t = MUL float64 (%x, %x)
%c = CONST float64 () 3.0
%l = MUL float64 (%t, %c)
%gx = GRADIENT float64 (%l, %x)
%gt = GRADIENT float64 (%l, %t)
%out = SINK void (%gx, %gt) ("gx", "gt")
)";
  auto s = std::make_shared<interp::Storage>(dtypes::float64, 2);
  s->as<double>()[0] = 1.5, s->as<double>()[1] = -2.0;
  interp::BufferMap in{{"x", interp::BufferData{dtypes::float64, s, nullptr}}};
  auto outs = interp::run(parse_graph(text).root, in);
  REQUIRE(outs.size() == 2);
  auto at = [](const interp::Value& v, int64_t i) { return interp::get_element(v, i); };
  CHECK(at(outs[0].value, 0) == 9.0);
  CHECK(at(outs[0].value, 1) == -12.0);
  CHECK(at(outs[1].value, 0) == 3.0);
  CHECK(at(outs[1].value, 1) == 3.0);
}

TEST_CASE("gradients through effects: a target below another target's own write gets the paths through it [S9.3]", "[gradcheck]") {
  // loss = sum(tgt0 after tgt0 = 2 y) + sum(t1) + sum(t2), with t1 = tgt5.assign(3 x) and
  // t2 = tgt6 after tgt6 = x * x: hand-derived d/dt1 = 1, d/dt2 = 1, d/dx = 3 + 2x, d/dy = 2.
  // The writes t1 and t2 depend on were taken as done before the program, for x too, so x got
  // only what reached it outside them: 0 (ow fuzz, seed 3248).
  const char* text = R"(%x = BUFFER float64 () ("x", 2)
%y = BUFFER float64 () ("y", 2)
%tgt0 = BUFFER float64 () ("tgt0", 2)
%two = CONST float64 () 2.0
%y2 = MUL float64 (%y, %two)
%st0 = STORE void (%tgt0, %y2)
%a0 = AFTER float64 (%tgt0, %st0)
%s0 = REDUCE_AXIS float64 (%a0) (Ops.ADD, (0,))
%tgt5 = BUFFER float64 () ("tgt5", 2)
%three = CONST float64 () 3.0
%x3 = MUL float64 (%x, %three)
%t1 = ASSIGN float64 (%tgt5, %x3)
%s1 = REDUCE_AXIS float64 (%t1) (Ops.ADD, (0,))
%tgt6 = BUFFER float64 () ("tgt6", 2)
%xx = MUL float64 (%x, %x)
%st6 = STORE void (%tgt6, %xx)
%t2 = AFTER float64 (%tgt6, %st6)
%s2 = REDUCE_AXIS float64 (%t2) (Ops.ADD, (0,))
%l01 = ADD float64 (%s0, %s1)
%l = ADD float64 (%l01, %s2)
%gx = GRADIENT float64 (%l, %x)
%gy = GRADIENT float64 (%l, %y)
%g1 = GRADIENT float64 (%l, %t1)
%g2 = GRADIENT float64 (%l, %t2)
%out = SINK void (%gx, %gy, %g1, %g2) ("gx", "gy", "g1", "g2")
)";
  interp::BufferMap in;
  for (const char* name : {"x", "y", "tgt0", "tgt5", "tgt6"}) {
    auto s = std::make_shared<interp::Storage>(dtypes::float64, 2);
    s->as<double>()[0] = 1.5, s->as<double>()[1] = -2.0;
    in[name] = interp::BufferData{dtypes::float64, s, nullptr};
  }
  auto outs = interp::run(parse_graph(text).root, in);
  REQUIRE(outs.size() == 4);
  auto at = [](const interp::Value& v, int64_t i) { return interp::get_element(v, i); };
  CHECK(at(outs[0].value, 0) == 6.0);   // 3 + 2 * 1.5
  CHECK(at(outs[0].value, 1) == -1.0);  // 3 + 2 * -2
  for (size_t o = 1; o < 4; ++o)
    for (int64_t i = 0; i < 2; ++i) CHECK(at(outs[o].value, i) == (o == 1 ? 2.0 : 1.0));
}
