// The C renderer (backends/c/render.h): the structure of the C it writes for hand-built kernels,
// and (through backends/compiler.h) that the code computes what was asked.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "backends/c/kernel_abi.h"
#include "backends/c/render.h"
#include "backends/compiler.h"
#include "opt/opt.h"
#include "opt_support.h"
#include "render_support.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/text.h"

using namespace ow;
using namespace ow::backend;
using ow::test::render_optimized;

namespace {

UOp global(int64_t slot, int64_t size, DType d = dtypes::float32) {
  return UOp::make(Ops::DEFINE_GLOBAL, d.pointer(size), {}, Arg(slot));
}
UOp buffer(const char* name, int64_t size) {
  return UOp::make(Ops::BUFFER, dtypes::float32, {}, Arg(ArgTuple{Arg(name), Arg(size)}));
}
UOp kernel(const char* name, std::vector<UOp> stores, std::vector<UOp> rest) {
  std::vector<UOp> src{UOp::sink(std::move(stores))};
  src.insert(src.end(), rest.begin(), rest.end());
  return UOp::make(Ops::KERNEL, dtypes::void_, std::move(src), Arg(ArgTuple{Arg(name)}));
}

// out[i*2+j] = sum_k a[i*3+k] * b[k*2+j]: a 2x3 by 3x2 matmul.
UOp matmul_kernel() {
  UOp out = global(0, 4), a = global(1, 6), b = global(2, 6);
  UOp i = UOp::range(2, 0), j = UOp::range(2, 1), k = UOp::range(3, 2, AxisType::REDUCE);
  UOp prod = a.index({i * 3 + k}).load() * b.index({k * 2 + j}).load();
  UOp st = out.index({i * 2 + j}).store(prod.reduce({k}, Ops::ADD)).end({i, j});
  return kernel("k1", {st}, {buffer("out", 4), buffer("a", 6), buffer("b", 6)});
}

// out[i*2+j] = sum_k a[i*3+k] * b[j*3+k]: a times b transposed. b walks k contiguously, so the
// reduce interchange (which would walk it with stride 3 in j) does not apply: one scalar
// accumulator per output element.
// With n columns (n = 3: no column blocking, which takes 4 or 2 at a time).
UOp matmul_bt_kernel(int64_t n = 2) {
  UOp out = global(0, 2 * n), a = global(1, 6), b = global(2, 3 * n);
  UOp i = UOp::range(2, 0), j = UOp::range(n, 1), k = UOp::range(3, 2, AxisType::REDUCE);
  UOp prod = a.index({i * 3 + k}).load() * b.index({j * 3 + k}).load();
  UOp st = out.index({i * n + j}).store(prod.reduce({k}, Ops::ADD)).end({i, j});
  return kernel("k1", {st}, {buffer("out", 2 * n), buffer("a", 6), buffer("b", 3 * n)});
}

// out[i*n+j] = sum_k a[i*kn+k] * b[k*n+j] for an (m x kn) by (kn x n) matmul; b's size `bsize`.
UOp matmul_kernel(int64_t m, int64_t kn, int64_t n, int64_t bsize = -1) {
  UOp out = global(0, m * n), a = global(1, m * kn), b = global(2, bsize < 0 ? kn * n : bsize);
  UOp i = UOp::range(m, 0), j = UOp::range(n, 1), k = UOp::range(kn, 2, AxisType::REDUCE);
  UOp prod = a.index({i * kn + k}).load() * b.index({k * n + j}).load();
  UOp st = out.index({i * n + j}).store(prod.reduce({k}, Ops::ADD)).end({i, j});
  return kernel("mm", {st}, {buffer("out", m * n), buffer("a", m * kn), buffer("b", kn * n)});
}

// out[i] = a[i] * b[i] + 1
UOp axb1_kernel(int64_t n) {
  UOp out = global(0, n), a = global(1, n), b = global(2, n);
  UOp i = UOp::range(n, 0);
  UOp v = a.index({i}).load() * b.index({i}).load() + UOp::cnst(dtypes::float32, 1.0);
  return kernel("axb1", {out.index({i}).store(v).end({i})}, {buffer("out", n), buffer("a", n), buffer("b", n)});
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

size_t line_index(const std::vector<std::string>& ls, const std::string& needle) {
  for (size_t i = 0; i < ls.size(); ++i)
    if (ls[i].find(needle) != std::string::npos) return i;
  FAIL("no line contains " << needle);
  return 0;
}

// The function's body (after the prelude).
std::string body(const RenderedKernel& k) { return k.source.substr(k.source.find("\nint " + k.name + "(")); }

// The options of a kernel rendered for one compiler ("tcc" or "cc"), bounds checked or not.
RenderOptions for_tier(const std::string& tier, bool check = false) {
  RenderOptions o;
  o.bounds_check = check;
  o.target = tier == "tcc" ? Target::tcc : Target::cc;
  return o;
}

// Renders `kernel` for tcc and for cc, compiles it with each, runs it on (out, a, b) and checks
// out == want bit for bit.
template <class T>
void check_exact(UOp kernel, bool check, std::vector<T> a, std::vector<T> b, const std::vector<T>& want) {
  using Fn = int (*)(void**, const long long*, long long*);
  for (const char* tier : {"tcc", "cc"}) {
    INFO("compiler " << tier);
    RenderedKernel k = render_optimized(kernel, for_tier(tier, check));
    auto fn = reinterpret_cast<Fn>(make_compiler(tier)->compile(k.source)->symbol(k.name));
    std::vector<T> out(want.size(), T(-1));
    void* bufs[3] = {out.data(), a.data(), b.data()};
    long long err[3] = {};
    REQUIRE(fn(bufs, nullptr, err) == 0);
    CHECK(std::memcmp(out.data(), want.data(), out.size() * sizeof(T)) == 0);
  }
}

}  // namespace

TEST_CASE("render: signature, parameters, no includes", "[render]") {
  RenderedKernel k = render_kernel(matmul_kernel());
  INFO(k.source);
  CHECK(k.name == "k1");
  CHECK(k.source.find("#include") == std::string::npos);
  CHECK(k.source.find("int k1(void** bufs, const long long* vars, long long* err) {") != std::string::npos);
  CHECK(k.source.find("float* restrict b0 = (float*)bufs[0];") != std::string::npos);
  CHECK(k.source.find("float* restrict b2 = (float*)bufs[2];") != std::string::npos);
  CHECK(k.source.find("float exp2f(float);") != std::string::npos);
  REQUIRE(k.params.size() == 3);
  CHECK(k.params[1] == dtypes::float32.pointer(6));
  CHECK(k.vars.empty());
}

TEST_CASE("render: loops named after ranges, REDUCE accumulator form", "[render]") {
  RenderedKernel k = render_kernel(matmul_bt_kernel(3));  // (the plain form: no kernel-opt pass)
  INFO(k.source);
  auto ls = lines_of(body(k));
  size_t li = line_index(ls, "for (long long i = 0; i < 2LL; i++) {");
  size_t lj = line_index(ls, "for (long long j = 0; j < 3LL; j++) {");
  size_t acc = line_index(ls, "float acc");
  size_t lk = line_index(ls, "for (long long k = 0; k < 3LL; k++) {");
  CHECK(li < lj);
  CHECK(lj < acc);
  CHECK(acc < lk);
  CHECK(ls[acc].find("= 0.0f;") != std::string::npos);
  std::string accname = ls[acc].substr(ls[acc].find("acc"), ls[acc].find(" =") - ls[acc].find("acc"));
  size_t fold = line_index(ls, accname + " = (" + accname + " + ");
  CHECK(fold > lk);
  CHECK(ls[line_index(ls, "b0[")].find("= " + accname + ";") != std::string::npos);
}

// True when the kernel's C folds a REDUCE into an accumulator array indexed by a loop variable,
// reg<n>[j] (the reduce interchange, pass interchange; column blocking's registers are indexed by
// constants).
bool interchanged(const RenderedKernel& k) {
  std::string b = body(k);
  for (size_t p = b.find(" reg"); p != std::string::npos; p = b.find(" reg", p + 1)) {
    size_t q = p + 4;
    while (q < b.size() && std::isdigit(static_cast<unsigned char>(b[q]))) ++q;
    if (q > p + 4 && q + 1 < b.size() && b[q] == '[' && std::isalpha(static_cast<unsigned char>(b[q + 1]))) return true;
  }
  return false;
}

TEST_CASE("render: reduce interchange for a matmul", "[render]") {
  // float acc[2] = {0};   (a register of the pass interchange: declared zero at the top)
  // for (i) { for (j) acc[j] = 0; for (k) { float v = a[i*3+k]; for (j) acc[j] = acc[j] + v * b[k*2+j]; }
  //           for (j) out[i*2+j] = acc[j]; }   (3 rows: no row blocking, see the next test). The
  // plain form: with bounds checks neither cc's register tiles (tests/backends/test_tiles.cpp) nor tcc's
  // vector calls apply.
  RenderedKernel k = render_optimized(matmul_kernel(3, 3, 2), {true});
  INFO(k.source);
  REQUIRE(interchanged(k));
  std::string b = body(k);
  auto ls = lines_of(b);
  size_t li = line_index(ls, "for (long long i = 0; i < 3LL; i++) {");
  size_t decl = line_index(ls, "float reg");
  std::string acc = ls[decl].substr(ls[decl].find("reg"), ls[decl].find('[') - ls[decl].find("reg"));
  CHECK(ls[decl].find(acc + "[2] = {0};") != std::string::npos);
  size_t init_loop = line_index(ls, "for (long long j = 0; j < 2LL; j++) {");
  size_t init = line_index(ls, acc + "[j] = 0.0f;");
  size_t lk = line_index(ls, "for (long long k = 0; k < 3LL; k++) {");
  size_t hoisted = line_index(ls, "float v");  // a[i*3+k]: in the k loop, outside the j loop
  size_t inner = lk + 1;
  while (inner < ls.size() && ls[inner].find("for (long long j ") == std::string::npos) ++inner;
  size_t fold = line_index(ls, acc + "[j] = (" + acc + "[j] + ");
  size_t st = line_index(ls, "b0[");
  CHECK(decl < li);
  CHECK(li < init_loop);
  CHECK(init_loop < init);
  CHECK(init < lk);
  CHECK(lk < hoisted);
  CHECK(hoisted < inner);
  CHECK(ls[hoisted].find("b1[") != std::string::npos);
  CHECK(inner < fold);
  size_t row_b = line_index(ls, "b2[");  // b's row in the j loop (named: cc's rows share it)
  CHECK(inner < row_b);
  CHECK(row_b <= fold);
  CHECK(fold < st);
  CHECK(ls[st].find("= " + acc + "[j];") != std::string::npos);
  size_t loop = st;
  while (loop > 0 && ls[loop].find("for (") == std::string::npos) --loop;
  CHECK(ls[loop].find("for (long long j = 0;") != std::string::npos);
  // a matvec (the store nest is the j loop alone): the arrays live in the function body
  UOp out = global(0, 8), v = global(1, 4), m = global(2, 32);
  UOp j = UOp::range(8, 0), kk = UOp::range(4, 1, AxisType::REDUCE);
  UOp dot = (v.index({kk}).load() * m.index({kk * 8 + j}).load()).reduce({kk}, Ops::ADD);
  RenderedKernel mv = render_optimized(kernel("mv", {out.index({j}).store(dot).end({j})}, {buffer("out", 8), buffer("v", 4), buffer("m", 32)}));
  INFO(mv.source);
  CHECK(interchanged(mv));
  CHECK(body(mv).find("\n  float reg") != std::string::npos);
}

TEST_CASE("render: row blocking of an interchanged matmul, exact on tcc and cc", "[render][tcc]") {
  using Fn = int (*)(void**, const long long*, long long*);
  // rows: 8 -> blocks of 8 (4 with bounds checks), 6 -> 6 (2), 5 -> 5 (none). Irregular inputs, compared bit for bit
  // with the same sums done here in the same order (k ascending from 0.0f). Without bounds
  // checks tcc folds each block of rows with one ow_gemv_f32 call (tests/backends/
  // test_vector_loops.cpp checks every width of its columns).
  for (int64_t m : {8, 6, 5})
  for (int64_t n : {11, 3, 16}) {
    const int64_t kn = 7;
    std::vector<float> a(static_cast<size_t>(m * kn)), b(static_cast<size_t>(kn * n));
    for (size_t q = 0; q < a.size(); ++q) a[q] = 0.31f * float(q) - 2.7f;
    for (size_t q = 0; q < b.size(); ++q) b[q] = 1.0f / float(q + 2);
    std::vector<float> want = test_matmul::matmul_in_order(a, b, m, kn, n, false);
    for (bool check : {false, true}) {
      for (const char* tier : {"tcc", "cc"}) {
        RenderedKernel k = render_optimized(matmul_kernel(m, kn, n), for_tier(tier, check));
        INFO("rows " << m << ", bounds checks " << check << ", for " << tier << "\n" << k.source);
        REQUIRE(interchanged(k));
        bool tiles = !check && std::string(tier) == "cc";
        // up to 14 rows of cc's register tiles at a time (tests/backends/test_tiles.cpp); tcc's rows and
        // rows without tiles (bounds checks): 4 or 2, dividing the rows
        const char* loop = m == 8 ? (!tiles ? "for (long long i_4 = 0; i_4 < 2LL; i_4++) {" : "for (long long i_8 = 0; i_8 < 1LL; i_8++) {")
                           : m == 6 ? (!tiles ? "for (long long i_2 = 0; i_2 < 3LL; i_2++) {" : "for (long long i_6 = 0; i_6 < 1LL; i_6++) {")
                                    : (!tiles ? "for (long long i = 0; i < 5LL; i++) {" : "for (long long i_5 = 0; i_5 < 1LL; i_5++) {");
        CHECK(body(k).find(loop) != std::string::npos);
        // GCC's unroll-and-jam, asked for per kernel, only where rows are blocked without tiles
        CHECK((k.source.find("__attribute__((optimize(\"loop-unroll-and-jam\")))") != std::string::npos) == (m != 5 && check && std::string(tier) == "cc"));
        // tcc: each block of rows (4 or 2), or each row when unblocked (5), folds its whole k loop
        // with one ow_gemv_f32 call
        std::string rows = m == 8 ? "4" : m == 6 ? "2" : "1";
        std::string call = "ow_gemv_f32(" + rows + "LL, 7LL, " + std::to_string(n) + "LL, ";
        CHECK((body(k).find(call) != std::string::npos) == (!check && std::string(tier) == "tcc"));
      }
      check_exact(matmul_kernel(m, kn, n), check, a, b, want);
    }
  }
  {
    // A REDUCE that does not depend on the row is one node in all rows: one accumulator, folded
    // once (fuzz seed 102659 folded it once per row). out[i*3+j] = sum_k b[k*3+j], 4 rows.
    UOp out = global(0, 12), b = global(1, 6);
    UOp i = UOp::range(4, 0), j = UOp::range(3, 1), k = UOp::range(2, 2, AxisType::REDUCE);
    UOp col = b.index({k * 3 + j}).load().reduce({k}, Ops::ADD);
    UOp kc = kernel("kc", {out.index({i * 3 + j}).store(col).end({i, j})}, {buffer("out", 12), buffer("b", 6)});
    for (const char* tier : {"tcc", "cc"}) {
      RenderedKernel rk = render_optimized(kc, for_tier(tier));
      INFO(rk.source);
      CHECK(body(rk).find("i_4") != std::string::npos);
      auto fn = reinterpret_cast<Fn>(make_compiler(tier)->compile(rk.source)->symbol(rk.name));
      float o[12] = {}, bv[6] = {1, 2, 4, 8, 16, 32};
      void* bufs[2] = {o, bv};
      long long err[3] = {};
      REQUIRE(fn(bufs, nullptr, err) == 0);
      for (int q = 0; q < 12; ++q) CHECK(o[q] == bv[q % 3] + bv[q % 3 + 3]);
    }
  }
  // Not blocked: the nest reads the buffer it writes (rows would see each other's writes out of
  // order), or the store index does not separate the rows (out[j] written by every i).
  UOp out = global(0, 64), a = global(1, 64), b = global(2, 64);
  UOp i = UOp::range(4, 0), j = UOp::range(8, 1), k = UOp::range(4, 2, AxisType::REDUCE);
  UOp self = (a.index({i * 4 + k}).load() * out.index({k * 8 + j}).load()).reduce({k}, Ops::ADD);
  RenderedKernel rs = render_optimized(kernel("ks", {out.index({i * 8 + j + 32}).store(self).end({i, j})}, {buffer("out", 64), buffer("a", 64), buffer("b", 64)}));
  INFO(rs.source);
  CHECK(interchanged(rs));
  CHECK(body(rs).find("i_") == std::string::npos);
  UOp same = (a.index({i * 4 + k}).load() * b.index({k * 8 + j}).load()).reduce({k}, Ops::ADD);
  RenderedKernel ro = render_optimized(kernel("ko", {out.index({j}).store(same).end({i, j})}, {buffer("out", 64), buffer("a", 64), buffer("b", 64)}));
  INFO(ro.source);
  CHECK(interchanged(ro));
  CHECK(body(ro).find("i_") == std::string::npos);
}

TEST_CASE("render: tcc's vectorized axpy rows, float64 and factors in either order, exact", "[render][tcc]") {
  // out[i*21+j] = sum_k b[k*21+j] * a[i*5+k] in float64 (the load first: either order is an
  // axpy), 3 rows, not blocked: each row's k loop is one ow_gemv_f64 call, which keeps 8 doubles
  // in registers per block: 21 = 2 blocks + 2 vectors of 2 + 1. The inputs include
  // -0.0, an infinity and values whose products round, compared bit for bit with the sums done
  // here in order.
  const int64_t m = 3, kn = 5, n = 21;
  UOp out = global(0, m * n, dtypes::float64), a = global(1, m * kn, dtypes::float64), b = global(2, kn * n, dtypes::float64);
  UOp i = UOp::range(m, 0), j = UOp::range(n, 1), k = UOp::range(kn, 2, AxisType::REDUCE);
  UOp prod = b.index({k * n + j}).load() * a.index({i * kn + k}).load();
  UOp st = out.index({i * n + j}).store(prod.reduce({k}, Ops::ADD)).end({i, j});
  UOp mm64 = kernel("mm64", {st}, {buffer("out", m * n), buffer("a", m * kn), buffer("b", kn * n)});
  RenderedKernel rk = render_optimized(mm64, for_tier("tcc"));
  INFO(rk.source);
  CHECK(body(rk).find("ow_gemv_f64(1LL, 5LL, 21LL, ") != std::string::npos);  // 3 rows are not blocked: a row's k loop is one call
  std::vector<double> av(static_cast<size_t>(m * kn)), bv(static_cast<size_t>(kn * n)), want(static_cast<size_t>(m * n));
  for (size_t q = 0; q < av.size(); ++q) av[q] = 0.1 * double(q) - 0.7;
  for (size_t q = 0; q < bv.size(); ++q) bv[q] = 1.0 / double(q + 3);
  av[4] = -0.0;
  bv[7] = INFINITY;  // column 7: -inf in rows 0 and 1 (a[0] = -0.7, a[5] = -0.2), +inf in row 2
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double acc = 0.0;
      for (int64_t q = 0; q < kn; ++q) {
        volatile double p = bv[static_cast<size_t>(q * n + c)] * av[static_cast<size_t>(r * kn + q)];
        acc = acc + p;
      }
      want[static_cast<size_t>(r * n + c)] = acc;
    }
  check_exact(mm64, false, av, bv, want);
  // Not an axpy: a MAX fold, and a product of two loads that both move with j.
  UOp mx = b.index({k * n + j}).load().reduce({k}, Ops::MAX);
  RenderedKernel rm = render_optimized(kernel("mx", {out.index({i * n + j}).store(mx).end({i, j})}, {buffer("out", m * n), buffer("a", m * kn), buffer("b", kn * n)}), for_tier("tcc"));
  INFO(rm.source);
  CHECK(interchanged(rm));
  CHECK(body(rm).find("ow_axpy") == std::string::npos);
  UOp sq = (b.index({k * n + j}).load() * b.index({k * n + j}).load()).reduce({k}, Ops::ADD);
  RenderedKernel rs = render_optimized(kernel("sq", {out.index({i * n + j}).store(sq).end({i, j})}, {buffer("out", m * n), buffer("a", m * kn), buffer("b", kn * n)}), for_tier("tcc"));
  INFO(rs.source);
  CHECK(interchanged(rs));
  CHECK(body(rs).find("ow_axpy") == std::string::npos);
}

