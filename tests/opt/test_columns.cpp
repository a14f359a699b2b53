// Kernel-opt pass `columns` (src/opt/columns.cpp) on dot products of rows, out = a @ b.T: the
// kernel it makes, built here from the form in the pass's comment; the kernel evaluator's outputs
// against sums done here in the same order; and kernels it must leave as they are. (Their C, bit
// for bit on tcc and cc: tests/backends/test_render.cpp.)
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "interp/kernel_eval.h"
#include "matmul_support.h"
#include "opt_support.h"
#include "opt/opt.h"

using namespace ow;
using namespace ow::test;         // kernel_opt_pass, opt_options
using namespace ow::test_matmul;  // global, buffer, data, same_bits

namespace {

const int64_t M = 3, K = 7;

UOp kernel_of(UOp stmt, int64_t n) {
  std::vector<UOp> src{UOp::sink({stmt}), buffer("out", M * n), buffer("a", M * K), buffer("b", n * K)};
  return UOp::make(Ops::KERNEL, dtypes::void_, std::move(src), Arg(ArgTuple{Arg("k")}));
}

UOp columns(UOp kernel, bool bounds_check = false) {
  return opt::run_pass(kernel_opt_pass("columns"), kernel, opt_options(opt::Target::tcc, 1, bounds_check));
}

std::vector<float> run(UOp kernel, int64_t n) { return run_out_a_b(kernel, M * n, M * K, n * K); }

}  // namespace

TEST_CASE("opt columns: 8 dot products of a row fold side by side in one register", "[opt][columns]") {
  const int64_t n = 16;
  UOp out = global(0, M * n), a = global(1, M * K), b = global(2, n * K);
  UOp i = UOp::range(M, 0), j = UOp::range(n, 1), k = UOp::range(K, 2, AxisType::REDUCE);
  auto term = [&](UOp col) { return a.index({i * K + k}).load() * b.index({col * K + k}).load(); };
  UOp before = kernel_of(out.index({i * n + j}).store(term(j).reduce({k}, Ops::ADD)).end({i, j}), n);
  UOp after = columns(before);
  // END(GROUP(acc[u] = 0 for u, END(GROUP(acc[u] = acc[u] + x(8*jb + u, k) for u), k),
  //           out[i*n + 8*jb + u] = acc[u] for u), i, jb), jb over 16/8 = 2 blocks.
  UOp jb = UOp::range(2, 1, AxisType::LOOP, {-8});
  UOp reg = UOp::make(Ops::DEFINE_REG, dtypes::float32.pointer(8), {}, Arg(int64_t{0}));
  std::vector<UOp> body, folds, stores;
  for (int64_t u = 0; u < 8; ++u) {
    UOp col = u ? jb * 8 + u : jb * 8, acc = reg.index({UOp::index(u)});
    body.push_back(acc.store(UOp::cnst(dtypes::float32, 0)));
    folds.push_back(acc.store(acc.load() + term(col)));
    stores.push_back(out.index({i * n + col}).store(acc.load()));
  }
  body.push_back(UOp::make(Ops::GROUP, dtypes::void_, folds).end({k}));
  body.insert(body.end(), stores.begin(), stores.end());
  CHECK(after->src[0]->src[0] == UOp::make(Ops::GROUP, dtypes::void_, body).end({i, jb}));
  CHECK(columns(after) == after);  // once
  // Each out[i][j] is a[i] . b[j] summed from 0 over k ascending, one rounding per step.
  std::vector<float> want = matmul_in_order(floats_of(data(dtypes::float32, M * K, 1)), floats_of(data(dtypes::float32, n * K, 2)), M, K, n, true);
  std::vector<float> got = run(after, n), plain = run(before, n);
  for (size_t q = 0; q < want.size(); ++q) {
    INFO("element " << q << ": " << got[q] << " (plain kernel " << plain[q] << "), want " << want[q]);
    CHECK(same_bits(got[q], want[q]));
    CHECK(same_bits(plain[q], want[q]));
  }
}

