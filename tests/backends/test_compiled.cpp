// The compiled path (src/lower + backends): every reference case lowered, rendered to C,
// compiled with tcc and with cc, and run in check mode (each kernel launch compared with the
// interpreter, the outputs with the tensor-level interpreter on the original graph). Expected
// values: the interpreter's, bit for bit (tolerance 0: same operation order, no contraction,
// same libm), and where reference/expected has numpy data, that data as in test_cases.cpp.
#include <catch2/catch.hpp>

#include "fold_graphs.h"
#include "test_support.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <pthread.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "backends/program.h"
#include "interp/dispatch.h"
#include "interp/npy.h"
#include "lower/index_math.h"
#include "lower/lower.h"
#include "lower/walk.h"
#include "tensor/random.h"
#include "uop/error.h"
#include "uop/symbolic.h"
#include "uop/text.h"

using namespace ow;
using ow::test::source_root;
using ow::test::slurp;
using ow::test::error_of;
using ow::test::effect_in_2d_fold;
namespace fs = std::filesystem;

namespace {

interp::BufferMap copy(const interp::BufferMap& b) {
  interp::BufferMap out;
  for (auto& [n, d] : b) out[n] = interp::BufferData{d.dtype, std::make_shared<interp::Storage>(*d.data), nullptr};
  return out;
}

// Inputs: the numpy-generated ones where reference/expected has them, else seeded uniform data
// for every buffer a caller names (floats in [-1, 1), ints in [-7, 7], bools about half true).
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
    if (b.count(name) || name.rfind('_', 0) == 0) continue;
    auto s = std::make_shared<interp::Storage>(u->dtype, u->arg.tuple()->at(1).as<int64_t>());
    interp::dispatch(u->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < s->size; ++i) {
        double x = rng.uniform() * 2 - 1;  // floats in [-1, 1), integers in [-8, 8) (wrapping unsigned), bools
        if constexpr (std::is_same_v<T, uint8_t>) s->as<T>()[i] = x > 0;
        else if constexpr (interp::is_float_v<T>) s->as<T>()[i] = static_cast<T>(x);
        else s->as<T>()[i] = static_cast<T>(static_cast<int64_t>(x * 8));
      }
    });
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
        o.backend = backend::Backend::Check;
        o.compiler = backend::parse_backend(tier);
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
        backend::RunOptions alone;  // the tier alone, no hook: its host loops of launches run in C
        alone.backend = backend::parse_backend(tier);
        interp::BufferMap ab = copy(inputs);
        require_equal(want, backend::run_graph(root, ab, alone));
      }
    }
  }
}

TEST_CASE("every stage of every reference case evaluates to the case's outputs (ow check --passes)", "[compiled][passes]") {
  for (const std::string& c : case_names()) {
    // The large cases (and the convolutions) take seconds a stage when interpreted kernel by kernel; their final
    // programs are checked above, and their small versions here.
    if (c.find("_big_") != std::string::npos || c.find("_mlp_") != std::string::npos || c == "vmap_convs") continue;
    DYNAMIC_SECTION("case " << c) {
      fs::path file = source_root() / "reference" / "cases" / (c + ".uop");
      UOp root = parse_graph(slurp(file), file.string()).root;
      interp::BufferMap inputs = inputs_for(c, root);
      interp::BufferMap ref = copy(inputs);
      std::vector<interp::Output> want = interp::run(root, ref);
      lower::lower(root, [&](const lower::Pass& p, UOp stage) {
        INFO("after pass " << p.name);
        interp::BufferMap b = copy(inputs);
        std::vector<interp::Output> got;
        try {
          got = interp::run(stage, b);
        } catch (const std::exception& e) {
          FAIL(c << " after " << p.name << ": " << e.what());
        }
        require_equal(want, got);
      });
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
    o.backend = backend::Backend::Interp;
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
    o.backend = backend::parse_backend(tier);
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

namespace {
// max over r < 3 (LOOP) of sum over m < 2 (OUTER) of x[m] * (r + 1): the REDUCE over r runs
// on the host around the OUTER fold. With S = x0 + x1: max(S, 2S, 3S).
const char* kReduceAroundFold = R"(%0 = BUFFER float32 () ("x", 2)
%1 = CONST index () 2
%2 = RESHAPE float32 (%0, %1)
%3 = CONST index () 3
%4 = RANGE index (%3) (-1, AxisType.LOOP)
%5 = RANGE index (%1) (-2, AxisType.OUTER)
%6 = CONST index () 1
%7 = ADD index (%5, %6)
%8 = SHRINK float32 (%2, %5, %7)
%9 = ADD index (%4, %6)
%10 = CAST float32 (%9)
%11 = RESHAPE float32 (%10, %6)
%12 = MUL float32 (%8, %11)
%13 = REDUCE float32 (%12, %5) Ops.ADD
%14 = REDUCE float32 (%13, %4) Ops.MAX
%15 = SINK void (%14) ("out",)
)";

// max over a < 2 of sum over q < 3 of (max over m < 2 (OUTER) of x[m] * (q + 1)) + a: the sum
// over q encloses the OUTER fold and becomes a host loop, so the max over a, which encloses that
// sum, must too. With x = (1.5, -0.25): max over a of 1.5 * 6 + 3a = 12.
const char* kReduceAroundHostReduce = R"(%0 = BUFFER float32 () ("x", 2)
%1 = CONST index () 2
%2 = RESHAPE float32 (%0, %1)
%3 = CONST index () 3
%4 = RANGE index (%1) (-1, AxisType.LOOP)
%5 = RANGE index (%3) (-2, AxisType.LOOP)
%6 = RANGE index (%1) (-3, AxisType.OUTER)
%7 = CONST index () 1
%8 = ADD index (%6, %7)
%9 = SHRINK float32 (%2, %6, %8)
%10 = ADD index (%5, %7)
%11 = CAST float32 (%10)
%12 = RESHAPE float32 (%11, %7)
%13 = MUL float32 (%9, %12)
%14 = REDUCE float32 (%13, %6) Ops.MAX
%15 = CAST float32 (%4)
%16 = RESHAPE float32 (%15, %7)
%17 = ADD float32 (%14, %16)
%18 = REDUCE float32 (%17, %5) Ops.ADD
%19 = REDUCE float32 (%18, %4) Ops.MAX
%20 = SINK void (%19) ("out",)
)";

// for r < 3 (LOOP, a parallel map): tgt[r+1] = tgt[r] + (r + 1) * S, S = sum over m < 2 (OUTER)
// of x[m]. Run on the host, every read still sees tgt as it was before the loop.
const char* kEndAroundFold = R"(%0 = BUFFER float32 () ("tgt", 4)
%1 = CONST index () 4
%2 = RESHAPE float32 (%0, %1)
%3 = CONST index () 3
%4 = RANGE index (%3) (-1, AxisType.LOOP)
%5 = AFTER float32 (%2, %4)
%6 = CONST index () 1
%7 = ADD index (%4, %6)
%8 = CONST index () 2
%9 = ADD index (%4, %8)
%10 = SHRINK float32 (%5, %7, %9)
%11 = SHRINK float32 (%5, %4, %7)
%12 = BUFFER float32 () ("x", 2)
%13 = RESHAPE float32 (%12, %8)
%14 = RANGE index (%8) (-2, AxisType.OUTER)
%15 = ADD index (%14, %6)
%16 = SHRINK float32 (%13, %14, %15)
%17 = CAST float32 (%7)
%18 = RESHAPE float32 (%17, %6)
%19 = MUL float32 (%16, %18)
%20 = REDUCE float32 (%19, %14) Ops.ADD
%21 = ADD float32 (%11, %20)
%22 = STORE void (%10, %21)
%23 = END void (%22, %4)
%24 = AFTER float32 (%2, %23)
%25 = SINK void (%24) ("out",)
)";

// max over m < 3 (OUTER) of (tgt += 1)[0] + x[m]: the assign does not depend on m, so it runs
// once (the interpreter evaluates it once), before the loop, not once per iteration.
const char* kEffectInFold = R"(%0 = BUFFER float32 () ("tgt", 2)
%1 = CONST index () 2
%2 = RESHAPE float32 (%0, %1)
%3 = CONST float32 () 1.0
%4 = ADD float32 (%2, %3)
%5 = ASSIGN float32 (%2, %4)
%6 = CONST index () 0
%7 = CONST index () 1
%8 = SHRINK float32 (%5, %6, %7)
%9 = BUFFER float32 () ("x", 3)
%10 = CONST index () 3
%11 = RESHAPE float32 (%9, %10)
%12 = RANGE index (%10) (-1, AxisType.OUTER)
%13 = ADD index (%12, %7)
%14 = SHRINK float32 (%11, %12, %13)
%15 = ADD float32 (%8, %14)
%16 = REDUCE float32 (%15, %12) Ops.MAX
%17 = SINK void (%16, %5) ("out", "tgt_after")
)";

