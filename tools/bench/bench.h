// Pieces shared by the modes of `ow bench` (tools/cmd_bench.cpp: options, the steady-state
// table; tools/bench/bench_compiled.cpp: --compile, --first-result, --micro). Benchmarks, not tests.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "interp/interp.h"

namespace ow::cli::bench {

namespace fs = std::filesystem;

struct Timing {
  double median = 0, min = 0;  // seconds
};
Timing summarize(std::vector<double> t);
double percentile(std::vector<double> t, double p);  // nearest-rank, p in [0, 1]
std::string fmt_time(double seconds);
std::string fmt_ratio(double r);  // "12.3x", "0.45x"

struct InputSpec {
  std::string name;
  std::vector<int64_t> shape;
  double scale;  // standard deviation of the normal entries
};
// N(0, scale^2) float32 entries, deterministic from (seed, owner, input name).
interp::Value random_input(const InputSpec& in, const std::string& owner, uint64_t seed);

// rel (a file or a directory) in the first ancestor of the executable or the CWD that has it.
fs::path find_in_repo(const fs::path& rel, bool dir, const std::string& what, const std::string& option);

struct NumpyRun {
  Timing t;
  std::optional<Timing> reuse;    // --micro kinds: the same writing into a preallocated result (out=)
  std::vector<std::string> info;  // the script's other stdout lines (numpy/BLAS versions)
  std::optional<double> first;    // bench_tinygrad.py: seconds to the first result
};
// --numpy-blas (auto, system, openblas, reference) as the directories to put first in numpy's
// library path ("": the system's BLAS).
std::string blas_dirs(const std::string& which);
// Spawns `python script --kind KIND --dir DIR --repeat N --out OUT`; throws ow::Error on failure.
struct Settings;
// max|got - ref| / max|ref| (NaN when one has a NaN where the other has not).
double rel_err(const interp::Value& got, const float* ref);
NumpyRun run_numpy(const Settings& s, const std::string& kind, const fs::path& dir, const fs::path& out);

// Everything the modes share, from the command line.
struct Settings {
  fs::path cases_dir, script, tmp;
  std::string python;
  int repeat = 10;
  uint64_t seed = 0;
  double tolerance = 1e-3;
  std::optional<int> threads;
  std::string blas_dirs;  // LD_LIBRARY_PATH for numpy's child process ("": the system's BLAS)
  std::string coretype;   // OPENBLAS_CORETYPE for numpy's child process ("": OpenBLAS's own choice)
  std::vector<std::string> backends;  // interp, tcc, cc, numpy
  std::vector<std::string> cases;     // --first-result/--compile: empty = every reference case
};
bool has_backend(const Settings& s, const std::string& b);

// "load average: a b c on N cores" (timings on a busy machine are noisy: say how busy it was).
std::string load_line();
// Appends the lines not yet in `all`.
void merge_info(std::vector<std::string>& all, const std::vector<std::string>& more);

// Compiled path (bench_compiled.cpp). Each returns the exit status (1: something WRONG or failed).
// Times run_program(program, copy of inputs, backend) after one warm-up call (compiles):
// `outs` receives the warm-up's outputs.
Timing time_compiled(UOp program, const interp::BufferMap& inputs, const std::string& backend, int repeat, std::vector<interp::Output>& outs);
// The per-run fixed cost of run_program on a compiled backend: rendering every kernel and finding
// it in the compile cache (median of `repeat`; the program must have been compiled already).
double render_and_lookup(UOp program, const std::string& backend, int repeat);
int bench_compile(const Settings& s);
int bench_first_result(const Settings& s);
int bench_micro(const Settings& s);
int bench_grad_memory(const Settings& s);  // bench_grad.cpp
int bench_scaling(const Settings& s);      // bench_scaling.cpp
int bench_tinygrad(const Settings& s);     // bench_tinygrad.cpp

// OPENBLAS_CORETYPE for numpy (bench_blas.cpp): "auto" (the best kernel /proc/cpuinfo's flags
// allow: avx512f SkylakeX, avx2 Haswell), "none" (OpenBLAS's choice) or a core name.
struct CoreType {
  std::string name;  // "": leave it to OpenBLAS
  std::string why;
};
CoreType openblas_coretype(const std::string& which);

}  // namespace ow::cli::bench
