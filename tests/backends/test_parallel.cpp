// cc's two-thread kernels (backends/c/parallel.cpp): a big kernel whose outermost loop is
// provably parallel runs its two halves on two threads and still computes every element bit for
// bit as the interpreter does; kernels whose iterations overlap, small kernels and OW_THREADS=1
// stay serial.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "backends/c/render.h"
#include "backends/compiler.h"
#include "backends/program.h"
#include "interp/interp.h"
#include "interp/kernel_eval.h"
#include "lower/lower.h"
#include "opt/opt.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/text.h"

#include "matmul_support.h"
#include "opt_support.h"
#include "test_support.h"

using namespace ow;
using namespace ow::test_matmul;
using ow::test::EnvVar;

namespace {

using Fn = int (*)(void**, const long long*, long long*);

// The kernel after the kernel-opt stage for `t` with `threads`, rendered for t.
backend::RenderedKernel render(UOp kernel, int threads, opt::Target t = opt::Target::cc) {
  opt::Options o;
  o.target = t;
  o.threads = threads;
  backend::RenderOptions r;
  r.target = t;
  return backend::render_kernel(opt::optimize(kernel, o), r);
}

// The translation unit of a graph lowered through cc's kernel-opt stage with `threads`.
std::string unit_of(UOp root, int threads) {
  lower::Context ctx;
  ctx.kernel_opt = opt::options_for(opt::Target::cc);
  ctx.kernel_opt->threads = threads;
  return backend::show_c(lower::lower(root, ctx), {}, true);
}

bool parallel(const std::string& src) { return src.find("pthread_create(&thread") != std::string::npos; }

// The kernel compiled by cc and run on `bufs` (no variables); its return code.
int run_cc(const backend::RenderedKernel& k, std::vector<float*> bufs) {
  auto lib = backend::make_compiler("cc")->compile(k.source);
  std::vector<void*> b(bufs.begin(), bufs.end());
  long long err[8] = {0};
  return reinterpret_cast<Fn>(lib->symbol(k.name))(b.data(), nullptr, err);
}

std::vector<float> values(int64_t size, int salt) {
  std::vector<float> v(static_cast<size_t>(size));
  for (int64_t q = 0; q < size; ++q) v[static_cast<size_t>(q)] = static_cast<float>(std::sin(0.37 * double(q + salt)) * 3.1 + 1.0 / double(q % 7 + 2));
  return v;
}

// KERNEL (out, a) with one store nest over i < m, j < n (out: m*n floats unless given).
UOp kernel_of(UOp st, int64_t m, int64_t n, int64_t out_size = -1) {
  std::vector<UOp> src{UOp::sink({st}), buffer("out", out_size < 0 ? m * n : out_size), buffer("a", m * n)};
  return UOp::make(Ops::KERNEL, dtypes::void_, std::move(src), Arg(ArgTuple{Arg("k")}));
}

}  // namespace

TEST_CASE("parallel: a matmul big enough to split, with an odd number of rows, equals the interpreter bit for bit", "[parallel]") {
  // 129 x 97 x 101: 1.26M innermost steps; the halves have 64 and 65 rows.
  int64_t m = 129, kn = 97, n = 101;
  backend::RenderedKernel k = render(matmul_kernel(m, kn, n), 2);
  INFO(k.source);
  REQUIRE(parallel(k.source));
  CHECK(k.source.find("static int ow_par_mm_lo(") != std::string::npos);
  CHECK(k.source.find("static int ow_par_mm_hi(") != std::string::npos);
  CHECK(!parallel(render(matmul_kernel(m, kn, n), 2, opt::Target::tcc).source));  // tcc: the serial function
  // The same graph as `ow bench --micro` builds, lowered and run on cc (threads on) and on the
  // interpreter; both against the products summed in k order in float here.
  EnvVar threads("OW_THREADS", "2");
  UOp root = parse_graph(matmul_text(m, kn, n), "mm.uop").root;
  CHECK(parallel(unit_of(root, opt::threads_setting())));
  interp::BufferMap in{{"a", data(dtypes::float32, m * kn, 0)}, {"b", data(dtypes::float32, kn * n, 11)}};
  const float *a = in["a"].data->as<float>(), *b = in["b"].data->as<float>();
  auto fresh = [&] {
    interp::BufferMap c;
    for (auto& [name, v] : in) c[name] = interp::BufferData{v.dtype, std::make_shared<interp::Storage>(*v.data), nullptr};
    return c;
  };
  interp::BufferMap ib = fresh(), cb = fresh();
  std::vector<interp::Output> want = interp::run(root, ib);
  backend::RunOptions o;
  o.backend = backend::Backend::Cc;
  std::vector<interp::Output> got = backend::run_graph(root, cb, o);
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].value.numel() == m * n);
  int64_t bad = -1;
  for (int64_t i = 0; i < m && bad < 0; ++i)
    for (int64_t j = 0; j < n && bad < 0; ++j) {
      float acc = 0.0f;
      for (int64_t q = 0; q < kn; ++q) {
        float p = a[i * kn + q] * b[q * n + j];
        acc = acc + p;
      }
      if (!same_bits(acc, interp::get_element(got[0].value, i * n + j)) || !same_bits(acc, interp::get_element(want[0].value, i * n + j))) bad = i * n + j;
    }
  CHECK(bad == -1);
}

