// The compiled path (src/lower + backends): every reference case lowered, rendered to C,
// compiled with tcc and with cc, and run in check mode (each kernel launch compared with the
// interpreter, the outputs with the tensor-level interpreter on the original graph). Expected
// values: the interpreter's, bit for bit (tolerance 0: same operation order, no contraction,
// same libm), and where reference/expected has numpy data, that data as in test_cases.cpp.
#include <catch2/catch.hpp>

#include "test_support.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/program.h"
#include "interp/npy.h"
#include "lower/lower.h"
#include "tensor/random.h"
#include "uop/error.h"
#include "uop/text.h"

using namespace ow;
using ow::test::source_root;
using ow::test::slurp;
using ow::test::error_of;
namespace fs = std::filesystem;

namespace {

interp::BufferMap copy(const interp::BufferMap& b) {
  interp::BufferMap out;
  for (auto& [n, d] : b) out[n] = interp::BufferData{d.dtype, std::make_shared<interp::Storage>(*d.data), nullptr};
  return out;
}

// Inputs: the numpy-generated ones where reference/expected has them, else seeded uniform data.
interp::BufferMap inputs_for(const std::string& c, UOp root) {
  interp::BufferMap b;
  fs::path dir = source_root() / "reference" / "expected" / c;
  if (fs::is_directory(dir)) {
    for (const auto& e : fs::directory_iterator(dir)) {
      std::string f = e.path().filename().string();
      if (f.rfind("in_", 0) != 0) continue;
      interp::NpyArray a = interp::load_npy(e.path().string());
      b[f.substr(3, f.size() - 7)] = interp::BufferData{a.dtype, a.data, nullptr};
    }
    return b;
  }
  Random rng;
  rng.seed(7);
  for (UOp u : toposort(root)) {
    if (u->op != Ops::BUFFER) continue;
    const std::string& name = u->arg.tuple()->at(0).as<std::string>();
    if (b.count(name) || u->dtype != dtypes::float32) continue;
    auto s = std::make_shared<interp::Storage>(u->dtype, u->arg.tuple()->at(1).as<int64_t>());
    for (int64_t i = 0; i < s->size; ++i) s->as<float>()[i] = rng.uniform() * 2 - 1;
    b[name] = interp::BufferData{u->dtype, s, nullptr};
  }
  return b;
}

bool same_bits(double x, double y) { return (x != x && y != y) || (x == y && std::signbit(x) == std::signbit(y)); }

void require_equal(const std::vector<interp::Output>& want, const std::vector<interp::Output>& got) {
  REQUIRE(want.size() == got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("output " << want[i].name);
    REQUIRE(want[i].name == got[i].name);
    REQUIRE(want[i].value.shape() == got[i].value.shape());
    int64_t bad = -1;
    for (int64_t k = 0; k < want[i].value.numel() && bad < 0; ++k)
      if (!same_bits(interp::get_element(want[i].value, k), interp::get_element(got[i].value, k))) bad = k;
    INFO("first differing element " << bad);
    CHECK(bad == -1);
  }
}

std::vector<std::string> case_names() {
  std::vector<std::string> r;
  for (const auto& e : fs::directory_iterator(source_root() / "reference" / "cases"))
    if (e.path().extension() == ".uop") r.push_back(e.path().stem().string());
  std::sort(r.begin(), r.end());
  return r;
}

}  // namespace

TEST_CASE("every reference case runs compiled on tcc and cc, bit for bit with the interpreter", "[compiled]") {
  std::vector<std::string> cases = case_names();
  REQUIRE(cases.size() >= 24);
  for (const std::string& c : cases) {
    DYNAMIC_SECTION("case " << c) {
      fs::path file = source_root() / "reference" / "cases" / (c + ".uop");
      UOp root = parse_graph(slurp(file), file.string()).root;
      interp::BufferMap inputs = inputs_for(c, root);
      interp::BufferMap ref_buffers = copy(inputs);
      std::vector<interp::Output> want = interp::run(root, ref_buffers);
      for (const char* tier : {"tcc", "cc"}) {
        INFO("compiler " << tier);
        backend::RunOptions o;
        o.backend = "check";
        o.compiler = tier;
        int launches = 0;
        o.on_launch = [&](UOp, const auto&) { ++launches; };
        interp::BufferMap b = copy(inputs);
        std::vector<interp::Output> got;
        try {
          got = backend::run_graph(root, b, o);
        } catch (const std::exception& e) {
          FAIL(c << " on " << tier << ": " << e.what());
        }
        CHECK(launches > 0);
        require_equal(want, got);
      }
    }
  }
}

TEST_CASE("the lowered program evaluates on the interpreter to the same outputs", "[compiled]") {
  for (const char* c : {"scan_with_assign", "vmap_inner_outer_fuse_grad", "uop_scan_matmul", "range_matmul"}) {
    fs::path file = source_root() / "reference" / "cases" / (std::string(c) + ".uop");
    UOp root = parse_graph(slurp(file), file.string()).root;
    interp::BufferMap inputs = inputs_for(c, root);
    interp::BufferMap a = copy(inputs), b = copy(inputs);
    std::vector<interp::Output> want = interp::run(root, a);
    backend::RunOptions o;
    o.backend = "interp";
    INFO("case " << c);
    require_equal(want, backend::run_program(lower::lower(root), b, o));
  }
}