// Registers (DEFINE_REG) as the kernel evaluator runs them (tests/interp/test_kernel_eval.cpp):
// declared zero at each launch, read and written in statement order. out[i] = a[0] + ... + a[i]
// through one register: the node LOAD(reg[0]) feeds both statements and must not be named once.
TEST_CASE("render: a register is zero at each launch and read in statement order (prefix sum)", "[render][tcc]") {
  UOp out = global(0, 4), a = global(1, 4), i = UOp::range(4, 0);
  UOp acc = UOp::make(Ops::DEFINE_REG, dtypes::float32.pointer(1), {}, Arg(int64_t{0})).index({UOp::index(0)});
  UOp step = UOp::make(Ops::GROUP, dtypes::void_, {acc.store(acc.load() + a.index({i}).load()), out.index({i}).store(acc.load())});
  UOp kern = kernel("prefix", {step.end({i})}, {buffer("out", 4), buffer("a", 4)});
  using Fn = int (*)(void**, const long long*, long long*);
  for (bool check : {false, true})
    for (const char* tier : {"tcc", "cc"}) {
      RenderedKernel k = render_kernel(kern, for_tier(tier, check));
      INFO(tier << ", bounds checks " << check << "\n" << k.source);
      CHECK(body(k).find("float reg0[1] = {0};") != std::string::npos);
      auto fn = reinterpret_cast<Fn>(make_compiler(tier)->compile(k.source)->symbol(k.name));
      for (int launch = 0; launch < 2; ++launch) {
        std::vector<float> o(4, -1.0f), av{1, 2, 4, 8};
        void* bufs[2] = {o.data(), av.data()};
        long long err[3] = {};
        REQUIRE(fn(bufs, nullptr, err) == 0);
        CHECK(o == std::vector<float>{1, 3, 7, 15});
      }
    }
}