// The scalar view %1 of a buffer c, and %9 = x[r] for a range r over 4 values with `axis`.
std::string c_and_x_of_r(const std::string& axis) {
  return "%0 = BUFFER float32 () (\"c\", 1)\n%1 = RESHAPE float32 (%0)\n%2 = CONST index () 4\n"
         "%3 = RANGE index (%2) (-1, AxisType." + axis + ")\n%4 = BUFFER float32 () (\"x\", 4)\n"
         "%5 = RESHAPE float32 (%4, %2)\n%6 = CONST index () 1\n%7 = ADD index (%3, %6)\n"
         "%8 = SHRINK float32 (%5, %3, %7)\n%9 = RESHAPE float32 (%8)\n";
}

// Effects that depend on the fold's range run in every iteration, before its contribution is
// read: c += x[r] then read c, summed ("sum": the sum of the running sums), and the same on d
// placed in slot r ("prefix": the running sums themselves, a scan through a side buffer).
std::string effect_each_iteration(const std::string& axis) {
  return c_and_x_of_r(axis) + R"(%10 = ADD float32 (%1, %9)
%11 = STORE void (%1, %10)
%12 = AFTER float32 (%1, %11)
%13 = REDUCE float32 (%12, %3) Ops.ADD
%14 = BUFFER float32 () ("d", 1)
%15 = RESHAPE float32 (%14)
%16 = ADD float32 (%15, %9)
%17 = STORE void (%15, %16)
%18 = AFTER float32 (%15, %17)
%19 = RESHAPE float32 (%18, %6)
%20 = CONST index () 3
%21 = SUB index (%20, %3)
%22 = PAD float32 (%19, %3, %21)
%23 = REDUCE float32 (%22, %3) Ops.ADD
%24 = SINK void (%13, %23) ("sum", "prefix")
)";
}

// An effect that depends on no range, run by an AFTER on a view that does: x[r] after c += 1,
// plus c after c += 1, summed over r (S5.4: an AFTER runs its effects once per binding of its
// own ranges, and two runners in one iteration run the store once).
std::string effect_run_by_ranged_view() {
  return c_and_x_of_r("OUTER") + R"(%10 = CONST float32 () 1.0
%11 = ADD float32 (%1, %10)
%12 = STORE void (%1, %11)
%13 = AFTER float32 (%9, %12)
%16 = AFTER float32 (%1, %12)
%14 = ADD float32 (%13, %16)
%15 = REDUCE float32 (%14, %3) Ops.ADD
%17 = SINK void (%15) ("sum",)
)";
}

// An END whose stored value runs its own effect, c += x[r], then o and c read after it: two
// AFTERs reach the END, which runs once (S5.4). Over a LOOP range, a parallel map: every read
// inside the loop sees c as it was before the loop (S5.3), writes still land.
std::string effect_in_stored_value(const std::string& axis) {
  return c_and_x_of_r(axis) + R"(%10 = ADD float32 (%1, %9)
%11 = STORE void (%1, %10)
%12 = AFTER float32 (%1, %11)
%13 = BUFFER float32 () ("o", 4)
%14 = RESHAPE float32 (%13, %2)
%15 = SHRINK float32 (%14, %3, %7)
%16 = RESHAPE float32 (%15)
%17 = STORE void (%16, %12)
%18 = END void (%17, %3)
%19 = AFTER float32 (%14, %18)
%20 = AFTER float32 (%1, %18)
%21 = SINK void (%19, %20) ("o", "c")
)";
}


// A vmap over an OUTER range: out = REDUCE(ADD, PAD(2 * x[r], (r, 3 - r)), r), each iteration
// writing its own slot: computed as one kernel loop, no host loop.
const char* kOuterVmap = R"(%0 = BUFFER float32 () ("x", 4)
%1 = CONST index () 4
%2 = RESHAPE float32 (%0, %1)
%3 = RANGE index (%1) (-1, AxisType.OUTER)
%4 = CONST index () 1
%5 = ADD index (%3, %4)
%6 = SHRINK float32 (%2, %3, %5)
%7 = CONST float32 () 2.0
%8 = MUL float32 (%6, %7)
%9 = CONST index () 3
%10 = SUB index (%9, %3)
%11 = PAD float32 (%8, %3, %10)
%12 = REDUCE float32 (%11, %3) Ops.ADD
%13 = SINK void (%12) ("out",)
)";

// Empty tensors: x[:, 0:0] of shape (2, 0) reduced with MAX and ADD, padded, output as is; a
// REDUCE MUL over an OUTER range with no values; an assign into an empty buffer.
const char* kEmptyDims = R"(%0 = BUFFER float32 () ("x", 6)
%1 = CONST index () 2
%2 = CONST index () 0
%3 = CONST index () 3
%4 = RESHAPE float32 (%0, %1, %3)
%5 = SHRINK float32 (%4, %2, %1, %2, %2)
%6 = REDUCE_AXIS float32 (%5) (Ops.MAX, (1,))
%7 = REDUCE_AXIS float32 (%5) (Ops.ADD, (1,))
%8 = PAD float32 (%5, %2, %2, %1, %2)
%9 = RANGE index (%2) (-1, AxisType.OUTER)
%10 = CAST float32 (%9)
%11 = MUL float32 (%4, %10)
%12 = REDUCE float32 (%11, %9) Ops.MUL
%13 = BUFFER float32 () ("t", 0)
%14 = RESHAPE float32 (%5, %2)
%15 = ASSIGN float32 (%13, %14)
%16 = SINK void (%6, %7, %8, %12, %5, %15) ("max", "sum", "pad", "prod", "empty", "t")
)";

interp::BufferMap floats(const std::vector<std::pair<std::string, std::vector<float>>>& named);

// The outputs of `root` on one tier: interp, tcc, cc or check.
std::vector<interp::Output> run_on(const char* tier, UOp root, interp::BufferMap inputs) {
  backend::RunOptions o;
  o.backend = backend::parse_backend(tier);
  return backend::run_graph(root, inputs, o);
}

interp::BufferMap floats(const std::vector<std::pair<std::string, std::vector<float>>>& named) {
  interp::BufferMap b;
  for (const auto& [n, v] : named) {
    auto s = std::make_shared<interp::Storage>(dtypes::float32, static_cast<int64_t>(v.size()));
    std::copy(v.begin(), v.end(), s->as<float>());
    b[n] = interp::BufferData{dtypes::float32, s, nullptr};
  }
  return b;
}
}  // namespace

TEST_CASE("a REDUCE or an END around an OUTER fold runs on the host", "[compiled]") {
  UOp red = parse_graph(kReduceAroundFold, "reduce_around.uop").root, end = parse_graph(kEndAroundFold, "end_around.uop").root;
  for (const char* tier : {"interp", "tcc", "cc", "check"}) {
    INFO(tier);
    backend::RunOptions o;
    o.backend = backend::parse_backend(tier);
    for (auto [x0, x1, want] : {std::tuple<float, float, float>{1.5f, -0.25f, 3.75f}, {-1.0f, 0.5f, -0.5f}}) {
      interp::BufferMap b = floats({{"x", {x0, x1}}});
      auto outs = backend::run_graph(red, b, o);
      REQUIRE(outs.size() == 1);
      CHECK(interp::get_element(outs[0].value, 0) == want);  // exact: sums and products of dyadic values
    }
    interp::BufferMap bn = floats({{"x", {1.5f, -0.25f}}});
    auto nested = backend::run_graph(parse_graph(kReduceAroundHostReduce, "nested.uop").root, bn, o);
    REQUIRE(nested.size() == 1);
    CHECK(interp::get_element(nested[0].value, 0) == 12.0f);
    interp::BufferMap b = floats({{"x", {1.5f, -0.25f}}, {"tgt", {10, 20, 30, 40}}});
    auto outs = backend::run_graph(end, b, o);
    REQUIRE(outs.size() == 1);
    const float want[4] = {10, 11.25f, 22.5f, 33.75f};  // a sequential loop would give 10, 11.25, 13.75, 17.5
    for (int i = 0; i < 4; ++i) CHECK(interp::get_element(outs[0].value, i) == want[i]);
  }
}

