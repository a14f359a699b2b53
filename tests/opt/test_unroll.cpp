// Kernel-opt pass `unroll` (src/opt/unroll.cpp, tcc): the kernel it makes of a short loop, built
// here from the form in the pass's comment; the kernel evaluator's outputs before and after; and
// the loops it must leave as they are. (Its C through pointers, bit for bit on tcc:
// tests/backends/test_render.cpp.)
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "interp/kernel_eval.h"
#include "matmul_support.h"
#include "opt_support.h"
#include "opt/opt.h"
#include "uop/args.h"

using namespace ow;
using namespace ow::test;         // kernel_opt_pass, opt_options
using namespace ow::test_matmul;  // global, buffer, data

namespace {

UOp kernel_of(std::vector<UOp> stmts, int64_t n) {
  std::vector<UOp> src{UOp::sink(std::move(stmts)), buffer("out", n), buffer("a", n)};
  return UOp::make(Ops::KERNEL, dtypes::void_, std::move(src), Arg(ArgTuple{Arg("k")}));
}

UOp unroll(UOp kernel) { return opt::run_pass(kernel_opt_pass("unroll"), kernel, opt_options(opt::Target::tcc)); }

std::vector<float> run(UOp kernel, int64_t n) {
  interp::BufferData out = data(dtypes::float32, n, 0), a = data(dtypes::float32, n, 1);
  interp::KernelArgs args;
  args.buffers = {&out, &a};
  interp::run_kernel(kernel->src[0], args);
  return {out.data->as<float>(), out.data->as<float>() + n};
}

}  // namespace

TEST_CASE("opt unroll: a short loop by 8, the iterations left over in a loop of their own", "[opt][unroll]") {
  // out[i] = a[i] * a[i] + 1 over 21 = 2 * 8 + 5 elements.
  const int64_t n = 21;
  UOp out = global(0, n), a = global(1, n), i = UOp::range(n, 0);
  auto body = [&](UOp at) { return out.index({at}).store(a.index({at}).load() * a.index({at}).load() + UOp::cnst(dtypes::float32, 1)); };
  UOp before = kernel_of({body(i).end({i})}, n);
  UOp after = unroll(before);
  UOp i8 = UOp::range(2, 0, AxisType::LOOP, {-8}), rest = UOp::range(5, 0, AxisType::LOOP, {-1});
  std::vector<UOp> copies;
  for (int64_t u = 0; u < 8; ++u) copies.push_back(body(u ? i8 * 8 + u : i8 * 8));
  UOp want = UOp::make(Ops::GROUP, dtypes::void_, {UOp::make(Ops::GROUP, dtypes::void_, copies, unrolled_arg()).end({i8}), body(rest + 16).end({rest})});
  CHECK(after->src[0]->src[0] == want);
  CHECK(unroll(after) == after);  // once: the copies are not unrolled again
  std::vector<float> got = run(after, n), plain = run(before, n);
  CHECK(std::memcmp(got.data(), plain.data(), got.size() * sizeof(float)) == 0);
  // Only the innermost of two loops; the outer one stays around both parts.
  UOp o2 = global(0, 4 * 16), a2 = global(1, 4 * 16), r = UOp::range(4, 0), c = UOp::range(16, 1);
  UOp nest = kernel_of({o2.index({r * 16 + c}).store(a2.index({r * 16 + c}).load()).end({r, c})}, 64);
  UOp un = unroll(nest)->src[0]->src[0];
  REQUIRE(un->op == Ops::END);
  CHECK(un->src.size() == 2);
  CHECK(un->src[1] == r);
  CHECK(un->src[0]->op == Ops::END);                 // 16 = 2 * 8: no loop left over
  CHECK(un->src[0]->src[0]->arg == unrolled_arg());
}

TEST_CASE("opt unroll: loops it leaves as they are", "[opt][unroll]") {
  const int64_t n = 32;
  UOp out = global(0, n), a = global(1, n);
  SECTION("fewer than 8 iterations, or a variable count") {
    UOp i = UOp::range(7, 0);
    UOp k = kernel_of({out.index({i}).store(a.index({i}).load()).end({i})}, n);
    CHECK(unroll(k) == k);
    UOp m = UOp::variable("m", 1, 32), iv = UOp::range(m, 0);
    UOp kv = UOp::make(Ops::KERNEL, dtypes::void_, {UOp::sink({out.index({iv}).store(a.index({iv}).load()).end({iv})}), buffer("out", n), buffer("a", n), m.bind(UOp::index(9))},
                       Arg(ArgTuple{Arg("kv")}));
    CHECK(unroll(kv) == kv);
  }
  SECTION("a loop that only sets a register to a constant") {
    UOp i = UOp::range(16, 0);
    UOp reg = UOp::make(Ops::DEFINE_REG, dtypes::float32.pointer(16), {}, Arg(int64_t{0}));
    UOp fill = reg.index({i}).store(UOp::cnst(dtypes::float32, 0)).end({i});
    UOp use = out.index({i}).store(reg.index({i}).load()).end({i});
    UOp after = unroll(kernel_of({fill, use}, n));
    CHECK(after->src[0]->src[0] == fill);
    CHECK(after->src[0]->src[1] != use);
  }
  SECTION("a body whose C would take more than 24 lines") {
    UOp i = UOp::range(16, 0);
    UOp x = a.index({i}).load();
    for (int q = 0; q < 30; ++q) x = x * x + x;  // each x used twice: a named line per step
    UOp k = kernel_of({out.index({i}).store(x).end({i})}, n);
    CHECK(unroll(k) == k);
  }
}