// An index read from a register differs between statements: its bounds check is made by each
// one (a check made once per INDEX node would let the second, out-of-range access through).
TEST_CASE("render: an access indexed by a register's contents is checked in every statement", "[render][tcc]") {
  UOp out = global(0, 2), a = global(1, 4);
  UOp at = UOp::make(Ops::DEFINE_REG, dtypes::int32.pointer(1), {}, Arg(int64_t{0})).index({UOp::index(0)});
  UOp gather = a.index({at.load().cast(dtypes::index)}).load();
  std::vector<UOp> stmts{at.store(UOp::int_const(dtypes::int32, 3)), out.index({UOp::index(0)}).store(gather),
                         at.store(UOp::int_const(dtypes::int32, 7)), out.index({UOp::index(1)}).store(gather)};
  UOp kern = kernel("gather", stmts, {buffer("out", 2), buffer("a", 4)});
  using Fn = int (*)(void**, const long long*, long long*);
  for (const char* tier : {"tcc", "cc"}) {
    RenderedKernel k = render_kernel(kern, for_tier(tier, true));
    INFO(tier << "\n" << k.source);
    auto fn = reinterpret_cast<Fn>(make_compiler(tier)->compile(k.source)->symbol(k.name));
    std::vector<float> o(2, -1.0f), av{10, 11, 12, 13};
    void* bufs[2] = {o.data(), av.data()};
    long long err[3] = {};
    CHECK(fn(bufs, nullptr, err) == abi::kOutOfBounds);
    CHECK(err[2] == 7);  // the index of the second access
    CHECK(o[0] == 13.0f);
    CHECK(o[1] == -1.0f);
  }
}

