// ow bench: times the reference interpreter and the compiled path (tcc, cc) against numpy doing
// the same math on the same data. A benchmark, not a test: it is never registered with meson test.
//
// Default mode (steady state): for each case it generates the inputs (float32, deterministic from
// --seed), writes them as .npy to a temporary directory, times interp::run in-process (one warm-up,
// then median and min of --repeat runs), lowers the graph once and times run_program on tcc and cc
// (the warm-up run compiles; the timed runs get fresh copies of the inputs), then spawns
// tools/bench/bench_numpy.py once, which times the natural numpy version on the same .npy files and saves
// its result. The compiled outputs must equal the interpreter's bit for bit; numpy's must be within
// --tolerance. The other modes are in bench/ (--compile and --first-result in bench_compiled.cpp,
// the others a file each); what every mode shares (inputs, timing, child processes) in bench/common.cpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <regex>

#include "backends/program.h"
#include "backends/tcc/vector_loops.h"
#include "bench/bench.h"
#include "cli.h"
#include "lower/lower.h"
#include "interp/interp.h"
#include "interp/npy.h"
#include "uop/args.h"
#include "uop/error.h"

namespace ow::cli::bench {

namespace {

// ---------- cases ----------

struct CaseSpec {
  std::string name;
  std::string kind;  // bench_numpy.py --kind
  std::vector<InputSpec> inputs;
};

// scan_big_SxD: vec (1, D), mats (S, D, D); out[k] = vec @ M0 @ ... @ Mk.
// vmap_mlp_RxD: img (R, D), w1, w2 (D, D); out = relu(relu(img @ w1.T) @ w2.T).
// Matrices have N(0, 1/D) entries so that products keep values O(1).
CaseSpec case_spec(const std::string& name) {
  std::smatch m;
  static const std::regex scan_re("scan_big_([0-9]+)x([0-9]+)"), mlp_re("vmap_mlp_([0-9]+)x([0-9]+)");
  auto dims = [&] { return std::pair<int64_t, int64_t>{std::stoll(m[1]), std::stoll(m[2])}; };
  if (std::regex_match(name, m, scan_re)) {
    auto [s, d] = dims();
    return {name, "scan", {{"vec", {1, d}, 1.0}, {"mats", {s, d, d}, 1.0 / std::sqrt(double(d))}}};
  }
  if (std::regex_match(name, m, mlp_re)) {
    auto [r, d] = dims();
    double w = 1.0 / std::sqrt(double(d));
    return {name, "mlp", {{"img", {r, d}, 1.0}, {"w1", {d, d}, w}, {"w2", {d, d}, w}}};
  }
  return {name, "", {}};  // no numpy recipe: random inputs for the graph's buffers (fill_random_inputs)
}

// numpy needs a recipe (the same math written for numpy); the other backends run any case.
void require_recipe(const std::string& name) {
  if (case_spec(name).kind.empty()) throw Error("ow bench: no numpy recipe for case '" + name + "' (known: scan_big_SxD, vmap_mlp_RxD; without numpy: --backends interp,tcc,cc)");
}

const char* kDefaultCases = "scan_big_64x128,vmap_mlp_32x128,scan_big_16x256";

// --micro, and the steady-state table with numpy among its backends, spawn the numpy script.
bool needs_numpy(const Settings& s, const std::string& mode) { return mode == "micro" || (mode.empty() && has_backend(s, "numpy")); }

}  // namespace

// ---------- the steady-state table: one case on every backend ----------

namespace {

struct Result {
  std::string backend;
  Timing t;
  bool timed = false;
  std::optional<double> overhead;  // compiled: what a one-shot run_program adds (render + cache lookup)
  std::string check;  // "reference", "bit-exact", "rel err 1e-7", "WRONG ...", or why it is missing
  bool bad = false;   // WRONG or failed
};

struct Row {
  std::string name;
  std::vector<Result> results;  // in --backends order
};

// The case's inputs: numpy's recipe (also written as .npy for it to read) or random data for
// the graph's buffers; with `init_outputs` the buffers the graph writes too, zero-filled.
interp::BufferMap case_inputs(const CaseSpec& spec, UOp root, const fs::path& dir, const Settings& s, bool init_outputs) {
  interp::BufferMap inputs;
  for (const InputSpec& in : spec.inputs) {
    interp::Value v = random_input(in, spec.name, s.seed);
    interp::save_npy((dir / (in.name + ".npy")).string(), v);
    inputs[in.name] = interp::BufferData{dtypes::float32, v.data, nullptr};
  }
  if (spec.kind.empty()) fill_random_inputs(root, inputs, s.seed);
  if (init_outputs)  // zero-filled instead of uninitialized: no poison masks to track
    for (UOp u : number_graph(root).order)
      if (u->op == Ops::BUFFER) {
        const std::string& bname = buffer_name(u);
        if (!inputs.count(bname)) inputs[bname] = interp::BufferData{u->dtype, std::make_shared<interp::Storage>(u->dtype, buffer_size(u)), nullptr};
      }
  return inputs;
}

// The interpreter's output (the reference of every check) and, when --backends has interp, its
// timing (1 warm-up + --repeat runs).
interp::Value interpreter_reference(const CaseSpec& spec, const ParsedGraph& g, const interp::BufferMap& inputs, const Settings& s, bool init_outputs,
                                    Timing& timing) {
  bool time_interp = has_backend(s, "interp");
  std::cerr << "[bench] " << spec.name << ": interpreter, " << (time_interp ? "1 warm-up + " + std::to_string(s.repeat) + " runs" : "1 run (reference)") << std::flush;
  interp::Options o;
  o.describe = [&](UOp u) {
    auto it = g.where.find(u.get());
    return it == g.where.end() ? std::string(op_name(u->op)) : g.file + ":" + std::to_string(it->second.line) + ": " + it->second.text;
  };
  // Every run gets copies of the inputs (a graph may write them in place: the compiled runs must
  // start from the same data), the graph's outputs unallocated, or zeroed in fresh storage.
  auto fresh = [&] {
    interp::BufferMap b = copy_buffers(inputs);
    if (init_outputs)
      for (auto& [bname, d] : b)
        if (std::none_of(spec.inputs.begin(), spec.inputs.end(),
                         [&, &bname = bname](const InputSpec& in) { return in.name == bname; }))  // clang < 16
          d.data = std::make_shared<interp::Storage>(d.dtype, d.data->size);
    return b;
  };
  interp::BufferMap first = fresh();
  std::vector<interp::Output> outs = interp::run(g.root, first, o);
  std::vector<double> times;
  for (int i = 0; time_interp && i < s.repeat; ++i) {
    interp::BufferMap b = fresh();  // not timed
    auto t0 = Clock::now();
    outs = interp::run(g.root, b, o);
    times.push_back(seconds_since(t0));
  }
  if (outs.empty()) throw Error("ow bench: " + g.file + " has no outputs to compare");
  timing = time_interp ? summarize(times) : Timing{};
  std::cerr << (time_interp ? ": median " + fmt_time(timing.median) : std::string()) << "\n";
  return outs[0].value;
}

// tcc or cc: lowered once, a prepared Program timed, its output bit for bit against `ref`.
Result compiled_result(const std::string& b, const std::string& name, UOp root, const interp::BufferMap& inputs, const interp::Value& ref, const Settings& s) {
  Result r{b, {}, false, {}, "", false};
  std::cerr << "[bench] " << name << ": " << b << ", lower + 1 warm-up (compiles) + " << s.repeat << " runs" << std::flush;
  try {
    UOp program = lower::lower(root);
    std::vector<interp::Output> got;
    r.t = time_compiled(program, inputs, b, s.repeat, got), r.timed = true;
    r.overhead = render_and_lookup(program, b, s.repeat);
    std::cerr << ": median " << fmt_time(r.t.median) << "\n";
    std::optional<Difference> d = got.empty() ? std::optional<Difference>(Difference{-1, 0, 0}) : first_difference(ref, got[0].value);
    if (!d) r.check = "bit-exact";
    else {
      char buf[160];
      if (d->index < 0) std::snprintf(buf, sizeof buf, "WRONG: output shape differs");
      else std::snprintf(buf, sizeof buf, "WRONG: element %lld interp %.9g %s %.9g", (long long)d->index, d->a, b.c_str(), d->b);
      r.check = buf, r.bad = true;
    }
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error& e) {
    std::cerr << ": failed\n" << e.what() << "\n";
    r.check = "failed: " + std::string(e.what()).substr(0, 60), r.bad = true;
  }
  return r;
}

// numpy's recipe on the .npy inputs in `dir`, its output within --tolerance of `ref`.
Result numpy_result(const CaseSpec& spec, const fs::path& dir, const interp::Value& ref, const Settings& s, std::vector<std::string>& numpy_info) {
  Result r{"numpy", {}, false, {}, "", false};
  std::cerr << "[bench] " << spec.name << ": numpy (" << s.python << "), 1 warm-up + " << s.repeat << " runs" << std::flush;
  fs::path ref_path = dir / "numpy_out.npy";
  try {
    NumpyRun nr = run_numpy(s, spec.kind, dir, ref_path);
    r.t = nr.t, r.timed = true;
    std::cerr << ": median " << fmt_time(nr.t.median) << "\n";
    merge_info(numpy_info, nr.info);
    interp::NpyArray np = interp::load_npy(ref_path.string());
    if (np.data->size != ref.numel()) {
      r.check = "WRONG: numpy gave " + std::to_string(np.data->size) + " elements, the interpreter " + std::to_string(ref.numel()), r.bad = true;
    } else {
      double e = rel_err(ref, np.data->as<float>());
      char buf[64];
      bool wrong = !(e <= s.tolerance);
      std::snprintf(buf, sizeof buf, "%srel err %.2e", wrong ? "WRONG: " : "", e);
      r.check = buf, r.bad = wrong;
    }
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error& e) {
    std::cerr << ": failed\n" << e.what() << "\n";
    r.check = "numpy failed", r.bad = true;
  }
  return r;
}

Row bench_case(const std::string& name, const Settings& s, bool init_outputs, std::vector<std::string>& numpy_info) {
  CaseSpec spec = case_spec(name);
  ParsedGraph g = load_graph((s.cases_dir / (name + ".uop")).string());
  fs::path dir = s.tmp / name;
  fs::create_directories(dir);
  interp::BufferMap inputs = case_inputs(spec, g.root, dir, s, init_outputs);
  Timing interp_timing;
  const interp::Value ref = interpreter_reference(spec, g, inputs, s, init_outputs, interp_timing);
  Row row{name, {}};
  for (const std::string& b : s.backends) {
    if (b == "interp") row.results.push_back({b, interp_timing, true, {}, "reference", false});
    else if (b == "tcc" || b == "cc") row.results.push_back(compiled_result(b, name, g.root, inputs, ref, s));
    else if (b == "numpy") row.results.push_back(numpy_result(spec, dir, ref, s, numpy_info));
  }
  return row;
}

void print_table(const std::vector<Row>& rows, const Settings& s) {
  std::printf("steady state: a prepared backend::Program / interp::run / numpy on the same inputs, 1 warm-up + %d runs (compile excluded)\n", s.repeat);
  std::printf("  one-shot +: what calling run_program (no Program kept) adds per run: rendering the kernels and finding them in the compile cache\n");
  std::printf("%-18s %-7s %12s %12s %10s %14s  %s\n", "case", "backend", "median", "min", "vs numpy", "one-shot +", "check (compiled: bit for bit vs interp; numpy: max|diff|/max|ref|)");
  for (const Row& row : rows) {
    const Result* np = nullptr;
    for (const Result& r : row.results)
      if (r.backend == "numpy" && r.timed) np = &r;
    for (size_t i = 0; i < row.results.size(); ++i) {
      const Result& r = row.results[i];
      std::string ratio = np && r.timed && np->t.median > 0 ? fmt_ratio(r.t.median / np->t.median) : "-";
      std::printf("%-18s %-7s %12s %12s %10s %14s  %s\n", i ? "" : row.name.c_str(), r.backend.c_str(), r.timed ? fmt_time(r.t.median).c_str() : "-",
                  r.timed ? fmt_time(r.t.min).c_str() : "-", ratio.c_str(), r.overhead ? fmt_time(*r.overhead).c_str() : "", r.check.c_str());
    }
  }
  // The ratios the issue asks for, one line per case.
  if (has_backend(s, "numpy")) {
    std::printf("\n%-18s %10s %10s %10s %10s\n", "case", "interp/np", "tcc/np", "cc/np", "tcc/cc");
    for (const Row& row : rows) {
      auto med = [&](const std::string& b) -> std::optional<double> {
        for (const Result& r : row.results)
          if (r.backend == b && r.timed && r.t.median > 0) return r.t.median;
        return std::nullopt;
      };
      auto q = [&](const std::string& a, const std::string& b) { return med(a) && med(b) ? fmt_ratio(*med(a) / *med(b)) : std::string("-"); };
      std::printf("%-18s %10s %10s %10s %10s\n", row.name.c_str(), q("interp", "numpy").c_str(), q("tcc", "numpy").c_str(), q("cc", "numpy").c_str(), q("tcc", "cc").c_str());
    }
    // The targets for the cases the issues name: cc within 1.2x of numpy with its best BLAS kernel
    // (issue 18), tcc within 10x (issue 4).
    for (const Row& row : rows) {
      if (row.name != "scan_big_64x128" && row.name != "vmap_mlp_32x128") continue;
      for (auto [b, limit] : {std::pair<const char*, double>{"cc", 1.2}, {"tcc", 10.0}}) {
        const Result *x = nullptr, *np = nullptr;
        for (const Result& r : row.results) {
          if (r.backend == b && r.timed) x = &r;
          if (r.backend == "numpy" && r.timed) np = &r;
        }
        if (x && np && np->t.median > 0)
          std::printf("target %s %s within %gx of numpy: %s (%s)\n", row.name.c_str(), b, limit, met(x->t.median / np->t.median <= limit),
                      fmt_ratio(x->t.median / np->t.median).c_str());
      }
    }
  }
}

int steady_state(const Settings& s, bool init_outputs) {
  std::vector<Row> rows;
  std::vector<std::string> info;
  for (const std::string& n : s.cases) rows.push_back(bench_case(n, s, init_outputs, info));
  print_table(rows, s);
  for (const std::string& l : info) std::printf("%s\n", l.c_str());
  bool failed = false;
  for (const Row& r : rows)
    for (const Result& x : r.results) failed |= x.bad;
  if (failed) std::printf("WRONG or failed: see the check column (numpy tolerance: --tolerance %g)\n", s.tolerance);
  return failed ? 1 : 0;
}

const char* kHelp = R"(modes (one per run; each prints the load average and core count, and tables with ratios):
  (default)       steady state on --cases: interp::run, run_program on tcc and cc (lowered and
                  compiled once, in a warm-up run that is not timed) and numpy, median and min of
                  --repeat runs on fresh copies of the inputs; compiled outputs must equal the
                  interpreter's bit for bit, numpy's within --tolerance (else WRONG, exit 1).
  --compile       per-kernel compile latency: every KERNEL of every reference case (lowered) is
                  rendered and compiled uncached (a unique comment defeats the compile cache) with
                  tcc and cc; median/p90 per compiler and cc/tcc. Target: tcc median < 1 ms, >= 30x below cc.
  --first-result  time to first result per reference case, in process, parse excluded: lower +
                  render + compile (uncached: kernels get unique names) + run, on tcc and cc, with
                  the split; per case and the median. Target: scan_with_assign on tcc < 5 ms.
  --micro         a*b+1 on 16M float32 and a 512x512x512 float32 matmul (REDUCE_AXIS of an
                  expanded product) on tcc, cc and numpy (a*b+1, a@b), steady state (compile
                  excluded), median of --repeat; prints numpy's BLAS. Targets: a*b+1 cc <= 1.3x
                  numpy, tcc <= 3x; matmul cc >= 50% of numpy's speed.
  --grad-memory   the gradient of a scan h = sin(h * w + x[i]) of N = 100, 1000, 10000 steps
                  (state 16 float64): the bytes its expansion adds (tapes, working copies,
                  adjoints: O(N*S)) and the time per step on interp, tcc and cc (bit for bit).
  --scaling       costs per unit of work: the interpreter's time per step of an assign scan
                  (D = 16) at N = 100, 1000, 10000, and lowering's time per layer of a vmapped
                  MLP at depth 4, 16, 64 (taking turns), each with the largest/smallest ratio
                  (target <= 1.3x); the thread's CPU time (a shared machine preempts long runs
                  more), wall time beside.
  --depth         a vmapped MLP (batch 8, width 64) of depth 4, 16, 64 with the gradient of every
                  weight: kernels, the cc unit's functions and bytes, and per layer lowering, the
                  interpreter, tcc's and cc's cold first result (bit for bit against the
                  interpreter); targets: kernels grow at most 1.3x faster than depth, per-layer
                  costs within 1.3x (cc's first result 2x) of depth 4. Then a 10,000-step assign
                  scan's first result with `out` given no data against `out` given (target <= 1.2x).
  --tinygrad      tinygrad (../shared/tinygrad, $OW_TINYGRAD or an installed one) against tcc and
                  cc on the same graphs and inputs (default: scan_with_assign, scan_big_16x256,
                  scan_big_64x128, vmap_mlp_32x128): first result (tinygrad in process, its
                  kernel disk cache off; ow as a whole `ow run` process, compile cache cold) and
                  steady state; tinygrad's output checked against the interpreter's.
)";

void add_bench_options(po::options_description& opts) {
  opts.add_options()("cases", po::value<std::string>(),
                     (std::string("comma-separated case names (reference/cases/NAME.uop); default ") + kDefaultCases +
                      " (steady state), every reference case (--compile, --first-result)").c_str())(
      "backends", po::value<std::string>()->default_value("interp,tcc,cc,numpy"), "which of interp,tcc,cc,numpy to time (--first-result: its tcc and cc)")(
      "compile", "mode: per-kernel compile latency, tcc vs cc")("first-result", "mode: time to first result per reference case, tcc and cc")(
      "micro", "mode: a*b+1 (16M float32) and 512^3 float32 matmul, tcc/cc vs numpy")(
      "grad-memory", "mode: extra memory and time per step of a scan's gradient, N = 100, 1000, 10000")(
      "scaling", "mode: interpreter time per scan step (N = 100..10000) and lowering time per MLP layer (depth 4..64)")(
      "depth", "mode: per-layer costs of an MLP with every weight's gradient at depth 4, 16, 64")(
      "tinygrad", "mode: first result and steady state of tinygrad, tcc and cc on the same graphs and inputs")(
      "repeat", po::value<int>()->default_value(10), "timed runs per side (after one warm-up); the median and min are reported")(
      "numpy", po::value<std::string>()->default_value("/usr/bin/python3"), "python interpreter with numpy")(
      "cases-dir", po::value<std::string>(), "directory of the .uop cases (default: reference/cases found above the executable or CWD)")(
      "script", po::value<std::string>(), "the numpy script (default: tools/bench/bench_numpy.py found the same way)")(
      "seed", po::value<uint64_t>()->default_value(0), "seed of the random inputs")(
      "tolerance", po::value<double>()->default_value(1e-3), "max|diff|/max|ref| above which numpy's output is flagged WRONG")(
      "numpy-threads", po::value<int>(), "set OPENBLAS/OMP/MKL_NUM_THREADS for numpy (default: its own choice)")(
      "numpy-blas", po::value<std::string>()->default_value("auto"),
      "the BLAS numpy uses: openblas, reference (netlib), system (the alternatives link), auto (openblas if installed, else system)")(
      "openblas-coretype", po::value<std::string>()->default_value("auto"),
      "OPENBLAS_CORETYPE for numpy: auto (the best kernel this CPU's flags allow: SkylakeX with avx512f, Haswell with avx2), none (OpenBLAS's own choice) or a name")(
      "interp-only", "time only the interpreter (same as --backends interp; for profiling)")(
      "init-outputs", "interpreter: bind the buffers the graph writes zero-filled instead of leaving them uninitialized (no poison tracking)")(
      "keep", "keep the temporary directory of .npy inputs and outputs");
}

const char* const kModes[] = {"compile", "first-result", "micro", "grad-memory", "scaling", "depth", "tinygrad"};

// The mode named on the command line ("" for the steady-state table); at most one.
std::string chosen_mode(const po::variables_map& vm) {
  std::string mode;
  for (const char* m : kModes)
    if (vm.count(m)) {
      if (!mode.empty()) throw Error("ow bench: --compile, --first-result, --micro, --grad-memory, --scaling, --depth and --tinygrad are separate modes: pick one");
      mode = m;
    }
  return mode;
}

// The settings from the options (the temporary directory aside); `core` says which OpenBLAS
// kernel numpy gets, and why.
Settings settings_from(const po::variables_map& vm, const std::string& mode, CoreType& core) {
  Settings s;
  s.repeat = vm["repeat"].as<int>();
  if (s.repeat < 1) throw Error("ow bench: --repeat must be at least 1");
  s.python = vm["numpy"].as<std::string>();
  s.seed = vm["seed"].as<uint64_t>();
  s.tolerance = vm["tolerance"].as<double>();
  if (vm.count("numpy-threads")) s.threads = vm["numpy-threads"].as<int>();
  s.blas_dirs = blas_dirs(vm["numpy-blas"].as<std::string>());
  core = openblas_coretype(vm["openblas-coretype"].as<std::string>());
  s.coretype = core.name;
  s.backends = split_commas(vm.count("interp-only") ? std::string("interp") : vm["backends"].as<std::string>());
  for (const std::string& b : s.backends)
    if (b != "interp" && b != "tcc" && b != "cc" && b != "numpy") throw Error("ow bench: unknown backend '" + b + "' (known: interp, tcc, cc, numpy)");
  if (s.backends.empty()) throw Error("ow bench: --backends names no backend");
  s.cases_dir = vm.count("cases-dir") ? fs::path(vm["cases-dir"].as<std::string>()) : find_in_repo("reference/cases", true, "the reference cases", "--cases-dir");
  if (needs_numpy(s, mode))
    s.script = vm.count("script") ? fs::path(vm["script"].as<std::string>()) : find_in_repo("tools/bench/bench_numpy.py", false, "the numpy script", "--script");
  if (vm.count("cases")) {
    s.cases = split_commas(vm["cases"].as<std::string>());
    if (s.cases.empty()) throw Error("ow bench: --cases names no case");
  } else if (mode.empty()) {
    s.cases = split_commas(kDefaultCases);
  }
  if (mode.empty() && has_backend(s, "numpy"))
    for (const std::string& n : s.cases) require_recipe(n);  // fail early on a case numpy cannot run
  return s;
}

// A fresh directory under the system's temporary one, removed at the end unless kept.
class TempDir {
 public:
  explicit TempDir(bool keep) : keep_(keep) {
    std::string tmpl = (fs::temp_directory_path() / "ow-bench-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw Error(std::string("ow bench: cannot create a temporary directory: ") + std::strerror(errno));
    dir_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (keep_) std::cerr << "[bench] inputs and outputs kept in " << dir_.string() << "\n";
    else fs::remove_all(dir_, ec);
  }
  const fs::path& path() const { return dir_; }

 private:
  fs::path dir_;
  bool keep_;
};

int run_mode(const std::string& mode, const Settings& s, bool init_outputs) {
  if (mode == "compile") return bench_compile(s);
  if (mode == "first-result") return bench_first_result(s);
  if (mode == "micro") return bench_micro(s);
  if (mode == "grad-memory") return bench_grad_memory(s);
  if (mode == "scaling") return bench_scaling(s);
  if (mode == "depth") return bench_depth(s);
  if (mode == "tinygrad") return bench_tinygrad(s);
  return steady_state(s, init_outputs);
}

}  // namespace

int cmd_bench(const Args& args) {
  po::options_description opts("options");
  add_bench_options(opts);
  po::positional_options_description pos;
  po::variables_map vm;
  if (!parse_options("bench", "[--compile | --first-result | --micro | --grad-memory | --scaling | --depth | --tinygrad] [--cases A,B,...] [--backends interp,tcc,cc,numpy] [--repeat N] [--numpy PYTHON]", opts, pos,
                     args, vm)) {
    std::cout << "\n" << kHelp;
    return 0;
  }
  std::string mode = chosen_mode(vm);
  CoreType core;
  Settings s = settings_from(vm, mode, core);
  TempDir tmp(vm.count("keep") > 0);
  s.tmp = tmp.path();

  std::printf("ow bench: %s\n", load_line().c_str());
  std::printf("tcc's vector loops: the %s build (OW_VECTOR_ISA picks another)\n", backend::vector_loops().isa);
  if (needs_numpy(s, mode)) std::printf("numpy's OpenBLAS kernel: %s (%s; bench_numpy.py says which ran)\n", core.name.empty() ? "not set" : core.name.c_str(), core.why.c_str());
  std::fflush(stdout);
  int rc = run_mode(mode, s, vm.count("init-outputs") > 0);
  std::printf("%s (at the end)\n", load_line().c_str());
  return rc;
}

}  // namespace ow::cli::bench

namespace ow::cli {
std::vector<Command> bench_commands() {
  return {{"bench", "time the interpreter and the compiled path (tcc, cc) against numpy; --compile, --first-result, --micro", bench::cmd_bench}};
}
}  // namespace ow::cli
