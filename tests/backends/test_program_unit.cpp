// Whole programs compiled at once (issue 18): every kernel of a program in one translation unit
// and one compile (RunOptions::compile_mode "program", the default), the old per-kernel compiles
// behind compile_mode "kernel", errors that still name their kernel and node, and launches that
// allocate nothing. Expected values are computed here by hand.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <new>

#include "test_support.h"

#include "backends/c/render.h"
#include "backends/program.h"
#include "interp/compare.h"
#include "lower/lower.h"
#include "uop/text.h"
#include "cases.h"

using namespace ow;
using ow::test::error_of;

// Every allocation of this test binary is counted while `counting` is set (the no-allocation test).
namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  if (counting) ++allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// The nothrow forms too (std::stable_sort's temporary buffer uses them): memory from the
// sanitizer's own operator new must not reach the free() below (ASan: alloc-dealloc-mismatch).
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (counting) ++allocations;
  return std::malloc(n ? n : 1);
}
// GCC sees operator new's standard declaration, not this file's malloc-based definition, and
// warns that free() frees what new returned; here it is exactly what new returned.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

// The tail of a program of kernels %k0 and %k1, launched in that order, whose outputs are their
// buffers %b0 (dtype t0) and %b1 (t1), named alike.
std::string both_launched(const std::string& t0, const std::string& b0, const std::string& t1, const std::string& b1) {
  return "%grp = GROUP void (%k0, %k1)\n%z = CONST index () 0\n%w = AFTER index (%z, %grp)\n%o1 = AFTER " + t0 + " (%" + b0 + ", %w)\n%o2 = AFTER " + t1 +
         " (%" + b1 + ", %w)\n%root = SINK void (%o1, %o2) (\"" + b0 + "\", \"" + b1 + "\")\n";
}

// Kernel k's IDIV node as k's print numbers it (what an error in k names).
std::string idiv_line(UOp k) {
  UOp q;
  for (UOp u : toposort(k))
    if (u->op == Ops::IDIV) q = u;
  REQUIRE(q);
  return number_graph(k).line(q);
}

// How run_program runs on `tier` compiling in `mode` ("program" or "kernel").
backend::RunOptions compiled(const char* tier, const char* mode) {
  backend::RunOptions o;
  o.backend = backend::parse_backend(tier);
  o.compile_mode = mode;
  return o;
}

// The kernels a lowered program launches, in launch order.
std::vector<UOp> launched_kernels(UOp program) {
  std::vector<UOp> ks;
  for (const HostLaunch& l : host_program(program).launches) ks.push_back(l.kernel);
  return ks;
}

// Two kernels: NAME0 copies x into y (float32); NAME1 divides a by d elementwise into out (int32),
// so a zero in d is a division-by-zero error in the second kernel.
std::string two_kernels(const std::string& name0, const std::string& name1) {
  return R"(%c4 = CONST index () 4
%g0 = DEFINE_GLOBAL float32*4 () 0
%r0 = RANGE index (%c4) (1000, AxisType.LOOP)
%i0 = INDEX float32*4 (%g0, %r0)
%g1 = DEFINE_GLOBAL float32*4 () 1
%i1 = INDEX float32*4 (%g1, %r0)
%l1 = LOAD float32 (%i1)
%s0 = STORE void (%i0, %l1)
%e0 = END void (%s0, %r0)
%a0 = SINK void (%e0)
%y = BUFFER float32 () ("y", 4)
%x = BUFFER float32 () ("x", 4)
%k0 = KERNEL void (%a0, %y, %x) (")" + name0 + R"(",)
%h0 = DEFINE_GLOBAL int32*4 () 0
%r1 = RANGE index (%c4) (1001, AxisType.LOOP)
%j0 = INDEX int32*4 (%h0, %r1)
%h1 = DEFINE_GLOBAL int32*4 () 1
%j1 = INDEX int32*4 (%h1, %r1)
%m1 = LOAD int32 (%j1)
%h2 = DEFINE_GLOBAL int32*4 () 2
%j2 = INDEX int32*4 (%h2, %r1)
%m2 = LOAD int32 (%j2)
%q = IDIV int32 (%m1, %m2)
%s1 = STORE void (%j0, %q)
%e1 = END void (%s1, %r1)
%a1 = SINK void (%e1)
%out = BUFFER int32 () ("out", 4)
%a = BUFFER int32 () ("a", 4)
%d = BUFFER int32 () ("d", 4)
%k1 = KERNEL void (%a1, %out, %a, %d) (")" + name1 + R"(",)
)" + both_launched("float32", "y", "int32", "out");
}