TEST_CASE("render: column blocking of dot products (a times b transposed, pass columns), exact on tcc and cc", "[render][tcc]") {
  // out[i][j] = sum_k a[i*7+k] * b[j*7+k], 3 rows; columns: 8 -> blocks of 8, 12 -> 4, 6 -> 2,
  // 5 -> none. The kernel-opt pass columns (src/opt/columns.cpp) blocks them into registers; its
  // C is compared bit for bit with the same sums done here in the same order.
  for (int64_t n : {8, 12, 6, 5}) {
    const int64_t m = 3, kn = 7;
    UOp out = global(0, m * n), a = global(1, m * kn), b = global(2, n * kn);
    UOp i = UOp::range(m, 0), j = UOp::range(n, 1), k = UOp::range(kn, 2, AxisType::REDUCE);
    UOp dot = (a.index({i * kn + k}).load() * b.index({j * kn + k}).load()).reduce({k}, Ops::ADD);
    UOp kern = kernel("bt", {out.index({i * n + j}).store(dot).end({i, j})}, {buffer("out", m * n), buffer("a", m * kn), buffer("b", n * kn)});
    std::vector<float> av(static_cast<size_t>(m * kn)), bv(static_cast<size_t>(n * kn));
    for (size_t q = 0; q < av.size(); ++q) av[q] = 0.29f * float(q) - 1.9f;
    for (size_t q = 0; q < bv.size(); ++q) bv[q] = 1.0f / float(q + 3);
    std::vector<float> want = test_matmul::matmul_in_order(av, bv, m, kn, n, true);
    const opt::Pass& columns = ow::test::kernel_opt_pass("columns");
    for (bool check : {false, true}) {
      opt::Options o;
      o.bounds_check = check;
      UOp blocked = opt::run_pass(columns, kern, o);
      for (const char* tier : {"tcc", "cc"}) {
        RenderedKernel rk = render_kernel(blocked, for_tier(tier, check));
        INFO("columns " << n << ", bounds checks " << check << ", for " << tier << "\n" << rk.source);
        CHECK_FALSE(interchanged(rk));
        int64_t blk = n == 5 ? 1 : n == 6 ? 2 : n == 12 ? 4 : 8;
        if (blk > 1) CHECK(body(rk).find("float reg0[" + std::to_string(blk) + "] = {0};") != std::string::npos);
        std::string jb = "j_" + std::to_string(blk);  // the block range, named after j and its size
        if (blk > 1) CHECK(body(rk).find("for (long long " + jb + " = 0; " + jb + " < " + std::to_string(n / blk) + "LL;") != std::string::npos);
        else CHECK(body(rk).find("reg") == std::string::npos);
      }
      check_exact(blocked, check, av, bv, want);
    }
  }
}

TEST_CASE("render: no reduce interchange where it is illegal or unprofitable", "[render]") {
  SECTION("the j loads are strided (a times b transposed)") { CHECK_FALSE(interchanged(render_optimized(matmul_bt_kernel()))); }
  SECTION("j's extent is over the accumulator limit") {
    CHECK(interchanged(render_optimized(matmul_kernel(1, 2, 4096))));
    CHECK_FALSE(interchanged(render_optimized(matmul_kernel(1, 2, 4097))));
  }
  UOp out = global(0, 64), a = global(1, 64), b = global(2, 64);
  UOp i = UOp::range(4, 0), k = UOp::range(4, 2, AxisType::REDUCE);
  SECTION("j's extent is a variable") {
    UOp n = UOp::variable("n", 1, 8);
    UOp j = UOp::range(n, 1);
    UOp v = (a.index({i * 4 + k}).load() * b.index({k * 8 + j}).load()).reduce({k}, Ops::ADD);
    UOp kern = kernel("kv", {out.index({i * 8 + j}).store(v).end({i, j})}, {buffer("out", 64), buffer("a", 64), buffer("b", 64), n.bind(UOp::index(3))});
    CHECK_FALSE(interchanged(render_optimized(kern)));
  }
  UOp j = UOp::range(8, 1);
  SECTION("a REDUCE in the REDUCE's body") {
    UOp k2 = UOp::range(2, 3, AxisType::REDUCE);
    UOp inner = b.index({k * 8 + j + k2}).load().reduce({k2}, Ops::MAX);
    UOp v = (a.index({i * 4 + k}).load() * inner).reduce({k}, Ops::ADD);
    UOp kern = kernel("kn", {out.index({i * 8 + j}).store(v).end({i, j})}, {buffer("out", 64), buffer("a", 64), buffer("b", 64)});
    RenderedKernel r = render_optimized(kern);
    INFO(r.source);
    CHECK_FALSE(interchanged(r));
  }
  SECTION("a division that may fail in the body") {
    UOp oi = global(0, 64, dtypes::int32), ai = global(1, 64, dtypes::int32), bi = global(2, 64, dtypes::int32);
    UOp v = ai.index({i * 4 + k}).load().idiv(bi.index({k * 8 + j}).load()).reduce({k}, Ops::ADD);
    UOp kern = kernel("kd", {oi.index({i * 8 + j}).store(v).end({i, j})}, {buffer("out", 64), buffer("a", 64), buffer("b", 64)});
    CHECK_FALSE(interchanged(render_optimized(kern)));
  }
  SECTION("bounds checks the index bounds do not prove") {
    CHECK(interchanged(render_optimized(matmul_kernel(), {true})));                // indices provably inside
    CHECK(interchanged(render_optimized(matmul_kernel(2, 3, 2, 5))));              // b too small, unchecked
    CHECK_FALSE(interchanged(render_optimized(matmul_kernel(2, 3, 2, 5), {true})));  // b too small, checked
  }
}

