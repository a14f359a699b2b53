// What the lowering leaves for the C compiler and the host (issue 18): the integer divisions a
// convolution's kernels compute per element, counted in the rendered C (deliverable 5), and the
// launches per step of an assign scan (deliverable 4).
#include <catch2/catch.hpp>

#include "pass_support.h"
#include "render_support.h"
#include "test_support.h"

#include <algorithm>
#include <string>

#include "backends/c/render.h"
#include "backends/program.h"
#include "interp/interp.h"
#include "lower/lower.h"
#include "uop/args.h"
#include "uop/host_program.h"
#include "uop/text.h"

using namespace ow;
using ow::test::kernels_of;
using ow::test::slurp;
using ow::test::source_root;

namespace {

UOp lowered_case(const std::string& name) {
  std::filesystem::path file = source_root() / "reference" / "cases" / (name + ".uop");
  return lower::lower(parse_graph(slurp(file), file.string()).root);
}

// The C function of a rendered kernel (without the prelude's helpers, which divide too).
std::string function_of(const backend::RenderedKernel& r) {
  size_t begin = r.source.find("int " + r.name + "(");
  REQUIRE(begin != std::string::npos);
  size_t end = r.source.find("\n}\n", begin);
  REQUIRE(end != std::string::npos);
  return r.source.substr(begin, end - begin);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("vmap_convs' kernels compute their indices without dividing", "[lowered][divmod]") {
  // Before the gate-aware index math and the common-factor split: 328 divisions and 325 modulos
  // (the RESHAPE behind each PAD of the 3x3 taps unlinearized its index again per load).
  for (backend::Target t : {backend::Target::tcc, backend::Target::cc}) {
    INFO(opt::target_name(t));
    size_t div = 0, mod = 0, loads = 0;
    backend::RenderOptions o;
    o.target = t;
    for (UOp k : kernels_of(lowered_case("vmap_convs"))) {
      std::string f = function_of(test::render_optimized(k, o));  // as a run renders it
      div += count(f, " / ");
      mod += count(f, " % ");
      loads += count(f, "b1[") + count(f, "b2[");
    }
    CHECK(loads > 40);  // the taps are still there (44 accesses in cc's C, 174 in tcc's: it unrolls)
    // the taps are realized over their own axes (8 channels x 9 taps), so none is left
    CHECK(div == 0);
    CHECK(mod == 0);
  }
}

TEST_CASE("vmap_convs' convolutions read their im2col from a copy, not nine gated taps per output channel", "[lowered][realize]") {
  // 'a reduction reads a costly broadcast value through a copy': the stacked taps (each a pad of
  // the relu of the previous layer) are computed once per image, not once per output channel.
  std::vector<UOp> ks = kernels_of(lowered_case("vmap_convs"));
  // before: 3, each convolution recomputing its taps inside the reduction; then 5, until the
  // second convolution's bias and relu were computed in its reduction's kernel (pass fuse)
  CHECK(ks.size() == 4);
  size_t reductions = 0;
  for (UOp k : ks) {
    std::vector<UOp> ast = toposort(k->src[0]);
    if (std::none_of(ast.begin(), ast.end(), [](UOp u) { return u->op == Ops::REDUCE; })) continue;
    ++reductions;
    size_t gated = std::count_if(ast.begin(), ast.end(), [](UOp u) { return u->op == Ops::INDEX && u->src.size() == 3; });
    CHECK(gated == 0);
  }
  CHECK(reductions == 2);
  // a cheap broadcast value (an MLP layer's relu of the previous layer) is recomputed, not copied
  // (3 kernels; 2 since pass fuse computes the last reduction in the kernel that reads it)
  CHECK(kernels_of(lowered_case("vmap_gemm")).size() == 2);
}

// ---- assign scans write their slots in place (deliverable 4) ----

namespace {

// The launches directly in the body of the program's one host loop, and outside it.
struct ScanShape {
  size_t per_step = 0, outside = 0, loops = 0;
  bool acc = false;  // does any launch use an `_acc` buffer?
};

ScanShape scan_shape(UOp program) {
  HostProgram hp = host_program(program);
  ScanShape s;
  for (const HostStep& st : hp.steps) {
    if (!st.is_loop()) {
      ++s.outside;
      continue;
    }
    ++s.loops;
    for (const HostStep& b : st.body) s.per_step += b.is_loop() ? 100 : 1;
  }
  for (const HostLaunch& l : hp.launches)
    for (UOp b : l.buffers) s.acc = s.acc || buffer_name(b).rfind("_acc", 0) == 0;
  return s;
}

// out (5, 1, 10): for r in 0..2, row r+1 = 0 + row r @ mats[r]; rows 0 and 4 are in no slot,
// so the scan's final `out = acc` sets them to 0.
const char* kShiftedScan = R"(%0 = BUFFER float32 () ("out", 50)
%1 = CONST index () 3
%2 = CONST index () 1
%3 = CONST index () 10
%40 = CONST index () 5
%4 = RESHAPE float32 (%0, %40, %2, %3)
%5 = RANGE index (%1) (-1, AxisType.OUTER)
%6 = CONST index () 0
%13 = ADD index (%5, %2)
%14 = SHRINK float32 (%4, %5, %13, %6, %2, %6, %3)
%15 = RESHAPE float32 (%14, %2, %3)
%17 = RESHAPE float32 (%15, %2, %2, %3)
%18 = EXPAND float32 (%17, %2, %3, %3)
%19 = BUFFER float32 () ("mats", 300)
%20 = RESHAPE float32 (%19, %1, %3, %3)
%23 = SHRINK float32 (%20, %5, %13, %6, %3, %6, %3)
%24 = RESHAPE float32 (%23, %3, %3)
%25 = RESHAPE float32 (%24, %2, %3, %3)
%26 = PERMUTE float32 (%25) (0, 2, 1)
%27 = MUL float32 (%18, %26)
%28 = REDUCE_AXIS float32 (%27) (Ops.ADD, (2,))
%29 = RESHAPE float32 (%28, %2, %3)
%30 = RESHAPE float32 (%29, %2, %2, %3)
%10 = CONST index () -1
%31 = MUL index (%5, %10)
%32 = CONST index () 3
%33 = ADD index (%31, %32)
%34 = PAD float32 (%30, %13, %33, %6, %6, %6, %6)
%35 = REDUCE float32 (%34, %5) Ops.ADD
%36 = ASSIGN float32 (%4, %35)
%37 = SINK void (%36) ("out",)
)";

}  // namespace

TEST_CASE("an assign scan over one slot per step writes the target in place: no _acc, 1 launch a step", "[lowered][scan]") {
  // Before: k0(_acc0) once, then per step the matmul, acc + it, acc -> its row, the row -> out
  // (4 launches, 3 of them one-row copies through _acc0), and out = _acc0 after the loop; then
  // 2 launches, the matmul into _t0 and out[r] = 0 + _t0; now the matmul is stored into out[r].
  ScanShape s = scan_shape(lowered_case("scan_with_assign"));
  CHECK(s.loops == 1);
  CHECK(s.per_step == 1);  // out[r] = 0 + out[r - 1] @ mats[r]
  CHECK(s.outside == 0);
  CHECK_FALSE(s.acc);
  CHECK(scan_shape(lowered_case("scan_big_64x128")).per_step == 1);
}

namespace {

// kShiftedScan with step r reading row r + read and writing row r + write (each 0 or 1).
std::string scan_rows(int read, int write) {
  std::string t = kShiftedScan;
  auto swap = [&](const std::string& from, const std::string& to) {
    size_t at = t.find(from);
    REQUIRE(at != std::string::npos);
    t.replace(at, from.size(), to);
  };
  if (read == 1) swap("%14 = SHRINK float32 (%4, %5, %13,", "%51 = ADD index (%13, %2)\n%14 = SHRINK float32 (%4, %13, %51,");
  if (write == 0) swap("%32 = CONST index () 3", "%32 = CONST index () 4"), swap("%34 = PAD float32 (%30, %13,", "%34 = PAD float32 (%30, %5,");
  return t;
}

// The scan's inputs, and its result computed here in the interpreter's order: step r reads row
// r + read as the earlier steps left it, sums k ascending with one rounding a step, stores
// 0 + that into row r + write; rows no step writes end as 0.
struct ScanRows {
  std::vector<float> out = std::vector<float>(50), mats = std::vector<float>(300), want;
  ScanRows(int read, int write) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>((i * 7) % 11) / 4.0f - 1.0f;
    for (size_t i = 0; i < mats.size(); ++i) mats[i] = static_cast<float>((i * 5) % 13) / 8.0f - 0.75f;
    std::vector<float> cur = out;
    std::vector<bool> slot(5, false);
    for (int r = 0; r < 3; ++r) {
      std::vector<float> next(10);
      for (int j = 0; j < 10; ++j) {
        float acc = 0.0f;
        for (int k = 0; k < 10; ++k) {
          float p = cur[static_cast<size_t>((r + read) * 10 + k)] * mats[static_cast<size_t>(r * 100 + k * 10 + j)];
          acc = acc + p;
        }
        next[static_cast<size_t>(j)] = 0.0f + acc;
      }
      std::copy(next.begin(), next.end(), cur.begin() + (r + write) * 10);
      slot[static_cast<size_t>(r + write)] = true;
    }
    want = cur;
    for (size_t i = 0; i < want.size(); ++i)
      if (!slot[i / 10]) want[i] = 0.0f;
  }

