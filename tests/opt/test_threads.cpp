// Kernel-opt pass `threads` (src/opt/threads.cpp) on small kernel-level programs through
// opt::run_pass and opt::optimize: the graph it makes, derived by hand from
// reference/LOWERING.md ("Kernel optimization"), the same outputs on the interpreter before and
// after, and one kernel per condition of its safety proof that it must leave as it is.
// OW_PARALLEL_MIN_STEPS=2 lets kernels of a few elements be split.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "matmul_support.h"
#include "opt_support.h"
#include "opt/opt.h"
#include "pass_support.h"
#include "test_support.h"
#include "uop/args.h"

using namespace ow;
using ow::test::check_same_outputs;
using ow::test::EnvVar;
using ow::test::graph_of;
using ow::test::printed;
using ow::test_matmul::buffer;
using ow::test_matmul::global;

namespace {

const opt::Pass& threads_pass() { return ow::test::kernel_opt_pass("threads"); }

opt::Options cc_two_threads(bool bounds_check = false) { return ow::test::opt_options(opt::Target::cc, 2, bounds_check); }

// out = x * 2 over (5, 4), lowered (ow lower ... --dump-after fuse): one kernel k0 writing _t0.
const char* doubled = R"(
%0 = BUFFER float32 () ("_t0", 20)
%1 = CONST index () 5
%2 = CONST index () 4
%3 = RESHAPE float32 (%0, %1, %2)
%4 = CONST index () 0
%5 = DEFINE_GLOBAL float32*20 () 0
%6 = RANGE index (%1) (1000, AxisType.LOOP)
%7 = MUL index (%6, %2)
%8 = RANGE index (%2) (1001, AxisType.LOOP)
%9 = ADD index (%7, %8)
%10 = INDEX float32*20 (%5, %9)
%11 = DEFINE_GLOBAL float32*20 () 1
%12 = INDEX float32*20 (%11, %9)
%13 = LOAD float32 (%12)
%14 = CONST float32 () 2.0
%15 = MUL float32 (%13, %14)
%16 = STORE void (%10, %15)
%17 = END void (%16, %6, %8)
%18 = SINK void (%17)
%19 = BUFFER float32 () ("x", 20)
%20 = KERNEL void (%18, %0, %19) ("k0",)
%21 = GROUP void (%20)
%22 = AFTER index (%4, %21)
%23 = AFTER float32 (%3, %22)
%24 = SINK void (%23) ("out",)
)";

// KERNEL (out, a) ("k",) over i < 6 (outermost), j < 4, with the statement `st`.
UOp kernel_of(UOp st, int64_t out_size = 24, int64_t a_size = 24) {
  std::vector<UOp> src{UOp::sink({st}), buffer("out", out_size), buffer("a", a_size)};
  return UOp::make(Ops::KERNEL, dtypes::void_, std::move(src), Arg(ArgTuple{Arg("k")}));
}

}  // namespace

