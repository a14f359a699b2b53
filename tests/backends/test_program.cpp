// backend::Program: a lowered program prepared once and run many times, on every backend.
// Expected values are computed here in plain C++ (one rounding per operation, forced through
// volatile so the compiler cannot fuse them) or derived by hand.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

#include "test_support.h"

#include "backends/program.h"
#include "cases.h"
#include "interp/poison_flow.h"
#include "lower/lower.h"
#include "uop/text.h"

using namespace ow;
using ow::test::error_of;

namespace {

const std::string kAxpb = cases::axpb_text(1000);

// Row sums of a 4x8 matrix: the lowered program accumulates in a private temporary.
const char* kRowSums = R"(%0 = BUFFER float32 () ("m", 32)
%1 = CONST index () 4
%2 = CONST index () 8
%3 = RESHAPE float32 (%0, %1, %2)
%4 = REDUCE_AXIS float32 (%3) (Ops.ADD, (1,))
%5 = SINK void (%4) ("s",)
)";

interp::BufferData floats(int64_t n, float (*f)(int64_t)) {
  auto s = std::make_shared<interp::Storage>(dtypes::float32, n);
  for (int64_t i = 0; i < n; ++i) s->as<float>()[i] = f(i);
  return {dtypes::float32, s, nullptr};
}

float axpb(float a, float b) {
  volatile float p = a * b;
  return p + 1.0f;
}

void require_axpb(const interp::Value& c, const interp::BufferMap& in) {
  REQUIRE(c.numel() == 1000);
  const float *a = in.at("a").data->as<float>(), *b = in.at("b").data->as<float>();
  int64_t bad = -1;
  for (int64_t i = 0; i < 1000 && bad < 0; ++i)
    if (interp::get_element(c, i) != axpb(a[i], b[i])) bad = i;
  INFO("first wrong element " << bad);
  CHECK(bad == -1);
}

UOp lowered(const std::string& text) { return lower::lower(parse_graph(text, "<test>").root); }

const char* kBackends[] = {"interp", "tcc", "cc", "check", "auto"};

}  // namespace

TEST_CASE("Program: runs again on new inputs, and earlier results stay as they were", "[program]") {
  for (const char* be : kBackends) {
    INFO("backend " << be);
    backend::RunOptions o;
    o.backend = backend::parse_backend(be);
    backend::Program p(lowered(kAxpb), o);
    interp::BufferMap in{{"a", floats(1000, [](int64_t i) { return 0.1f * float(i); })}, {"b", floats(1000, [](int64_t i) { return 3.0f - 0.01f * float(i); })}};
    std::vector<interp::Output> first = p.run(in);
    REQUIRE(first.size() == 1);
    CHECK(first[0].name == "c");
    require_axpb(first[0].value, in);
    interp::BufferMap in2{{"a", floats(1000, [](int64_t i) { return -0.5f * float(i); })}, {"b", in["b"]}};
    std::vector<interp::Output> second = p.run(in2);
    require_axpb(second[0].value, in2);
    require_axpb(first[0].value, in);  // the first result was handed over, not reused
    CHECK(first[0].value.data != second[0].value.data);
  }
}

TEST_CASE("Program: an output is written in place into a caller's buffer of its name (out=)", "[program]") {
  for (const char* be : kBackends) {
    INFO("backend " << be);
    backend::RunOptions o;
    o.backend = backend::parse_backend(be);
    backend::Program p(lowered(kAxpb), o);
    interp::BufferMap in{{"a", floats(1000, [](int64_t i) { return float(i % 17) - 8.0f; })},
                         {"b", floats(1000, [](int64_t i) { return 0.25f * float(i % 5); })},
                         {"c", floats(1000, [](int64_t) { return -99.0f; })}};
    const interp::StoragePtr out = in["c"].data;
    for (int run = 0; run < 2; ++run) {
      in["a"].data->as<float>()[7] = float(run) * 3.0f;  // a new input value each run
      std::vector<interp::Output> got = p.run(in);
      CHECK(got[0].value.data == out);
      CHECK(in["c"].data == out);
      require_axpb(got[0].value, in);
      CHECK(out->as<float>()[7] == axpb(float(run) * 3.0f, in["b"].data->as<float>()[7]));
    }
  }
}

