// The lowering passes one at a time (src/lower/lower.h): each test gives a pass a small graph in
// the form the pass receives (checked: the passes before it leave that graph as it is, or make
// it), calls the pass function with the pipeline's lower::Context, and compares the graph it
// returns with one derived by hand from reference/LOWERING.md; the interpreter gives the same
// outputs before and after the pass.
#include <catch2/catch.hpp>

#include <string>

#include "lower/lower.h"
#include "pass_support.h"
#include "uop/args.h"

using namespace ow;
using ow::test::check_same_outputs;
using ow::test::graph_of;
using ow::test::kernels_of;
using ow::test::printed;

namespace {

// A graph and the context of its lowering, as the pipeline hands them to `pass`: every pass
// before it has run (on a fresh Context that has taken the graph's buffer names, as lower() does).
struct Stage {
  UOp graph;
  lower::Context ctx;
};

Stage before_pass(const std::string& pass, UOp root) {
  Stage s{root, {}};
  s.ctx.take_names(root);
  for (const lower::Pass& p : lower::passes()) {
    if (p.name == pass) return s;
    s.graph = p.run(s.graph, s.ctx);
  }
  FAIL("no pass " << pass);
  return s;
}

// x (3 x 0 elements) summed and maxed over its empty axis 1.
const char* empty_reductions = R"(
%0 = BUFFER float32 () ("x", 0)
%1 = CONST index () 3
%2 = CONST index () 0
%3 = RESHAPE float32 (%0, %1, %2)
%4 = REDUCE_AXIS float32 (%3) (Ops.ADD, (1,))
%5 = RESHAPE float32 (%4, %1)
%6 = REDUCE_AXIS float32 (%3) (Ops.MAX, (1,))
%7 = RESHAPE float32 (%6, %1)
%8 = SINK void (%5, %7) ("sum", "max")
)";

}  // namespace

