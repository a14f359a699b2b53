// Kernel-opt pass `interchange` (src/opt/interchange.cpp) on matrix products out = a @ b: the
// kernel it makes, built here from the form in the pass's comment; the kernel evaluator's outputs
// against sums done here in the same order; the fold marks per compiler; the registers a kernel's
// nests share; and kernels it must leave as they are. (Their C, bit for bit on tcc and cc:
// tests/backends/test_render.cpp and test_tiles.cpp.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "interp/kernel_eval.h"
#include "matmul_support.h"
#include "opt_support.h"
#include "opt/opt.h"
#include "uop/args.h"
#include "uop/verify.h"

using namespace ow;
using namespace ow::test;         // kernel_opt_pass, opt_options
using namespace ow::test_matmul;  // global, buffer, data, same_bits

namespace {

const int64_t K = 5;

UOp kernel_of(std::vector<UOp> stmts, int64_t m, int64_t n) {
  std::vector<UOp> src{UOp::sink(std::move(stmts)), buffer("out", m * n), buffer("a", m * K), buffer("b", K * n)};
  return UOp::make(Ops::KERNEL, dtypes::void_, std::move(src), Arg(ArgTuple{Arg("k")}));
}

UOp interchange(UOp kernel, opt::Target t = opt::Target::tcc, bool bounds_check = false) {
  return opt::run_pass(kernel_opt_pass("interchange"), kernel, opt_options(t, 1, bounds_check));
}

UOp group(std::vector<UOp> stmts, Arg mark = Arg()) { return UOp::make(Ops::GROUP, dtypes::void_, std::move(stmts), std::move(mark)); }

std::vector<float> run(UOp kernel, int64_t m, int64_t n) { return run_out_a_b(kernel, m * n, m * K, K * n); }

// Each out[i][j] is sum_k a[i][k] * b[k][j], from 0 over k ascending, one rounding per step.
void check_values(UOp before, UOp after, int64_t m, int64_t n) {
  std::vector<float> want = matmul_in_order(floats_of(data(dtypes::float32, m * K, 1)), floats_of(data(dtypes::float32, K * n, 2)), m, K, n, false);
  std::vector<float> got = run(after, m, n), plain = run(before, m, n);
  for (size_t e = 0; e < want.size(); ++e) {
    INFO("out[" << e / static_cast<size_t>(n) << "][" << e % static_cast<size_t>(n) << "] = " << got[e] << " (plain kernel " << plain[e] << "), want " << want[e]);
    CHECK(same_bits(got[e], want[e]));
    CHECK(same_bits(plain[e], want[e]));
  }
}

}  // namespace

TEST_CASE("opt interchange: a matmul folds rows of accumulators over j, 4 rows at a time", "[opt][interchange]") {
  // 8 rows, 6 columns, the inputs under bounds checks (no vector form: plain loops, unmarked).
  const int64_t m = 8, n = 6;
  UOp out = global(0, m * n), a = global(1, m * K), b = global(2, K * n);
  UOp i = UOp::range(m, 0), j = UOp::range(n, 1), k = UOp::range(K, 2, AxisType::REDUCE);
  auto term = [&](UOp row) { return a.index({row * K + k}).load() * b.index({k * n + j}).load(); };
  UOp before = kernel_of({out.index({i * n + j}).store(term(i).reduce({k}, Ops::ADD)).end({i, j})}, m, n);
  UOp after = interchange(before, opt::Target::tcc, true);
  // END(GROUP(END(GROUP(acc_u[j] = 0 for u), j),
  //           END(END(GROUP(acc_u[j] = acc_u[j] + x(4*ib + u, j, k) for u), j), k),
  //           END(GROUP(out[(4*ib + u)*n + j] = acc_u[j] for u), j)), ib)
  UOp ib = UOp::range(2, 0, AxisType::LOOP, {-4});
  std::vector<UOp> init, folds, stores;
  for (int64_t u = 0; u < 4; ++u) {
    UOp row = u ? ib * 4 + u : ib * 4;
    UOp acc = UOp::make(Ops::DEFINE_REG, dtypes::float32.pointer(n), {}, Arg(u)).index({j});
    init.push_back(acc.store(UOp::cnst(dtypes::float32, 0)));
    folds.push_back(acc.store(acc.load() + term(row)));
    stores.push_back(out.index({row * n + j}).store(acc.load()));
  }
  UOp want = group({group(init).end({j}), group(folds).end({j}).end({k}), group(stores).end({j})}).end({ib});
  CHECK(after->src[0]->src[0] == want);
  CHECK(interchange(after, opt::Target::tcc, true) == after);  // once
  check_values(before, after, m, n);
}