TEST_CASE("an OUTER vmap with one slot per iteration runs as a kernel loop", "[compiled]") {
  UOp root = parse_graph(kOuterVmap, "outer_vmap.uop").root;
  for (UOp u : toposort(lower::lower(root))) CHECK_FALSE((u->op == Ops::RANGE && range_axis(u) == AxisType::OUTER));
  for (const char* tier : {"interp", "tcc", "cc", "check"}) {
    INFO(tier);
    auto outs = run_on(tier, root, floats({{"x", {1.5f, -0.0f, -0.25f, 3.0f}}}));
    REQUIRE(outs.size() == 1);
    const float want[4] = {3.0f, 0.0f, -0.5f, 6.0f};
    for (int i = 0; i < 4; ++i) CHECK(interp::get_element(outs[0].value, i) == want[i]);
    CHECK_FALSE(std::signbit(interp::get_element(outs[0].value, 1)));  // 0 + (2 * -0.0) is +0.0
  }
}

namespace {
UOp repro(const std::string& name) {
  fs::path file = source_root() / "tests" / "fuzz" / "lower" / name;
  return parse_graph(slurp(file), file.string()).root;
}

// Small integers as float32: every sum and product below is exact in any order.
std::vector<float> small_ints(size_t n, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>((i * 5 + static_cast<size_t>(seed) * 3) % 7) - 3);
  return v;
}
}  // namespace

TEST_CASE("a vmap with fewer iterations than rows reads row r+1 into slot r and leaves the last row zero", "[compiled]") {
  // out[r] = x[r + 1] for r < 3 and out[3] = 0: an OUTER range of 3 over a (4, 1, 4) result.
  UOp root = repro("fuzz-repro-vmap-shifted-row.uop");
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i) * 0.5f - 3.0f;
  x[9] = -0.0f;  // row 2: the vmap adds it to 0, giving +0.0
  for (const char* tier : {"interp", "tcc", "cc", "check"}) {
    INFO(tier);
    auto outs = run_on(tier, root, floats({{"x", x}}));
    REQUIRE(outs.size() == 1);
    REQUIRE(outs[0].value.numel() == 16);
    for (int r = 0; r < 4; ++r)
      for (int j = 0; j < 4; ++j) {
        INFO("row " << r << " column " << j);
        double got = interp::get_element(outs[0].value, r * 4 + j);
        CHECK(got == (r < 3 ? x[(r + 1) * 4 + j] : 0.0f));
        if (got == 0) CHECK_FALSE(std::signbit(got));  // 0 + x: never -0.0
      }
  }
}

TEST_CASE("the gradient of a scan's previous-row read lowers: a realized LOOP vmap read at row r+1", "[compiled]") {
  // Row k of the LOOP vmap is A_k = prev_k @ M_k with prev_0 = vec, prev_k = old[k-1]; the OUTER
  // vmap of 3 iterations gives row r = (2 A_{r+1}) @ M_{r+1}^T for r < 3 and row 3 = 0.
  UOp root = repro("fuzz-repro-old-grad-segv.uop");
  std::vector<float> vec = small_ints(4, 1), old = small_ints(16, 2), mats = small_ints(64, 3);
  auto M = [&](int k, int i, int j) { return static_cast<double>(mats[static_cast<size_t>(k * 16 + i * 4 + j)]); };
  auto A = [&](int k, int i) {
    double a = 0;
    for (int j = 0; j < 4; ++j) a += (k == 0 ? vec[static_cast<size_t>(j)] : old[static_cast<size_t>((k - 1) * 4 + j)]) * M(k, j, i);
    return a;
  };
  for (const char* tier : {"interp", "tcc", "cc", "check"}) {
    INFO(tier);
    auto outs = run_on(tier, root, floats({{"vec", vec}, {"old", old}, {"mats", mats}}));
    REQUIRE(outs.size() == 1);
    REQUIRE(outs[0].value.numel() == 16);
    for (int r = 0; r < 4; ++r)
      for (int i = 0; i < 4; ++i) {
        double want = 0;
        for (int j = 0; r < 3 && j < 4; ++j) want += 2 * A(r + 1, j) * M(r + 1, i, j);
        INFO("row " << r << " column " << i);
        CHECK(interp::get_element(outs[0].value, r * 4 + i) == want);
      }
  }
}

TEST_CASE("a collect over an OUTER range of a value realized per slice gathers every slice", "[compiled]") {
  // CONTIGUOUS(x[r]) collected along r (OUTER) is x itself (SEMANTICS S4.1).
  UOp root = repro("fuzz-1380.uop");
  for (const char* tier : {"interp", "tcc", "cc", "check"}) {
    INFO(tier);
    auto outs = run_on(tier, root, floats({{"in6", {1.5f, -0.25f}}}));
    REQUIRE(outs.size() == 1);
    REQUIRE(outs[0].value.numel() == 2);
    CHECK(interp::get_element(outs[0].value, 0) == 1.5f);
    CHECK(interp::get_element(outs[0].value, 1) == -0.25f);
  }
}

TEST_CASE("an effect inside a collect that depends on its range is refused with a clear message", "[compiled]") {
  // (tgt += x[r]) collected along r: each slice sees the earlier slices' writes (the running
  // sums), which needs a host loop over the slices; with a LOOP range this lowered to a wrong
  // result, with an OUTER one to an error far from the cause.
  const std::string g = "%0 = BUFFER float32 () (\"tgt\", 1)\n%1 = CONST index () 1\n%2 = CONST index () 3\n"
                        "%3 = RESHAPE float32 (%0, %1)\n%4 = BUFFER float32 () (\"x\", 3)\n%5 = RESHAPE float32 (%4, %2)\n"
                        "%6 = RANGE index (%2) (-1, AxisType.AXIS)\n%7 = ADD index (%6, %1)\n%8 = SHRINK float32 (%5, %6, %7)\n"
                        "%9 = ADD float32 (%3, %8)\n%10 = ASSIGN float32 (%3, %9)\n%11 = EXPAND float32 (%10, %6)\n"
                        "%12 = SINK void (%11) (\"out\",)\n";
  for (std::string axis : {"OUTER", "LOOP"}) {
    INFO(axis);
    std::string text = g;
    text.replace(text.find("AXIS"), 4, axis);
    UOp root = parse_graph(text).root;
    interp::BufferMap b = floats({{"tgt", {0.0f}}, {"x", {1.0f, 2.0f, 4.0f}}});
    auto want = run_on("interp", root, b);
    REQUIRE(interp::get_element(want[0].value, 2) == 7.0f);  // the running sums 1, 3, 7
    std::string msg = error_of([&] { lower::lower(root); });
    CHECK_THAT(msg, Catch::Contains("ASSIGN inside a collecting EXPAND over the range m1 that depends on it") &&
                        Catch::Contains("not supported by the compiled path yet"));
  }
}

TEST_CASE("an index into a view without a valid shape is an error naming the view (not a scalar)", "[compiled]") {
  // SHRINK(x, r+1, r+2) over a range of 4 on 4 rows leaves x at r = 3: lowering must not take
  // the view for an unshaped value (it left tensor ops in kernels, and crashed kernelize).
  UOp x = parse_graph("%0 = BUFFER float32 () (\"x\", 4)\n%1 = CONST index () 4\n%2 = RESHAPE float32 (%0, %1)").root;
  UOp r = UOp::range(4, 1000, AxisType::LOOP);
  UOp view = UOp::make(Ops::SHRINK, dtypes::float32, {x, simplify(r + 1), simplify(r + 2)});
  REQUIRE(view->shape.kind == ShapeInfo::Kind::Invalid);
  std::string msg = error_of([&] { lower::make_index(view, {UOp::index(0)}, r.lt(3)); });
  CHECK_THAT(msg, Catch::Contains("SHRINK float32") && Catch::Contains("does not fit dim 0 of size 4"));
}