interp::BufferData ints(std::vector<int32_t> v) {
  auto s = std::make_shared<interp::Storage>(dtypes::int32, static_cast<int64_t>(v.size()));
  std::copy(v.begin(), v.end(), s->as<int32_t>());
  return {dtypes::int32, s, nullptr};
}

interp::BufferMap two_kernel_inputs(std::vector<int32_t> d) {
  auto x = std::make_shared<interp::Storage>(dtypes::float32, 4);
  for (int i = 0; i < 4; ++i) x->as<float>()[i] = 0.5f + float(i);
  return {{"x", {dtypes::float32, x, nullptr}}, {"a", ints({7, -9, 12, 100})}, {"d", ints(std::move(d))}};
}

UOp program_of(const std::string& text) { return parse_graph(text, "<test>").root; }

}  // namespace

TEST_CASE("a program's kernels compile in one compile call; compile mode kernel compiles each alone", "[program][unit]") {
  UOp p = program_of(two_kernels("k0", "k1"));
  for (const char* tier : {"tcc", "cc"}) {
    INFO(tier);
    backend::RunOptions o;
    o.backend = backend::parse_backend(tier);
    backend::CompileStats whole = backend::Program(p, o).compile_stats();
    CHECK(whole.compiles + whole.cache_hits == 1);
    o.compile_mode = "kernel";
    backend::CompileStats each = backend::Program(p, o).compile_stats();
    CHECK(each.compiles + each.cache_hits == 2);
  }
  backend::RunOptions bad;
  bad.backend = backend::Backend::Tcc;
  bad.compile_mode = "kernels";
  CHECK(error_of([&] { backend::Program(p, bad); }) == "compile mode must be 'program' (one translation unit) or 'kernel' (one per kernel), got 'kernels'");
}

TEST_CASE("kernels that render to the same C name get unique functions in the unit and still compute their own values", "[program][unit]") {
  UOp p = program_of(two_kernels("k", "k"));
  backend::RenderedUnit u = backend::render_unit(launched_kernels(p));
  REQUIRE(u.kernels.size() == 2);
  CHECK(u.kernels[0].name == "k");
  CHECK(u.kernels[1].name == "k_2");
  CHECK(u.source.find("int k_2(void** bufs") != std::string::npos);
  for (const char* tier : {"tcc", "cc"}) {
    INFO(tier);
    backend::RunOptions o;
    o.backend = backend::parse_backend(tier);
    interp::BufferMap b = two_kernel_inputs({2, 4, -5, 7});
    std::vector<interp::Output> outs = backend::run_program(p, b, o);
    REQUIRE(outs.size() == 2);
    const float* y = outs[0].value.data->as<float>();
    const int32_t* q = outs[1].value.data->as<int32_t>();
    CHECK(std::vector<float>(y, y + 4) == std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f});
    CHECK(std::vector<int32_t>(q, q + 4) == std::vector<int32_t>{3, -2, -2, 14});  // C truncates toward zero
  }
}

TEST_CASE("an error in the second kernel of a translation unit names that kernel and its node", "[program][unit]") {
  UOp p = program_of(two_kernels("k0", "k1"));
  std::string idiv = idiv_line(host_program(p).launches[1].kernel);
  CHECK_THAT(idiv, Catch::Contains("IDIV int32"));
  for (const char* tier : {"tcc", "cc"}) {
    for (const char* mode : {"program", "kernel"}) {
      INFO(tier << ", compile mode " << mode);
      backend::RunOptions o = compiled(tier, mode);
      interp::BufferMap b = two_kernel_inputs({2, 4, 0, 7});
      std::string msg = error_of([&] { backend::run_program(p, b, o); });
      CHECK(msg == "kernel k1 (" + std::string(tier) + "): integer division by zero\n  at " + idiv);
    }
  }
}