TEST_CASE("render: a load or division is not hoisted out of a loop that may not run", "[render][tcc]") {
  // out[i] = x[i] / y[0] for i < n (int32): with n = 0 nothing is evaluated, so y[0] = 0 is fine.
  UOp out = global(0, 4, dtypes::int32), x = global(1, 4, dtypes::int32), y = global(2, 4, dtypes::int32);
  UOp n = UOp::variable("n", 0, 4);
  UOp i = UOp::range(n, 0);
  UOp q = x.index({i}).load().idiv(y.index({UOp::index(0)}).load());
  UOp kern = kernel("kz", {out.index({i}).store(q).end({i})}, {buffer("out", 4), buffer("x", 4), buffer("y", 4), n.bind(UOp::index(0))});
  RenderedKernel k = render_kernel(kern, for_tier("tcc", true));
  INFO(k.source);
  auto ls = lines_of(body(k));
  CHECK(line_index(ls, "b2[0") > line_index(ls, "for (long long i"));
  CHECK(line_index(ls, " == 0) return ow_fail(err, 1,") > line_index(ls, "for (long long i"));
  // sum_{k < n} x[i] * z[k]: x[i] stays inside the k loop (which may be empty), and out-of-bounds
  // x[i + 4] is never read (nor checked) when n = 0.
  UOp fo = global(0, 2), fx = global(1, 4), fz = global(2, 4);
  UOp i2 = UOp::range(2, 0), kr = UOp::range(n, 1, AxisType::REDUCE);
  UOp s = (fx.index({i2 + 3}).load() * fz.index({kr}).load()).reduce({kr}, Ops::ADD);
  UOp kern2 = kernel("kz2", {fo.index({i2}).store(s).end({i2})}, {buffer("out", 2), buffer("x", 4), buffer("z", 4), n.bind(UOp::index(0))});
  RenderedKernel k2 = render_kernel(kern2, for_tier("tcc", true));
  INFO(k2.source);
  auto ls2 = lines_of(body(k2));
  CHECK(line_index(ls2, "b1[") > line_index(ls2, "for (long long j"));

  auto cc = make_compiler("tcc");
  using Fn = int (*)(void**, const long long*, long long*);
  auto fn = reinterpret_cast<Fn>(cc->compile(k.source)->symbol(k.name));
  int o[4] = {}, xs[4] = {1, 2, 3, 4}, ys[4] = {0, 0, 0, 0};
  void* bufs[3] = {o, xs, ys};
  long long err[3] = {}, zero = 0, two = 2;
  CHECK(fn(bufs, &zero, err) == 0);
  CHECK(fn(bufs, &two, err) == 1);  // and with iterations, the division by zero is found
  auto fn2 = reinterpret_cast<Fn>(cc->compile(k2.source)->symbol(k2.name));
  float fos[2] = {7, 7}, fxs[4] = {1, 2, 3, 4}, fzs[4] = {1, 1, 1, 1};
  void* bufs2[3] = {fos, fxs, fzs};
  CHECK(fn2(bufs2, &zero, err) == 0);
  CHECK(fos[0] == 0.f);
  CHECK(fos[1] == 0.f);
  CHECK(fn2(bufs2, &two, err) == 2);  // x[4] is out of bounds once the k loop runs
}

TEST_CASE("render: an integer power that may fail is not hoisted out of a loop that may not run", "[render][tcc]") {
  // out[i] = 2 ** e for i < n (int32; e a kernel variable): with n = 0 nothing is evaluated, so
  // e = -1 (a negative exponent, an error: SEMANTICS S2.1) is fine; with n = 2 it is the error.
  UOp out = global(0, 4, dtypes::int32);
  UOp n = UOp::variable("n", 0, 4), e = UOp::variable("e", -2, 2, dtypes::int32);
  UOp i = UOp::range(n, 0);
  UOp p = UOp::cnst(dtypes::int32, 2).alu(Ops::POW, {e});
  UOp kern = kernel("kp", {out.index({i}).store(p).end({i})}, {buffer("out", 4), n.bind(UOp::index(0)), e.bind(UOp::cnst(dtypes::int32, 0))});
  for (const char* tier : {"tcc", "cc"}) {
    INFO(tier);
    RenderedKernel k = render_kernel(kern, for_tier(tier));
    INFO(k.source);
    auto ls = lines_of(body(k));
    CHECK(line_index(ls, "< 0) return ow_fail(err, 7,") > line_index(ls, "for (long long i"));
    using Fn = int (*)(void**, const long long*, long long*);
    auto fn = reinterpret_cast<Fn>(make_compiler(tier)->compile(k.source)->symbol(k.name));
    int o[4] = {5, 5, 5, 5};
    void* bufs[1] = {o};
    long long err[4] = {}, none[2] = {0, -1}, two[2] = {2, -1}, ok[2] = {2, 3};
    CHECK(fn(bufs, none, err) == 0);
    CHECK(o[0] == 5);
    CHECK(fn(bufs, two, err) == 7);
    CHECK(fn(bufs, ok, err) == 0);
    CHECK(o[1] == 8);
  }
}

TEST_CASE("render: a power that may fail keeps its first error in loop order (no column blocking)", "[render][tcc]") {
  // out[i*8+j] = sum_k a[i*3+k] ** b[j*3+k] (int32). Two exponents are negative: b[2*3+2] = -2
  // (j = 2, k = 2) and b[5*3+0] = -1 (j = 5, k = 0). In loop order (j outside k) the first error
  // is at j = 2 and reports -2; eight columns folded side by side would reach (j = 5, k = 0)
  // first and report -1.
  const int64_t n = 8, kn = 3;
  UOp out = global(0, n, dtypes::int32), a = global(1, kn, dtypes::int32), b = global(2, n * kn, dtypes::int32);
  UOp i = UOp::range(1, 0), j = UOp::range(n, 1), k = UOp::range(kn, 2, AxisType::REDUCE);
  UOp p = a.index({i * kn + k}).load().alu(Ops::POW, {b.index({j * kn + k}).load()});
  UOp kern = kernel("pw", {out.index({i * n + j}).store(p.reduce({k}, Ops::ADD)).end({i, j})}, {buffer("out", n), buffer("a", kn), buffer("b", n * kn)});
  for (const char* tier : {"tcc", "cc"}) {
    RenderedKernel rk = render_kernel(kern, for_tier(tier));
    INFO(tier << "\n" << rk.source);
    using Fn = int (*)(void**, const long long*, long long*);
    auto fn = reinterpret_cast<Fn>(make_compiler(tier)->compile(rk.source)->symbol(rk.name));
    std::vector<int32_t> o(n, 0), av{2, 3, 1}, bv(static_cast<size_t>(n * kn), 1);
    bv[2 * 3 + 2] = -2;
    bv[5 * 3 + 0] = -1;
    void* bufs[3] = {o.data(), av.data(), bv.data()};
    long long err[4] = {};
    CHECK(fn(bufs, nullptr, err) == abi::kNegativeExponent);
    CHECK(err[abi::kValue] == -2);
    CHECK(o[1] == 2 + 3 + 1);  // column 1 finished before column 2 failed
  }
}