TEST_CASE("opt interchange: the fold's mark per compiler, the rows left over, registers shared by nests", "[opt][interchange]") {
  auto marks = [](UOp k) {  // the fold marks of the kernel, sorted
    std::vector<std::string> out;
    for (UOp u : toposort(k))
      if (std::optional<FoldForm> f = fold_form(u)) out.push_back(fold_form_name(*f));
    std::sort(out.begin(), out.end());
    return out;
  };
  auto registers = [](UOp k) {
    int n = 0;
    for (UOp u : toposort(k)) n += u->op == Ops::DEFINE_REG;
    return n;
  };
  const int64_t n = 6;
  for (int64_t m : {8, 3, 11}) {
    INFO(m << " rows");
    UOp out = global(0, m * n), a = global(1, m * K), b = global(2, K * n);
    UOp i = UOp::range(m, 0), j = UOp::range(n, 1), k = UOp::range(K, 2, AxisType::REDUCE);
    UOp mm = (a.index({i * K + k}).load() * b.index({k * n + j}).load()).reduce({k}, Ops::ADD);
    UOp mx = b.index({k * n + j}).load().reduce({k}, Ops::MAX);  // not an axpy; the same in every row
    // Two nests, one after the other: out = a @ b, then out = a @ b + max_k b.
    UOp before = kernel_of({out.index({i * n + j}).store(mm).end({i, j}), out.index({i * n + j}).store(mm + mx).end({i, j})}, m, n);
    UOp tcc = interchange(before, opt::Target::tcc), cc = interchange(before, opt::Target::cc);
    verify_kernel(tcc);
    verify_kernel(cc);
    // tcc: 8 rows -> blocks of 4 rows reading one b, one gemv call per block; 3 and 11 rows are
    // not blocked (4 and 2 do not divide them): one accumulator, one gemv call. cc: register tiles,
    // in blocks of up to 14 rows, except in the second nest, whose MAX fold is no axpy: blocks of
    // 4 rows (or none), and the MAX fold's plain loops ask GCC to unroll-and-jam when blocked.
    // (On tcc both nests fold a @ b in the same registers: one interned fold GROUP.)
    CHECK(marks(tcc) == std::vector<std::string>{"gemv"});
    CHECK(marks(cc) == (m == 8 ? std::vector<std::string>{"jam", "tiles", "tiles"} : std::vector<std::string>{"tiles", "tiles"}));
    // cc's registers: the first nest's m rows (one block); the second nest's rows and its MAX
    // accumulator (the same in every row) reuse them.
    CHECK(registers(cc) == m);
    check_values(kernel_of({before->src[0]->src[0]}, m, n), kernel_of({tcc->src[0]->src[0]}, m, n), m, n);
    check_values(kernel_of({before->src[0]->src[0]}, m, n), kernel_of({cc->src[0]->src[0]}, m, n), m, n);
    // The whole kernel, both nests, on the kernel evaluator: the same outputs as the plain kernel.
    std::vector<float> plain = run(before, m, n), got_tcc = run(tcc, m, n), got_cc = run(cc, m, n);
    for (size_t q = 0; q < plain.size(); ++q) {
      CHECK(same_bits(got_tcc[q], plain[q]));
      CHECK(same_bits(got_cc[q], plain[q]));
    }
  }
  // 37 rows on cc: blocks of 13 (as even as blocks of at most 14 can be), the 11 rows left over in
  // the first 11 of the block's 13 registers.
  const int64_t m = 37;
  UOp out = global(0, m * n), a = global(1, m * K), b = global(2, K * n);
  UOp i = UOp::range(m, 0), j = UOp::range(n, 1), k = UOp::range(K, 2, AxisType::REDUCE);
  UOp before = kernel_of({out.index({i * n + j}).store((a.index({i * K + k}).load() * b.index({k * n + j}).load()).reduce({k}, Ops::ADD)).end({i, j})}, m, n);
  UOp cc = interchange(before, opt::Target::cc);
  CHECK(registers(cc) == 13);
  check_values(before, cc, m, n);
}

TEST_CASE("opt interchange: nests it must leave as they are", "[opt][interchange]") {
  const int64_t m = 4, n = 8;
  UOp out = global(0, m * n), a = global(1, m * K);
  UOp i = UOp::range(m, 0), j = UOp::range(n, 1), k = UOp::range(K, 2, AxisType::REDUCE);
  SECTION("b read along j with a stride (a @ b.T: pass columns)") {
    UOp bt = global(2, n * K);
    UOp dot = (a.index({i * K + k}).load() * bt.index({j * K + k}).load()).reduce({k}, Ops::ADD);
    UOp kern = kernel_of({out.index({i * n + j}).store(dot).end({i, j})}, m, n);
    CHECK(interchange(kern) == kern);
  }
  SECTION("an integer division that may fail in the fold") {
    UOp oi = UOp::make(Ops::DEFINE_GLOBAL, dtypes::int32.pointer(m * n), {}, Arg(int64_t{0}));
    UOp ai = UOp::make(Ops::DEFINE_GLOBAL, dtypes::int32.pointer(m * K), {}, Arg(int64_t{1}));
    UOp bi = UOp::make(Ops::DEFINE_GLOBAL, dtypes::int32.pointer(K * n), {}, Arg(int64_t{2}));
    UOp d = ai.index({i * K + k}).load().idiv(bi.index({k * n + j}).load()).reduce({k}, Ops::ADD);
    UOp kd = kernel_of({oi.index({i * n + j}).store(d).end({i, j})}, m, n);
    CHECK(interchange(kd) == kd);
  }
  SECTION("accumulators over the kernel's register budget") {
    // j of 4096 floats: 16 KiB per row; beside an earlier register of 244 KiB not even one row
    // fits the kernel's 256 KiB.
    const int64_t wide = 4096;
    UOp o2 = global(0, m * wide), b2 = global(2, K * wide), jw = UOp::range(wide, 1);
    UOp x = (a.index({i * K + k}).load() * b2.index({k * wide + jw}).load()).reduce({k}, Ops::ADD);
    UOp big = UOp::make(Ops::DEFINE_REG, dtypes::float32.pointer(61 * 1024), {}, Arg(int64_t{0}));
    UOp fill = big.index({UOp::index(0)}).store(UOp::cnst(dtypes::float32, 1));
    UOp kern = kernel_of({fill, o2.index({i * wide + jw}).store(x).end({i, jw})}, m, wide);
    CHECK(interchange(kern) == kern);
    // Without it: 4 rows of 16 KiB in registers 0..3.
    UOp alone = kernel_of({o2.index({i * wide + jw}).store(x).end({i, jw})}, m, wide);
    UOp after = interchange(alone);
    REQUIRE(after != alone);
    verify_kernel(after);
  }
}