namespace {
// The buffers the realize pass reads through a transposed copy, sorted; each copy's permutation
// must be `perm`.
std::vector<std::string> transposed_copies(UOp root, const std::string& perm) {
  UOp realized;
  lower::lower(root, [&](const lower::Pass& p, UOp g) {
    if (p.name == "realize") realized = g;
  });
  std::vector<std::string> copied;
  for (UOp u : toposort(realized)) {
    if (u->op != Ops::CONTIGUOUS || u->src[0]->op != Ops::PERMUTE) continue;
    CHECK(to_string(u->src[0]->arg) == perm);
    UOp b = u->src[0];
    while (b->op != Ops::BUFFER) b = b->src[0];
    copied.push_back(b->arg.tuple()->at(0).as<std::string>());
  }
  std::sort(copied.begin(), copied.end());
  return copied;
}

// c[m, n] = sum_k a[m, k] * b[k, n] on 32 x 32 matrices, with b given as is (A @ B) or as its
// transpose bt[n, k] (A @ B^T).
std::string matmul_uop(bool b_transposed) {
  std::string b_view = b_transposed ? "%6 = RESHAPE float32 (%5, %1, %1)\n%7 = PERMUTE float32 (%6) (1, 0)\n%8 = RESHAPE float32 (%7, %2, %1, %1)\n"
                                    : "%6 = RESHAPE float32 (%5, %1, %1)\n%7 = PERMUTE float32 (%6) (0, 1)\n%8 = RESHAPE float32 (%7, %2, %1, %1)\n";
  return "%0 = BUFFER float32 () (\"a\", 1024)\n%1 = CONST index () 32\n%2 = CONST index () 1\n"
         "%3 = RESHAPE float32 (%0, %1, %1, %2)\n%4 = EXPAND float32 (%3, %1, %1, %1)\n"
         "%5 = BUFFER float32 () (\"b\", 1024)\n" + b_view +
         "%9 = EXPAND float32 (%8, %1, %1, %1)\n%10 = MUL float32 (%4, %9)\n"
         "%11 = REDUCE_AXIS float32 (%10) (Ops.ADD, (1,))\n%12 = SINK void (%11) (\"c\",)\n";
}
}  // namespace

TEST_CASE("a reduction reads a strided, reused input through a copy with the reduced axis outermost", "[compiled]") {
  UOp vmap = parse_graph(slurp(source_root() / "reference" / "cases" / "vmap_mlp_32x128.uop"), "vmap_mlp_32x128.uop").root;
  // (1, j, k) read as (k, 1, j): j contiguous; the input img is read once per row: no copy
  CHECK(transposed_copies(vmap, "(2, 0, 1)") == std::vector<std::string>{"w1", "w2"});
  // A @ B^T: bt (m, k, n) is read along k; as (k, m, n), n is contiguous. A @ B already reads b
  // along n, a kept axis: no copy.
  CHECK(transposed_copies(parse_graph(matmul_uop(true), "abt.uop").root, "(1, 0, 2)") == std::vector<std::string>{"b"});
  CHECK(transposed_copies(parse_graph(matmul_uop(false), "ab.uop").root, "").empty());
}

TEST_CASE("A @ B^T through the transposed copy computes the matrix product", "[compiled]") {
  // small integers: every product and partial sum is exact in float32, so any order agrees
  std::vector<float> a(1024), bt(1024);
  for (int i = 0; i < 32; ++i)
    for (int k = 0; k < 32; ++k) {
      a[static_cast<size_t>(i * 32 + k)] = static_cast<float>((i + 2 * k) % 5 - 2);
      bt[static_cast<size_t>(i * 32 + k)] = static_cast<float>((3 * i + k) % 7 - 3);
    }
  UOp root = parse_graph(matmul_uop(true), "abt.uop").root;
  for (const char* tier : {"interp", "tcc", "cc", "check"}) {
    INFO(tier);
    auto outs = run_on(tier, root, floats({{"a", a}, {"b", bt}}));
    REQUIRE(outs.size() == 1);
    REQUIRE(outs[0].value.numel() == 1024);
    for (int m = 0; m < 32; ++m)
      for (int n = 0; n < 32; ++n) {
        double want = 0;  // c[m, n] = sum_k a[m, k] * b[k, n], with b[k, n] = bt[n, k]
        for (int k = 0; k < 32; ++k) want += a[static_cast<size_t>(m * 32 + k)] * bt[static_cast<size_t>(n * 32 + k)];
        REQUIRE(interp::get_element(outs[0].value, m * 32 + n) == want);
      }
  }
}

TEST_CASE("empty tensors and loops without values lower to what they mean", "[compiled]") {
  UOp root = parse_graph(kEmptyDims, "empty_dims.uop").root;
  for (const char* tier : {"interp", "tcc", "cc", "check"}) {
    INFO(tier);
    auto outs = run_on(tier, root, floats({{"x", {1, 2, 3, 4, 5, 6}}, {"t", {}}}));
    REQUIRE(outs.size() == 6);
    // a fold over nothing is its identity (SEMANTICS S3); a pad of nothing is all fill
    const std::vector<std::vector<double>> want{{-INFINITY, -INFINITY}, {0, 0}, {0, 0, 0, 0}, {1, 1, 1, 1, 1, 1}, {}, {}};
    for (size_t k = 0; k < want.size(); ++k) {
      INFO(outs[k].name);
      REQUIRE(outs[k].value.numel() == static_cast<int64_t>(want[k].size()));
      for (size_t i = 0; i < want[k].size(); ++i) CHECK(interp::get_element(outs[k].value, static_cast<int64_t>(i)) == want[k][i]);
    }
    CHECK(outs[4].value.shape() == std::vector<int64_t>{2, 0});
  }
}

TEST_CASE("an effect in an OUTER fold that does not depend on it runs once, before the loop", "[compiled]") {
  UOp root = parse_graph(kEffectInFold, "effect_in_fold.uop").root;
  for (const char* tier : {"interp", "tcc", "cc", "check"}) {
    INFO(tier);
    auto outs = run_on(tier, root, floats({{"x", {1.5f, -0.25f, 4.0f}}, {"tgt", {10, 20}}}));
    REQUIRE(outs.size() == 2);
    CHECK(interp::get_element(outs[0].value, 0) == 15.0f);  // (10 + 1) + 4; once per iteration: 17
    CHECK(interp::get_element(outs[1].value, 0) == 11.0f);
    CHECK(interp::get_element(outs[1].value, 1) == 21.0f);
  }
}