namespace {

// Two kernels with one body over other buffers and ranges: NAME0 stores out = a / d, NAME1
// stores out2 = b / e (int32), their ranges 1000 and 1001 (so their C differs in comments).
std::string twin_kernels(const std::string& name0, const std::string& name1) {
  std::string text = "%c4 = CONST index () 4\n";
  for (int k = 0; k < 2; ++k) {
    std::string n = std::to_string(k), out = k ? "out2" : "out", x = k ? "b" : "a", y = k ? "e" : "d";
    text += "%r" + n + " = RANGE index (%c4) (" + std::to_string(1000 + k) + ", AxisType.LOOP)\n";
    for (int slot = 0; slot < 3; ++slot) {
      std::string g = "%g" + n + std::to_string(slot);
      text += g + " = DEFINE_GLOBAL int32*4 () " + std::to_string(slot) + "\n%i" + n + std::to_string(slot) + " = INDEX int32*4 (" + g + ", %r" + n + ")\n";
    }
    text += "%l" + n + "1 = LOAD int32 (%i" + n + "1)\n%l" + n + "2 = LOAD int32 (%i" + n + "2)\n";
    text += "%q" + n + " = IDIV int32 (%l" + n + "1, %l" + n + "2)\n%s" + n + " = STORE void (%i" + n + "0, %q" + n + ")\n";
    text += "%e" + n + " = END void (%s" + n + ", %r" + n + ")\n%a" + n + " = SINK void (%e" + n + ")\n";
    text += "%" + out + " = BUFFER int32 () (\"" + out + "\", 4)\n%" + x + " = BUFFER int32 () (\"" + x + "\", 4)\n%" + y + " = BUFFER int32 () (\"" + y + "\", 4)\n";
    text += "%k" + n + " = KERNEL void (%a" + n + ", %" + out + ", %" + x + ", %" + y + ") (\"" + (k ? name1 : name0) + "\",)\n";
  }
  return text + both_launched("int32", "out", "int32", "out2");
}

}  // namespace

TEST_CASE("kernels whose C differs only in names and comments run one function, each on its own buffers, with its own errors", "[program][unit]") {
  UOp p = program_of(twin_kernels("div", "again"));
  std::vector<UOp> ks = launched_kernels(p);
  backend::RenderedUnit u = backend::render_unit(ks);
  REQUIRE(u.kernels.size() == 2);
  CHECK(u.shared == 1);
  CHECK(u.kernels[1].name == "div");
  CHECK(u.source.find("int div(void** bufs") != std::string::npos);
  CHECK(u.source.find("int again(") == std::string::npos);
  CHECK(u.source.find("// again: runs div, the same C but for names and comments") != std::string::npos);
  CHECK(u.kernels[1].own_name == "again");
  // ow show-c lists each kernel under its own name: the second as the first's function.
  std::string shown = backend::show_c(p);
  CHECK(shown.find("// ---- kernel div ----\nint div(void** bufs") != std::string::npos);
  CHECK(shown.find("// ---- kernel again: runs div, the same C but for names and comments ----\n") != std::string::npos);
  CHECK(shown.find("// ---- kernel div ----", shown.find("// ---- kernel div ----") + 1) == std::string::npos);
  // Kernels with other C keep their own functions.
  CHECK(backend::render_unit(launched_kernels(program_of(two_kernels("k0", "k1")))).shared == 0);

  std::string idiv = idiv_line(ks[1]);  // the second kernel's own numbering
  for (const char* tier : {"tcc", "cc"}) {
    for (const char* mode : {"program", "kernel"}) {
      INFO(tier << ", compile mode " << mode);
      backend::RunOptions o = compiled(tier, mode);
      interp::BufferMap b{{"a", ints({7, -9, 12, 100})}, {"d", ints({2, 4, -5, 7})}, {"b", ints({1, 2, 3, -40})}, {"e", ints({1, -1, 2, 3})}};
      std::vector<interp::Output> outs = backend::run_program(p, b, o);
      REQUIRE(outs.size() == 2);
      const int32_t *x = outs[0].value.data->as<int32_t>(), *y = outs[1].value.data->as<int32_t>();
      CHECK(std::vector<int32_t>(x, x + 4) == std::vector<int32_t>{3, -2, -2, 14});  // C truncates toward zero
      CHECK(std::vector<int32_t>(y, y + 4) == std::vector<int32_t>{1, -2, 1, -13});
      b["e"] = ints({1, 0, 2, 3});
      CHECK(error_of([&] { backend::run_program(p, b, o); }) == "kernel again (" + std::string(tier) + "): integer division by zero\n  at " + idiv);
    }
  }
}

