// `ow bench`'s new options, through the binary. Nothing here is timed: the runs are as short as
// the modes allow and only what they print is checked.
#include "child_process.h"
#include "skip.h"

#include <filesystem>
#include <regex>

TEST_CASE("ow bench --scaling prints the sweeps and the compiled scan with their ratios", "[cli][bench]") {
  Result r = run_ow({"bench", "--scaling", "--repeat", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("  per step N=10000 / N=100: ") != std::string::npos);
  CHECK(r.out.find("  per layer depth 64 / depth 4: ") != std::string::npos);
  CHECK(r.out.find("      64      786      1 ") != std::string::npos);  // the issue's depth-64 MLP: 786 nodes
  CHECK(r.out.find("  numpy / tcc per step: ") != std::string::npos);  // the compiled scan at N = 10000
  CHECK(r.out.find("  numpy / cc per step: ") != std::string::npos);
  CHECK(r.out.find("  bit-exact\n") != std::string::npos);  // its output is the interpreter's
}

TEST_CASE("ow bench --depth prints the per-layer costs at depth 4, 16, 64, checked, and a line per target", "[cli][bench][depth]") {
  Result r = run_ow({"bench", "--depth", "--repeat", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  // depth, nodes (the MLP and one GRADIENT per weight), kernels, ...: every depth's outputs the interpreter's
  for (const char* row : {"     4       72 ", "    16      228 ", "    64      852 "}) {
    size_t at = r.out.find(row);
    REQUIRE(at != std::string::npos);
    CHECK(r.out.substr(at, r.out.find('\n', at) - at).find("  bit-exact") != std::string::npos);
  }
  for (const char* target : {"  kernels: ", "  lowering per layer: ", "  interpreter per layer: ", "  tcc first result per layer: ", "  cc cold first result per layer: ",
                             "  tcc: out missing / out given: ", "  cc: out missing / out given: "}) {
    size_t at = r.out.find(target);
    REQUIRE(at != std::string::npos);
    std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    CHECK(std::regex_search(line, std::regex(R"(\(target <= [0-9.]+x: (MET|NOT MET)\)$)")));
  }
}

TEST_CASE("ow bench: a bad --openblas-coretype and two modes at once are refused", "[cli][bench]") {
  Result bad = run_ow({"bench", "--scaling", "--openblas-coretype", "a;b"});
  CHECK(bad.rc == 1);
  CHECK(bad.err == "ow bench: --openblas-coretype takes auto, none or a core name such as SkylakeX, not 'a;b'\n");
  Result modes = run_ow({"bench", "--scaling", "--micro"});
  CHECK(modes.err == "ow bench: --compile, --first-result, --micro, --grad-memory, --scaling, --depth and --tinygrad are separate modes: pick one\n");
}

TEST_CASE("ow bench: numpy's OpenBLAS kernel is chosen, overridable, and reported as it ran", "[cli][bench][openblas]") {
  bool openblas = false;
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu/openblas-pthread", "/usr/lib/aarch64-linux-gnu/openblas-pthread"}) openblas = openblas || std::filesystem::exists(dir);
  // tools/setup.sh installs it; without it there is no kernel to choose (meson test cli-openblas)
  OW_SKIP_UNLESS(openblas, "OW_REQUIRE_OPENBLAS", "numpy's OpenBLAS (libopenblas0-pthread) is not installed");
  Result r = run_ow({"bench", "--cases", "scan_big_16x256", "--backends", "numpy", "--repeat", "1", "--numpy-blas", "openblas", "--openblas-coretype", "Haswell"});
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("numpy's OpenBLAS kernel: Haswell (--openblas-coretype Haswell;") != std::string::npos);
  CHECK(r.out.find("openblas core: Haswell (OpenBLAS ") != std::string::npos);
  CHECK(r.out.find("env: OPENBLAS_CORETYPE=Haswell") != std::string::npos);
}

TEST_CASE("ow bench runs any reference case on the engines; numpy only those it has a recipe for", "[cli][bench]") {
  Result bad = run_ow({"bench", "--cases", "vmap_convs", "--backends", "interp,numpy"});
  CHECK(bad.rc == 1);
  CHECK(bad.err == "ow bench: no numpy recipe for case 'vmap_convs' (known: scan_big_SxD, vmap_mlp_RxD; without numpy: --backends interp,tcc,cc)\n");
  Result r = run_ow({"bench", "--cases", "vmap_convs", "--backends", "interp,tcc", "--repeat", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("vmap_convs         interp") != std::string::npos);
  std::smatch m;
  CHECK(std::regex_search(r.out, m, std::regex("\n                   tcc .* bit-exact\n")));  // random inputs, checked against the interpreter
}

TEST_CASE("ow bench: a case that writes one of its inputs is checked against the interpreter on the same inputs", "[cli][bench]") {
  // simple_range stores acc0 += a[i] into its input acc0: the interpreter's reference run must not
  // change the inputs the compiled runs then get (it did: every such case was reported WRONG).
  Result r = run_ow({"bench", "--cases", "simple_range", "--backends", "tcc", "--repeat", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("WRONG") == std::string::npos);
  std::smatch m;
  CHECK(std::regex_search(r.out, m, std::regex("\nsimple_range +tcc .* bit-exact\n")));
  // Microseconds to three significant digits (0.1 us, the old resolution, was 15% of a 0.7 us run;
  // under sanitizers the same run takes tens of microseconds).
  CHECK(std::regex_search(r.out, m, std::regex("\nsimple_range +tcc +([0-9]\\.[0-9]{3}|[1-9][0-9]\\.[0-9]{2}|[1-9][0-9]{2}\\.[0-9]) us ")));
}
