// Nested host loops compiled into the unit as one C function (backends/c/host_loop.cpp): a loop
// whose body is launches and loops, to any depth, runs in one call with nested C loops. Its
// results are the interpreter's, bit for bit, and hand-derived; its errors (a BIND out of
// bounds, a variable bound twice, the launch budget) are the host walk's, word for word; a nest
// with host math the renderer does not write falls back to the walk for its outer loops.
#include <catch2/catch.hpp>

#include <cstring>

#include "fold_graphs.h"
#include "test_support.h"

#include "backends/c/render.h"
#include "backends/program.h"
#include "interp/compare.h"
#include "lower/lower.h"
#include "uop/text.h"

using namespace ow;
using ow::test::error_of;

namespace {

// The variants of the nest below.
struct Nest {
  int v_hi = 23;       // kadd's v bounds [0, v_hi]: below 23, refused in the innermost loop
  bool twice = false;  // kout binds a twice, to m1 and m1 * m2: differ first at m1=1, m2=0
  bool opaque = false; // kout's w is (m1 * 3 + m2) | 0: host math the renderer does not write
  int m3_extent = 4;   // 0: kadd never runs
};

// A lowered program of three nested host loops with launches at two depths:
//   for m1 in 0..2: kinit: acc[m1] = 0.5
//     for m2 in 0..3: (for m3 in 0..4: kadd: acc[m1] = acc[m1] * 0.5 + x[12 m1 + 4 m2 + m3])
//                     kout: out[3 m1 + m2] = acc[m1]
std::string nest_text(const Nest& n) {
  std::string s =
      "%x = BUFFER float32 () (\"x\", 24)\n%acc = BUFFER float32 () (\"acc\", 2)\n%o = BUFFER float32 () (\"out\", 6)\n"
      "%c2 = CONST index () 2\n%c3 = CONST index () 3\n%c4 = CONST index () 4\n%c6 = CONST index () 6\n%c12 = CONST index () 12\n"
      "%r1 = RANGE index (%c2) (-1, AxisType.OUTER)\n%r2 = RANGE index (%c3) (-2, AxisType.OUTER)\n" +
      (n.m3_extent == 4 ? "%r3 = RANGE index (%c4) (-3, AxisType.OUTER)\n" : "%ce = CONST index () " + std::to_string(n.m3_extent) + "\n%r3 = RANGE index (%ce) (-3, AxisType.OUTER)\n") +
      "%va = DEFINE_VAR index () (\"a\", 0, 1)\n%vv = DEFINE_VAR index () (\"v\", 0, " + std::to_string(n.v_hi) + ")\n%vw = DEFINE_VAR index () (\"w\", 0, 5)\n"
      "%gacc = DEFINE_GLOBAL float32*2 () 0\n%gx = DEFINE_GLOBAL float32*24 () 1\n%gout = DEFINE_GLOBAL float32*6 () 0\n%gacc1 = DEFINE_GLOBAL float32*2 () 1\n"
      "%half = CONST float32 () 0.5\n"
      // kinit
      "%pa = INDEX float32*2 (%gacc, %va)\n%sti = STORE void (%pa, %half)\n%asti = SINK void (%sti)\n"
      "%ba = BIND index (%va, %r1)\n%kinit = KERNEL void (%asti, %acc, %ba) (\"kinit\",)\n"
      // kadd
      "%la = LOAD float32 (%pa)\n%px = INDEX float32*24 (%gx, %vv)\n%lx = LOAD float32 (%px)\n%mh = MUL float32 (%la, %half)\n%sum = ADD float32 (%mh, %lx)\n"
      "%sta = STORE void (%pa, %sum)\n%asta = SINK void (%sta)\n"
      "%v1 = MUL index (%r1, %c12)\n%v2 = MUL index (%r2, %c4)\n%v3 = ADD index (%v1, %v2)\n%v4 = ADD index (%v3, %r3)\n%bv = BIND index (%vv, %v4)\n"
      "%kadd = KERNEL void (%asta, %acc, %x, %ba, %bv) (\"kadd\",)\n"
      // kout
      "%pa1 = INDEX float32*2 (%gacc1, %va)\n%la1 = LOAD float32 (%pa1)\n%po = INDEX float32*6 (%gout, %vw)\n%sto = STORE void (%po, %la1)\n%asto = SINK void (%sto)\n"
      "%w1 = MUL index (%r1, %c3)\n%w2 = ADD index (%w1, %r2)\n";
  s += n.opaque ? "%c0 = CONST index () 0\n%w3 = OR index (%w2, %c0)\n%bw = BIND index (%vw, %w3)\n" : "%bw = BIND index (%vw, %w2)\n";
  s += n.twice ? "%a2 = MUL index (%r1, %r2)\n%ba2 = BIND index (%va, %a2)\n%kout = KERNEL void (%asto, %o, %acc, %bw, %ba, %ba2) (\"kout\",)\n"
               : "%kout = KERNEL void (%asto, %o, %acc, %bw, %ba) (\"kout\",)\n";
  return s +
         "%e3 = END void (%kadd, %r3)\n%g2 = GROUP void (%e3, %kout)\n%e2 = END void (%g2, %r2)\n%g1 = GROUP void (%kinit, %e2)\n%e1 = END void (%g1, %r1)\n"
         "%steps = GROUP void (%e1)\n%view = RESHAPE float32 (%o, %c6)\n%out = AFTER float32 (%view, %steps)\n%root = SINK void (%out) (\"out\",)\n";
}

UOp nest(const Nest& n) { return parse_graph(nest_text(n), "<nest>").root; }

interp::BufferMap nest_inputs() {
  auto x = std::make_shared<interp::Storage>(dtypes::float32, 24), o = std::make_shared<interp::Storage>(dtypes::float32, 6);
  for (int i = 0; i < 24; ++i) x->as<float>()[i] = float(i + 1);
  for (int i = 0; i < 6; ++i) o->as<float>()[i] = -1.0f;
  return {{"x", {dtypes::float32, x, nullptr}}, {"out", {dtypes::float32, o, nullptr}}};
}

// out by hand: every value is a dyadic fraction of at most 18 bits, so float math is exact.
std::vector<float> nest_by_hand(int m3_extent = 4) {
  std::vector<float> out(6);
  for (int m1 = 0; m1 < 2; ++m1) {
    float acc = 0.5f;
    for (int m2 = 0; m2 < 3; ++m2) {
      for (int m3 = 0; m3 < m3_extent; ++m3) acc = acc * 0.5f + float(12 * m1 + 4 * m2 + m3 + 1);
      out[static_cast<size_t>(3 * m1 + m2)] = acc;
    }
  }
  return out;
}

struct Result {
  std::string err;
  std::vector<float> out;  // the "out" buffer after the run (as far as it got)
};

// One run on `tier`; `walked` sets on_launch, which keeps every loop on the host walk.
Result run_nest(UOp p, const char* tier, bool walked, uint64_t max_launches = 0) {
  backend::RunOptions o;
  o.backend = backend::parse_backend(tier);
  o.max_launches = max_launches;
  if (walked) o.on_launch = [](UOp, const auto&) {};
  interp::BufferMap b = nest_inputs();
  Result r;
  r.err = error_of([&] { backend::run_program(p, b, o); });
  const float* f = b.at("out").data->as<float>();
  r.out.assign(f, f + 6);
  return r;
}

}  // namespace