  // Runs `root` on every backend, each result checked element by element against `want`.
  void check_backends(UOp root) const {
    for (const char* backend : {"interp", "check", "tcc", "cc"}) {
      INFO(backend);
      interp::BufferMap b;
      auto put = [&](const char* name, const std::vector<float>& v) {
        auto st = std::make_shared<interp::Storage>(dtypes::float32, static_cast<int64_t>(v.size()));
        std::copy(v.begin(), v.end(), st->as<float>());
        b[name] = interp::BufferData{dtypes::float32, st, nullptr};
      };
      put("out", out);
      put("mats", mats);
      backend::RunOptions o;
      o.backend = backend::parse_backend(backend);
      std::vector<interp::Output> got = std::string(backend) == "interp" ? interp::run(root, b) : backend::run_graph(root, b, o);
      REQUIRE(got.size() == 1);
      const float* g = got[0].value.data->as<float>();
      for (size_t i = 0; i < 50; ++i) CHECK(g[i] == want[i]);
    }
  }
};

}  // namespace

TEST_CASE("an in-place scan whose slots leave rows uncovered sets them to 0 afterwards, as acc did", "[lowered][scan]") {
  UOp root = parse_graph(kShiftedScan, "shifted_scan").root;
  ScanShape s = scan_shape(lower::lower(root));
  CHECK(s.per_step == 1);  // reads row r, writes row r + 1: the matvec is stored straight into it
  CHECK_FALSE(s.acc);
  CHECK(s.outside == 2);  // where(in a slot, out, 0), through a temporary (the store reads its target)
  ScanRows(0, 1).check_backends(root);
}

TEST_CASE("a scan step is one launch only where its reads provably miss its writes", "[lowered][scan][fuse]") {
  // read row r + 1, write row r: never the same row, so fused; read row r, write row r: the
  // step's store would overwrite what its later iterations still read, so the matvec stays a
  // launch of its own, into a temporary
  for (auto [read, write, launches] : {std::tuple{1, 0, size_t{1}}, std::tuple{0, 0, size_t{2}}, std::tuple{0, 1, size_t{1}}}) {
    INFO("read row r + " << read << ", write row r + " << write);
    UOp root = parse_graph(scan_rows(read, write), "scan_rows").root;
    CHECK(scan_shape(lower::lower(root)).per_step == launches);
    ScanRows(read, write).check_backends(root);
  }
}