TEST_CASE("parallel: a kernel that reads back only its own elements is split", "[parallel]") {
  // out[i*n + j] = out[i*n + j] * 0.5 + a[i*n + j]: each iteration reads what it alone writes.
  int64_t m = 1025, n = 1024;
  UOp out = global(0, m * n), a = global(1, m * n), i = UOp::range(m, 0), j = UOp::range(n, 1);
  UOp at = i * n + j;
  UOp st = out.index({at}).store(out.index({at}).load() * UOp::cnst(dtypes::float32, 0.5) + a.index({at}).load()).end({i, j});
  backend::RenderedKernel k = render(kernel_of(st, m, n), 2);
  REQUIRE(parallel(k.source));
  std::vector<float> o = values(m * n, 3), in = values(m * n, 8), want = o;
  for (size_t q = 0; q < want.size(); ++q) want[q] = want[q] * 0.5f + in[q];
  REQUIRE(run_cc(k, {o.data(), in.data()}) == 0);
  CHECK(o == want);
}

TEST_CASE("parallel: kernels whose iterations overlap stay serial and compute the serial result", "[parallel]") {
  int64_t m = 1024, n = 1024;  // 1M innermost steps: big enough, so only safety decides
  UOp out = global(0, m * n), a = global(1, m * n), i = UOp::range(m, 0), j = UOp::range(n, 1);
  SECTION("an output indexed without the outer range: every row overwrites the same elements") {
    UOp row = global(0, n);
    UOp st = row.index({j}).store(a.index({i * n + j}).load()).end({i, j});
    backend::RenderedKernel k = render(kernel_of(st, m, n, n), 2);
    INFO(k.source);
    CHECK(!parallel(k.source));
    std::vector<float> o(static_cast<size_t>(n), 0.0f), in = values(m * n, 5);
    REQUIRE(run_cc(k, {o.data(), in.data()}) == 0);
    CHECK(o == std::vector<float>(in.end() - n, in.end()));  // the last row wins
  }
  SECTION("a scan: every row reads row 0, which the first iteration writes") {
    // out[i*n + j] = out[j] * 2 + a[i*n + j]; the store owns its row, the load does not.
    UOp st = out.index({i * n + j}).store(out.index({j}).load() * UOp::cnst(dtypes::float32, 2.0) + a.index({i * n + j}).load()).end({i, j});
    backend::RenderedKernel k = render(kernel_of(st, m, n), 2);
    INFO(k.source);
    CHECK(!parallel(k.source));
    std::vector<float> o = values(m * n, 1), in = values(m * n, 2), want = o;
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) want[static_cast<size_t>(r * n + c)] = want[static_cast<size_t>(c)] * 2.0f + in[static_cast<size_t>(r * n + c)];
    REQUIRE(run_cc(k, {o.data(), in.data()}) == 0);
    CHECK(o == want);
  }
  SECTION("a store whose rows overlap: out[i*(n/2) + j] (f reaches past its row)") {
    UOp st = out.index({i * (n / 2) + j}).store(a.index({i * n + j}).load()).end({i, j});
    CHECK(!parallel(render(kernel_of(st, m, n), 2).source));
  }
}