TEST_CASE("an effect in an OUTER fold that depends on it runs in every iteration [S5.4]", "[compiled]") {
  UOp root = parse_graph(effect_each_iteration("OUTER"), "effect_each_iteration.uop").root;
  UOp inner = parse_graph(effect_in_2d_fold("%5"), "effect_inner.uop").root;
  for (const char* tier : {"interp", "tcc", "cc", "check"}) {
    INFO(tier);
    // every value below is a sum of dyadic fractions: exact in float32, in any order
    auto outs = run_on(tier, root, floats({{"x", {1.5f, -0.25f, 4.0f, 2.0f}}, {"c", {10}}, {"d", {10}}}));
    REQUIRE(outs.size() == 2);
    CHECK(interp::get_element(outs[0].value, 0) == 55.25f);  // 11.5 + 11.25 + 15.25 + 17.25
    const float prefix[4] = {11.5f, 11.25f, 15.25f, 17.25f};
    for (int i = 0; i < 4; ++i) CHECK(interp::get_element(outs[1].value, i) == prefix[i]);
    // c runs through 10 + 1.5, -0.25, 4, 1.5, -0.25, 4: 11.5 11.25 15.25 16.75 16.5 20.5
    auto in2 = run_on(tier, inner, floats({{"x", {1.5f, -0.25f, 4.0f}}, {"c", {10}}}));
    CHECK(interp::get_element(in2[0].value, 0) == 91.75f);
    // A REDUCE over a LOOP range folds in order too (S3.1): the same sums.
    UOp loop = parse_graph(effect_each_iteration("LOOP"), "loop.uop").root;
    auto l = run_on(tier, loop, floats({{"x", {1.5f, -0.25f, 4.0f, 2.0f}}, {"c", {10}}, {"d", {10}}}));
    CHECK(interp::get_element(l[0].value, 0) == 55.25f);
    for (int i = 0; i < 4; ++i) CHECK(interp::get_element(l[1].value, i) == prefix[i]);
    // (1.5 - 0.25 + 4 + 2) + (11 + 12 + 13 + 14): c += 1 runs in every iteration
    auto v = run_on(tier, parse_graph(effect_run_by_ranged_view(), "ranged_view.uop").root, floats({{"x", {1.5f, -0.25f, 4.0f, 2.0f}}, {"c", {10}}}));
    CHECK(interp::get_element(v[0].value, 0) == 57.25f);
    // o[r] = c after c += x[r], reading the c of before the loop: 10 everywhere; c ends as the
    // last write left it, 10 + 2 (running the END again for the second AFTER would give 14)
    auto p = run_on(tier, parse_graph(effect_in_stored_value("LOOP"), "parallel_store.uop").root, floats({{"x", {1.5f, -0.25f, 4.0f, 2.0f}}, {"c", {10}}, {"o", {0, 0, 0, 0}}}));
    for (int i = 0; i < 4; ++i) CHECK(interp::get_element(p[0].value, i) == 10.0f);
    CHECK(interp::get_element(p[1].value, 0) == 12.0f);
    // sequentially, o holds the running sums and c the total, 17.25 (twice through: 24.5)
    auto q = run_on(tier, parse_graph(effect_in_stored_value("OUTER"), "sequential_store.uop").root, floats({{"x", {1.5f, -0.25f, 4.0f, 2.0f}}, {"c", {10}}, {"o", {0, 0, 0, 0}}}));
    for (int i = 0; i < 4; ++i) CHECK(interp::get_element(q[0].value, i) == prefix[i]);
    CHECK(interp::get_element(q[1].value, 0) == 17.25f);
  }
  // Depending on the outer range only, the effect runs at (0, 0) and (1, 0): 3 * 11.5 + 3 * 11.25.
  UOp outer = parse_graph(effect_in_2d_fold("%3"), "effect_outer.uop").root;
  auto in = floats({{"x", {1.5f, -0.25f, 4.0f}}, {"c", {10}}});
  CHECK(interp::get_element(run_on("interp", outer, in)[0].value, 0) == 68.25f);
  // Compiled, that would need a guard per iteration: refused, naming the problem.
  for (const char* tier : {"tcc", "cc"})
    CHECK_THROWS_WITH(run_on(tier, outer, floats({{"x", {1.5f, -0.25f, 4.0f}}, {"c", {10}}})),
                      Catch::Contains("an effect (STORE) inside an OUTER fold that depends on some of its ranges but not on the innermost one"));
}

TEST_CASE("an out-of-bounds access in a compiled kernel is a clear error with --bounds-check", "[compiled]") {
  UOp program = parse_graph(kOutOfBounds, "oob.uop").root;
  for (const char* tier : {"tcc", "cc", "interp"}) {
    INFO(tier);
    interp::BufferMap b;
    auto x = std::make_shared<interp::Storage>(dtypes::float32, 4);
    b["x"] = interp::BufferData{dtypes::float32, x, nullptr};
    backend::RunOptions o;
    o.backend = backend::parse_backend(tier);
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
  o.backend = backend::Backend::Cc;
  std::string msg = error_of([&] { backend::run_graph(root, b, o); });
  if (old) setenv("OW_CC", saved.c_str(), 1);
  else unsetenv("OW_CC");
  CHECK_THAT(msg, Catch::Contains("/nonexistent/ow-test-cc"));
}

TEST_CASE("a store whose every element lies in a PAD's fill writes nothing [S5.1]", "[compiled]") {
  // t = [0.5], padded to 4; element 1 of the padded view is fill, so the store of 5 there is
  // written nowhere (hand-derived: out = [0.5, 0, 0, 0]). Lowering reduced its address to the
  // constant of a false gate and stopped on an internal error (ow fuzz --count 20000, seed 11090).
  const char* text = R"(%t = BUFFER float32 () ("t", 1)
%0 = CONST index () 0
%1 = CONST index () 1
%2 = CONST index () 2
%3 = CONST index () 3
%p = PAD float32 (%t, %0, %3)
%s = SHRINK float32 (%p, %1, %2)
%five = CONST float32 () 5.0
%v = RESHAPE float32 (%five, %1)
%st = STORE void (%s, %v)
%a = AFTER float32 (%p, %st)
%out = SINK void (%a) ("out",)
)";
  UOp root = parse_graph(text).root;
  for (const char* tier : {"interp", "tcc", "cc", "check"}) {
    INFO(tier);
    auto outs = run_on(tier, root, floats({{"t", {0.5}}}));
    REQUIRE(outs.size() == 1);
    const std::vector<double> want{0.5, 0, 0, 0};
    REQUIRE(outs[0].value.numel() == 4);
    for (size_t i = 0; i < want.size(); ++i) CHECK(interp::get_element(outs[0].value, static_cast<int64_t>(i)) == want[i]);
  }
}

TEST_CASE("ow fuzz reproducers (tests/fuzz/lower) now agree with the interpreter", "[compiled][fuzz]") {
  int files = 0;
  for (const auto& e : fs::directory_iterator(source_root() / "tests" / "fuzz" / "lower")) {
    if (e.path().extension() != ".uop") continue;
    ++files;
    INFO(e.path().filename().string());
    UOp root = parse_graph(slurp(e.path()), e.path().string()).root;
    interp::BufferMap inputs = inputs_for("(fuzz)", root);
    backend::RunOptions o;
    o.backend = backend::Backend::Check;
    o.bounds_check = true;
    interp::BufferMap b = copy(inputs);
    CHECK_NOTHROW(backend::run_graph(root, b, o));  // check mode throws on any divergence
  }
  CHECK(files >= 15);
}

namespace {
// Lowering `root` for each backend is refused as read-after-loop-effect, with `phrase` in the message.
void expect_read_after_loop_effect(UOp root, const std::vector<backend::Backend>& backends, const std::string& phrase) {
  interp::BufferMap inputs = inputs_for("(fuzz)", root);
  for (backend::Backend be : backends) {
    INFO("backend " << backend::backend_name(be));
    backend::RunOptions o;
    o.backend = be;
    interp::BufferMap b = copy(inputs);
    try {
      backend::run_graph(root, b, o);
      FAIL("lowered without refusing");
    } catch (const Unsupported& e) {
      CHECK(e.reason == Unsupported::Reason::ReadAfterLoopEffect);
      CHECK_THAT(e.what(), Catch::Contains(phrase));
    }
  }
}
}  // namespace

// Fuzz seed 820080: a parallel END stores a read of tgt3 made after an inner OUTER loop writes
// tgt3; S5.3 pins the read to the loop's start, which the hoisted loop broke (a silently wrong
// value). The compiled path refuses it now, naming the END and the reason.
TEST_CASE("a parallel END that reads what an effect inside it wrote is refused, not miscompiled", "[compiled][fuzz]") {
  UOp root = parse_graph(slurp(source_root() / "tests" / "fuzz" / "refused" / "fuzz-820080.uop"), "fuzz-820080.uop").root;
  expect_read_after_loop_effect(root, {backend::Backend::Tcc}, "END over m1: a stored value reads a buffer after an effect inside the parallel loop writes it");
}

