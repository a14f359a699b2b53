// Kernel-opt pass `unroll` (src/opt/unroll.cpp): which loops it marks, with which form (args.h),
// and the loops it must leave as they are. The mark changes no node, so the kernel evaluator's
// outputs are checked against values computed here. (The C of each form, run on tcc bit for bit:
// tests/backends/test_render.cpp.)
#include <catch2/catch.hpp>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "interp/kernel_eval.h"
#include "matmul_support.h"
#include "opt_support.h"
#include "opt/opt.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/verify.h"

using namespace ow;
using namespace ow::test;         // kernel_opt_pass, opt_options, run_out_a_b
using namespace ow::test_matmul;  // global, buffer, data, floats_of, same_bits

namespace {

UOp kernel_of(UOp stmt, int64_t n) {
  std::vector<UOp> src{UOp::sink({stmt}), buffer("out", n), buffer("a", n), buffer("b", n)};
  return UOp::make(Ops::KERNEL, dtypes::void_, std::move(src), Arg(ArgTuple{Arg("k")}));
}

UOp unroll(UOp kernel, bool bounds_check = false) { return opt::run_pass(kernel_opt_pass("unroll"), kernel, opt_options(opt::Target::tcc, 1, bounds_check)); }

// The marks of the ENDs of a kernel's statements, outermost first ("" for none).
std::vector<std::string> marks(UOp kernel) {
  std::vector<std::string> out;
  for (UOp u : toposort(kernel->src[0]))
    if (u->op == Ops::END) out.insert(out.begin(), loop_form(u) ? loop_form_name(*loop_form(u)) : "");
  return out;
}

// out[i] = f(a[i], b[i]) for i < n: the kernel evaluator's outputs, compared bit for bit with f
// computed here.
template <class F>
void check_values(UOp kernel, int64_t n, F f) {
  std::vector<float> a = floats_of(data(dtypes::float32, n, 1)), b = floats_of(data(dtypes::float32, n, 2));
  std::vector<float> got = run_out_a_b(kernel, n, n, n);
  for (int64_t q = 0; q < n; ++q) {
    float want = f(a[static_cast<size_t>(q)], b[static_cast<size_t>(q)], q);
    INFO("out[" << q << "] = " << got[static_cast<size_t>(q)] << ", want " << want);
    CHECK(same_bits(got[static_cast<size_t>(q)], want));
  }
}

UOp one() { return UOp::cnst(dtypes::float32, 1.0); }

}  // namespace

TEST_CASE("opt unroll: an elementwise loop reads through pointers; with bounds checks, copies", "[opt][unroll]") {
  const int64_t n = 21;  // two blocks of 8 and a remainder of 5
  UOp out = global(0, n), a = global(1, n), b = global(2, n), i = UOp::range(n, 0);
  UOp st = out.index({i}).store(a.index({i}).load() * b.index({i}).load() + one());
  UOp before = kernel_of(st.end({i}), n);
  UOp after = unroll(before);
  // Only the END's arg changes.
  CHECK(after->src[0]->src[0] == UOp::make(Ops::END, dtypes::void_, {st, i}, loop_arg(LoopForm::unroll_pointers)));
  CHECK(unroll(after) == after);  // once
  CHECK(marks(unroll(before, true)) == std::vector<std::string>{"unroll"});  // the checks name i
  // Not on cc, which unrolls for itself.
  opt::Options cc = opt_options(opt::Target::cc);
  CHECK(marks(opt::optimize(before, cc)) == std::vector<std::string>{""});
  check_values(after, n, [](float x, float y, int64_t) { return x * y + 1.0f; });
}

TEST_CASE("opt unroll: a range used other than as an access's index: copies", "[opt][unroll]") {
  const int64_t n = 16;
  UOp out = global(0, n), a = global(1, n), i = UOp::range(n, 0);
  SECTION("an index computed from i") {
    UOp rev = UOp::index(n - 1) - i;  // out[i] = a[n-1-i]
    UOp after = unroll(kernel_of(out.index({i}).store(a.index({rev}).load()).end({i}), n));
    CHECK(marks(after) == std::vector<std::string>{"unroll"});
    std::vector<float> in = floats_of(data(dtypes::float32, n, 1)), got = run_out_a_b(after, n, n, n);
    for (int64_t q = 0; q < n; ++q) CHECK(same_bits(got[static_cast<size_t>(q)], in[static_cast<size_t>(n - 1 - q)]));
  }
  SECTION("i as a value") {
    UOp v = a.index({i}).load() + i.cast(dtypes::float32);
    UOp after = unroll(kernel_of(out.index({i}).store(v).end({i}), n));
    CHECK(marks(after) == std::vector<std::string>{"unroll"});
    check_values(after, n, [](float x, float, int64_t q) { return x + static_cast<float>(q); });
  }
}