TEST_CASE("render: one statement per line", "[render]") {
  for (UOp kern : {matmul_kernel(), axb1_kernel(5)}) {
    RenderedKernel k = render_kernel(kern, {true});
    INFO(k.source);
    for (const std::string& l : lines_of(body(k))) {
      size_t semis = 0;
      for (size_t p = 0; p < l.size(); ++p) semis += l[p] == ';';
      if (l.find("for (") != std::string::npos) CHECK(semis == 2);
      else CHECK(semis <= 1);
    }
  }
}

TEST_CASE("render: an invariant is hoisted out of the inner loop", "[render]") {
  // out[i*4+j] = exp2(x[i]) + y[j]: exp2(x[i]) belongs in the i loop, before the j loop.
  UOp out = global(0, 12), x = global(1, 3), y = global(2, 4);
  UOp i = UOp::range(3, 0), j = UOp::range(4, 1);
  UOp v = x.index({i}).load().alu(Ops::EXP2, {}) + y.index({j}).load();
  UOp kern = kernel("k2", {out.index({i * 4 + j}).store(v).end({i, j})}, {buffer("out", 12), buffer("x", 3), buffer("y", 4)});
  RenderedKernel k = render_kernel(kern);
  INFO(k.source);
  auto ls = lines_of(body(k));
  size_t hoisted = line_index(ls, "exp2f(b1[i])");
  CHECK(hoisted > line_index(ls, "for (long long i"));
  CHECK(hoisted < line_index(ls, "for (long long j"));
  CHECK(ls[hoisted].find("float v") != std::string::npos);
}

TEST_CASE("render: gated load and store", "[render]") {
  UOp out = global(0, 6), x = global(1, 4);
  UOp i = UOp::range(6, 0);
  UOp gate = i.lt(4);
  UOp v = x.index({i, gate}).load();
  UOp kern = kernel("k3", {out.index({i}).store(v).end({i})}, {buffer("out", 6), buffer("x", 4)});
  RenderedKernel k = render_kernel(kern);
  INFO(k.source);
  CHECK(k.source.find("((i < 4LL) ? b1[i] : 0)") != std::string::npos);
  UOp kern2 = kernel("k4", {out.index({i, gate}).store(UOp::cnst(dtypes::float32, 2.5)).end({i})}, {buffer("out", 6)});
  RenderedKernel k2 = render_kernel(kern2);
  INFO(k2.source);
  CHECK(k2.source.find("if ((i < 4LL)) b0[i] = 2.5f;") != std::string::npos);
}

TEST_CASE("render: bounds checks only when asked", "[render]") {
  RenderedKernel plain = render_kernel(matmul_kernel());
  RenderedKernel checked = render_kernel(matmul_kernel(), {true});
  INFO(checked.source);
  CHECK(body(plain).find("ow_fail(err, 2") == std::string::npos);
  CHECK(body(checked).find(">= 6) return ow_fail(err, 2, ") != std::string::npos);
  CHECK(body(checked).find(">= 4) return ow_fail(err, 2, ") != std::string::npos);
}

TEST_CASE("render: variables, integer wrap, IDIV check, errors", "[render]") {
  UOp out = global(0, 8, dtypes::int32), x = global(1, 8, dtypes::int32);
  UOp n = UOp::variable("n", 1, 8);
  UOp i = UOp::range(n, 0);
  UOp xi = x.index({i}).load();
  UOp v = (xi + xi).idiv(xi);
  UOp kern = kernel("k5", {out.index({i}).store(v).end({i})}, {buffer("out", 8), buffer("x", 8), n.bind(UOp::index(3))});
  RenderedKernel k = render_kernel(kern);
  INFO(k.source);
  REQUIRE(k.vars == std::vector<std::string>{"n"});
  CHECK(k.source.find("long long var_n = vars[0];") != std::string::npos);
  CHECK(k.source.find("i < var_n;") != std::string::npos);
  CHECK(k.source.find("(int)((unsigned)") != std::string::npos);
  CHECK(k.source.find(" == 0) return ow_fail(err, 1, ") != std::string::npos);
  CHECK(k.source.find("ow_idiv_i32(") != std::string::npos);

  // float16 is held as its bits: a copy moves unsigned shorts, unconverted
  UOp h = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float16.pointer(4), {}, Arg(int64_t{0}));
  UOp j = UOp::range(4, 0);
  RenderedKernel hk = render_kernel(kernel("k6", {h.index({j}).store(h.index({j}).load()).end({j})}, {buffer("h", 4)}));
  CHECK(hk.function.find("unsigned short* restrict b0 = (unsigned short*)bufs[0];") != std::string::npos);
  CHECK(hk.function.find("ow_f16_to_f32") == std::string::npos);
  UOp vg = UOp::make(Ops::DEFINE_GLOBAL, dtypes::void_.pointer(4), {}, Arg(int64_t{0}));
  UOp bad = kernel("k7", {vg.index({j}).store(vg.index({j}).load()).end({j})}, {buffer("v", 4)});
  CHECK_THROWS_WITH(render_kernel(bad), Catch::Contains("the C backend has no values of dtype void (at %"));
}

TEST_CASE("render: host program", "[render]") {
  UOp m = UOp::range(3, -1, AxisType::OUTER);
  UOp var = UOp::variable("m1", 0, 2);
  UOp out = global(0, 4);
  UOp i = UOp::range(4, 0);
  UOp st = out.index({i + var * 0}).store(UOp::cnst(dtypes::float32, 1.0)).end({i});
  UOp k1 = kernel("k1", {st}, {buffer("out", 4), var.bind(m)});
  UOp loop = UOp::make(Ops::END, dtypes::void_, {UOp::make(Ops::GROUP, dtypes::void_, {k1}), m});
  std::string p = render_program(UOp::sink({UOp::make(Ops::GROUP, dtypes::void_, {loop})}));
  CHECK(p == "for m1 in 0..3:\n  k1(out; m1=m1)\n");
  // A loop listed twice (one interned END) runs twice, and is printed whole twice.
  std::string twice = render_program(UOp::sink({UOp::make(Ops::GROUP, dtypes::void_, {loop, loop})}));
  CHECK(twice == "for m1 in 0..3:\n  k1(out; m1=m1)\nfor m1 in 0..3:\n  k1(out; m1=m1)\n");
}