// A REDUCE with an effect in every iteration (c = y[j]) runs on the host; inside a parallel END
// that it does not depend on, scans runs it before the loop. But the loop also stores c into
// u[k], and S5.3 pins that read to the loop's start, so u must be c's old value everywhere: run
// first, the fold's write would show. The compiled path computed u from the written c (a wrong
// value that check mode reported as a lowering change); it refuses the graph now, naming the END.
TEST_CASE("a fold in a parallel END whose effects write a buffer the loop reads is refused, not miscompiled", "[compiled]") {
  UOp root = parse_graph(R"(%0 = BUFFER float32 () ("t", 4)  # shape (4,)
%1 = CONST index () 4
%2 = CONST index () 1
%3 = RANGE index (%1) (-1, AxisType.LOOP)  # range m1
%4 = RANGE index (%1) (-2, AxisType.LOOP)  # range m2
%5 = BUFFER float32 () ("y", 4)  # shape (4,)
%6 = ADD index (%4, %2)
%7 = SHRINK float32 (%5, %4, %6)  # shape (1,)
%8 = BUFFER float32 () ("c", 1)  # shape (1,)
%9 = STORE void (%8, %7)  # shape (1,)
%10 = AFTER float32 (%7, %9)  # shape (1,)
%11 = REDUCE float32 (%10, %4) Ops.ADD  # shape (1,)
%12 = ADD index (%3, %2)
%13 = SHRINK float32 (%0, %3, %12)  # shape (1,)
%14 = STORE void (%13, %11)  # shape (1,)
%15 = BUFFER float32 () ("u", 4)  # shape (4,)
%16 = SHRINK float32 (%15, %3, %12)  # shape (1,)
%17 = STORE void (%16, %8)  # shape (1,)
%18 = GROUP void (%14, %17)
%19 = END void (%18, %3)
%20 = AFTER float32 (%0, %19)  # shape (4,)
%21 = AFTER float32 (%15, %19)  # shape (4,)
%22 = SINK void (%20, %21) ("out", "u")
)", "<test>").root;
  expect_read_after_loop_effect(root, {backend::Backend::Tcc, backend::Backend::Check}, "END over m1: a fold inside the parallel loop runs effects on a buffer");
}

// Fuzz seed 215582: once symbolic rules stopped folding where(c, false, false) (c may be poison),
// the C renderer wrote `(c ? 0 : 0) ? a : b`, which TCC 0.9.27 compiles to garbage. Expected
// values by hand: the condition is false everywhere, so out = b.
TEST_CASE("a WHERE whose condition is a WHERE of equal constants compiles right on tcc and cc", "[compiled][fuzz]") {
  UOp g = parse_graph(R"(%0 = BUFFER bool () ("c", 2)
%1 = CONST bool () false
%2 = CONST index () 1
%3 = CONST index () 2
%4 = RESHAPE bool (%1, %2)
%5 = EXPAND bool (%4, %3)
%6 = WHERE bool (%0, %5, %5)
%7 = BUFFER float32 () ("a", 2)
%8 = BUFFER float32 () ("b", 2)
%9 = WHERE float32 (%6, %7, %8)
%10 = SINK void (%9) ("out",)
)", "<test>").root;
  auto make = [](DType d, std::vector<double> v) {
    auto s = std::make_shared<interp::Storage>(d, static_cast<int64_t>(v.size()));
    for (size_t i = 0; i < v.size(); ++i) {
      if (d == dtypes::bool_) s->as<uint8_t>()[i] = v[i] != 0;
      else s->as<float>()[i] = static_cast<float>(v[i]);
    }
    return interp::BufferData{d, s, nullptr};
  };
  for (const char* be : {"tcc", "cc", "check"}) {
    INFO("backend " << be);
    interp::BufferMap b{{"c", make(dtypes::bool_, {1, 0})}, {"a", make(dtypes::float32, {1, 2})}, {"b", make(dtypes::float32, {3, 4})}};
    backend::RunOptions o;
    o.backend = backend::parse_backend(be);
    interp::Value out = backend::run_graph(g, b, o).at(0).value;
    CHECK(interp::get_element(out, 0) == 3.0);
    CHECK(interp::get_element(out, 1) == 4.0);
  }
}

// Fuzz seed 501500: GCC 12.2 with -march=znver3 placed the kernel's accumulator array
// (double acc[10], one per output row) in the red zone, misaligned for the vmovapd that fills
// it, and the cc kernel died of SIGSEGV. Expected values by hand: a product over a range of 2
// of a value that does not depend on it, starting from 1, is x * x.
TEST_CASE("a REDUCE MUL over a LOOP range with a row of accumulators runs on cc", "[compiled][fuzz]") {
  UOp root = repro("fuzz-501500.uop");
  auto s = std::make_shared<interp::Storage>(dtypes::float64, 30);
  for (int i = 0; i < 30; ++i) s->as<double>()[i] = 0.25 * i - 3.0;
  for (const char* tier : {"tcc", "cc"}) {
    INFO(tier);
    auto outs = run_on(tier, root, {{"tgt0", interp::BufferData{dtypes::float64, s, nullptr}}});
    REQUIRE(outs.size() == 1);
    for (int i = 0; i < 30; ++i) CHECK(interp::get_element(outs[0].value, i) == (0.25 * i - 3.0) * (0.25 * i - 3.0));
  }
}

// A graph built through the C++ API is not verified by parse_graph or by the caller: before
// 2026-12-04 the compiled path lowered and ran one the interpreter refuses (a float CONST with
// an integer arg rendered as 1.0f), so the oracle and the JIT disagreed on what the graph means.
TEST_CASE("the compiled path refuses an invalid graph with the interpreter's message", "[compiled]") {
  UOp root = parse_graph("%0 = BUFFER float32 () (\"a\", 4)\n%1 = CONST float32 () 1\n%2 = CONST index () 4\n%3 = RESHAPE float32 (%1, %2)\n"
                         "%4 = ADD float32 (%0, %3)\n%5 = SINK void (%4) (\"out\",)\n", "bad.uop").root;
  std::string want = "invalid graph: const.arg: CONST float32 needs a float (with '.') arg, got 1";
  interp::BufferMap in{{"a", interp::BufferData{dtypes::float32, std::make_shared<interp::Storage>(dtypes::float32, 4), nullptr}}};
  CHECK_THROWS_WITH(interp::run(root, in), Catch::Contains(want));
  for (const char* tier : {"tcc", "cc", "check"}) {
    INFO(tier);
    backend::RunOptions o;
    o.backend = backend::parse_backend(tier);
    CHECK_THROWS_WITH(backend::run_graph(root, in, o), Catch::Contains(want));
  }
  CHECK_THROWS_WITH(lower::lower(root), Catch::Contains(want));
  // without the input's data too: the graph is refused first (fuzz_run: bufferize-vmax-overflow)
  interp::BufferMap none;
  CHECK_THROWS_WITH(interp::run(root, none), Catch::Contains(want));
  backend::RunOptions o;
  o.backend = backend::Backend::Cc;
  CHECK_THROWS_WITH(backend::run_graph(root, none, o), Catch::Contains(want));
}

// Fuzz seed 960114: a vmap's slot gets `0 + y(r)` (the REDUCE's identity plus the row), here
// y = -(float)r. GCC 12.2 folds `0.0f + -(float)r` into `-(float)r` even at -O0, so row 0 came out
// -0.0 where IEEE addition gives +0.0 (0 + -0 = +0), and cc disagreed with the interpreter.
// cc now compiles with -frounding-math, which stops that fold.
TEST_CASE("a vmap of -(float)r: row 0 is +0.0 on every backend, as 0 + -0 is", "[compiled][fuzz]") {
  std::string text = slurp(source_root() / "tests" / "fuzz" / "lower" / "fuzz-960114.txt");
  UOp root = parse_graph(text.substr(text.find("# the graph as generated:\n") + 26), "fuzz-960114.txt").root;
  for (const char* tier : {"interp", "tcc", "cc"}) {
    INFO(tier);
    auto zeros = std::make_shared<interp::Storage>(dtypes::float32, 20);
    interp::BufferMap b{{"tgt0", interp::BufferData{dtypes::float32, zeros, nullptr}}};
    backend::RunOptions o;
    o.backend = backend::parse_backend(tier);
    std::vector<interp::Output> got = std::string(tier) == "interp" ? interp::run(root, b) : backend::run_graph(root, b, o);
    REQUIRE(got.size() == 1);
    REQUIRE(got[0].value.numel() == 20);
    const float* v = reinterpret_cast<const float*>(got[0].value.data->bytes.data());
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 5; ++c) {
        INFO("row " << r << " column " << c);
        CHECK(v[r * 5 + c] == -float(r));
        CHECK(std::signbit(v[r * 5 + c]) == (r > 0));  // row 0: +0.0, not -0.0
      }
  }
}

