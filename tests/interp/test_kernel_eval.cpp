// The interpreter evaluates lowered graphs too (reference/LOWERING.md): tensor-level INDEX and
// BUFFERIZE, and kernel-level programs (KERNEL steps, GROUP, host END loops over OUTER ranges)
// through the scalar kernel evaluator (src/interp/kernel_eval.h).
#include <catch2/catch.hpp>

#include "test_support.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "interp/interp.h"
#include "interp/kernel_eval.h"
#include "uop/error.h"
#include "uop/text.h"
#include "uop/verify.h"

using namespace ow;
using ow::test::error_of;
using namespace ow::interp;

namespace {

BufferData fbuf(const std::vector<float>& v) {
  BufferData d{dtypes::float32, std::make_shared<Storage>(dtypes::float32, static_cast<int64_t>(v.size())), nullptr};
  std::memcpy(d.data->bytes.data(), v.data(), v.size() * sizeof(float));
  return d;
}

std::vector<float> floats(const Value& v) {
  std::vector<float> out;
  for (int64_t i = 0; i < v.numel(); ++i) out.push_back(static_cast<float>(get_element(v, i)));
  return out;
}

std::vector<float> floats(const BufferData& d) {
  const float* p = d.data->as<float>();
  return std::vector<float>(p, p + d.data->size);
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::vector<Output> run_text(const std::string& text, BufferMap& bufs) { return run(parse_graph(text).root, bufs); }

std::vector<float> some_floats(size_t n, float scale) {
  std::vector<float> v;
  for (size_t i = 0; i < n; ++i) v.push_back(scale * std::sin(0.37f * static_cast<float>(i) + 0.1f) + 0.01f * static_cast<float>(i));
  return v;
}

// A kernel-level program: out = a @ b for (M, K) @ (K, N), one kernel with a REDUCE range.
UOp matmul_program(int64_t M, int64_t K, int64_t N) {
  DType f = dtypes::float32;
  UOp A = UOp::make(Ops::BUFFER, f, {}, Arg(ArgTuple{Arg("a"), Arg(M * K)}));
  UOp B = UOp::make(Ops::BUFFER, f, {}, Arg(ArgTuple{Arg("b"), Arg(K * N)}));
  UOp O = UOp::make(Ops::BUFFER, f, {}, Arg(ArgTuple{Arg("out"), Arg(M * N)}));
  UOp g0 = UOp::make(Ops::DEFINE_GLOBAL, f.pointer(M * N), {}, Arg(int64_t{0}));
  UOp g1 = UOp::make(Ops::DEFINE_GLOBAL, f.pointer(M * K), {}, Arg(int64_t{1}));
  UOp g2 = UOp::make(Ops::DEFINE_GLOBAL, f.pointer(K * N), {}, Arg(int64_t{2}));
  UOp i = UOp::range(M, 0, AxisType::LOOP), j = UOp::range(N, 1, AxisType::LOOP), k = UOp::range(K, 2, AxisType::REDUCE);
  UOp prod = g1.index({i * K + k}).load() * g2.index({k * N + j}).load();
  UOp st = g0.index({i * N + j}).store(prod.reduce({k}, Ops::ADD)).end({i, j});
  UOp ast = UOp::sink({st});
  UOp kern = UOp::make(Ops::KERNEL, dtypes::void_, {ast, O, A, B}, Arg(ArgTuple{Arg("k0")}));
  UOp grp = UOp::make(Ops::GROUP, dtypes::void_, {kern});
  UOp view = UOp::make(Ops::RESHAPE, f, {O, UOp::index(M), UOp::index(N)});
  return UOp::sink({UOp::make(Ops::AFTER, f, {view, grp})}, Arg(ArgTuple{Arg("out")}));
}

// The same product at tensor level: REDUCE_AXIS(ADD, a[:, None, :] * b.T[None, :, :]).
UOp matmul_tensor(int64_t M, int64_t K, int64_t N) {
  DType f = dtypes::float32;
  auto I = [](int64_t v) { return UOp::index(v); };
  UOp A = UOp::make(Ops::BUFFER, f, {}, Arg(ArgTuple{Arg("a"), Arg(M * K)}));
  UOp B = UOp::make(Ops::BUFFER, f, {}, Arg(ArgTuple{Arg("b"), Arg(K * N)}));
  UOp a3 = UOp::make(Ops::EXPAND, f, {UOp::make(Ops::RESHAPE, f, {A, I(M), I(1), I(K)}), I(M), I(N), I(K)});
  UOp bt = UOp::make(Ops::PERMUTE, f, {UOp::make(Ops::RESHAPE, f, {B, I(K), I(N)})}, Arg(ArgTuple{Arg(int64_t{1}), Arg(int64_t{0})}));
  UOp b3 = UOp::make(Ops::EXPAND, f, {UOp::make(Ops::RESHAPE, f, {bt, I(1), I(N), I(K)}), I(M), I(N), I(K)});
  UOp red = UOp::make(Ops::REDUCE_AXIS, f, {a3 * b3}, Arg(ArgTuple{Arg(Ops::ADD), Arg(ArgTuple{Arg(int64_t{2})})}));
  return UOp::sink({UOp::make(Ops::RESHAPE, f, {red, I(M), I(N)})}, Arg(ArgTuple{Arg("out")}));
}

const char* kEltwiseKernel = R"(
%a = BUFFER float32 () ("a", 16)
%b = BUFFER float32 () ("b", 16)
%o = BUFFER float32 () ("out", 16)
%g0 = DEFINE_GLOBAL float32*16 () 0
%g1 = DEFINE_GLOBAL float32*16 () 1
%g2 = DEFINE_GLOBAL float32*16 () 2
%n = CONST index () 16
%i = RANGE index (%n) (0, AxisType.LOOP)
%pa = INDEX float32*16 (%g1, %i)
%pb = INDEX float32*16 (%g2, %i)
%la = LOAD float32 (%pa)
%lb = LOAD float32 (%pb)
%m = MUL float32 (%la, %lb)
%one = CONST float32 () 1.0
%v = ADD float32 (%m, %one)
%po = INDEX float32*16 (%g0, %i)
%st = STORE void (%po, %v)
%e = END void (%st, %i)
%ast = SINK void (%e)
%k = KERNEL void (%ast, %o, %a, %b) ("k0",)
%grp = GROUP void (%k)
%view = RESHAPE float32 (%o, %n)
%out = AFTER float32 (%view, %grp)
%root = SINK void (%out) ("out",)
)";

const char* kEltwiseTensor = R"(
%a = BUFFER float32 () ("a", 16)
%b = BUFFER float32 () ("b", 16)
%m = MUL float32 (%a, %b)
%one = CONST float32 () 1.0
%v = ADD float32 (%m, %one)
%root = SINK void (%v) ("out",)
)";

}  // namespace

