// The reference cases (reference/cases/*.uop) evaluated by the interpreter and compared with
// expected outputs computed independently in numpy (reference/make_expected.py writes
// reference/expected/<case>/in_<name>.npy and out_<name>.npy).
#include <catch2/catch.hpp>

#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "interp/npy.h"
#include "uop/text.h"

using namespace ow;
using ow::test::source_root;
using ow::test::slurp;
namespace fs = std::filesystem;

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

// Files "<prefix>_<name>.npy" in dir, by name.
std::map<std::string, fs::path> npy_files(const fs::path& dir, const std::string& prefix) {
  std::map<std::string, fs::path> r;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string f = e.path().filename().string();
    if (f.size() > prefix.size() + 5 && f.rfind(prefix + "_", 0) == 0 && f.substr(f.size() - 4) == ".npy")
      r[f.substr(prefix.size() + 1, f.size() - prefix.size() - 5)] = e.path();
  }
  return r;
}

std::vector<std::string> expected_cases(const fs::path& dir) {
  std::vector<std::string> r;
  if (!fs::is_directory(dir)) return r;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory()) r.push_back(e.path().filename().string());
  std::sort(r.begin(), r.end());
  return r;
}

// Tolerance, relative to the largest expected magnitude of the output.
//
// Why a tolerance at all: the interpreter computes in float32 and folds every reduction in index
// order, rounding after each step; make_expected.py computes in float64 and rounds once at the end.
// The difference is therefore float32 accumulation error, bounded by about n * eps * max|term| for
// an n-term sum (eps = 2^-24 ~ 6e-8), plus the rounding carried through chained steps (the 3-step
// matmul scans). With n <= 72 (vmap_convs' 8x3x3 inner sum) and terms no larger than the
// result, that is a few 1e-6 of max|expected| at worst and typically ~1e-7, so 1e-5 leaves margin
// without hiding real errors (a wrong index or a missing term is O(1) of max|expected|).
constexpr double kRelTol = 1e-5;

}  // namespace

TEST_CASE("reference cases match the independent numpy results", "[cases]") {
  const fs::path root = source_root();
  const fs::path expected_dir = root / "reference" / "expected";
  const std::vector<std::string> cases = expected_cases(expected_dir);
  INFO("expected data in " << expected_dir.string());
  REQUIRE(cases.size() >= 21);

  // A case in reference/cases/ without expected data is not tested here; say so.
  for (const auto& e : fs::directory_iterator(root / "reference" / "cases")) {
    if (e.path().extension() != ".uop") continue;
    std::string c = e.path().stem().string();
    bool large = c.find("_big_") != std::string::npos || c.find("_mlp_") != std::string::npos;
    if (!large && !fs::is_directory(expected_dir / c))
      WARN("reference/cases/" << c << ".uop has no reference/expected/" << c << "/ (rerun reference/make_expected.py)");
  }

  for (const std::string& c : cases) {
    DYNAMIC_SECTION("case " << c) {
      const fs::path uop = root / "reference" / "cases" / (c + ".uop");
      const fs::path dir = expected_dir / c;
      REQUIRE(fs::exists(uop));
      ParsedGraph g = parse_graph(slurp(uop), uop.string());
      REQUIRE_NOTHROW(verify_parsed(g));

      interp::BufferMap buffers;
      for (const auto& [name, path] : npy_files(dir, "in")) {
        interp::NpyArray a = interp::load_npy(path.string());
        buffers[name] = interp::BufferData{a.dtype, a.data, nullptr};
      }
      const std::map<std::string, fs::path> expected = npy_files(dir, "out");
      REQUIRE(!expected.empty());

      std::vector<interp::Output> outs;
      try {
        outs = interp::run(g.root, buffers);
      } catch (const std::exception& e) {
        FAIL("interpreter failed on " << c << ": " << e.what());
      }

      // Every output has expected data and vice versa.
      std::set<std::string> got_names;
      for (const interp::Output& o : outs) got_names.insert(o.name);
      for (const auto& [name, path] : expected) {
        INFO("case " << c);
        CHECK(got_names.count(name) == 1);
      }

      for (const interp::Output& o : outs) {
        INFO("case " << c << ", output '" << o.name << "'");
        auto it = expected.find(o.name);
        CHECK(it != expected.end());
        if (it == expected.end()) continue;
        interp::NpyArray e = interp::load_npy(it->second.string());
        REQUIRE(e.dtype == dtypes::float32);
        CHECK(o.value.dtype == dtypes::float32);
        // Outputs are row-major and contiguous; shapes must agree exactly (a (3,10) output
        // against a (3,1,10) expectation is a real difference, not something to reshape away).
        INFO("interpreter shape " << shape_text(o.value.shape()) << ", expected " << shape_text(e.shape));
        CHECK(o.value.shape() == e.shape);
        if (o.value.shape() != e.shape) continue;
        REQUIRE(o.value.numel() == e.data->size);

        const float* want = e.data->as<float>();
        double max_abs_expected = 0, max_diff = 0;
        int64_t worst = 0;
        for (int64_t i = 0; i < o.value.numel(); ++i) {
          double a = interp::get_element(o.value, i), b = want[i];
          max_abs_expected = std::max(max_abs_expected, std::fabs(b));
          double diff = std::fabs(a - b);
          if (!(diff <= max_diff)) {  // also catches NaN
            max_diff = std::isnan(diff) ? INFINITY : diff;
            worst = i;
          }
        }
        double rel = max_abs_expected > 0 ? max_diff / max_abs_expected : max_diff;
        char line[256];
        std::snprintf(line, sizeof line, "%-28s %-10s max|diff| %.3g  relative %.3g  (tol %.0e)", c.c_str(), o.name.c_str(),
                      max_diff, rel, kRelTol);
        std::cout << line << "\n";
        INFO(line);
        INFO("worst element at " << shape_text(interp::unflatten(e.shape, worst)) << ": interpreter "
                                 << interp::get_element(o.value, worst) << ", expected " << want[worst]);
        CHECK(max_diff <= kRelTol * max_abs_expected);
      }
    }
  }
}