// A DEFINE_VAR used without a BIND reached the kernel verifier, an internal error (exit 2) on
// tcc and cc where the interpreter says the variable is not bound.
TEST_CASE("an unbound variable is the interpreter's error on every backend, not an internal one", "[compiled][errors]") {
  UOp root = parse_graph(
                 "%a = BUFFER float32 () (\"a\", 4)\n%v = DEFINE_VAR index () (\"n\", 0, 3)\n%c = CAST float32 (%v)\n%y = ADD float32 (%a, %c)\n"
                 "%s = SINK void (%y) (\"y\",)\n")
                 .root;
  for (const char* be : {"interp", "tcc", "cc"}) {
    INFO("backend " << be);
    interp::BufferMap b = inputs_for("(unbound)", root);
    backend::RunOptions o;
    o.backend = backend::parse_backend(be);
    try {
      backend::run_graph(root, b, o);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Catch::StartsWith("variable is not bound to a value (use BIND)\n  at "));
      CHECK_THAT(e.what(), Catch::Contains("DEFINE_VAR index () (\"n\", 0, 3)"));
    }
  }
}

// A chain of 20,000 fused additions: the renderer recursed once per inlined node and lowering's
// kernel builder once per node (SIGSEGV at 20,000 with an 8 MB stack, at 7,375 under ASan:
// ../shared/repro/render_recursion_chain_7375.uop). Now both walk the chain with a bounded
// depth. The interpreter refuses graphs this deep, so the expectation is the same float32
// additions in order, computed here.
TEST_CASE("a 20,000-node elementwise chain is rendered and run on tcc", "[compiled][depth]") {
  const int n = 20000;
  UOp x = UOp::make(Ops::BUFFER, dtypes::float32, {}, Arg(ArgTuple{Arg(std::string("x")), Arg(int64_t{4})}));
  UOp v = x, one = UOp::cnst(dtypes::float32, 1.0);
  for (int i = 0; i < n; ++i) v = v.alu(Ops::ADD, {one});
  UOp root = UOp::sink({v}, Arg(ArgTuple{Arg(std::string("out"))}));
  const float in[4] = {0.25f, -0.5f, 3.0e-8f, 1.0e4f};
  std::vector<float> want(in, in + 4);
  for (float& w : want)
    for (int i = 0; i < n; ++i) w = w + 1.0f;
  for (const char* be : {"tcc"}) {  // cc renders the same C (gcc takes 35 s over 20,000 statements)
    INFO("backend " << be);
    auto s = std::make_shared<interp::Storage>(dtypes::float32, 4);
    std::memcpy(s->bytes.data(), in, sizeof in);
    interp::BufferMap b{{"x", interp::BufferData{dtypes::float32, s, nullptr}}};
    backend::RunOptions o;
    o.backend = backend::parse_backend(be);
    auto out = backend::run_graph(root, b, o);
    interp::Value r = interp::contiguous(out.at(0).value);
    CHECK(std::vector<float>(r.data->as<float>(), r.data->as<float>() + 4) == want);
  }
}

// 1,000 REDUCEs nested one in another's body (../shared/repro/nested_reduce_400.uop's shape):
// the scans pass asked, for every REDUCE, whether each REDUCE below it encloses a fold that runs
// on the host, a walk of its body each time: n^3 (1,000: 10 s to lower); and kernelize built each
// level's temporary inside the one above it, recursing once per level: under ASan 1,000 levels
// overflowed the 8 MB stack (now at most 16 deep, kernelize.cpp's build_temps).
// Every range has one step, at 0, so each level adds 0 and the sum of one term is that term:
// out = x exactly. The interpreter recurses once per level: it computes x, or, where its frames
// are bigger than the stack holds, refuses clearly.
TEST_CASE("1,000 nested REDUCEs lower and run on the interpreter, tcc and cc", "[compiled][depth]") {
  const int n = 1000;
  std::string text = "%x = BUFFER float32 () (\"x\", 1)\n%xs = RESHAPE float32 (%x)\n%c1 = CONST index () 1\n";
  for (int i = 1; i <= n; ++i) text += "%r" + std::to_string(i) + " = RANGE index (%c1) (" + std::to_string(i) + ", AxisType.REDUCE)\n";
  std::string below = "%xs";
  for (int i = n; i >= 1; --i) {
    std::string k = std::to_string(i);
    text += "%cr" + k + " = CAST float32 (%r" + k + ")\n%a" + k + " = ADD float32 (" + below + ", %cr" + k + ")\n%R" + k + " = REDUCE float32 (%a" + k + ", %r" + k + ") Ops.ADD\n";
    below = "%R" + k;
  }
  UOp root = parse_graph(text + "%s = SINK void (%R1) (\"out\",)\n", "nested.uop").root;
  for (const char* be : {"interp", "tcc", "cc"}) {
    INFO("backend " << be);
    auto s = std::make_shared<interp::Storage>(dtypes::float32, 1);
    s->as<float>()[0] = 2.75f;
    interp::BufferMap b{{"x", interp::BufferData{dtypes::float32, s, nullptr}}};
    backend::RunOptions o;
    o.backend = backend::parse_backend(be);
    std::vector<interp::Output> out;
    try {
      out = backend::run_graph(root, b, o);
    } catch (const Error& e) {
      CHECK(std::string(be) == "interp");
      CHECK_THAT(e.what(), Catch::StartsWith("graph is nested deeper than this thread's stack allows the interpreter ("));
      continue;
    }
    CHECK(interp::contiguous(out.at(0).value).data->as<float>()[0] == 2.75f);
  }
}

// Runs f on a thread with a stack of `bytes`, rethrowing what it throws. A walk that recurses once
// per node needs a few hundred bytes a level: on 1 MB it dies at a few thousand nodes, where the
// 8 MB main thread would need a graph that takes seconds to lower before it shows.
namespace {
void on_stack(size_t bytes, const std::function<void()>& f) {
  struct Job {
    const std::function<void()>* f;
    std::exception_ptr error;
  } job{&f, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes);
  pthread_t t;
  auto body = [](void* p) -> void* {
    auto* j = static_cast<Job*>(p);
    try {
      (*j->f)();
    } catch (...) {
      j->error = std::current_exception();
    }
    return nullptr;
  };
  int rc = pthread_create(&t, &attr, body, &job);
  pthread_attr_destroy(&attr);
  REQUIRE(rc == 0);
  pthread_join(t, nullptr);
  if (job.error) std::rethrow_exception(job.error);
}
}  // namespace

// The interpreter recurses once per level of the graph (up to max_depth, 3,000). On a thread
// whose stack cannot hold that many levels it ran off the stack (SIGSEGV); it now stops while
// there is room and says why. 2,900 nested additions on 1 MB; the same on 64 MB compute (a
// level takes about 9.5 KB of stack under ASan: 8 MB holds 793 levels there).
TEST_CASE("the interpreter refuses a graph deeper than its thread's stack holds, never a signal", "[compiled][depth]") {
  UOp x = UOp::make(Ops::BUFFER, dtypes::float32, {}, Arg(ArgTuple{Arg(std::string("x")), Arg(int64_t{1})}));
  UOp v = x, one = UOp::cnst(dtypes::float32, 1.0);
  for (int i = 0; i < 2900; ++i) v = v.alu(Ops::ADD, {one});
  UOp root = UOp::sink({v}, Arg(ArgTuple{Arg(std::string("out"))}));
  auto run = [&] {
    auto s = std::make_shared<interp::Storage>(dtypes::float32, 1);
    s->as<float>()[0] = 0.5f;
    interp::BufferMap b{{"x", interp::BufferData{dtypes::float32, s, nullptr}}};
    return interp::contiguous(interp::run(root, b).at(0).value).data->as<float>()[0];
  };
  std::string refused;
  on_stack(1 << 20, [&] {
    try {
      run();
    } catch (const Error& e) {
      refused = e.what();
    }
  });
  CHECK_THAT(refused, Catch::StartsWith("graph is nested deeper than this thread's stack allows the interpreter ("));
  float got = 0;
  on_stack(size_t{64} << 20, [&] { got = run(); });
  CHECK(got == 2900.5f);  // (integers in float32: exact)
}