TEST_CASE("render: compiled kernels compute exactly (tcc)", "[render][tcc]") {
  auto cc = make_compiler("tcc");
  {
    RenderedKernel k = render_kernel(axb1_kernel(5), for_tier("tcc", true));
    auto lib = cc->compile(k.source);
    auto fn = reinterpret_cast<int (*)(void**, const long long*, long long*)>(lib->symbol(k.name));
    float out[5] = {}, a[5] = {1.5f, -2.f, 0.1f, 3.f, 1e30f}, b[5] = {2.f, 0.5f, 0.3f, -1.f, 1e10f};
    void* bufs[3] = {out, a, b};
    long long err[3] = {};
    REQUIRE(fn(bufs, nullptr, err) == 0);
    for (int q = 0; q < 5; ++q) {
      volatile float p = a[q] * b[q];
      float want = p + 1.0f;
      CHECK(std::memcmp(&out[q], &want, 4) == 0);
    }
  }
  {
    RenderedKernel k = render_optimized(matmul_kernel(), for_tier("tcc", true));
    INFO(k.source);
    auto lib = cc->compile(k.source);
    auto fn = reinterpret_cast<int (*)(void**, const long long*, long long*)>(lib->symbol(k.name));
    float out[4] = {}, a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12};
    void* bufs[3] = {out, a, b};
    long long err[3] = {};
    REQUIRE(fn(bufs, nullptr, err) == 0);
    CHECK(out[0] == 58.f);
    CHECK(out[1] == 64.f);
    CHECK(out[2] == 139.f);
    CHECK(out[3] == 154.f);
  }
}

TEST_CASE("render: tcc's unrolled elementwise loop, through pointers and with bounds checks", "[render][tcc]") {
  using Fn = int (*)(void**, const long long*, long long*);
  // 21 = two unrolled blocks of 8 and a remainder of 5; values with exact products and sums
  // would hide a wrong element, so the inputs are irregular and compared bit for bit.
  float a[21], b[21];
  for (int q = 0; q < 21; ++q) a[q] = 0.37f * float(q) - 3.1f, b[q] = 1.0f / float(q + 3);
  for (bool check : {false, true}) {
    for (const char* tier : {"tcc", "cc"}) {
      INFO("compiler " << tier);
      RenderedKernel k = render_optimized(axb1_kernel(21), for_tier(tier, check));
      INFO(k.source);
      std::string src = body(k);
      bool tcc = std::string(tier) == "tcc";
      CHECK((src.find("i_8 += 8") != std::string::npos) == tcc);  // unrolled for tcc alone
      // Without checks the loop variable is used only as b<k>[i]: pointers; the checks use i itself.
      CHECK((src.find("float* restrict b1_at = b1 + ") != std::string::npos) == (tcc && !check));
      auto fn = reinterpret_cast<Fn>(make_compiler(tier)->compile(k.source)->symbol(k.name));
      float out[21] = {};
      void* bufs[3] = {out, a, b};
      long long err[3] = {};
      REQUIRE(fn(bufs, nullptr, err) == 0);
      for (int q = 0; q < 21; ++q) {
        volatile float p = a[q] * b[q];
        float want = p + 1.0f;
        CHECK(std::memcmp(&out[q], &want, 4) == 0);
      }
    }
  }
}

TEST_CASE("render: a loop marked unroll that cannot be written so is an internal error naming it", "[render][tcc]") {
  // The pass unroll never marks these (tests/opt/test_unroll.cpp); a wrong mark must not become C.
  UOp out = global(0, 16), a = global(1, 16);
  auto marked = [&](UOp i, UOp index, LoopForm f) {
    UOp st = out.index({index}).store(a.index({index}).load() + i.cast(dtypes::float32));
    return kernel("m", {UOp::make(Ops::END, dtypes::void_, {st, i}, loop_arg(f))}, {buffer("out", 16), buffer("a", 16)});
  };
  UOp i = UOp::range(16, 0), short_i = UOp::range(4, 0);
  CHECK_THROWS_AS(render_kernel(marked(i, i, LoopForm::unroll_pointers), for_tier("tcc", false)), InternalError);  // i is also a value
  CHECK_THROWS_WITH(render_kernel(marked(short_i, short_i, LoopForm::unroll), for_tier("tcc", false)), Catch::Contains("needs a constant extent of at least 8"));
  // With bounds checks the pointer form is written as copies (the checks name i), correctly.
  CHECK_NOTHROW(render_kernel(marked(i, i, LoopForm::unroll_pointers), for_tier("tcc", true)));
  CHECK_NOTHROW(render_kernel(marked(i, i, LoopForm::unroll), for_tier("tcc", false)));
}

TEST_CASE("render: interchanged reductions compute exactly (tcc)", "[render][tcc]") {
  auto cc = make_compiler("tcc");
  using Fn = int (*)(void**, const long long*, long long*);
  for (bool check : {false, true}) {
    // (3x4) by (4x9), a = 1..12 and b = 1..36 row-major: c[i][j] = c0[i] + c1[i] * j. For tcc
    // a row's k loop is one call to ow_gemv_f32, or with bounds checks unrolled by 8 with a remainder
    // loop (1 iteration).
    RenderedKernel k = render_optimized(matmul_kernel(3, 4, 9), for_tier("tcc", check));
    INFO(k.source);
    REQUIRE(interchanged(k));
    auto fn = reinterpret_cast<Fn>(cc->compile(k.source)->symbol(k.name));
    CHECK(body(k).find(check ? "j_8 += 8" : "ow_gemv_f32(1LL, 4LL, 9LL, ") != std::string::npos);
    float c[27] = {}, a[12], b[36];
    for (int q = 0; q < 12; ++q) a[q] = static_cast<float>(q + 1);
    for (int q = 0; q < 36; ++q) b[q] = static_cast<float>(q + 1);
    void* bufs[3] = {c, a, b};
    long long err[3] = {};
    REQUIRE(fn(bufs, nullptr, err) == 0);
    const float c0[3] = {190, 422, 654}, c1[3] = {10, 26, 42};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 9; ++j) CHECK(c[i * 9 + j] == c0[i] + c1[i] * static_cast<float>(j));
  }
  {
    // Two REDUCEs in one stored value, each with its own array, joined per element afterwards:
    // out[j] = max(sum_k v[k] * M[k*4+j], 0) + max_k M[k*4+j].
    UOp out = global(0, 4), v = global(1, 3), m = global(2, 12);
    UOp j = UOp::range(4, 0), k = UOp::range(3, 1, AxisType::REDUCE);
    UOp mkj = m.index({k * 4 + j}).load();
    UOp sum = (v.index({k}).load() * mkj).reduce({k}, Ops::ADD);
    UOp mx = mkj.reduce({k}, Ops::MAX);
    UOp val = sum.maximum(UOp::cnst(dtypes::float32, 0.0)) + mx;
    UOp kern = kernel("k2r", {out.index({j}).store(val).end({j})}, {buffer("out", 4), buffer("v", 3), buffer("m", 12)});
    RenderedKernel k2 = render_optimized(kern, for_tier("tcc"));
    INFO(k2.source);
    std::string b = body(k2);
    CHECK(interchanged(k2));
    size_t arrays = 0;
    for (size_t p = b.find("[4] = {0};"); p != std::string::npos; p = b.find("[4] = {0};", p + 1)) ++arrays;
    CHECK(arrays == 2);
    auto fn = reinterpret_cast<Fn>(cc->compile(k2.source)->symbol(k2.name));
    float o[4] = {}, vs[3] = {2, 1, 1}, ms[12] = {1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -30, -4};
    void* bufs[3] = {o, vs, ms};
    long long err[3] = {};
    REQUIRE(fn(bufs, nullptr, err) == 0);
    CHECK(o[0] == 11.f);
    CHECK(o[1] == 14.f);
    CHECK(o[2] == 7.f);
    CHECK(o[3] == 20.f);
  }
}