TEST_CASE("kernel: out[i] = a[i]*b[i]+1 equals the tensor-level interpreter bit for bit", "[kernel]") {
  std::vector<float> a = some_floats(16, 3.1f), b = some_floats(16, -1.7f);
  BufferMap k{{"a", fbuf(a)}, {"b", fbuf(b)}}, t{{"a", fbuf(a)}, {"b", fbuf(b)}};
  auto ko = run_text(kEltwiseKernel, k);
  auto to = run_text(kEltwiseTensor, t);
  REQUIRE(ko.size() == 1);
  REQUIRE(to.size() == 1);
  std::vector<float> kv = floats(ko[0].value), tv = floats(to[0].value);
  REQUIRE(kv.size() == 16);
  REQUIRE(tv.size() == 16);
  for (size_t i = 0; i < 16; ++i) {
    CHECK(bits(kv[i]) == bits(tv[i]));
    CHECK(std::fabs(kv[i] - (a[i] * b[i] + 1.0f)) < 1e-5f);
  }
  CHECK(floats(k.at("out")) == kv);  // the buffer itself was written
}

TEST_CASE("kernel: 4x3 @ 3x5 matmul with a REDUCE range", "[kernel]") {
  std::vector<float> a, b;
  for (int i = 0; i < 12; ++i) a.push_back(static_cast<float>(i % 5) - 1.5f);
  for (int i = 0; i < 15; ++i) b.push_back(static_cast<float>((i * 7) % 4) * 0.25f - 0.5f);
  // hand-computed (exact in float: quarters times halves, a few terms)
  std::vector<float> want(20, 0.0f);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 3; ++k) want[static_cast<size_t>(i * 5 + j)] += a[static_cast<size_t>(i * 3 + k)] * b[static_cast<size_t>(k * 5 + j)];
  CHECK(want[0] == -1.5f * -0.5f + -0.5f * 0.25f + 0.5f * 0.0f);
  BufferMap bufs{{"a", fbuf(a)}, {"b", fbuf(b)}};
  auto out = run(matmul_program(4, 3, 5), bufs);
  REQUIRE(out.size() == 1);
  CHECK(out[0].value.shape() == std::vector<int64_t>{4, 5});
  CHECK(floats(out[0].value) == want);
}

TEST_CASE("kernel: a 96x80x64 matmul kernel equals the tensor-level REDUCE_AXIS bit for bit", "[kernel]") {
  int64_t M = 96, K = 80, N = 64;
  std::vector<float> a = some_floats(static_cast<size_t>(M * K), 1.3f), b = some_floats(static_cast<size_t>(K * N), 0.7f);
  BufferMap k{{"a", fbuf(a)}, {"b", fbuf(b)}}, t{{"a", fbuf(a)}, {"b", fbuf(b)}};
  std::vector<float> kv = floats(run(matmul_program(M, K, N), k)[0].value);
  std::vector<float> tv = floats(run(matmul_tensor(M, K, N), t)[0].value);
  REQUIRE(kv.size() == tv.size());
  size_t same = 0;
  for (size_t i = 0; i < kv.size(); ++i) same += bits(kv[i]) == bits(tv[i]);
  CHECK(same == kv.size());
}