TEST_CASE("pass empty: a reduction over an empty axis is its identity, broadcast to the kept shape", "[lower][empty]") {
  Stage s = before_pass("empty", graph_of(empty_reductions));
  REQUIRE(s.graph == graph_of(empty_reductions));
  UOp out = lower::empty(s.graph, s.ctx);
  // REDUCE_AXIS (3, 0) -> (3, 1): the op's identity (0 for ADD, -inf for MAX) as a (1, 1) that
  // EXPANDs to (3, 1); the reads of x are gone, and so is x.
  CHECK(print_graph(out) == printed(R"(
%0 = CONST float32 () 0.0
%1 = CONST index () 1
%2 = RESHAPE float32 (%0, %1, %1)
%3 = CONST index () 3
%4 = EXPAND float32 (%2, %3, %1)
%5 = RESHAPE float32 (%4, %3)
%6 = CONST float32 () -inf
%7 = RESHAPE float32 (%6, %1, %1)
%8 = EXPAND float32 (%7, %3, %1)
%9 = RESHAPE float32 (%8, %3)
%10 = SINK void (%5, %9) ("sum", "max")
)"));
  check_same_outputs(s.graph, out);
}

TEST_CASE("pass empty: a store into a tensor without elements does nothing", "[lower][empty]") {
  // x after storing ones into t, which has no elements: x itself.
  const char* text = R"(
%0 = BUFFER float32 () ("x", 2)
%1 = BUFFER float32 () ("t", 0)
%2 = CONST float32 () 1.0
%3 = CONST index () 1
%4 = RESHAPE float32 (%2, %3)
%5 = CONST index () 0
%6 = EXPAND float32 (%4, %5)
%7 = STORE void (%1, %6)
%8 = AFTER float32 (%0, %7)
%9 = SINK void (%8) ("out",)
)";
  Stage s = before_pass("empty", graph_of(text));
  REQUIRE(s.graph == graph_of(text));
  UOp out = lower::empty(s.graph, s.ctx);
  CHECK(print_graph(out) == printed(R"(
%0 = BUFFER float32 () ("x", 2)
%1 = SINK void (%0) ("out",)
)"));
  check_same_outputs(s.graph, out);
}

TEST_CASE("pass scans: a fold over an OUTER range becomes a sequential loop over an accumulator", "[lower][scans]") {
  // out = sum over m1 < 3 of x[m1] * x[m1]
  const char* text = R"(
%0 = BUFFER float32 () ("x", 3)
%1 = CONST index () 3
%2 = RANGE index (%1) (-1, AxisType.OUTER)
%3 = CONST index () 1
%4 = ADD index (%2, %3)
%5 = SHRINK float32 (%0, %2, %4)
%6 = RESHAPE float32 (%5)
%7 = MUL float32 (%6, %6)
%8 = REDUCE float32 (%7, %2) Ops.ADD
%9 = SINK void (%8) ("out",)
)";
  Stage s = before_pass("scans", graph_of(text));
  REQUIRE(s.graph == graph_of(text));
  UOp out = lower::scans(s.graph, s.ctx);
  // A fresh one-element accumulator _acc0 set to ADD's identity, then END(acc = acc + term, m1)
  // over the same OUTER range, the two in order in a GROUP; the output reads acc after it.
  CHECK(print_graph(out) == printed(R"(
%0 = BUFFER float32 () ("_acc0", 1)
%1 = RESHAPE float32 (%0)
%2 = CONST float32 () 0.0
%3 = STORE void (%1, %2)
%4 = BUFFER float32 () ("x", 3)
%5 = CONST index () 3
%6 = RANGE index (%5) (-1, AxisType.OUTER)
%7 = CONST index () 1
%8 = ADD index (%6, %7)
%9 = SHRINK float32 (%4, %6, %8)
%10 = RESHAPE float32 (%9)
%11 = MUL float32 (%10, %10)
%12 = ADD float32 (%1, %11)
%13 = STORE void (%1, %12)
%14 = END void (%13, %6)
%15 = GROUP void (%3, %14)
%16 = AFTER float32 (%1, %15)
%17 = SINK void (%16) ("out",)
)"));
  CHECK(s.ctx.taken.count("_acc0"));  // a fresh name: later passes will not reuse it
  check_same_outputs(s.graph, out);
}

TEST_CASE("pass scans: a vmap collected over an OUTER range gets a LOOP range and nothing else changes", "[lower][scans]") {
  // out[m1] = t[m1] + 1 for m1 < 3, rows of 2, collected by EXPAND over m1: no iteration sees
  // another's, so it can run inside a kernel.
  std::string outer = R"(
%0 = BUFFER float32 () ("t", 6)
%1 = CONST index () 3
%2 = CONST index () 2
%3 = RESHAPE float32 (%0, %1, %2)
%4 = RANGE index (%1) (-1, AxisType.OUTER)
%5 = CONST index () 1
%6 = ADD index (%4, %5)
%7 = CONST index () 0
%8 = SHRINK float32 (%3, %4, %6, %7, %2)
%9 = RESHAPE float32 (%8, %2)
%10 = CONST float32 () 1.0
%11 = RESHAPE float32 (%10, %5)
%12 = EXPAND float32 (%11, %2)
%13 = ADD float32 (%9, %12)
%14 = RESHAPE float32 (%13, %5, %2)
%15 = EXPAND float32 (%14, %4, %2)
%16 = SINK void (%15) ("out",)
)";
  std::string loop = outer;
  loop.replace(loop.find("AxisType.OUTER"), 14, "AxisType.LOOP");
  Stage s = before_pass("scans", graph_of(outer));
  REQUIRE(s.graph == graph_of(outer));
  UOp out = lower::scans(s.graph, s.ctx);
  CHECK(print_graph(out) == printed(loop));
  check_same_outputs(s.graph, out);
}