TEST_CASE("a nest of three host loops compiles into one C function and computes the interpreter's values", "[program][unit][nested]") {
  UOp p = nest({});
  backend::RenderedUnit u = backend::render_program_unit(host_program(p));
  REQUIRE(u.loops.size() == 1);  // the outermost loop, its inner loops nested in it
  CHECK(u.loops[0].outer.empty());
  CHECK(u.loops[0].depth == 3);
  CHECK(u.loops[0].launches.size() == 3);  // kinit, kadd, kout
  CHECK(u.source.find("for (ow_l_k2 = 0; ow_l_k2 < ow_l_n2; ow_l_k2++) {") != std::string::npos);
  interp::BufferMap ib = nest_inputs();
  interp::run(p, ib);
  const float* want = ib.at("out").data->as<float>();
  CHECK(std::vector<float>(want, want + 6) == nest_by_hand());
  for (const char* tier : {"tcc", "cc"}) {
    INFO(tier);
    Result c = run_nest(p, tier, false);
    REQUIRE(c.err == "(no error)");
    CHECK(c.out == nest_by_hand());
    CHECK(std::memcmp(c.out.data(), want, sizeof(float) * 6) == 0);  // bit for bit
  }
}

TEST_CASE("an error inside a compiled nest is the host walk's message, with every loop's value", "[program][unit][nested]") {
  UOp bounds = nest({20, false, false}), twice = nest({23, true, false}), ok = nest({});
  for (const char* tier : {"tcc", "cc"}) {
    INFO(tier);
    Result w = run_nest(bounds, tier, true), c = run_nest(bounds, tier, false);
    CHECK_THAT(w.err, Catch::StartsWith("variable 'v' bound to 21, outside its bounds [0, 20]\n  at %") && Catch::EndsWith("\n  with m1=1, m2=2, m3=1"));
    CHECK(c.err == w.err);
    CHECK(c.out == w.out);  // the same launches ran before the refusal
    w = run_nest(twice, tier, true), c = run_nest(twice, tier, false);
    CHECK_THAT(w.err, Catch::StartsWith("variable 'a' is bound twice with different values\n  at %") && Catch::EndsWith("\n  with m1=1, m2=0"));
    CHECK(c.err == w.err);
    CHECK(c.out == w.out);
    // 16 launches per m1: kinit, then per m2 four kadd and a kout
    CHECK(run_nest(ok, tier, false, 7).err == "step budget exceeded: 7 kernel launches, at kernel kadd with m1=0, m2=1, m3=1 (ow: --max-steps N raises it)");
    CHECK(run_nest(ok, tier, false, 5).err == "step budget exceeded: 5 kernel launches, at kernel kout with m1=0, m2=0 (ow: --max-steps N raises it)");
    CHECK(run_nest(ok, tier, false, 16).err == "step budget exceeded: 16 kernel launches, at kernel kinit with m1=1 (ow: --max-steps N raises it)");
    for (uint64_t budget = 1; budget <= 33; ++budget) {
      INFO("budget " << budget);
      w = run_nest(ok, tier, true, budget), c = run_nest(ok, tier, false, budget);
      CHECK(c.err == w.err);
      CHECK(c.out == w.out);
    }
    CHECK(run_nest(ok, tier, false, 32).err == "(no error)");
  }
}