TEST_CASE("kernel: host loop END(GROUP(KERNEL), r OUTER) with a BIND computes a prefix sum", "[kernel]") {
  const char* text = R"(
%x = BUFFER float32 () ("x", 8)
%o = BUFFER float32 () ("out", 8)
%c8 = CONST index () 8
%r = RANGE index (%c8) (0, AxisType.OUTER)
%v = DEFINE_VAR index () ("v", 0, 7)
%g0 = DEFINE_GLOBAL float32*8 () 0
%g1 = DEFINE_GLOBAL float32*8 () 1
%c0 = CONST index () 0
%c1 = CONST index () 1
%vm1 = SUB index (%v, %c1)
%gate = CMPLT bool (%c0, %v)
%pprev = INDEX float32*8 (%g0, %vm1, %gate)
%prev = LOAD float32 (%pprev)
%px = INDEX float32*8 (%g1, %v)
%lx = LOAD float32 (%px)
%sum = ADD float32 (%prev, %lx)
%po = INDEX float32*8 (%g0, %v)
%st = STORE void (%po, %sum)
%ast = SINK void (%st)
%bind = BIND index (%v, %r)
%k = KERNEL void (%ast, %o, %x, %bind) ("k0",)
%grp = GROUP void (%k)
%loop = END void (%grp, %r)
%steps = GROUP void (%loop)
%view = RESHAPE float32 (%o, %c8)
%out = AFTER float32 (%view, %steps)
%root = SINK void (%out) ("out",)
)";
  BufferMap bufs{{"x", fbuf({1, 2, 3, 4, 5, 6, 7, 8})}};  // out is never given data: poison until written
  int launches = 0;
  Options o;
  o.on_step = [&](const Step& s) { launches += s.node->op == Ops::KERNEL; };
  auto out = run(parse_graph(text).root, bufs, o);
  REQUIRE(out.size() == 1);
  CHECK(floats(out[0].value) == std::vector<float>{1, 3, 6, 10, 15, 21, 28, 36});
  CHECK(launches == 8);
}

TEST_CASE("kernel: a gated LOAD (padding) gives 0 and skips the bounds check", "[kernel]") {
  // out[i] = 2 <= i < 6 ? a[i-2] : 0, with a of 4 elements: i-2 is -2, -1, 4, 5 where the gate is off
  const char* text = R"(
%a = BUFFER float32 () ("a", 4)
%o = BUFFER float32 () ("out", 8)
%g0 = DEFINE_GLOBAL float32*8 () 0
%g1 = DEFINE_GLOBAL float32*4 () 1
%c1 = CONST index () 1
%c2 = CONST index () 2
%c6 = CONST index () 6
%c8 = CONST index () 8
%i = RANGE index (%c8) (0, AxisType.LOOP)
%lo = CMPLT bool (%c1, %i)
%hi = CMPLT bool (%i, %c6)
%gate = AND bool (%lo, %hi)
%im2 = SUB index (%i, %c2)
%pa = INDEX float32*4 (%g1, %im2, %gate)
%la = LOAD float32 (%pa)
%po = INDEX float32*8 (%g0, %i)
%st = STORE void (%po, %la)
%e = END void (%st, %i)
%ast = SINK void (%e)
%k = KERNEL void (%ast, %o, %a) ("k0",)
%grp = GROUP void (%k)
%view = RESHAPE float32 (%o, %c8)
%out = AFTER float32 (%view, %grp)
%root = SINK void (%out) ("out",)
)";
  BufferMap bufs{{"a", fbuf({1.5f, -2, 3, 4.25f})}};
  auto out = run_text(text, bufs);
  CHECK(floats(out[0].value) == std::vector<float>{0, 0, 1.5f, -2, 3, 4.25f, 0, 0});
}