TEST_CASE("opt columns: two REDUCEs of a value, one register each, and a value read twice from one", "[opt][columns]") {
  // out[i][j] = relu(max_k a.b) + sum_k a.b over 4 columns: registers 0 (MAX) and 1 (ADD).
  const int64_t n = 4;
  UOp out = global(0, M * n), a = global(1, M * K), b = global(2, n * K);
  UOp i = UOp::range(M, 0), j = UOp::range(n, 1), k = UOp::range(K, 2, AxisType::REDUCE);
  UOp x = a.index({i * K + k}).load() * b.index({j * K + k}).load();
  UOp mx = x.reduce({k}, Ops::MAX), zero = UOp::cnst(dtypes::float32, 0);
  UOp relu = UOp::make(Ops::WHERE, dtypes::float32, {UOp::make(Ops::CMPLT, dtypes::bool_, {zero, mx}), mx, zero});
  UOp before = kernel_of(out.index({i * n + j}).store(relu + x.reduce({k}, Ops::ADD)).end({i, j}), n);
  UOp after = columns(before);
  int regs = 0;
  for (UOp u : toposort(after))
    if (u->op == Ops::DEFINE_REG) {
      ++regs;
      CHECK(u->dtype == dtypes::float32.pointer(4));
    }
  CHECK(regs == 2);
  interp::BufferData a_ = data(dtypes::float32, M * K, 1), b_ = data(dtypes::float32, n * K, 2);
  std::vector<float> got = run(after, n);
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < n; ++c) {
      float s = 0.0f, m = -INFINITY;
      for (int64_t q = 0; q < K; ++q) {
        volatile float p = a_.data->as<float>()[r * K + q] * b_.data->as<float>()[c * K + q];
        s = s + p;
        m = std::isnan(m) || std::isnan(p) ? NAN : (p > m ? p : m);
      }
      float want = (0.0f < m ? m : 0.0f) + s;
      INFO("out[" << r << "][" << c << "] = " << got[static_cast<size_t>(r * n + c)] << ", want " << want);
      CHECK(same_bits(got[static_cast<size_t>(r * n + c)], want));
    }
}

TEST_CASE("opt columns: nests it must leave as they are", "[opt][columns]") {
  const int64_t n = 8;
  UOp out = global(0, M * n), a = global(1, M * K), b = global(2, n * K);
  UOp i = UOp::range(M, 0), k = UOp::range(K, 2, AxisType::REDUCE);
  auto blocked = [&](UOp j, UOp value) {
    UOp kern = kernel_of(out.index({i * n + j}).store(value).end({i, j}), n);
    return columns(kern) != kern;
  };
  UOp j = UOp::range(n, 1);
  REQUIRE(blocked(j, (a.index({i * K + k}).load() * b.index({j * K + k}).load()).reduce({k}, Ops::ADD)));  // the control
  SECTION("b runs along j: the reduce interchange's nest, not this pass's") {
    CHECK(!blocked(j, (a.index({i * K + k}).load() * b.index({k * n + j}).load()).reduce({k}, Ops::ADD)));
  }
  SECTION("no power of 2 above 1 divides j's extent") {
    UOp j5 = UOp::range(5, 1);
    CHECK(!blocked(j5, (a.index({i * K + k}).load() * b.index({j5 * K + k}).load()).reduce({k}, Ops::ADD)));
  }
  SECTION("a value that may fail (the first error would change): an integer division by j") {
    UOp q = (i + 1).idiv(j).cast(dtypes::float32);
    CHECK(!blocked(j, (a.index({i * K + k}).load() * b.index({j * K + k}).load() + q).reduce({k}, Ops::ADD)));
  }
  SECTION("no REDUCE depends on j") { CHECK(!blocked(j, a.index({i * K + k}).load().reduce({k}, Ops::ADD) + b.index({j}).load())); }
}