namespace {

// Allocations of one run of a prepared scan of n steps (every buffer given: nothing else runs).
long run_allocations(int64_t n, const char* tier) {
  backend::RunOptions o;
  o.backend = backend::parse_backend(tier);
  UOp g = cases::scan_with_assign(n, 4);
  backend::CompiledGraph prepared(g, o);
  interp::BufferMap b;
  for (const char* name : {"vec", "mats", "out"}) {
    int64_t size = name[0] == 'v' ? 4 : name[0] == 'm' ? n * 16 : n * 4;
    auto s = std::make_shared<interp::Storage>(dtypes::float32, size);
    for (int64_t i = 0; i < size; ++i) s->as<float>()[i] = 0.25f;
    b[name] = {dtypes::float32, s, nullptr};
  }
  prepared.run(b);  // lowers and compiles
  allocations = 0;
  counting = true;
  prepared.run(b);
  counting = false;
  return allocations;
}

}  // namespace

TEST_CASE("a compiled launch allocates nothing: a run of 400 scan steps allocates as much as a run of 4", "[program][unit]") {
  for (const char* tier : {"tcc", "cc"}) {
    INFO(tier);
    long few = run_allocations(4, tier), many = run_allocations(400, tier);
    CHECK(few > 0);
    CHECK(many == few);
  }
}

namespace {

// The scan of n steps lowered, and its inputs (vec, mats) as 0.25 + i / 64.
struct ScanProgram {
  UOp program;
  interp::BufferMap inputs;
  explicit ScanProgram(int64_t n) {
    UOp g = cases::scan_with_assign(n, 4);
    program = lower::lower(g);
    for (const char* name : {"vec", "mats"}) {
      int64_t size = name[0] == 'v' ? 4 : n * 16;
      auto s = std::make_shared<interp::Storage>(dtypes::float32, size);
      for (int64_t i = 0; i < size; ++i) s->as<float>()[i] = 0.25f + float(i % 7) / 64.0f;
      inputs[name] = {dtypes::float32, s, nullptr};
    }
  }
};

// Outputs or error of one run; `watched` sets on_launch, which keeps every loop on the host walk.
std::pair<std::vector<interp::Output>, std::string> run_scan(const ScanProgram& s, const char* tier, uint64_t max_launches, bool watched) {
  backend::RunOptions o;
  o.backend = backend::parse_backend(tier);
  o.max_launches = max_launches;
  if (watched) o.on_launch = [](UOp, const auto&) {};
  interp::BufferMap b = interp::copy_buffers(s.inputs);
  std::vector<interp::Output> outs;
  std::string err = error_of([&] { outs = backend::run_program(s.program, b, o); });
  return {outs, err == "(no error)" ? "" : err};
}

}  // namespace

TEST_CASE("a host loop of launches compiled into the unit: the walk's results, budget and BIND errors", "[program][unit]") {
  ScanProgram s(6);
  backend::RenderedUnit u = backend::render_program_unit(host_program(s.program));
  REQUIRE(u.loops.size() == 1);
  CHECK(u.source.find("int " + u.loops[0].name + "(long long ow_l_n") != std::string::npos);
  interp::BufferMap ib = interp::copy_buffers(s.inputs);
  std::vector<interp::Output> want = interp::run(s.program, ib);
  for (const char* tier : {"tcc", "cc"}) {
    INFO(tier);
    auto [outs, err] = run_scan(s, tier, 0, false);
    INFO(err);
    REQUIRE(err.empty());
    REQUIRE(outs.size() == want.size());
    CHECK_FALSE(interp::first_difference(want[0].value, outs[0].value));
    for (uint64_t budget : {1, 2, 3, 7, 13, 27, 100}) {  // before, inside and after the loop
      INFO("budget " << budget);
      auto c = run_scan(s, tier, budget, false);
      auto w = run_scan(s, tier, budget, true);
      CHECK(c.second == w.second);
      if (c.second.empty() && w.second.empty()) CHECK_FALSE(interp::first_difference(w.first[0].value, c.first[0].value));
    }
    // one launch per step (the in-place scan, its matvec stored straight into the step's row):
    // the 5th launch is k0 of step m1=4
    CHECK(run_scan(s, tier, 4, false).second == "step budget exceeded: 4 kernel launches, at kernel k0 with m1=4 (ow: --max-steps N raises it)");
  }
}