TEST_CASE("opt threads: the outer range's iterations [0, 2) and [2, 5) as two statements, arg (name, 2)", "[opt][threads]") {
  EnvVar small("OW_PARALLEL_MIN_STEPS", "2");
  UOp before = graph_of(doubled);
  UOp after = opt::run_pass(threads_pass(), before, cc_two_threads());
  // The lower half is the store nest over a range of extent 5/2 = 2 (the same id, 1000); the
  // upper over extent 3 with 2 + r in place of r. Buffers, slots and the host side unchanged.
  CHECK(print_graph(after) == printed(R"(
%0 = BUFFER float32 () ("_t0", 20)
%1 = CONST index () 5
%2 = CONST index () 4
%3 = RESHAPE float32 (%0, %1, %2)
%4 = CONST index () 0
%5 = DEFINE_GLOBAL float32*20 () 0
%6 = CONST index () 2
%7 = RANGE index (%6) (1000, AxisType.LOOP)
%8 = MUL index (%7, %2)
%9 = RANGE index (%2) (1001, AxisType.LOOP)
%10 = ADD index (%8, %9)
%11 = INDEX float32*20 (%5, %10)
%12 = DEFINE_GLOBAL float32*20 () 1
%13 = INDEX float32*20 (%12, %10)
%14 = LOAD float32 (%13)
%15 = CONST float32 () 2.0
%16 = MUL float32 (%14, %15)
%17 = STORE void (%11, %16)
%18 = END void (%17, %7, %9)
%19 = CONST index () 3
%20 = RANGE index (%19) (1000, AxisType.LOOP)
%21 = ADD index (%20, %6)
%22 = MUL index (%21, %2)
%23 = ADD index (%22, %9)
%24 = INDEX float32*20 (%5, %23)
%25 = INDEX float32*20 (%12, %23)
%26 = LOAD float32 (%25)
%27 = MUL float32 (%26, %15)
%28 = STORE void (%24, %27)
%29 = END void (%28, %20, %9)
%30 = SINK void (%18, %29)
%31 = BUFFER float32 () ("x", 20)
%32 = KERNEL void (%30, %0, %31) ("k0", 2)
%33 = GROUP void (%32)
%34 = AFTER index (%4, %33)
%35 = AFTER float32 (%3, %34)
%36 = SINK void (%35) ("out",)
)"));
  check_same_outputs(before, after);
  // optimize() runs it for cc with two threads; never for tcc, one thread, or twice.
  CHECK(opt::optimize(before, cc_two_threads()) == after);
  opt::Options tcc = cc_two_threads(), one = cc_two_threads();
  tcc.target = opt::Target::tcc;
  one.threads = 1;
  CHECK(opt::optimize(before, tcc) == before);
  CHECK(opt::optimize(before, one) == before);
  CHECK(opt::run_pass(threads_pass(), after, cc_two_threads()) == after);
}

TEST_CASE("opt threads: a kernel below OW_PARALLEL_MIN_STEPS innermost steps stays serial", "[opt][threads]") {
  UOp before = graph_of(doubled);  // 20 steps
  EnvVar at("OW_PARALLEL_MIN_STEPS", "20");
  CHECK(opt::run_pass(threads_pass(), before, cc_two_threads()) != before);
  EnvVar above("OW_PARALLEL_MIN_STEPS", "21");
  CHECK(opt::run_pass(threads_pass(), before, cc_two_threads()) == before);
}

TEST_CASE("opt threads: each condition of the safety proof, broken, leaves the kernel as it is", "[opt][threads]") {
  EnvVar small("OW_PARALLEL_MIN_STEPS", "2");
  UOp out = global(0, 24), a = global(1, 24), i = UOp::range(6, 0), j = UOp::range(4, 1);
  UOp at = i * 4 + j, x = a.index({at}).load();
  auto split = [&](UOp kernel, bool bounds_check = false) {
    UOp after = opt::run_pass(threads_pass(), kernel, cc_two_threads(bounds_check));
    return after != kernel && kernel_threads(after) == 2;
  };
  // The control: out[4i + j] = a[4i + j] is split.
  REQUIRE(split(kernel_of(out.index({at}).store(x).end({i, j}))));
  SECTION("a store that does not own a row of the outer range: every i writes out[j]") {
    CHECK(!split(kernel_of(global(0, 4).index({j}).store(x).end({i, j}), 4)));
  }
  SECTION("rows that overlap: out[2i + j] reaches into the next row") {
    CHECK(!split(kernel_of(out.index({i * 2 + j}).store(x).end({i, j}))));
  }
  SECTION("a stored buffer loaded at another element: every row reads row 0") {
    CHECK(!split(kernel_of(out.index({at}).store(out.index({j}).load() + x).end({i, j}))));
  }
  SECTION("a stored buffer loaded at its own element is fine") {
    CHECK(split(kernel_of(out.index({at}).store(out.index({at}).load() + x).end({i, j}))));
  }
  SECTION("one buffer in two slots") {
    std::vector<UOp> src{UOp::sink({out.index({at}).store(x).end({i, j})}), buffer("out", 24), buffer("out", 24)};
    CHECK(!split(UOp::make(Ops::KERNEL, dtypes::void_, std::move(src), Arg(ArgTuple{Arg("k")}))));
  }
  SECTION("an inner range whose extent depends on the outer one") {
    UOp tri = UOp::range(i + 1, 2);
    CHECK(!split(kernel_of(out.index({at}).store(a.index({tri}).load().reduce({tri}, Ops::ADD)).end({i, j}))));
  }
  SECTION("an integer division by a divisor that may be 0 (the serial loop would stop there)") {
    auto quotient = [&](UOp divisor) { return (i + 7).idiv(divisor).cast(dtypes::float32); };
    CHECK(!split(kernel_of(out.index({at}).store(x + quotient(j)).end({i, j}))));
    CHECK(split(kernel_of(out.index({at}).store(x + quotient(j + 1)).end({i, j}))));
  }
  SECTION("an access the bounds do not prove in range, when the kernel checks bounds") {
    UOp past = kernel_of(out.index({at}).store(a.index({at + 1}).load()).end({i, j}));  // a[24] at the last
    CHECK(!split(past, true));
    CHECK(split(past, false));
  }
}