TEST_CASE("kernel: an out-of-bounds pointer index names the INDEX, the kernel and the binding", "[kernel]") {
  const char* text = R"(
%a = BUFFER float32 () ("a", 4)
%o = BUFFER float32 () ("out", 4)
%g0 = DEFINE_GLOBAL float32*4 () 0
%g1 = DEFINE_GLOBAL float32*4 () 1
%c1 = CONST index () 1
%c4 = CONST index () 4
%i = RANGE index (%c4) (5, AxisType.LOOP)
%ip1 = ADD index (%i, %c1)
%pa = INDEX float32*4 (%g1, %ip1)
%la = LOAD float32 (%pa)
%po = INDEX float32*4 (%g0, %i)
%st = STORE void (%po, %la)
%e = END void (%st, %i)
%ast = SINK void (%e)
%k = KERNEL void (%ast, %o, %a) ("k7",)
%grp = GROUP void (%k)
%view = RESHAPE float32 (%o, %c4)
%out = AFTER float32 (%view, %grp)
%root = SINK void (%out) ("out",)
)";
  BufferMap bufs{{"a", fbuf({1, 2, 3, 4})}};
  std::string e = error_of([&] { run_text(text, bufs); });
  CAPTURE(e);
  CHECK(e.find("out-of-bounds index: LOAD at 4 into buffer 'a' (slot 1) of 4 elements") != std::string::npos);
  CHECK(e.find("INDEX float32*4 (") != std::string::npos);
  CHECK(e.find("in kernel k7") != std::string::npos);
  CHECK(e.find("with 5=3") != std::string::npos);
  // the iterations before the failing one did land
  CHECK(floats(bufs.at("out")).at(0) == 2.0f);
}

namespace {
// out[i] = WHERE(i < lim, a[i], u[i]) where u is never given data.
std::string poison_program(int lim) {
  return R"(
%a = BUFFER float32 () ("a", 4)
%u = BUFFER float32 () ("_u", 4)
%o = BUFFER float32 () ("out", 4)
%g0 = DEFINE_GLOBAL float32*4 () 0
%g1 = DEFINE_GLOBAL float32*4 () 1
%g2 = DEFINE_GLOBAL float32*4 () 2
%c4 = CONST index () 4
%lim = CONST index () )" + std::to_string(lim) + R"(
%i = RANGE index (%c4) (0, AxisType.LOOP)
%pa = INDEX float32*4 (%g1, %i)
%la = LOAD float32 (%pa)
%pu = INDEX float32*4 (%g2, %i)
%lu = LOAD float32 (%pu)
%c = CMPLT bool (%i, %lim)
%w = WHERE float32 (%c, %la, %lu)
%po = INDEX float32*4 (%g0, %i)
%st = STORE void (%po, %w)
%e = END void (%st, %i)
%ast = SINK void (%e)
%k = KERNEL void (%ast, %o, %a, %u) ("k0",)
%grp = GROUP void (%k)
%view = RESHAPE float32 (%o, %c4)
%out = AFTER float32 (%view, %grp)
%root = SINK void (%out) ("out",)
)";
}
}  // namespace

TEST_CASE("kernel: uninitialized memory reaching an output is the poison error; WHERE may discard it", "[kernel]") {
  {
    BufferMap bufs{{"a", fbuf({1, 2, 3, 4})}};
    std::string e = error_of([&] { run_text(poison_program(2), bufs); });
    CAPTURE(e);
    CHECK(e.find("output 'out' reads uninitialized memory: 2 of 4 elements are poison, first at [2]") != std::string::npos);
    CHECK(e.find("buffers never given data: out, _u)") != std::string::npos);
    REQUIRE(bufs.at("out").poison);
    CHECK(bufs.at("out").poison->as<uint8_t>()[1] == 0);
    CHECK(bufs.at("out").poison->as<uint8_t>()[3] == 1);
  }
  {
    BufferMap bufs{{"a", fbuf({1, 2, 3, 4})}};
    auto out = run_text(poison_program(100), bufs);
    CHECK(floats(out[0].value) == std::vector<float>{1, 2, 3, 4});
  }
}

TEST_CASE("kernel: a poisoned index used for an access is an error", "[kernel]") {
  std::string text = R"(
%u = BUFFER index () ("_u", 2)
%a = BUFFER float32 () ("a", 2)
%o = BUFFER float32 () ("out", 2)
%g0 = DEFINE_GLOBAL float32*2 () 0
%g1 = DEFINE_GLOBAL float32*2 () 1
%g2 = DEFINE_GLOBAL index*2 () 2
%c0 = CONST index () 0
%pu = INDEX index*2 (%g2, %c0)
%lu = LOAD index (%pu)
%pa = INDEX float32*2 (%g1, %lu)
%la = LOAD float32 (%pa)
%po = INDEX float32*2 (%g0, %c0)
%st = STORE void (%po, %la)
%ast = SINK void (%st)
%k = KERNEL void (%ast, %o, %a, %u) ("k0",)
%grp = GROUP void (%k)
%c2 = CONST index () 2
%view = RESHAPE float32 (%o, %c2)
%out = AFTER float32 (%view, %grp)
%root = SINK void (%out) ("out",)
)";
  BufferMap bufs{{"a", fbuf({1, 2})}};
  std::string e = error_of([&] { run_text(text, bufs); });
  CAPTURE(e);
  CHECK(e.find("the index of a LOAD is poison") != std::string::npos);
}