namespace {

// out[v] = x[v] for v = 2 * m1 + m2 + shift, m1 in 0..3 (outer host loop), m2 in 0..2 (inner);
// v's bounds are [0, 5], so a shift of 1 is refused at m1=2, m2=1.
std::string nested_loops(int shift) {
  return "%x = BUFFER float32 () (\"x\", 7)\n"
         "%o = BUFFER float32 () (\"out\", 7)\n"
         "%c2 = CONST index () 2\n%c3 = CONST index () 3\n%c7 = CONST index () 7\n"
         "%sh = CONST index () " + std::to_string(shift) + "\n"
         "%r1 = RANGE index (%c3) (-1, AxisType.OUTER)\n"
         "%r2 = RANGE index (%c2) (-2, AxisType.OUTER)\n"
         "%v = DEFINE_VAR index () (\"v\", 0, 5)\n"
         "%g0 = DEFINE_GLOBAL float32*7 () 0\n%g1 = DEFINE_GLOBAL float32*7 () 1\n"
         "%px = INDEX float32*7 (%g1, %v)\n%lx = LOAD float32 (%px)\n%po = INDEX float32*7 (%g0, %v)\n"
         "%st = STORE void (%po, %lx)\n%ast = SINK void (%st)\n"
         "%m = MUL index (%r1, %c2)\n%a = ADD index (%m, %r2)\n%val = ADD index (%a, %sh)\n"
         "%bind = BIND index (%v, %val)\n"
         "%k = KERNEL void (%ast, %o, %x, %bind) (\"k0\",)\n"
         "%grp = GROUP void (%k)\n%loop = END void (%grp, %r1, %r2)\n%steps = GROUP void (%loop)\n"
         "%view = RESHAPE float32 (%o, %c7)\n%out = AFTER float32 (%view, %steps)\n%root = SINK void (%out) (\"out\",)\n";
}

std::string nested_run(UOp p, const char* tier, bool watched, std::vector<float>& got) {
  backend::RunOptions o;
  o.backend = backend::parse_backend(tier);
  if (watched) o.on_launch = [](UOp, const auto&) {};
  auto x = std::make_shared<interp::Storage>(dtypes::float32, 7), out = std::make_shared<interp::Storage>(dtypes::float32, 7);
  for (int i = 0; i < 7; ++i) x->as<float>()[i] = 1.5f * float(i + 1), out->as<float>()[i] = -1.0f;
  interp::BufferMap b{{"x", {dtypes::float32, x, nullptr}}, {"out", {dtypes::float32, out, nullptr}}};
  std::string err = error_of([&] { backend::run_program(p, b, o); });
  got.assign(out->as<float>(), out->as<float>() + 7);
  return err;
}

}  // namespace

TEST_CASE("a nest of two host loops compiled into the unit reads the outer loop's value; a refused BIND is the walk's error", "[program][unit]") {
  UOp ok = parse_graph(nested_loops(0), "<test>").root, bad = parse_graph(nested_loops(1), "<test>").root;
  backend::RenderedUnit u = backend::render_program_unit(host_program(ok));
  REQUIRE(u.loops.size() == 1);  // the outer loop, the inner one nested in it
  CHECK(u.loops[0].outer.empty());
  CHECK(u.loops[0].depth == 2);
  for (const char* tier : {"tcc", "cc"}) {
    INFO(tier);
    std::vector<float> got;
    CHECK(nested_run(ok, tier, false, got) == "(no error)");
    CHECK(got == std::vector<float>{1.5f, 3.0f, 4.5f, 6.0f, 7.5f, 9.0f, -1.0f});
    std::vector<float> walked, compiled;
    std::string want = nested_run(bad, tier, true, walked);
    CHECK_THAT(want, Catch::StartsWith("variable 'v' bound to 6, outside its bounds [0, 5]\n  at %") && Catch::EndsWith("\n  with m1=2, m2=1"));
    CHECK(nested_run(bad, tier, false, compiled) == want);
    CHECK(compiled == walked);  // the same launches ran before the refusal
  }
}