TEST_CASE("pass realize: outputs and reductions are realized; an output that is a whole buffer is not", "[lower][realize]") {
  // scaled = x * sum(x); x_out = x.
  const char* text = R"(
%0 = BUFFER float32 () ("x", 4)
%1 = REDUCE_AXIS float32 (%0) (Ops.ADD, (0,))
%2 = CONST index () 4
%3 = EXPAND float32 (%1, %2)
%4 = MUL float32 (%0, %3)
%5 = SINK void (%4, %0) ("scaled", "x_out")
)";
  Stage s = before_pass("realize", graph_of(text));
  REQUIRE(s.graph == graph_of(text));
  UOp out = lower::realize(s.graph, s.ctx);
  CHECK(print_graph(out) == printed(R"(
%0 = BUFFER float32 () ("x", 4)
%1 = REDUCE_AXIS float32 (%0) (Ops.ADD, (0,))
%2 = CONTIGUOUS float32 (%1)
%3 = CONST index () 4
%4 = EXPAND float32 (%2, %3)
%5 = MUL float32 (%0, %4)
%6 = CONTIGUOUS float32 (%5)
%7 = SINK void (%6, %0) ("scaled", "x_out")
)"));
  check_same_outputs(s.graph, out);
}

namespace {

// out = x + 1 over 4 elements.
const char* plus_one = R"(
%0 = BUFFER float32 () ("x", 4)
%1 = CONST float32 () 1.0
%2 = CONST index () 1
%3 = RESHAPE float32 (%1, %2)
%4 = CONST index () 4
%5 = EXPAND float32 (%3, %4)
%6 = ADD float32 (%0, %5)
%7 = SINK void (%6) ("out",)
)";

// plus_one after rangeify: the fresh range is 1000 (Context::fresh_range); the broadcast constant
// is read unshaped.
const char* plus_one_bufferized = R"(
%0 = BUFFER float32 () ("x", 4)
%1 = CONST index () 4
%2 = RANGE index (%1) (1000, AxisType.LOOP)
%3 = INDEX float32 (%0, %2)
%4 = CONST float32 () 1.0
%5 = ADD float32 (%3, %4)
%6 = BUFFERIZE float32 (%5, %2)
%7 = SINK void (%6) ("out",)
)";

}  // namespace

TEST_CASE("pass rangeify: a realized value becomes a BUFFERIZE over a fresh loop range, its reads INDEX", "[lower][rangeify]") {
  Stage s = before_pass("rangeify", graph_of(plus_one));
  UOp out = lower::rangeify(s.graph, s.ctx);
  CHECK(print_graph(out) == printed(plus_one_bufferized));
  check_same_outputs(s.graph, out);
}