TEST_CASE("a nest with host math the renderer does not write falls back to the walk for its outer loops", "[program][unit][nested]") {
  UOp p = nest({23, false, true}), bad = nest({20, false, true});
  backend::RenderedUnit u = backend::render_program_unit(host_program(p));
  REQUIRE(u.loops.size() == 1);  // only the innermost loop: kout's BIND is an OR
  CHECK(u.loops[0].outer.size() == 2);
  CHECK(u.loops[0].depth == 1);
  CHECK(u.source.find("ow_l_k1") == std::string::npos);
  for (const char* tier : {"tcc", "cc"}) {
    INFO(tier);
    Result c = run_nest(p, tier, false);
    CHECK(c.err == "(no error)");
    CHECK(c.out == nest_by_hand());
    Result w = run_nest(bad, tier, true);
    c = run_nest(bad, tier, false);
    CHECK_THAT(w.err, Catch::EndsWith("\n  with m1=1, m2=2, m3=1"));
    CHECK(c.err == w.err);
    CHECK(c.out == w.out);
  }
}

TEST_CASE("an inner loop of no iterations in a compiled nest: its launches never run", "[program][unit][nested]") {
  Nest e;
  e.m3_extent = 0;
  UOp p = nest(e);
  backend::RenderedUnit u = backend::render_program_unit(host_program(p));
  REQUIRE(u.loops.size() == 1);
  CHECK(u.loops[0].depth == 3);
  interp::BufferMap ib = nest_inputs();
  interp::run(p, ib);
  const float* want = ib.at("out").data->as<float>();
  CHECK(std::vector<float>(want, want + 6) == nest_by_hand(0));  // 0.5 everywhere
  for (const char* tier : {"tcc", "cc"}) {
    INFO(tier);
    Result c = run_nest(p, tier, false);
    REQUIRE(c.err == "(no error)");
    CHECK(std::memcmp(c.out.data(), want, sizeof(float) * 6) == 0);
    for (uint64_t budget = 1; budget <= 9; ++budget) {  // kinit and 3 kout per m1
      INFO("budget " << budget);
      Result w = run_nest(p, tier, true, budget);
      c = run_nest(p, tier, false, budget);
      CHECK(c.err == w.err);
      CHECK(c.out == w.out);
    }
  }
}