TEST_CASE("the seed's scan computes the prefix products on every backend", "[compiled]") {
  // out[k] = vec @ M0 @ ... @ Mk, computed here in double from the same inputs.
  fs::path dir = source_root() / "reference" / "expected" / "scan_with_assign";
  interp::NpyArray vec = interp::load_npy((dir / "in_vec.npy").string()), mats = interp::load_npy((dir / "in_mats.npy").string());
  std::vector<double> row(vec.data->as<float>(), vec.data->as<float>() + 10), prefix;
  for (int k = 0; k < 3; ++k) {
    std::vector<double> next(10, 0.0);
    for (int j = 0; j < 10; ++j)
      for (int i = 0; i < 10; ++i) next[j] += row[i] * mats.data->as<float>()[k * 100 + i * 10 + j];
    row = next;
    prefix.insert(prefix.end(), row.begin(), row.end());
  }
  fs::path file = source_root() / "reference" / "cases" / "scan_with_assign.uop";
  UOp root = parse_graph(slurp(file), file.string()).root;
  for (const char* tier : {"tcc", "cc"}) {
    interp::BufferMap b;
    b["vec"] = interp::BufferData{vec.dtype, vec.data, nullptr};
    b["mats"] = interp::BufferData{mats.dtype, mats.data, nullptr};
    backend::RunOptions o;
    o.backend = tier;
    auto outs = backend::run_graph(root, b, o);
    REQUIRE(outs.size() == 1);
    for (int i = 0; i < 30; ++i) {
      INFO(tier << " element " << i);
      // float32 accumulation over 10 terms, three chained steps: a few float32 ulps of the largest magnitude.
      CHECK(interp::get_element(outs[0].value, i) == Approx(prefix[i]).margin(1e-5 * 8));
    }
  }
}

namespace {
// A kernel-level program whose kernel reads x[i + 1] for i in 0..3: index 4 is out of bounds.
const char* kOutOfBounds = R"(%0 = DEFINE_GLOBAL float32*4 () 0
%1 = CONST index () 4
%2 = RANGE index (%1) (1000, AxisType.LOOP)
%3 = INDEX float32*4 (%0, %2)
%4 = DEFINE_GLOBAL float32*4 () 1
%5 = CONST index () 1
%6 = ADD index (%2, %5)
%7 = INDEX float32*4 (%4, %6)
%8 = LOAD float32 (%7)
%9 = STORE void (%3, %8)
%10 = END void (%9, %2)
%11 = SINK void (%10)
%12 = BUFFER float32 () ("out", 4)
%13 = BUFFER float32 () ("x", 4)
%14 = KERNEL void (%11, %12, %13) ("k0",)
%15 = GROUP void (%14)
%16 = CONST index () 0
%17 = AFTER index (%16, %15)
%18 = AFTER float32 (%12, %17)
%19 = SINK void (%18) ("out",)
)";

}  // namespace

TEST_CASE("an out-of-bounds access in a compiled kernel is a clear error with --bounds-check", "[compiled]") {
  UOp program = parse_graph(kOutOfBounds, "oob.uop").root;
  for (const char* tier : {"tcc", "cc", "interp"}) {
    INFO(tier);
    interp::BufferMap b;
    auto x = std::make_shared<interp::Storage>(dtypes::float32, 4);
    b["x"] = interp::BufferData{dtypes::float32, x, nullptr};
    backend::RunOptions o;
    o.backend = tier;
    o.bounds_check = true;
    std::string msg = error_of([&] { backend::run_program(program, b, o); });
    CHECK_THAT(msg, Catch::Contains("out-of-bounds"));
    CHECK_THAT(msg, Catch::Contains("k0"));
    CHECK_THAT(msg, Catch::Contains("INDEX"));
  }
}

TEST_CASE("a missing system compiler for cc is a clear error", "[compiled]") {
  fs::path file = source_root() / "reference" / "cases" / "reduce.uop";
  UOp root = parse_graph(slurp(file), file.string()).root;
  const char* old = std::getenv("OW_CC");
  std::string saved = old ? old : "";
  setenv("OW_CC", "/nonexistent/ow-test-cc", 1);
  interp::BufferMap b = inputs_for("reduce", root);
  backend::RunOptions o;
  o.backend = "cc";
  std::string msg = error_of([&] { backend::run_graph(root, b, o); });
  if (old) setenv("OW_CC", saved.c_str(), 1);
  else unsetenv("OW_CC");
  CHECK_THAT(msg, Catch::Contains("/nonexistent/ow-test-cc"));
}

TEST_CASE("ow fuzz reproducers (tests/fuzz/lower) now agree or are refused with a clear message", "[compiled][fuzz]") {
  int files = 0;
  for (const auto& e : fs::directory_iterator(source_root() / "tests" / "fuzz" / "lower")) {
    if (e.path().extension() != ".uop") continue;
    ++files;
    INFO(e.path().filename().string());
    UOp root = parse_graph(slurp(e.path()), e.path().string()).root;
    interp::BufferMap inputs = inputs_for("(fuzz)", root);
    backend::RunOptions o;
    o.backend = "check";
    o.bounds_check = true;
    try {
      interp::BufferMap b = copy(inputs);
      backend::run_graph(root, b, o);
    } catch (const Error& err) {
      CHECK_THAT(std::string(err.what()), Catch::Contains("(not supported by the compiled path yet)"));
    }
  }
  CHECK(files >= 10);
}