TEST_CASE("kernel: loads see the buffers as they were at launch (snapshot)", "[kernel]") {
  auto program = [](const char* axis, const char* target) {
    return std::string(R"(
%b = BUFFER float32 () ("buf", 4)
%g0 = DEFINE_GLOBAL float32*4 () 0
%c0 = CONST index () 0
%c1 = CONST index () 1
%c4 = CONST index () 4
%i = RANGE index (%c4) (0, AxisType.)") + axis + R"()
%im1 = SUB index (%i, %c1)
%prev = MAX index (%im1, %c0)
%t = )" + target + R"(
%pr = INDEX float32*4 (%g0, %t)
%l = LOAD float32 (%pr)
%one = CONST float32 () 1.0
%v = ADD float32 (%l, %one)
%pw = INDEX float32*4 (%g0, %t2)
%st = STORE void (%pw, %v)
%e = END void (%st, %i)
%ast = SINK void (%e)
%k = KERNEL void (%ast, %b) ("k0",)
%grp = GROUP void (%k)
%view = RESHAPE float32 (%b, %c4)
%out = AFTER float32 (%view, %grp)
%root = SINK void (%out) ("out",)
)";
  };
  // buf[0] = buf[0] + 1 over a 4-iteration LOOP range: every iteration reads the launch-time 0
  std::string p1 = program("LOOP", "MUL index (%prev, %c0)\n%t2 = MUL index (%prev, %c0)");
  BufferMap bufs{{"buf", fbuf({0, 0, 0, 0})}};
  CHECK(floats(run_text(p1, bufs)[0].value) == std::vector<float>{1, 0, 0, 0});
  // buf[i] = buf[max(i-1, 0)] + 1: a sequential loop would give 1, 2, 3, 4; the kernel is a map
  std::string p2 = program("LOOP", "ADD index (%prev, %c0)\n%t2 = ADD index (%i, %c0)");
  BufferMap bufs2{{"buf", fbuf({0, 0, 0, 0})}};
  CHECK(floats(run_text(p2, bufs2)[0].value) == std::vector<float>{1, 1, 1, 1});
}

TEST_CASE("kernel: a kernel storing to a buffer it reads reads it as at launch, in few stores or many", "[kernel]") {
  // buf[i] = buf[n - 1 - i] + 1 over the first `m` elements of 256: the second half of the
  // stores read elements the first half overwrote. Few stores keep the old elements aside; past
  // an eighth of the buffer the buffer is copied part way (interp/launch_snapshot.h).
  for (int64_t m : {8, 256}) {
    INFO(m << " stores");
    std::string text = R"(
%b = BUFFER float32 () ("buf", 256)
%g0 = DEFINE_GLOBAL float32*256 () 0
%cm = CONST index () )" + std::to_string(m) + R"(
%last = CONST index () )" + std::to_string(m - 1) + R"(
%i = RANGE index (%cm) (0, AxisType.LOOP)
%t = SUB index (%last, %i)
%pr = INDEX float32*256 (%g0, %t)
%l = LOAD float32 (%pr)
%one = CONST float32 () 1.0
%v = ADD float32 (%l, %one)
%pw = INDEX float32*256 (%g0, %i)
%st = STORE void (%pw, %v)
%e = END void (%st, %i)
%ast = SINK void (%e)
%k = KERNEL void (%ast, %b) ("k0",)
%grp = GROUP void (%k)
%c256 = CONST index () 256
%view = RESHAPE float32 (%b, %c256)
%out = AFTER float32 (%view, %grp)
%root = SINK void (%out) ("out",)
)";
    std::vector<float> in(256), want(256);
    for (size_t i = 0; i < in.size(); ++i) in[i] = want[i] = static_cast<float>(i);
    for (int64_t i = 0; i < m; ++i) want[static_cast<size_t>(i)] = in[static_cast<size_t>(m - 1 - i)] + 1.0f;
    BufferMap bufs{{"buf", fbuf(in)}};
    CHECK(floats(run_text(text, bufs)[0].value) == want);
  }
}

TEST_CASE("kernel: a host loop over OUTER sees every launch's writes", "[kernel]") {
  const char* text = R"(
%b = BUFFER float32 () ("buf", 1)
%g0 = DEFINE_GLOBAL float32*1 () 0
%c0 = CONST index () 0
%c1 = CONST index () 1
%c4 = CONST index () 4
%r = RANGE index (%c4) (0, AxisType.OUTER)
%p = INDEX float32*1 (%g0, %c0)
%l = LOAD float32 (%p)
%one = CONST float32 () 1.0
%v = ADD float32 (%l, %one)
%st = STORE void (%p, %v)
%ast = SINK void (%st)
%k = KERNEL void (%ast, %b) ("k0",)
%grp = GROUP void (%k)
%loop = END void (%grp, %r)
%view = RESHAPE float32 (%b, %c1)
%out = AFTER float32 (%view, %loop)
%root = SINK void (%out) ("out",)
)";
  BufferMap bufs{{"buf", fbuf({0})}};
  CHECK(floats(run_text(text, bufs)[0].value) == std::vector<float>{4});
}