TEST_CASE("parallel: small kernels and OW_THREADS=1 render serial code; other values are refused", "[parallel]") {
  CHECK(!parallel(render(matmul_kernel(64, 64, 64), 2).source));  // 262,144 steps: below 2^20
  CHECK(!parallel(render(matmul_kernel(512, 512, 512), 1).source));
  {
    EnvVar off("OW_THREADS", "1");
    CHECK(opt::threads_setting() == 1);
    UOp root = parse_graph(matmul_text(256, 256, 256), "mm.uop").root;
    CHECK(unit_of(root, opt::threads_setting()).find("pthread_create(&") == std::string::npos);
    CHECK(parallel(unit_of(root, 2)));
  }
  {
    EnvVar bad("OW_THREADS", "3");
    CHECK_THROWS_AS(opt::threads_setting(), Error);
  }
}

TEST_CASE("parallel: two split kernels of one name in a unit get helpers of their own names", "[parallel]") {
  opt::Options o;
  o.threads = 2;
  UOp mm = opt::optimize(matmul_kernel(129, 97, 101), o);
  backend::RenderedUnit u = backend::render_unit({mm, mm});
  REQUIRE(u.kernels.size() == 2);
  CHECK(u.kernels[1].name == "mm_2");
  CHECK(u.source.find("static int ow_par_mm_lo(") != std::string::npos);
  CHECK(u.source.find("static int ow_par_mm_2_hi(") != std::string::npos);
  CHECK(u.source.find("job->rc = ow_par_mm_2_hi(") != std::string::npos);
  auto lib = backend::make_compiler("cc")->compile(u.source);  // no name defined twice
  CHECK(lib->symbol("mm_2") != nullptr);
}

TEST_CASE("opt pass threads: the split in the graph, its halves' ranges and values, on the kernel-level interpreter", "[parallel][opt]") {
  // 129 rows: the lower half is rows [0, 64) over a range of 64, the upper rows [64, 129) over a
  // range of 65 whose index is 64 + r; arg ("mm", 2). Evaluated in order, the two statements
  // compute exactly what the serial kernel does (tinygrad's meaning of a kernel, S5.3).
  int64_t m = 129, kn = 97, n = 101;
  UOp serial = matmul_kernel(m, kn, n);
  opt::Options o;
  o.threads = 2;
  const opt::Pass& threads = test::kernel_opt_pass("threads");
  UOp k = opt::run_pass(threads, serial, o);
  REQUIRE(kernel_threads(k) == 2);
  CHECK(kernel_name(k) == "mm");
  REQUIRE(k->src[0]->src.size() == 2);
  std::vector<int64_t> extents;
  for (UOp end : k->src[0]->src) {
    REQUIRE(end->op == Ops::END);
    extents.push_back(static_cast<int64_t>(end->src[1]->src[0].const_value()));
  }
  CHECK(extents == std::vector<int64_t>{64, 65});
  // The same values as the serial kernel, element for element (kernel-level interpreter).
  auto eval = [&](UOp kernel) {
    interp::BufferData out{dtypes::float32, std::make_shared<interp::Storage>(dtypes::float32, m * n), nullptr};
    interp::BufferData a = data(dtypes::float32, m * kn, 0), b = data(dtypes::float32, kn * n, 11);
    interp::KernelArgs args;
    args.buffers = {&out, &a, &b};
    interp::run_kernel(kernel->src[0], args);
    return std::vector<float>(out.data->as<float>(), out.data->as<float>() + m * n);
  };
  std::vector<float> split = eval(k), whole = eval(serial);  // bits: the data has infinities and NaNs
  CHECK(std::memcmp(split.data(), whole.data(), whole.size() * sizeof(float)) == 0);
  // Not for tcc, not with one thread, not twice.
  opt::Options tcc = o;
  tcc.target = opt::Target::tcc;
  CHECK(kernel_threads(opt::optimize(serial, tcc)) == 1);
  opt::Options one = o;
  one.threads = 1;
  CHECK(opt::run_pass(threads, serial, one) == serial);
  CHECK(opt::run_pass(threads, k, o) == k);
}
