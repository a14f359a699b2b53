// Pieces shared by the modes of `ow bench` (tools/cmd_bench.cpp: options, the steady-state
// table; tools/bench/bench_compiled.cpp: --compile, --first-result; the other modes one file
// each). Benchmarks, not tests.
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "interp/interp.h"

namespace ow::cli::bench {

namespace fs = std::filesystem;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0);

struct Timing {
  double median = 0, min = 0;  // seconds
};
Timing summarize(std::vector<double> t);
double median_or_nan(std::vector<double> t);  // NaN for no samples (a side that failed)
double percentile(std::vector<double> t, double p);  // nearest-rank, p in [0, 1]
std::string fmt_time(double seconds);
std::string fmt_ratio(double r);  // "12.3x", "0.45x"
const char* met(bool target_met);  // "MET", "NOT MET"
// "  WHAT: R.RRx (target <= T.Tx: MET)" for R = big / small, a target line of a mode.
void ratio_line(const std::string& what, double big, double small, double target);
// Rounds of a cc measurement that tcc gets `repeat` of: cc compiles ~100x slower, so at most 3.
int cc_rounds(int repeat);

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
struct Settings;
// max|got - ref| / max|ref| (NaN when one has a NaN where the other has not).
double rel_err(const interp::Value& got, const float* ref);
// Spawns `python script --kind KIND --dir DIR --repeat N --out OUT`; throws ow::Error on failure.
NumpyRun run_numpy(const Settings& s, const std::string& kind, const fs::path& dir, const fs::path& out);

// A child process: how it ended (waitpid's status) and what it wrote to stdout.
struct Captured {
  int status = 0;
  std::string out;
  bool ok() const;                   // exited with status 0
  std::string how_it_ended() const;  // "exit status N", "killed by signal N"
};
// Runs argv without a shell (argv[0] looked up in PATH when it has no '/'), with environment
// `env` ("KEY=VALUE" each), its stdout captured and its stderr ours; throws ow::Error when it
// cannot start.
Captured spawn_and_capture(std::vector<std::string> argv, std::vector<std::string> env);
// This process's environment without the variables named in `drop` or set by `add`, plus `add`.
std::vector<std::string> child_environment(const std::vector<std::string>& drop, const std::vector<std::string>& add);

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
// A string no earlier compile (this process, or cc's disk cache from an earlier one) has seen.
std::string nonce();
std::vector<UOp> kernels_of(UOp program);  // the KERNELs of a lowered program
// The program with every KERNEL renamed NAME_<suffix>: same C, new function names, so the
// compile caches have never seen its sources (bench_compiled.cpp).
UOp rename_kernels(UOp program, const std::string& suffix);
int bench_compile(const Settings& s);
int bench_first_result(const Settings& s);
int bench_micro(const Settings& s);        // bench_micro.cpp
int bench_grad_memory(const Settings& s);  // bench_grad.cpp
int bench_scaling(const Settings& s);      // bench_scaling.cpp
// A scan's compiled cost per step (bench_scaling.cpp): a prepared Program of `program` (a scan of
// `steps` steps) on `tier`, after one warm-up run (`outs`: its outputs); wall seconds per step,
// median of `repeat`. `walked`: the host loop walked on the host instead of compiled into the unit.
double compiled_seconds_per_step(UOp program, int64_t steps, const interp::BufferMap& inputs, const std::string& tier, bool walked, int repeat,
                                 std::vector<interp::Output>& outs);
// A vmapped MLP of `depth` linear + relu layers (bench_scaling.cpp); buffer names end in `tag`.
UOp deep_mlp(int64_t depth, int64_t rows, int64_t width, const std::string& tag);
// cc's first result with every kernel compiled alone vs the whole program in one translation
// unit, disk cache off (bench_compile_modes.cpp); part of --first-result. 1: something WRONG.
int bench_compile_modes(const Settings& s);
int bench_tinygrad(const Settings& s);     // bench_tinygrad.cpp
int bench_depth(const Settings& s);        // bench_depth.cpp

// OW_CACHE_DIR=off while it lives (cc compiles for real); the caller's value back afterwards.
class DiskCacheOff {
 public:
  DiskCacheOff();
  ~DiskCacheOff();
  DiskCacheOff(const DiskCacheOff&) = delete;
  DiskCacheOff& operator=(const DiskCacheOff&) = delete;

 private:
  std::optional<std::string> old_;
};

// OPENBLAS_CORETYPE for numpy (bench_blas.cpp): "auto" (the best kernel /proc/cpuinfo's flags
// allow: avx512f SkylakeX, avx2 Haswell), "none" (OpenBLAS's choice) or a core name.
struct CoreType {
  std::string name;  // "": leave it to OpenBLAS
  std::string why;
};
CoreType openblas_coretype(const std::string& which);

}  // namespace ow::cli::bench