TEST_CASE("pass kernelize: a BUFFERIZE becomes a value kernel into a fresh temporary", "[lower][kernelize]") {
  Stage s = before_pass("kernelize", graph_of(plus_one));
  REQUIRE(s.graph == graph_of(plus_one_bufferized));
  UOp out = lower::kernelize(s.graph, s.ctx);
  // KERNEL (ast, _t0, x) ("k0",) tagged value: slot 0 is the temporary it stores, slot 1 the x it
  // LOADs; the loop range becomes the store's END; the output reads _t0 after the kernel.
  CHECK(print_graph(out) == printed(R"(
%0 = BUFFER float32 () ("_t0", 4)
%1 = DEFINE_GLOBAL float32*4 () 0
%2 = CONST index () 4
%3 = RANGE index (%2) (1000, AxisType.LOOP)
%4 = INDEX float32*4 (%1, %3)
%5 = DEFINE_GLOBAL float32*4 () 1
%6 = INDEX float32*4 (%5, %3)
%7 = LOAD float32 (%6)
%8 = CONST float32 () 1.0
%9 = ADD float32 (%7, %8)
%10 = STORE void (%4, %9)
%11 = END void (%10, %3)
%12 = SINK void (%11)
%13 = BUFFER float32 () ("x", 4)
%14 = KERNEL void (%12, %0, %13) ("k0",) tag="value"
%15 = AFTER float32 (%0, %14)
%16 = RESHAPE float32 (%15, %2)
%17 = SINK void (%16) ("out",)
)"));
  check_same_outputs(s.graph, out);
}

TEST_CASE("pass kernelize: a STORE becomes an effect kernel writing its target", "[lower][kernelize]") {
  // y = x + 1, stored: the kernel's slot 0 is y itself, no temporary and no value tag.
  const char* text = R"(
%0 = BUFFER float32 () ("y", 4)
%1 = BUFFER float32 () ("x", 4)
%2 = CONST float32 () 1.0
%3 = CONST index () 1
%4 = RESHAPE float32 (%2, %3)
%5 = CONST index () 4
%6 = EXPAND float32 (%4, %5)
%7 = ADD float32 (%1, %6)
%8 = STORE void (%0, %7)
%9 = AFTER float32 (%0, %8)
%10 = SINK void (%9) ("y",)
)";
  Stage s = before_pass("kernelize", graph_of(text));
  UOp out = lower::kernelize(s.graph, s.ctx);
  CHECK(print_graph(out) == printed(R"(
%0 = BUFFER float32 () ("y", 4)
%1 = DEFINE_GLOBAL float32*4 () 0
%2 = CONST index () 4
%3 = RANGE index (%2) (1000, AxisType.LOOP)
%4 = INDEX float32*4 (%1, %3)
%5 = DEFINE_GLOBAL float32*4 () 1
%6 = INDEX float32*4 (%5, %3)
%7 = LOAD float32 (%6)
%8 = CONST float32 () 1.0
%9 = ADD float32 (%7, %8)
%10 = STORE void (%4, %9)
%11 = END void (%10, %3)
%12 = SINK void (%11)
%13 = BUFFER float32 () ("x", 4)
%14 = KERNEL void (%12, %0, %13) ("k0",)
%15 = AFTER float32 (%0, %14)
%16 = SINK void (%15) ("y",)
)"));
  check_same_outputs(s.graph, out);
}

TEST_CASE("pass schedule: value kernels become host steps in dependency order, their AFTERs dropped", "[lower][schedule]") {
  // scaled = x * sum(x); x_out = x: k0 sums x into _t1, k1 reads it (AFTER(_t1, k0)).
  const char* text = R"(
%0 = BUFFER float32 () ("x", 4)
%1 = REDUCE_AXIS float32 (%0) (Ops.ADD, (0,))
%2 = CONST index () 4
%3 = EXPAND float32 (%1, %2)
%4 = MUL float32 (%0, %3)
%5 = SINK void (%4, %0) ("scaled", "x_out")
)";
  Stage s = before_pass("schedule", graph_of(text));
  std::vector<UOp> in = kernels_of(s.graph);
  REQUIRE(in.size() == 2);
  UOp sum = kernel_name(in[0]) == "k0" ? in[0] : in[1], scale = kernel_name(in[0]) == "k0" ? in[1] : in[0];
  REQUIRE(is_value_kernel(sum));
  REQUIRE(scale->src[2]->op == Ops::AFTER);  // _t1 after k0
  REQUIRE(scale->src[2]->src[1] == sum);
  UOp out = lower::schedule(s.graph, s.ctx);
  // SINK(AFTER(RESHAPE(_t0), anchor), AFTER(x, anchor)), anchor = AFTER index (0, GROUP(k0, k1)):
  // the same kernels (same asts and buffers) without the value tag, k1's _t1 a plain BUFFER.
  REQUIRE(out->op == Ops::SINK);
  REQUIRE(out->src.size() == 2);
  UOp anchor = out->src[0]->src.at(1);
  CHECK(out->src[1]->op == Ops::AFTER);
  CHECK(out->src[1]->src[0] == graph_of(text)->src[1]);  // x
  CHECK(out->src[1]->src.at(1) == anchor);
  REQUIRE(anchor->op == Ops::AFTER);
  CHECK(anchor->dtype == dtypes::index);
  CHECK(anchor->src[0] == UOp::index(0));
  UOp group = anchor->src.at(1);
  REQUIRE(group->op == Ops::GROUP);
  REQUIRE(group->src.size() == 2);
  UOp k0 = group->src[0], k1 = group->src[1];
  CHECK(kernel_name(k0) == "k0");
  CHECK(kernel_name(k1) == "k1");
  CHECK(!is_value_kernel(k0));
  CHECK(!is_value_kernel(k1));
  CHECK(k0->src == sum->src);
  CHECK(k1->src[0] == scale->src[0]);
  CHECK(k1->src[1] == scale->src[1]);
  CHECK(k1->src[2] == sum->src[1]);  // _t1 itself: the GROUP orders k1 after k0
  CHECK(k1->src[3] == scale->src[3]);
  CHECK(out->src[0]->src[0]->op == Ops::RESHAPE);
  CHECK(out->src[0]->src[0]->src[0] == scale->src[1]);  // _t0
  check_same_outputs(s.graph, out);
}