TEST_CASE("kernel: DEFINE_GLOBAL of the wrong dtype for its buffer is a clear error", "[kernel]") {
  std::string text = kEltwiseKernel;
  text.replace(text.find("%g2 = DEFINE_GLOBAL float32*16"), 30, "%g2 = DEFINE_GLOBAL int32*16");
  text.replace(text.find("%pb = INDEX float32*16"), 22, "%pb = INDEX int32*16");
  text.replace(text.find("%lb = LOAD float32"), 18, "%lb = LOAD int32");
  text.replace(text.find("%m = MUL float32 (%la, %lb)"), 27, "%lbf = CAST float32 (%lb)\n%m = MUL float32 (%la, %lbf)");
  BufferMap bufs{{"a", fbuf(some_floats(16, 1))}, {"b", fbuf(some_floats(16, 1))}};
  std::string e = error_of([&] { run_text(text, bufs); });
  CAPTURE(e);
  CHECK(e.find("DEFINE_GLOBAL slot 2 is int32*16 but the buffer bound to it ('b') holds float32 data") != std::string::npos);
}

// Registers (DEFINE_REG) are read and written in statement order, unlike buffers (which loads
// see as at launch), and are zero at the start of every launch. out[i] = a[0] + ... + a[i]: the
// one node acc = LOAD(reg[0]) is read by both statements, before and after the first one stores.
TEST_CASE("kernel: a register is read in statement order and is zero at each launch (prefix sum)", "[kernel]") {
  const char* text = R"(
%g0 = DEFINE_GLOBAL float32*4 () 0
%g1 = DEFINE_GLOBAL float32*4 () 1
%r = DEFINE_REG float32*1 () 0
%c0 = CONST index () 0
%c4 = CONST index () 4
%i = RANGE index (%c4) (0, AxisType.LOOP)
%ra = INDEX float32*1 (%r, %c0)
%acc = LOAD float32 (%ra)
%pa = INDEX float32*4 (%g1, %i)
%x = LOAD float32 (%pa)
%sum = ADD float32 (%acc, %x)
%s1 = STORE void (%ra, %sum)
%po = INDEX float32*4 (%g0, %i)
%s2 = STORE void (%po, %acc)
%grp = GROUP void (%s1, %s2)
%e = END void (%grp, %i)
%ast = SINK void (%e)
)";
  Kernel k(parse_graph(text).root);
  for (int launch = 0; launch < 2; ++launch) {
    BufferData out = fbuf({-1, -1, -1, -1}), a = fbuf({1, 2, 4, 8});
    KernelArgs args;
    args.buffers = {&out, &a};
    k.run(args);
    CHECK(floats(out) == std::vector<float>{1, 3, 7, 15});
  }
  // A register index out of range is the out-of-bounds error, naming the register.
  std::string bad = std::string(text);
  bad.replace(bad.find("%ra = INDEX float32*1 (%r, %c0)"), 31, "%ra = INDEX float32*1 (%r, %i)");
  bad.erase(bad.find("%c0 = CONST index () 0\n"), 23);
  BufferData out = fbuf({0, 0, 0, 0}), a = fbuf({1, 2, 4, 8});
  KernelArgs args;
  args.buffers = {&out, &a};
  std::string e = error_of([&] { run_kernel(parse_graph(bad).root, args); });
  CAPTURE(e);
  CHECK(e.find("out-of-bounds index: LOAD at 1 into register 0 of 1 elements") != std::string::npos);
}

TEST_CASE("kernel: integer division by zero names the node", "[kernel]") {
  const char* text = R"(
%g0 = DEFINE_GLOBAL int32*3 () 0
%c3 = CONST index () 3
%i = RANGE index (%c3) (0, AxisType.LOOP)
%x = CAST int32 (%i)
%one = CONST int32 () 1
%d = SUB int32 (%one, %x)
%q = IDIV int32 (%one, %d)
%p = INDEX int32*3 (%g0, %i)
%st = STORE void (%p, %q)
%e = END void (%st, %i)
%ast = SINK void (%e)
)";
  BufferData out{dtypes::int32, std::make_shared<Storage>(dtypes::int32, 3), nullptr};
  KernelArgs args;
  args.buffers = {&out};
  KernelOptions ko;
  ko.name = "kdiv";
  std::string e = error_of([&] { run_kernel(parse_graph(text).root, args, ko); });
  CAPTURE(e);
  CHECK(e.find("integer division by zero") != std::string::npos);
  CHECK(e.find("IDIV int32") != std::string::npos);
  CHECK(e.find("in kernel kdiv") != std::string::npos);
  CHECK(e.find("with 0=1") != std::string::npos);
  CHECK(out.data->as<int32_t>()[0] == 1);
}