TEST_CASE("Program: out= of the wrong size or dtype is an error naming the output", "[program]") {
  backend::Program p(lowered(kAxpb), {});
  interp::BufferMap in{{"a", floats(1000, [](int64_t) { return 1.0f; })}, {"b", floats(1000, [](int64_t) { return 2.0f; })}, {"c", floats(999, [](int64_t) { return 0.0f; })}};
  std::string e = error_of([&] { p.run(in); });
  CHECK_THAT(e, Catch::Contains("output 'c'") && Catch::Contains("999 float32") && Catch::Contains("1000 float32"));
  in.erase("c");  // and the failed run left nothing behind: the next run makes a fresh output
  std::vector<interp::Output> got = p.run(in);
  CHECK(interp::get_element(got[0].value, 999) == 3.0);
}

TEST_CASE("Program: kept temporaries do not leak one run's sums into the next", "[program]") {
  for (const char* be : kBackends) {
    INFO("backend " << be);
    backend::RunOptions o;
    o.backend = backend::parse_backend(be);
    backend::Program p(lowered(kRowSums), o);
    for (int run = 1; run <= 3; ++run) {
      // m[r][k] = run * (r + 1): row r sums to 8 * run * (r + 1), exactly.
      interp::BufferMap in{{"m", floats(32, [](int64_t i) { return float(i / 8 + 1); })}};
      for (int64_t i = 0; i < 32; ++i) in["m"].data->as<float>()[i] *= float(run);
      std::vector<interp::Output> got = p.run(in);
      REQUIRE(got[0].value.numel() == 4);
      for (int64_t r = 0; r < 4; ++r) CHECK(interp::get_element(got[0].value, r) == 8.0 * run * double(r + 1));
    }
  }
}

TEST_CASE("Program: a kernel that cannot be compiled fails when the program is prepared", "[program]") {
  // cc without a C compiler: the error comes from the constructor, not a run. (float16 served for
  // this before the C backend computed it.)
  const char* half = R"(%0 = BUFFER float16 () ("h", 4)
%1 = CONST float16 () 1.0
%2 = ADD float16 (%0, %1)
%3 = SINK void (%2) ("o",)
)";
  UOp prog = lowered(half);
  backend::RunOptions o;
  o.backend = backend::Backend::Cc;
  setenv("OW_CC", "/nonexistent/ow-test-cc", 1);
  setenv("OW_CACHE_DIR", "off", 1);
  std::string err = error_of([&] { backend::Program(prog, o); });
  unsetenv("OW_CC");
  unsetenv("OW_CACHE_DIR");
  CHECK_THAT(err, Catch::Contains("the cc backend needs a C compiler: '/nonexistent/ow-test-cc' was not found"));
  CHECK(error_of([&] { backend::Program(prog, {}); }) == "(no error)");  // tcc computes float16
}

namespace {

// A host loop m1 over 0..3 launching a copy kernel at index v in [0, hi], bound to m1 (hi = 2
// leaves out m1 = 3). `extra_nodes` and `extra_srcs` add a second BIND to the KERNEL.
std::string bound_loop(const std::string& hi, const std::string& extra_nodes = "", const std::string& extra_srcs = "") {
  return "%x = BUFFER float32 () (\"x\", 4)\n"
         "%o = BUFFER float32 () (\"out\", 4)\n"
         "%c4 = CONST index () 4\n"
         "%r = RANGE index (%c4) (-1, AxisType.OUTER)\n"
         "%v = DEFINE_VAR index () (\"v\", 0, " + hi + ")\n" +
         "%g0 = DEFINE_GLOBAL float32*4 () 0\n"
         "%g1 = DEFINE_GLOBAL float32*4 () 1\n"
         "%px = INDEX float32*4 (%g1, %v)\n"
         "%lx = LOAD float32 (%px)\n"
         "%po = INDEX float32*4 (%g0, %v)\n"
         "%st = STORE void (%po, %lx)\n"
         "%ast = SINK void (%st)\n"
         "%bind = BIND index (%v, %r)\n" +
         extra_nodes + "%k = KERNEL void (%ast, %o, %x, %bind" + extra_srcs + ") (\"k0\",)\n" +
         "%grp = GROUP void (%k)\n"
         "%loop = END void (%grp, %r)\n"
         "%steps = GROUP void (%loop)\n"
         "%view = RESHAPE float32 (%o, %c4)\n"
         "%out = AFTER float32 (%view, %steps)\n"
         "%root = SINK void (%out) (\"out\",)\n";
}

// The error of running `program` on the interpreter itself and on each backend's runner.
std::map<std::string, std::string> bind_errors(UOp program) {
  std::map<std::string, std::string> errors;
  auto inputs = [] { return interp::BufferMap{{"x", floats(4, [](int64_t i) { return float(i); })}}; };
  interp::BufferMap b = inputs();
  errors["interpreter"] = error_of([&] { interp::run(program, b); });
  for (const char* be : kBackends) {
    backend::RunOptions o;
    o.backend = backend::parse_backend(be);
    interp::BufferMap c = inputs();
    errors[be] = error_of([&] { backend::run_program(program, c, o); });
  }
  return errors;
}

}  // namespace