// walk_items recursed once per nested cut node (lowering's kernel builder cuts at every
// BUFFERIZE: a chain of realized values nests them as deep as the chain). Its answer is defined
// by toposort, so that is the expectation; every ADD here is a cut, nested 30,000 deep.
TEST_CASE("walk_items gives toposort's list through 30,000 nested cut nodes", "[compiled][depth]") {
  const int n = 30000;
  UOp v = UOp::cnst(dtypes::int32, 0);
  for (int i = 1; i <= n; ++i) v = v.alu(Ops::ADD, {UOp::cnst(dtypes::int32, i)});
  // Few items: every cut's list holds all of those below it, n^2 / 2 splices if each had one.
  auto items = [](UOp u) { return u->op == Ops::CONST && u->arg.as<int64_t>() % 1000 == 0 ? std::vector<UOp>{u} : std::vector<UOp>{}; };
  auto cut = [](UOp u) { return u->op == Ops::ADD; };
  std::vector<UOp> want;
  for (UOp u : toposort(v))
    for (UOp x : items(u))
      if (std::find(want.begin(), want.end(), x) == want.end()) want.push_back(x);
  std::vector<UOp> got;
  lower::WalkMemo memo;
  on_stack(1 << 20, [&] { got = lower::walk_items(v, memo, items, cut); });
  REQUIRE(got.size() == static_cast<size_t>(n / 1000) + 1);
  CHECK(got == want);
  // A second walk from a node below reuses the memo (the spliced lists) and agrees again.
  UOp mid = v;
  for (int i = 0; i < n / 2; ++i) mid = mid->src[0];
  std::vector<UOp> again;
  on_stack(1 << 20, [&] { again = lower::walk_items(mid, memo, items, cut); });
  CHECK(again == std::vector<UOp>(want.begin(), want.begin() + static_cast<long>(again.size())));
  CHECK(again.size() == static_cast<size_t>(n / 2 / 1000) + 1);
}

// sum_k f[k] * W[j, k] with f a 30,000-node elementwise chain broadcast along j: the realize
// pass prices f (element_cost) to decide to realize it once, and priced it by recursing once per
// node (SIGSEGV on a 1 MB stack; on 8 MB at 200,000 nodes). Small integers keep every float32
// operation exact, so the expectation is plain arithmetic; the interpreter refuses this depth.
TEST_CASE("a reduction over a broadcast 30,000-node chain is lowered and run on tcc", "[compiled][depth]") {
  const int n = 30000;
  std::string text = "%x = BUFFER float32 () (\"x\", 4)\n%c1 = CONST index () 1\n%c4 = CONST index () 4\n"
                     "%one = CONST float32 () 1.0\n%v0 = RESHAPE float32 (%x, %c4)\n";
  for (int i = 1; i <= n; ++i) text += "%v" + std::to_string(i) + " = ADD float32 (%v" + std::to_string(i - 1) + ", %one)\n";
  text += "%f = RESHAPE float32 (%v" + std::to_string(n) + ", %c1, %c4)\n%fe = EXPAND float32 (%f, %c4, %c4)\n"
          "%w = BUFFER float32 () (\"w\", 16)\n%w2 = RESHAPE float32 (%w, %c4, %c4)\n%m = MUL float32 (%fe, %w2)\n"
          "%r = REDUCE_AXIS float32 (%m) (Ops.ADD, (1,))\n%r2 = RESHAPE float32 (%r, %c4)\n%s = SINK void (%r2) (\"out\",)\n";
  UOp root = parse_graph(text, "bcast_chain.uop").root;
  auto buffer = [](std::vector<float> v) {
    auto s = std::make_shared<interp::Storage>(dtypes::float32, static_cast<int64_t>(v.size()));
    std::memcpy(s->bytes.data(), v.data(), v.size() * sizeof(float));
    return interp::BufferData{dtypes::float32, s, nullptr};
  };
  std::vector<float> x{0, 1, 2, 3}, w(16), want(4, 0.0f);
  for (int i = 0; i < 16; ++i) w[static_cast<size_t>(i)] = static_cast<float>(i + 1);
  for (size_t j = 0; j < 4; ++j)
    for (size_t k = 0; k < 4; ++k) want[j] += (x[k] + static_cast<float>(n)) * w[j * 4 + k];
  interp::BufferMap b{{"x", buffer(x)}, {"w", buffer(w)}};
  backend::RunOptions o;
  o.backend = backend::Backend::Tcc;
  std::vector<float> got;
  on_stack(1 << 20, [&] {
    interp::Value r = interp::contiguous(backend::run_graph(root, b, o).at(0).value);
    got.assign(r.data->as<float>(), r.data->as<float>() + 4);
  });
  CHECK(got == want);
}

TEST_CASE("a store through PAD writes only the source's elements, through a RESHAPE of a strided view row-major", "[compiled][setitem]") {
  // tinygrad's t[1:6:2] = 11 on arange(10): SHRINK to [1, 6), PAD one fill element, RESHAPE to
  // (3, 2), column 0: elements 1, 3, 5. And a RESHAPE of a transposed (strided) view: writing
  // 0..5 through RESHAPE(PERMUTE(t as 2x3), 6) puts value k at row-major position k of t^T, so t
  // (2x3) becomes [[0, 2, 4], [1, 3, 5]]. In the second graph the PAD's fill (element 5 of the
  // padded 6) receives 99, which lands nowhere.
  const char* strided = R"(%t = BUFFER float32 () ("t", 10)
%c0 = CONST index () 0
%c1 = CONST index () 1
%c2 = CONST index () 2
%c3 = CONST index () 3
%c6 = CONST index () 6
%s = SHRINK float32 (%t, %c1, %c6)
%p = PAD float32 (%s, %c0, %c1)
%r = RESHAPE float32 (%p, %c3, %c2)
%k = SHRINK float32 (%r, %c0, %c3, %c0, %c1)
%v = CONST float32 () 11.0
%v1 = RESHAPE float32 (%v, %c1, %c1)
%e = EXPAND float32 (%v1, %c3, %c1)
%st = STORE void (%k, %e)
%a = AFTER float32 (%t, %st)
%out = SINK void (%a) ("t",)
)";
  const char* fill = R"(%t = BUFFER float32 () ("t", 5)
%u = BUFFER float32 () ("u", 6)
%c0 = CONST index () 0
%c1 = CONST index () 1
%p = PAD float32 (%t, %c0, %c1)
%st = STORE void (%p, %u)
%a = AFTER float32 (%t, %st)
%out = SINK void (%a) ("t",)
)";
  const char* transposed = R"(%t = BUFFER float32 () ("t", 6)
%v = BUFFER float32 () ("v", 6)
%c2 = CONST index () 2
%c3 = CONST index () 3
%c6 = CONST index () 6
%m = RESHAPE float32 (%t, %c2, %c3)
%q = PERMUTE float32 (%m) (1, 0)
%f = RESHAPE float32 (%q, %c6)
%st = STORE void (%f, %v)
%a = AFTER float32 (%t, %st)
%out = SINK void (%a) ("t",)
)";
  auto buf = [](std::vector<float> v) {
    auto s = std::make_shared<interp::Storage>(dtypes::float32, static_cast<int64_t>(v.size()));
    std::memcpy(s->bytes.data(), v.data(), v.size() * sizeof(float));
    return interp::BufferData{dtypes::float32, s, nullptr};
  };
  auto values = [](const std::vector<interp::Output>& out) {
    const float* p = out.at(0).value.data->as<float>();
    return std::vector<float>(p, p + out[0].value.numel());
  };
  for (const char* be : {"interp", "tcc", "cc"}) {
    INFO("backend " << be);
    backend::RunOptions o;
    o.backend = backend::parse_backend(be);
    interp::BufferMap a{{"t", buf({0, 1, 2, 3, 4, 5, 6, 7, 8, 9})}};
    CHECK(values(backend::run_graph(parse_graph(strided).root, a, o)) == std::vector<float>{0, 11, 2, 11, 4, 11, 6, 7, 8, 9});
    interp::BufferMap b{{"t", buf({0, 0, 0, 0, 0})}, {"u", buf({1, 2, 3, 4, 5, 99})}};
    CHECK(values(backend::run_graph(parse_graph(fill).root, b, o)) == std::vector<float>{1, 2, 3, 4, 5});
    interp::BufferMap c{{"t", buf({9, 9, 9, 9, 9, 9})}, {"v", buf({0, 1, 2, 3, 4, 5})}};
    CHECK(values(backend::run_graph(parse_graph(transposed).root, c, o)) == std::vector<float>{0, 2, 4, 1, 3, 5});
  }
}