namespace {

// A tensor-level fold over two OUTER ranges whose effect c += x[m2] runs in every iteration:
// lowered, a host loop m1 around a host loop m2 of four launches.
const std::string kFold2d = ow::test::effect_in_2d_fold("%5");

interp::BufferMap fold_inputs() {
  auto x = std::make_shared<interp::Storage>(dtypes::float32, 3), c = std::make_shared<interp::Storage>(dtypes::float32, 1);
  x->as<float>()[0] = 1.5f, x->as<float>()[1] = -0.25f, x->as<float>()[2] = 4.0f, c->as<float>()[0] = 10.0f;
  return {{"x", {dtypes::float32, x, nullptr}}, {"c", {dtypes::float32, c, nullptr}}};
}

}  // namespace

TEST_CASE("a tensor-level fold over two OUTER ranges lowers to a nest compiled whole, with the interpreter's values", "[program][unit][nested]") {
  UOp g = parse_graph(kFold2d, "fold2d.uop").root;
  backend::RenderedUnit u = backend::render_program_unit(host_program(lower::lower(g)));
  REQUIRE(u.loops.size() == 1);
  CHECK(u.loops[0].outer.empty());
  CHECK(u.loops[0].depth == 2);
  interp::BufferMap ib = fold_inputs();
  std::vector<interp::Output> want = interp::run(g, ib);
  // c runs through 10 + 1.5, -0.25, 4, 1.5, -0.25, 4: 11.5 11.25 15.25 16.75 16.5 20.5 (exact)
  CHECK(interp::get_element(want[0].value, 0) == 91.75f);
  for (const char* tier : {"tcc", "cc"}) {
    INFO(tier);
    for (uint64_t budget : {0, 1, 2, 5, 9, 14, 25, 26}) {  // 1 + 6 * 4 launches
      INFO("budget " << budget);
      backend::RunOptions o;
      o.backend = backend::parse_backend(tier);
      o.max_launches = budget;
      interp::BufferMap cb = fold_inputs(), wb = fold_inputs();
      std::vector<interp::Output> c, w;
      std::string ce = error_of([&] { c = backend::run_graph(g, cb, o); });
      o.on_launch = [](UOp, const auto&) {};  // walked
      std::string we = error_of([&] { w = backend::run_graph(g, wb, o); });
      CHECK(ce == we);
      CHECK(*cb.at("c").data->as<float>() == *wb.at("c").data->as<float>());
      if (ce != "(no error)") continue;
      CHECK_FALSE(interp::first_difference(want[0].value, c[0].value));
    }
  }
}