// The interpreter's verifier refuses this graph before it runs (the bound value's range is known);
// a runner does not verify, and used to launch the kernel with v = 3. The runtime check is the
// interpreter's (bind_refusal), with its message.
TEST_CASE("Program: a BIND outside its variable's bounds is refused on every backend", "[program]") {
  UOp program = parse_graph(bound_loop("2"), "<test>").root;
  std::map<std::string, std::string> errors = bind_errors(program);
  CHECK_THAT(errors["interpreter"], Catch::Contains("bind.bounds"));
  for (const char* be : kBackends) {
    INFO("backend " << be);
    CHECK(errors[be] == "variable 'v' bound to 3, outside its bounds [0, 2]\n  at %13 = BIND index (%4, %12)\n  with m1=3");
  }
}

TEST_CASE("Program: a variable bound twice with different values is refused on every backend, as the interpreter refuses it", "[program]") {
  UOp program = parse_graph(bound_loop("4", "%c1 = CONST index () 1\n%next = ADD index (%r, %c1)\n%bind2 = BIND index (%v, %next)\n", ", %bind2"), "<test>").root;
  std::map<std::string, std::string> errors = bind_errors(program);
  const std::string& want = errors["interpreter"];
  CHECK_THAT(want, Catch::StartsWith("variable 'v' is bound twice with different values\n  at %") && Catch::EndsWith("\n  with m1=0"));
  for (const char* be : kBackends) {
    INFO("backend " << be);
    CHECK(errors[be] == want);
  }
}

namespace {

// out = tgt[idx], as tinygrad gathers (sum over j of where(idx == j, tgt[j], 0)), with only
// tgt[0:2] written: whether the output reads uninitialized memory depends on idx's value.
const char* kGatherHalfWritten = R"(%0 = BUFFER float32 () ("tgt", 4)
%1 = CONST index () 4
%2 = RESHAPE float32 (%0, %1)
%3 = CONST index () 0
%4 = CONST index () 2
%5 = SHRINK float32 (%2, %3, %4)
%6 = CONST float32 () 1.5
%7 = CONST index () 1
%8 = RESHAPE float32 (%6, %7)
%9 = EXPAND float32 (%8, %4)
%10 = STORE void (%5, %9)
%11 = AFTER float32 (%2, %10)
%12 = BUFFER int32 () ("idx", 1)
%13 = RESHAPE int32 (%12, %7)
%14 = EXPAND int32 (%13, %1)
%15 = BUFFER int32 () ("ar", 4)
%16 = RESHAPE int32 (%15, %1)
%17 = CMPEQ bool (%14, %16)
%18 = CONST float32 () 0.0
%19 = RESHAPE float32 (%18, %7)
%20 = EXPAND float32 (%19, %1)
%21 = WHERE float32 (%17, %11, %20)
%22 = REDUCE_AXIS float32 (%21) (Ops.ADD, (0,))
%23 = SINK void (%22) ("out",)
)";

interp::BufferData ints(std::vector<int32_t> v) {
  auto s = std::make_shared<interp::Storage>(dtypes::int32, static_cast<int64_t>(v.size()));
  std::copy(v.begin(), v.end(), s->as<int32_t>());
  return {dtypes::int32, s, nullptr};
}

}  // namespace