TEST_CASE("opt unroll: only the innermost loop of a nest, of 8 steps or more", "[opt][unroll]") {
  UOp out = global(0, 64), a = global(1, 64);
  auto nest = [&](int64_t rows, int64_t cols) {
    UOp i = UOp::range(rows, 0), j = UOp::range(cols, 1);
    return kernel_of(out.index({i * cols + j}).store(a.index({i * cols + j}).load()).end({i, j}), 64);
  };
  // END(STORE, i, j): j (the last range, innermost) decides; j is used in i*8 + j: copies.
  CHECK(marks(unroll(nest(8, 8))) == std::vector<std::string>{"unroll"});
  CHECK(marks(unroll(nest(9, 7))) == std::vector<std::string>{""});  // j has 7 steps
  UOp r = UOp::range(UOp::variable("n", 8, 64), 0);
  CHECK(marks(unroll(kernel_of(out.index({r}).store(a.index({r}).load()).end({r}), 64))) == std::vector<std::string>{""});  // not a constant extent
}

TEST_CASE("opt unroll: bodies it leaves: register fills, more than 8 stores, more than 128 values (42 checked)", "[opt][unroll]") {
  const int64_t n = 16;
  UOp out = global(0, n), a = global(1, n), i = UOp::range(n, 0);
  UOp reg = UOp::make(Ops::DEFINE_REG, dtypes::float32.pointer(n), {}, Arg(int64_t{0}));
  CHECK(marks(unroll(kernel_of(reg.index({i}).store(UOp::cnst(dtypes::float32, 0.0)).end({i}), n))) == std::vector<std::string>{""});
  std::vector<UOp> nine(9, out.index({i}).store(a.index({i}).load()));
  CHECK(marks(unroll(kernel_of(UOp::make(Ops::GROUP, dtypes::void_, nine).end({i}), n))) == std::vector<std::string>{""});
  std::vector<UOp> eight(nine.begin(), nine.end() - 1);
  CHECK(marks(unroll(kernel_of(UOp::make(Ops::GROUP, dtypes::void_, eight).end({i}), n))) == std::vector<std::string>{"unroll-pointers"});
  // out[i] = a[i] + 1 + ... + 1 (k ADDs): k + 4 nodes depend on i (two INDEXes, the LOAD, the STORE).
  auto chain = [&](int k) {
    UOp v = a.index({i}).load();
    for (int q = 0; q < k; ++q) v = v + one();
    return kernel_of(out.index({i}).store(v).end({i}), n);
  };
  CHECK(marks(unroll(chain(124))) == std::vector<std::string>{"unroll-pointers"});
  CHECK(marks(unroll(chain(125))) == std::vector<std::string>{""});
  // With bounds checks a third as many: 42.
  CHECK(marks(unroll(chain(38), true)) == std::vector<std::string>{"unroll"});
  CHECK(marks(unroll(chain(39), true)) == std::vector<std::string>{""});
}

TEST_CASE("opt unroll: the kernel grammar takes the loop marks and no other END arg", "[opt][unroll]") {
  const int64_t n = 8;
  UOp out = global(0, n), a = global(1, n), i = UOp::range(n, 0);
  UOp st = out.index({i}).store(a.index({i}).load());
  for (LoopForm f : {LoopForm::unroll, LoopForm::unroll_pointers}) CHECK_NOTHROW(verify_kernel(kernel_of(UOp::make(Ops::END, dtypes::void_, {st, i}, loop_arg(f)), n)));
  CHECK_THROWS_WITH(verify_kernel(kernel_of(UOp::make(Ops::END, dtypes::void_, {st, i}, Arg(std::string("unroll4"))), n)),
                    Catch::Contains("marked unroll, unroll-pointers or transpose8"));
  // transpose8 marks a tile: two loops at least (what the tile is is the renderer's to check).
  UOp j = UOp::range(1, 1);
  CHECK_NOTHROW(verify_kernel(kernel_of(UOp::make(Ops::END, dtypes::void_, {st, j, i}, loop_arg(LoopForm::transpose8)), n)));
  CHECK_THROWS_WITH(verify_kernel(kernel_of(UOp::make(Ops::END, dtypes::void_, {st, i}, loop_arg(LoopForm::transpose8)), n)),
                    Catch::Contains("closes two ranges at least"));
}