TEST_CASE("kernel: REDUCE MAX over two ranges with DEFINE_VAR extents, folded in row-major order", "[kernel]") {
  // out[0] = max over (i < n, j < 2) of x[i*2+j]; out[1] = sum over i < n of i (a REDUCE of a bare range)
  const char* text = R"(
%g0 = DEFINE_GLOBAL float32*2 () 0
%g1 = DEFINE_GLOBAL float32*8 () 1
%n = DEFINE_VAR index () ("n", 0, 4)
%c0 = CONST index () 0
%c1 = CONST index () 1
%c2 = CONST index () 2
%i = RANGE index (%n) (0, AxisType.REDUCE)
%j = RANGE index (%c2) (1, AxisType.REDUCE)
%i2 = MUL index (%i, %c2)
%lin = ADD index (%i2, %j)
%p = INDEX float32*8 (%g1, %lin)
%l = LOAD float32 (%p)
%m = REDUCE float32 (%l, %i, %j) Ops.MAX
%p0 = INDEX float32*2 (%g0, %c0)
%st0 = STORE void (%p0, %m)
%k = RANGE index (%n) (2, AxisType.REDUCE)
%s = REDUCE index (%k, %k) Ops.ADD
%sf = CAST float32 (%s)
%p1 = INDEX float32*2 (%g0, %c1)
%st1 = STORE void (%p1, %sf)
%ast = SINK void (%st0, %st1)
)";
  BufferData out = fbuf({-1, -1});
  BufferData x = fbuf({1, 7, -3, 2, 9, 0, 100, 100});
  Kernel k(parse_graph(text).root);
  KernelArgs args;
  args.buffers = {&out, &x};
  args.vars["n"] = 3;
  k.run(args);
  CHECK(floats(out) == std::vector<float>{9, 3});
  args.vars["n"] = 0;  // empty ranges: the identities
  k.run(args);
  CHECK(floats(out)[0] == -INFINITY);
  CHECK(floats(out)[1] == 0);
  args.vars.clear();
  CHECK(error_of([&] { k.run(args); }).find("variable 'n' is not bound") != std::string::npos);
}

// ---- tensor-level INDEX and BUFFERIZE ----

TEST_CASE("tensor-level BUFFERIZE(INDEX(x, r1, r0), r0, r1) is the transpose", "[kernel][bufferize]") {
  const char* text = R"(
%x = BUFFER float32 () ("x", 6)
%c2 = CONST index () 2
%c3 = CONST index () 3
%xs = RESHAPE float32 (%x, %c2, %c3)
%r0 = RANGE index (%c3) (0, AxisType.LOOP)
%r1 = RANGE index (%c2) (1, AxisType.LOOP)
%e = INDEX float32 (%xs, %r1, %r0)
%t = BUFFERIZE float32 (%e, %r0, %r1)
%root = SINK void (%t) ("out",)
)";
  BufferMap bufs{{"x", fbuf({1, 2, 3, 4, 5, 6})}};
  auto out = run_text(text, bufs);
  CHECK(out[0].value.shape() == std::vector<int64_t>{3, 2});
  CHECK(floats(out[0].value) == std::vector<float>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("tensor-level INDEX: a false gate gives 0 without a bounds check; out of bounds is an error", "[kernel][bufferize]") {
  auto program = [](const std::string& extent, bool gated) {
    return R"(
%x = BUFFER float32 () ("x", 2)
%n = CONST index () )" + extent + R"(
%r = RANGE index (%n) (4, AxisType.LOOP)
)" + (gated ? "%c2 = CONST index () 2\n%g = CMPLT bool (%r, %c2)\n" : "") + R"(%e = INDEX float32 (%x, %r)" + (gated ? ", %g" : "") + R"()
%t = BUFFERIZE float32 (%e, %r)
%root = SINK void (%t) ("out",)
)";
  };
  BufferMap bufs{{"x", fbuf({7, 8})}};
  CHECK(floats(run_text(program("4", true), bufs)[0].value) == std::vector<float>{7, 8, 0, 0});
  std::string e = error_of([&] { run_text(program("3", false), bufs); });
  CAPTURE(e);
  CHECK(e.find("out-of-bounds index: INDEX (2,) into shape (2,)") != std::string::npos);
  CHECK(e.find("INDEX float32 (") != std::string::npos);
  CHECK(e.find("4=2") != std::string::npos);
  // poison carries through INDEX and BUFFERIZE to the output check (x given, all poison)
  BufferMap poisoned{{"x", fbuf({7, 8})}};
  poisoned["x"].poison = std::make_shared<Storage>(dtypes::bool_, 2);
  std::fill_n(poisoned["x"].poison->as<uint8_t>(), 2, uint8_t{1});
  std::string p = error_of([&] { run_text(program("4", true), poisoned); });
  CHECK(p.find("output 'out' reads uninitialized memory: 2 of 4 elements are poison, first at [0]") != std::string::npos);
}