TEST_CASE("render: compiled error paths and S2.1 helpers (tcc)", "[render][tcc]") {
  auto cc = make_compiler("tcc");
  using Fn = int (*)(void**, const long long*, long long*);
  // out[i] = x[i] / y[i] on int32: a zero divisor returns kind 1 naming the IDIV.
  UOp out = global(0, 3, dtypes::int32), x = global(1, 3, dtypes::int32), y = global(2, 3, dtypes::int32);
  UOp i = UOp::range(3, 0);
  UOp q = x.index({i}).load().idiv(y.index({i}).load());
  UOp kdiv = kernel("kdiv", {out.index({i}).store(q).end({i})}, {buffer("out", 3), buffer("x", 3), buffer("y", 3)});
  RenderedKernel k = render_kernel(kdiv, for_tier("tcc"));
  auto lib = cc->compile(k.source);
  auto fn = reinterpret_cast<Fn>(lib->symbol(k.name));
  int o[3] = {}, xs[3] = {-7, INT32_MIN, 5}, ys[3] = {2, -1, 0};
  void* bufs[3] = {o, xs, ys};
  long long err[3] = {};
  CHECK(fn(bufs, nullptr, err) == 1);
  CHECK(err[0] == 1);
  CHECK(err[1] == static_cast<long long>(number_graph(kdiv).number.at(q.get())));
  CHECK(abi::describe(err, k.fail_nodes) == "integer division by zero\n  at " + number_graph(kdiv).line(q));  // the renderer's table names it
  CHECK(o[0] == -3);
  CHECK(o[1] == INT32_MIN);

  // out[i] = x[i + 1] with bounds checks: the last access is out of bounds at index 3.
  UOp g = global(1, 3, dtypes::int32);
  UOp idx = g.index({i + 1});
  UOp kob = kernel("kob", {out.index({i}).store(idx.load()).end({i})}, {buffer("out", 3), buffer("x", 3)});
  RenderedKernel k2 = render_kernel(kob, for_tier("tcc", true));
  auto fn2 = reinterpret_cast<Fn>(cc->compile(k2.source)->symbol(k2.name));
  long long err2[3] = {};
  CHECK(fn2(bufs, nullptr, err2) == 2);
  CHECK(err2[0] == 2);
  CHECK(err2[1] == static_cast<long long>(number_graph(kob).number.at(idx.get())));
  CHECK(err2[2] == 3);
  CHECK(abi::describe(err2, k2.fail_nodes) == "out-of-bounds access at index 3\n  at " + number_graph(kob).line(idx));

  // MAX propagates NaN, max(+0, -0) is -0; float -> int32 saturates, NaN -> 0.
  UOp fo = global(0, 4), fa = global(1, 4), fb = global(2, 4), io = global(3, 4, dtypes::int32);
  UOp j = UOp::range(4, 0);
  UOp fa_j = fa.index({j}).load();
  UOp km = kernel("kmax", {fo.index({j}).store(fa_j.maximum(fb.index({j}).load())).end({j}), io.index({j}).store(fa_j.cast(dtypes::int32)).end({j})},
                  {buffer("fo", 4), buffer("fa", 4), buffer("fb", 4), buffer("io", 4)});
  RenderedKernel k3 = render_kernel(km, for_tier("tcc"));
  INFO(k3.source);
  auto fn3 = reinterpret_cast<Fn>(cc->compile(k3.source)->symbol(k3.name));
  float fos[4] = {}, fas[4] = {NAN, 0.0f, 3e9f, -2.7f}, fbs[4] = {1.0f, -0.0f, 1.0f, -5.0f};
  int ios[4] = {};
  void* bufs3[4] = {fos, fas, fbs, ios};
  long long err3[3] = {};
  REQUIRE(fn3(bufs3, nullptr, err3) == 0);
  CHECK(std::isnan(fos[0]));
  CHECK((fos[1] == 0.0f && std::signbit(fos[1])));
  CHECK(fos[2] == 3e9f);
  CHECK(fos[3] == -2.7f);
  CHECK(ios[0] == 0);
  CHECK(ios[1] == 0);
  CHECK(ios[2] == INT32_MAX);
  CHECK(ios[3] == -2);
}

// The prelude's narrow-float conversions take half of a tcc compile: a unit carries them, and
// THREEFRY, only when one of its kernels has such a node, and then they compute what S2.1 and
// Random123 say.
TEST_CASE("render: the prelude's narrow floats and THREEFRY only where a kernel has them, exact (tcc)", "[render][tcc]") {
  using Fn = int (*)(void**, const long long*, long long*);
  RenderedKernel plain = render_kernel(matmul_kernel(), for_tier("tcc"));
  CHECK(!plain.parts.narrow);
  CHECK(!plain.parts.threefry);
  CHECK(plain.source.find("ow_round_narrow") == std::string::npos);
  CHECK(plain.source.find("ow_threefry") == std::string::npos);

  // out[j] = h[j] + h[j] in float16 (bits): 1 + 1 = 2, 2 + 2 = 4, 65504 + 65504 overflows to +inf, 0.5 + 0.5 = 1
  UOp h = global(0, 4, dtypes::float16), j = UOp::range(4, 0);
  UOp hj = h.index({j}).load();
  UOp half = kernel("khalf", {global(1, 4, dtypes::float16).index({j}).store(hj + hj).end({j})}, {buffer("h", 4), buffer("out", 4)});
  RenderedKernel hk = render_kernel(half, for_tier("tcc"));
  CHECK(hk.parts.narrow);
  CHECK(!hk.parts.threefry);
  auto hf = reinterpret_cast<Fn>(make_compiler("tcc")->compile(hk.source)->symbol(hk.name));
  uint16_t in[4] = {0x3C00, 0x4000, 0x7BFF, 0x3800}, res[4] = {};
  void* hb[2] = {in, res};
  long long err[3] = {};
  REQUIRE(hf(hb, nullptr, err) == 0);
  CHECK(std::vector<uint16_t>(res, res + 4) == std::vector<uint16_t>{0x4000, 0x4400, 0x7C00, 0x3C00});

  // THREEFRY(0, 0): Random123's known answer for threefry2x32_20, key 0 and counter 0
  UOp x = global(0, 1, dtypes::uint64), i = UOp::range(1, 0);
  UOp xi = x.index({i}).load();
  UOp tf = UOp::make(Ops::THREEFRY, dtypes::uint64, {xi, xi});
  UOp three = kernel("kthree", {global(1, 1, dtypes::uint64).index({i}).store(tf).end({i})}, {buffer("x", 1), buffer("out", 1)});
  RenderedUnit u = render_unit({three, half, matmul_kernel()}, for_tier("tcc"));
  CHECK(u.parts.narrow);
  CHECK(u.parts.threefry);
  REQUIRE(u.kernels.size() == 3);
  CHECK(u.kernels[0].parts.threefry);
  CHECK(!u.kernels[0].parts.narrow);
  auto tfn = reinterpret_cast<Fn>(make_compiler("tcc")->compile(u.source)->symbol(u.kernels[0].name));
  uint64_t zero[1] = {0}, got[1] = {0};
  void* tb[2] = {zero, got};
  REQUIRE(tfn(tb, nullptr, err) == 0);
  CHECK(got[0] == 0x99ba4efe6b200159ull);
}
