// Kernel-opt pass `transposes` (src/opt/transposes.cpp) on a lowered transpose, out (16, 8) =
// a (8, 16).T: the kernel it makes for tcc (16 rows per pass) and cc (8x8 tiles of 4-byte
// elements), built here from the forms in the pass's comment; the interpreter's outputs before and
// after, bit for bit; and kernels it must leave as they are. (The C of a transpose8 END:
// tests/backends/test_transpose.cpp.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "matmul_support.h"
#include "opt_support.h"
#include "opt/opt.h"
#include "pass_support.h"
#include "uop/args.h"

using namespace ow;
using namespace ow::test;  // graph_of, kernels_of, check_same_outputs, kernel_opt_pass, opt_options
using namespace ow::test_matmul;  // global, buffer

namespace {

const opt::Pass& transposes_pass() { return kernel_opt_pass("transposes"); }

opt::Options for_target(opt::Target t, bool bounds_check = false) { return opt_options(t, 1, bounds_check); }

// ow lower of out = a.reshape(8, 16).permute(1, 0), --dump-after fuse: k0 stores
// out[j + 8i] = a[16j + i] over i < 16 (range 1000), j < 8 (range 1001).
const char* transpose16x8 = R"(
%0 = BUFFER float32 () ("_t0", 128)
%1 = CONST index () 16
%2 = CONST index () 8
%3 = RESHAPE float32 (%0, %1, %2)
%4 = CONST index () 0
%5 = DEFINE_GLOBAL float32*128 () 0
%6 = RANGE index (%2) (1001, AxisType.LOOP)
%7 = RANGE index (%1) (1000, AxisType.LOOP)
%8 = MUL index (%7, %2)
%9 = ADD index (%6, %8)
%10 = INDEX float32*128 (%5, %9)
%11 = DEFINE_GLOBAL float32*128 () 1
%12 = MUL index (%6, %1)
%13 = ADD index (%12, %7)
%14 = INDEX float32*128 (%11, %13)
%15 = LOAD float32 (%14)
%16 = STORE void (%10, %15)
%17 = END void (%16, %7, %6)
%18 = SINK void (%17)
%19 = BUFFER float32 () ("a", 128)
%20 = KERNEL void (%18, %0, %19) ("k0",)
%21 = GROUP void (%20)
%22 = AFTER index (%4, %21)
%23 = AFTER float32 (%3, %22)
%24 = SINK void (%23) ("out",)
)";

// The one statement of the program's one kernel.
UOp statement_of(UOp program) {
  std::vector<UOp> ks = kernels_of(program);
  REQUIRE(ks.size() == 1);
  REQUIRE(ks[0]->src[0]->src.size() == 1);
  return ks[0]->src[0]->src[0];
}

// out[j + 8i] = a[16j + i] for i := row, j := col.
UOp copy_at(UOp row, UOp col) { return global(0, 128).index({col + row * 8}).store(global(1, 128).index({col * 16 + row}).load()); }

UOp range_of(int64_t extent, int64_t id, std::vector<int64_t> sub = {}) { return UOp::range(extent, id, AxisType::LOOP, sub); }

}  // namespace

TEST_CASE("opt transposes: with checked accesses, the 16 rows of a transpose in one pass over the columns", "[opt][transposes]") {
  UOp before = graph_of(transpose16x8);
  UOp after = opt::run_pass(transposes_pass(), before, for_target(opt::Target::tcc, true));
  // END(GROUP(STORE[i := 16*ib + u] for u < 16), ib, j): ib over 16/16 = 1 block, range 1000 with
  // sub-id -16; i's sixteen values in order.
  UOp ib = range_of(1, 1000, {-16}), j = range_of(8, 1001);
  std::vector<UOp> rows;
  for (int64_t u = 0; u < 16; ++u) rows.push_back(copy_at(u ? ib * 16 + u : ib * 16, j));
  CHECK(statement_of(after) == UOp::make(Ops::GROUP, dtypes::void_, rows).end({ib, j}));
  check_same_outputs(before, after);
  CHECK(opt::run_pass(transposes_pass(), after, for_target(opt::Target::tcc, true)) == after);  // once
  CHECK(opt::run_pass(transposes_pass(), before, for_target(opt::Target::cc, true)) == after);  // the same on cc
}

TEST_CASE("opt transposes: a copy of 4-byte elements moves as 8x8 tiles, an END marked transpose8", "[opt][transposes]") {
  UOp before = graph_of(transpose16x8);
  UOp after = opt::run_pass(transposes_pass(), before, for_target(opt::Target::cc));
  CHECK(opt::run_pass(transposes_pass(), before, for_target(opt::Target::tcc)) == after);  // tcc's too
  // END(STORE[i := 8*ib + a, j := 8*jb + b], ib, jb, a, b) "transpose8": the blocks of i (range
  // 1000, extent 16) and j (1001, 8) have sub-id -8, the steps within them -8, 0.
  UOp ib = range_of(2, 1000, {-8}), jb = range_of(1, 1001, {-8}), a = range_of(8, 1000, {-8, 0}), b = range_of(8, 1001, {-8, 0});
  UOp want = UOp::make(Ops::END, dtypes::void_, {copy_at(ib * 8 + a, jb * 8 + b), ib, jb, a, b}, loop_arg(LoopForm::transpose8));
  CHECK(statement_of(after) == want);
  check_same_outputs(before, after);
  // With checked accesses there are no tiles (a tile's accesses are not checked one by one):
  // 16 rows.
  UOp checked = opt::run_pass(transposes_pass(), before, for_target(opt::Target::cc, true));
  CHECK(statement_of(checked)->src[0]->src.size() == 16);
  CHECK(!loop_form(statement_of(checked)));
}

TEST_CASE("opt transposes: nests that are no transposing copy, or may not be blocked, stay as they are", "[opt][transposes]") {
  UOp out = global(0, 128), a = global(1, 128), i = range_of(16, 0), j = range_of(8, 1);
  auto kernel = [&](UOp st) {
    std::vector<UOp> src{UOp::sink({st.end({i, j})}), buffer("out", 128), buffer("a", 128)};
    return UOp::make(Ops::KERNEL, dtypes::void_, std::move(src), Arg(ArgTuple{Arg("k")}));
  };
  auto blocked = [&](UOp st) {
    UOp k = kernel(st);
    return opt::run_pass(transposes_pass(), k, for_target(opt::Target::tcc)) != k;
  };
  REQUIRE(blocked(out.index({j + i * 8}).store(a.index({j * 16 + i}).load())));  // the control
  SECTION("the load does not jump along j: a plain copy") { CHECK(!blocked(out.index({j + i * 8}).store(a.index({j + i * 8}).load()))); }
  SECTION("the store does not run along j") { CHECK(!blocked(out.index({j * 16 + i}).store(a.index({j * 16 + i}).load()))); }
  SECTION("the nest loads the buffer it stores to (blocked, its iterations would interleave)") {
    CHECK(!blocked(out.index({j + i * 8}).store(a.index({j * 16 + i}).load() + out.index({j * 16 + i}).load())));
  }
  SECTION("a value that may fail (the first error would change): an integer division by j") {
    UOp q = (i + 1).idiv(j).cast(dtypes::float32);
    CHECK(!blocked(out.index({j + i * 8}).store(a.index({j * 16 + i}).load() + q)));
  }
}
