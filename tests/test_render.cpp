// The C renderer (backends/c/render.h): the structure of the C it writes for hand-built kernels,
// and (through backends/compiler.h) that the code computes what was asked.
#include <catch2/catch.hpp>

#include <climits>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "backends/c/render.h"
#include "backends/compiler.h"
#include "uop/error.h"
#include "uop/text.h"

using namespace ow;
using namespace ow::backend;

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
  RenderedKernel k = render_kernel(matmul_kernel());
  INFO(k.source);
  auto ls = lines_of(body(k));
  size_t li = line_index(ls, "for (long long r_0 = 0; r_0 < 2LL; r_0++) {");
  size_t lj = line_index(ls, "for (long long r_1 = 0; r_1 < 2LL; r_1++) {");
  size_t acc = line_index(ls, "float acc");
  size_t lk = line_index(ls, "for (long long r_2 = 0; r_2 < 3LL; r_2++) {");
  CHECK(li < lj);
  CHECK(lj < acc);
  CHECK(acc < lk);
  CHECK(ls[acc].find("= 0.0f;") != std::string::npos);
  std::string accname = ls[acc].substr(ls[acc].find("acc"), ls[acc].find(" =") - ls[acc].find("acc"));
  size_t fold = line_index(ls, accname + " = (" + accname + " + ");
  CHECK(fold > lk);
  CHECK(ls[line_index(ls, "b0[")].find("= " + accname + ";") != std::string::npos);
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
  size_t hoisted = line_index(ls, "exp2f(b1[r_0])");
  CHECK(hoisted > line_index(ls, "for (long long r_0"));
  CHECK(hoisted < line_index(ls, "for (long long r_1"));
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
  CHECK(k.source.find("((r_0 < 4LL) ? b1[r_0] : 0)") != std::string::npos);
  UOp kern2 = kernel("k4", {out.index({i, gate}).store(UOp::cnst(dtypes::float32, 2.5)).end({i})}, {buffer("out", 6)});
  RenderedKernel k2 = render_kernel(kern2);
  INFO(k2.source);
  CHECK(k2.source.find("if ((r_0 < 4LL)) b0[r_0] = 2.5f;") != std::string::npos);
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
  CHECK(k.source.find("r_0 < var_n;") != std::string::npos);
  CHECK(k.source.find("(int)((unsigned)") != std::string::npos);
  CHECK(k.source.find(" == 0) return ow_fail(err, 1, ") != std::string::npos);
  CHECK(k.source.find("ow_idiv_i32(") != std::string::npos);

  UOp h = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float16.pointer(4), {}, Arg(int64_t{0}));
  UOp j = UOp::range(4, 0);
  UOp bad = kernel("k6", {h.index({j}).store(h.index({j}).load()).end({j})}, {buffer("h", 4)});
  CHECK_THROWS_WITH(render_kernel(bad), Catch::Contains("float16 is not supported by the C backend (at %"));
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
}

TEST_CASE("render: compiled kernels compute exactly (tcc)", "[render][tcc]") {
  auto cc = make_compiler("tcc");
  {
    RenderedKernel k = render_kernel(axb1_kernel(5), {true});
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
    RenderedKernel k = render_kernel(matmul_kernel(), {true});
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

TEST_CASE("render: compiled error paths and S2.1 helpers (tcc)", "[render][tcc]") {
  auto cc = make_compiler("tcc");
  using Fn = int (*)(void**, const long long*, long long*);
  // out[i] = x[i] / y[i] on int32: a zero divisor returns kind 1 naming the IDIV.
  UOp out = global(0, 3, dtypes::int32), x = global(1, 3, dtypes::int32), y = global(2, 3, dtypes::int32);
  UOp i = UOp::range(3, 0);
  UOp q = x.index({i}).load().idiv(y.index({i}).load());
  UOp kdiv = kernel("kdiv", {out.index({i}).store(q).end({i})}, {buffer("out", 3), buffer("x", 3), buffer("y", 3)});
  RenderedKernel k = render_kernel(kdiv);
  auto lib = cc->compile(k.source);
  auto fn = reinterpret_cast<Fn>(lib->symbol(k.name));
  int o[3] = {}, xs[3] = {-7, INT32_MIN, 5}, ys[3] = {2, -1, 0};
  void* bufs[3] = {o, xs, ys};
  long long err[3] = {};
  CHECK(fn(bufs, nullptr, err) == 1);
  CHECK(err[0] == 1);
  CHECK(err[1] == static_cast<long long>(number_graph(kdiv).number.at(q.get())));
  CHECK(o[0] == -3);
  CHECK(o[1] == INT32_MIN);

  // out[i] = x[i + 1] with bounds checks: the last access is out of bounds at index 3.
  UOp g = global(1, 3, dtypes::int32);
  UOp idx = g.index({i + 1});
  UOp kob = kernel("kob", {out.index({i}).store(idx.load()).end({i})}, {buffer("out", 3), buffer("x", 3)});
  RenderedKernel k2 = render_kernel(kob, {true});
  auto fn2 = reinterpret_cast<Fn>(cc->compile(k2.source)->symbol(k2.name));
  long long err2[3] = {};
  CHECK(fn2(bufs, nullptr, err2) == 2);
  CHECK(err2[0] == 2);
  CHECK(err2[1] == static_cast<long long>(number_graph(kob).number.at(idx.get())));
  CHECK(err2[2] == 3);

  // MAX propagates NaN, max(+0, -0) is -0; float -> int32 saturates, NaN -> 0.
  UOp fo = global(0, 4), fa = global(1, 4), fb = global(2, 4), io = global(3, 4, dtypes::int32);
  UOp j = UOp::range(4, 0);
  UOp fa_j = fa.index({j}).load();
  UOp km = kernel("kmax", {fo.index({j}).store(fa_j.maximum(fb.index({j}).load())).end({j}), io.index({j}).store(fa_j.cast(dtypes::int32)).end({j})},
                  {buffer("fo", 4), buffer("fa", 4), buffer("fb", 4), buffer("io", 4)});
  RenderedKernel k3 = render_kernel(km);
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