TEST_CASE("pass fuse: a value kernel read once per iteration by the next launch is computed inside it", "[lower][fuse]") {
  // out = sum(x (2 x 3), axis 1) * 2: k0 sums into _t1, k1 writes _t0[r] = _t1[r] * 2.
  const char* text = R"(
%0 = BUFFER float32 () ("x", 6)
%1 = CONST index () 2
%2 = CONST index () 3
%3 = RESHAPE float32 (%0, %1, %2)
%4 = REDUCE_AXIS float32 (%3) (Ops.ADD, (1,))
%5 = RESHAPE float32 (%4, %1)
%6 = CONST float32 () 2.0
%7 = CONST index () 1
%8 = RESHAPE float32 (%6, %7)
%9 = EXPAND float32 (%8, %1)
%10 = MUL float32 (%5, %9)
%11 = SINK void (%10) ("out",)
)";
  Stage s = before_pass("fuse", graph_of(text));
  std::vector<UOp> in = kernels_of(s.graph);
  REQUIRE(in.size() == 2);
  UOp out = lower::fuse(s.graph, s.ctx);
  // One launch, named as the first: _t0[r1003] = (sum over r1002 < 3 of x[3*r1003 + r1002]) * 2,
  // the sum's store range replaced by the reader's; _t1 is gone from the program.
  CHECK(print_graph(out) == printed(R"(
%0 = BUFFER float32 () ("_t0", 2)
%1 = CONST index () 2
%2 = RESHAPE float32 (%0, %1)
%3 = CONST index () 0
%4 = DEFINE_GLOBAL float32*2 () 0
%5 = RANGE index (%1) (1003, AxisType.LOOP)
%6 = INDEX float32*2 (%4, %5)
%7 = DEFINE_GLOBAL float32*6 () 1
%8 = CONST index () 3
%9 = RANGE index (%8) (1002, AxisType.REDUCE)
%10 = MUL index (%5, %8)
%11 = ADD index (%9, %10)
%12 = INDEX float32*6 (%7, %11)
%13 = LOAD float32 (%12)
%14 = REDUCE float32 (%13, %9) Ops.ADD
%15 = CONST float32 () 2.0
%16 = MUL float32 (%14, %15)
%17 = STORE void (%6, %16)
%18 = END void (%17, %5)
%19 = SINK void (%18)
%20 = BUFFER float32 () ("x", 6)
%21 = KERNEL void (%19, %0, %20) ("k0",)
%22 = GROUP void (%21)
%23 = AFTER index (%3, %22)
%24 = AFTER float32 (%2, %23)
%25 = SINK void (%24) ("out",)
)"));
  check_same_outputs(s.graph, out);
}

TEST_CASE("pass fuse: a value kernel whose reader runs more iterations than it stays a launch of its own", "[lower][fuse]") {
  // scaled = x * sum(x): the one-element sum is read by all 4 iterations of the reader; fused,
  // it would be computed 4 times.
  const char* text = R"(
%0 = BUFFER float32 () ("x", 4)
%1 = REDUCE_AXIS float32 (%0) (Ops.ADD, (0,))
%2 = CONST index () 4
%3 = EXPAND float32 (%1, %2)
%4 = MUL float32 (%0, %3)
%5 = SINK void (%4) ("scaled",)
)";
  Stage s = before_pass("fuse", graph_of(text));
  REQUIRE(kernels_of(s.graph).size() == 2);
  CHECK(lower::fuse(s.graph, s.ctx) == s.graph);
}