TEST_CASE("tensor-level BUFFERIZE of a matmul equals the kernel bit for bit", "[kernel][bufferize]") {
  // BUFFERIZE(REDUCE(INDEX(a, i, k) * INDEX(b, k, j), k), i, j) against the 4x3 @ 3x5 kernel
  const char* text = R"(
%a = BUFFER float32 () ("a", 12)
%b = BUFFER float32 () ("b", 15)
%c3 = CONST index () 3
%c4 = CONST index () 4
%c5 = CONST index () 5
%as = RESHAPE float32 (%a, %c4, %c3)
%bs = RESHAPE float32 (%b, %c3, %c5)
%i = RANGE index (%c4) (0, AxisType.LOOP)
%j = RANGE index (%c5) (1, AxisType.LOOP)
%k = RANGE index (%c3) (2, AxisType.REDUCE)
%ea = INDEX float32 (%as, %i, %k)
%eb = INDEX float32 (%bs, %k, %j)
%m = MUL float32 (%ea, %eb)
%s = REDUCE float32 (%m, %k) Ops.ADD
%t = BUFFERIZE float32 (%s, %i, %j)
%root = SINK void (%t) ("out",)
)";
  std::vector<float> a = some_floats(12, 2.3f), b = some_floats(15, -0.9f);
  BufferMap t{{"a", fbuf(a)}, {"b", fbuf(b)}}, k{{"a", fbuf(a)}, {"b", fbuf(b)}};
  std::vector<float> tv = floats(run_text(text, t)[0].value), kv = floats(run(matmul_program(4, 3, 5), k)[0].value);
  REQUIRE(tv.size() == 20);
  REQUIRE(kv.size() == 20);
  for (size_t i = 0; i < 20; ++i) CHECK(bits(tv[i]) == bits(kv[i]));
}

TEST_CASE("kernel evaluator speed: a 128x128x128 matmul kernel", "[kernel][.bench]") {
  int64_t n = 128;
  UOp prog = matmul_program(n, n, n);
  UOp kern = prog->src[0]->src[1]->src[0];
  REQUIRE(kern->op == Ops::KERNEL);
  BufferData a = fbuf(some_floats(static_cast<size_t>(n * n), 1)), b = fbuf(some_floats(static_cast<size_t>(n * n), 1));
  BufferData o = fbuf(std::vector<float>(static_cast<size_t>(n * n)));
  Kernel k(kern->src[0]);
  KernelArgs args;
  args.buffers = {&o, &a, &b};
  auto t0 = std::chrono::steady_clock::now();
  k.run(args);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("128^3 matmul kernel: %llu scalar ops in %.3f s = %.1f M ops/s (%.1f M multiply-adds/s)\n",
              static_cast<unsigned long long>(k.ops()), s, static_cast<double>(k.ops()) / s / 1e6, static_cast<double>(n * n * n) / s / 1e6);
  CHECK(k.ops() > static_cast<uint64_t>(n * n * n));
}

TEST_CASE("verifier: BUFFERIZE closes its ranges, takes RANGEs and keeps its value's dtype; INDEX takes a bool gate last", "[kernel][bufferize]") {
  UOp x = UOp::make(Ops::BUFFER, dtypes::float32, {}, Arg(ArgTuple{Arg("x"), Arg(int64_t{4})}));
  UOp r = UOp::range(4, 0, AxisType::LOOP);
  UOp e = UOp::make(Ops::INDEX, dtypes::float32, {x, r, r.lt(2)});
  CHECK(verify(UOp::make(Ops::BUFFERIZE, dtypes::float32, {e, r})).empty());
  CHECK(free_ranges(UOp::make(Ops::BUFFERIZE, dtypes::float32, {e, r})).empty());
  auto bad_src = verify(UOp::make(Ops::BUFFERIZE, dtypes::float32, {e, UOp::index(4)}));
  REQUIRE(!bad_src.empty());
  CHECK(bad_src[0].rule == "bufferize.src");
  auto bad_dtype = verify(UOp::make(Ops::BUFFERIZE, dtypes::int32, {e, r}));
  REQUIRE(!bad_dtype.empty());
  CHECK(bad_dtype[0].rule == "dtype");
  auto bad_gate = verify(UOp::make(Ops::INDEX, dtypes::float32, {x, r.lt(2), r}));
  REQUIRE(!bad_gate.empty());
  CHECK(bad_gate[0].rule == "index.dtype");
}