TEST_CASE("poison_follows_data: addresses and conditions computed from loads, not values", "[program][poison]") {
  bool gather = false;
  for (const HostLaunch& l : host_program(lowered(kGatherHalfWritten)).launches) gather |= interp::poison_follows_data(l.kernel->src[0]);
  CHECK(gather);  // the WHERE's condition compares a loaded idx
  for (const std::string& text : {kAxpb, std::string(kRowSums)})
    for (const HostLaunch& l : host_program(lowered(text)).launches) CHECK_FALSE(interp::poison_follows_data(l.kernel->src[0]));
  UOp scan = lower::lower(parse_graph(ow::test::slurp(ow::test::source_root() / "reference" / "cases" / "scan_big_16x256.uop"), "scan").root);
  for (const HostLaunch& l : host_program(scan).launches) CHECK_FALSE(interp::poison_follows_data(l.kernel->src[0]));
}

// A compiled run that may read uninitialized memory asks the interpreter first. Its verdict is
// kept per set of buffers left out only when no kernel's poison flow depends on data: here it
// does, so the second run (idx = 3, an element never written) must not reuse the first's "fine".
TEST_CASE("Program: a kept uninitialized-memory verdict never hides a data-dependent read", "[program][poison]") {
  for (const char* be : {"tcc", "cc"}) {
    INFO("backend " << be);
    backend::RunOptions o;
    o.backend = backend::parse_backend(be);
    backend::CompiledGraph g(parse_graph(kGatherHalfWritten, "<test>").root, o);
    interp::BufferMap ok{{"idx", ints({1})}, {"ar", ints({0, 1, 2, 3})}};
    std::vector<interp::Output> out = g.run(ok);
    REQUIRE(out.size() == 1);
    CHECK(interp::get_element(out[0].value, 0) == 1.5);
    interp::BufferMap bad{{"idx", ints({3})}, {"ar", ints({0, 1, 2, 3})}};
    CHECK(error_of([&] { g.run(bad); }).rfind("output 'out' reads uninitialized memory: 1 of 1 elements are poison", 0) == 0);
    CHECK(interp::get_element(g.run(ok)[0].value, 0) == 1.5);
  }
}

// backend auto (backends/tiered.h): tcc first, cc compiled in the background from the second run
// on, then cc; every run's result is the interpreter's, before, across and after the switch.
TEST_CASE("Program auto: starts on tcc, moves to cc once compiled, the same bits throughout", "[program][auto]") {
  backend::RunOptions o;
  o.backend = backend::Backend::Auto;
  backend::Program p(lowered(kAxpb), o);
  interp::BufferMap in{{"a", floats(1000, [](int64_t i) { return 0.37f * float(i) - 11.0f; })}, {"b", floats(1000, [](int64_t i) { return 1.0f / float(i + 3); })}};
  CHECK(p.tier() == backend::Backend::Tcc);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int runs = 0, on_tcc = 0;
  while (p.tier() != backend::Backend::Cc && std::chrono::steady_clock::now() < deadline) {
    interp::BufferMap b = in;
    require_axpb(p.run(b).at(0).value, in);
    ++runs, ++on_tcc;
    std::this_thread::sleep_for(std::chrono::milliseconds(runs < 2 ? 0 : 20));
  }
  INFO("cc: " << p.tier_error());
  REQUIRE(p.tier() == backend::Backend::Cc);
  CHECK(on_tcc >= 2);  // a program run once never starts the cc compile
  for (int i = 0; i < 3; ++i) {
    interp::BufferMap b = in;
    require_axpb(p.run(b).at(0).value, in);
  }
  CHECK(p.tier_error().empty());
}

TEST_CASE("Program auto: when cc cannot compile, runs stay on tcc and say why", "[program][auto]") {
  const char* old = std::getenv("OW_CC");
  std::string saved = old ? old : "";
  setenv("OW_CC", "/nonexistent/ow-test-cc", 1);
  backend::RunOptions o;
  o.backend = backend::Backend::Auto;
  backend::Program p(lowered(kAxpb), o);
  interp::BufferMap in{{"a", floats(1000, [](int64_t i) { return float(i); })}, {"b", floats(1000, [](int64_t i) { return 0.5f - float(i); })}};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int runs = 0; p.tier_error().empty() && std::chrono::steady_clock::now() < deadline; ++runs) {
    interp::BufferMap b = in;
    require_axpb(p.run(b).at(0).value, in);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (old) setenv("OW_CC", saved.c_str(), 1);
  else unsetenv("OW_CC");
  CHECK_THAT(p.tier_error(), Catch::Contains("/nonexistent/ow-test-cc"));
  CHECK(p.tier() == backend::Backend::Tcc);
  interp::BufferMap b = in;
  require_axpb(p.run(b).at(0).value, in);
}
