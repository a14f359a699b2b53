// ow bench: times the reference interpreter against numpy doing the same math on the same data.
// A benchmark, not a test: it is never registered with meson test.
//
// For each case it generates the inputs (float32, deterministic from --seed), writes them as
// .npy to a temporary directory, times interp::run in-process (one warm-up, then median and min
// of --repeat runs), then spawns tools/bench_numpy.py once, which times the natural numpy version
// on the same .npy files and saves its result, against which the interpreter's output is checked.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "cli.h"
#include "interp/interp.h"
#include "interp/npy.h"
#include "uop/error.h"

extern char** environ;

namespace ow::cli {

namespace {

namespace fs = std::filesystem;

// ---------- cases ----------

struct InputSpec {
  std::string name;
  std::vector<int64_t> shape;
  double scale;  // standard deviation of the normal entries
};

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
  throw Error("ow bench: no benchmark recipe for case '" + name + "' (known: scan_big_SxD, vmap_mlp_RxD)");
}

const char* kDefaultCases = "scan_big_64x128,scan_big_16x256,vmap_mlp_32x128";

// ---------- deterministic inputs ----------

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// N(0, scale^2) float32 entries via Box-Muller, from a stream seeded by (seed, case, input).
interp::Value random_input(const InputSpec& in, const std::string& case_name, uint64_t seed) {
  interp::Value v = interp::alloc(dtypes::float32, in.shape);
  float* p = v.data->as<float>();
  uint64_t s = seed ^ fnv1a(case_name + "/" + in.name);
  auto uniform = [&] { return (double(splitmix64(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0); };  // (0, 1)
  int64_t n = v.numel();
  for (int64_t i = 0; i < n; i += 2) {
    double r = std::sqrt(-2.0 * std::log(uniform())), t = 2.0 * M_PI * uniform();
    p[i] = float(in.scale * r * std::cos(t));
    if (i + 1 < n) p[i + 1] = float(in.scale * r * std::sin(t));
  }
  return v;
}

// ---------- locating the repository ----------

std::vector<fs::path> search_roots() {
  std::vector<fs::path> roots;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (fs::path p = exe.parent_path(); !p.empty(); p = p.parent_path()) {
      roots.push_back(p);
      if (p == p.root_path()) break;
    }
  fs::path cwd = fs::current_path(ec);
  if (!ec)
    for (fs::path p = cwd; !p.empty(); p = p.parent_path()) {
      roots.push_back(p);
      if (p == p.root_path()) break;
    }
  return roots;
}

fs::path find_in_repo(const fs::path& rel, bool dir, const std::string& what, const std::string& option) {
  for (const fs::path& r : search_roots()) {
    fs::path c = r / rel;
    std::error_code ec;
    if (dir ? fs::is_directory(c, ec) : fs::is_regular_file(c, ec)) return c;
  }
  throw Error("ow bench: cannot find " + what + " (" + rel.string() + ") above the executable or the current directory; pass " + option);
}

// ---------- timing ----------

struct Timing {
  double median = 0, min = 0;  // seconds
};

Timing summarize(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  size_t n = t.size();
  return {n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]), t.front()};
}

std::string fmt_time(double s) {
  char buf[32];
  if (s >= 1) std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (s >= 1e-3) std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  return buf;
}

// ---------- the numpy subprocess ----------

struct NumpyRun {
  Timing t;
  std::vector<std::string> info;  // the script's other stdout lines (numpy/BLAS versions)
};

NumpyRun run_numpy(const std::string& python, const std::string& script, const std::string& kind, const fs::path& dir, int repeat,
                   const fs::path& out, const std::optional<int>& threads) {
  std::vector<std::string> argv_s = {python, script, "--kind", kind, "--dir", dir.string(), "--repeat", std::to_string(repeat), "--out", out.string()};
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  // The child's environment: ours without the OpenBLAS overrides that can slow numpy down.
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string key = kv.substr(0, kv.find('='));
    if (key == "OPENBLAS_CORETYPE" || key == "OPENBLAS_L2_SIZE") continue;
    if (threads && (key == "OPENBLAS_NUM_THREADS" || key == "OMP_NUM_THREADS" || key == "MKL_NUM_THREADS")) continue;
    env_s.push_back(kv);
  }
  if (threads)
    for (const char* k : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"}) env_s.push_back(std::string(k) + "=" + std::to_string(*threads));
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  int fds[2];
  if (pipe(fds) != 0) throw Error(std::string("ow bench: pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  pid_t pid = 0;
  // A bare name ("python3") is looked up in PATH, like a shell would.
  int rc = python.find('/') == std::string::npos ? posix_spawnp(&pid, python.c_str(), &fa, nullptr, argv.data(), envp.data())
                                                 : posix_spawn(&pid, python.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw Error("ow bench: cannot start '" + python + "': " + std::strerror(rc) + " (pass --numpy /path/to/python3 with numpy installed)");
  }
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    text.append(buf, size_t(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("ow bench: '" + python + " " + script + "' failed (" +
                (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status)) : "killed by signal " + std::to_string(WTERMSIG(status))) +
                "); is numpy installed for that interpreter? (choose one with --numpy)");

  NumpyRun r;
  bool found = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("OW_BENCH_RESULT ", 0) != 0) {
      if (!line.empty()) r.info.push_back(line);
      continue;
    }
    std::istringstream kv(line.substr(16));
    for (std::string tok; kv >> tok;) {
      size_t eq = tok.find('=');
      if (eq == std::string::npos) continue;
      std::string k = tok.substr(0, eq);
      double v = std::strtod(tok.c_str() + eq + 1, nullptr);
      if (k == "median_s") r.t.median = v, found = true;
      if (k == "min_s") r.t.min = v;
    }
  }
  if (!found) throw Error("ow bench: " + script + " printed no OW_BENCH_RESULT line; its output was:\n" + text);
  return r;
}

// ---------- one case ----------

struct Row {
  std::string name;
  Timing interp;
  std::optional<Timing> numpy;
  std::optional<double> rel_err;  // max|interp - numpy| / max|numpy|
  std::string error;              // why the numpy side or the check is missing
  bool wrong = false;
};

struct Settings {
  fs::path cases_dir, script, tmp;
  std::string python;
  int repeat;
  uint64_t seed;
  double tolerance;
  bool interp_only;
  bool init_outputs;
  std::optional<int> threads;
};

Row bench_case(const std::string& name, const Settings& s, std::vector<std::string>& numpy_info) {
  Row row{name, {}, {}, {}, {}, false};
  CaseSpec spec = case_spec(name);
  fs::path file = s.cases_dir / (name + ".uop");
  ParsedGraph g = load_graph(file.string());

  fs::path dir = s.tmp / name;
  fs::create_directories(dir);
  interp::BufferMap inputs;
  for (const InputSpec& in : spec.inputs) {
    interp::Value v = random_input(in, name, s.seed);
    interp::save_npy((dir / (in.name + ".npy")).string(), v);
    inputs[in.name] = interp::BufferData{dtypes::float32, v.data, nullptr};
  }
  if (s.init_outputs)  // zero-filled instead of uninitialized: no poison masks to track
    for (UOp u : number_graph(g.root).order)
      if (u->op == Ops::BUFFER) {
        const std::string& bname = u->arg.tuple()->at(0).as<std::string>();
        if (!inputs.count(bname)) inputs[bname] = interp::BufferData{u->dtype, std::make_shared<interp::Storage>(u->dtype, u->arg.tuple()->at(1).as<int64_t>()), nullptr};
      }

  std::cerr << "[bench] " << name << ": interpreter, 1 warm-up + " << s.repeat << " runs" << std::flush;
  interp::Options o;
  o.describe = [&](UOp u) {
    auto it = g.where.find(u.get());
    return it == g.where.end() ? std::string(op_name(u->op)) : g.file + ":" + std::to_string(it->second.line) + ": " + it->second.text;
  };
  auto once = [&] {
    interp::BufferMap b = inputs;  // fresh map: the graph's outputs start unallocated every run
    if (s.init_outputs)  // ... or zeroed, in fresh storage (the graph writes them in place)
      for (auto& [bname, d] : b)
        if (std::none_of(spec.inputs.begin(), spec.inputs.end(),
                         [&, &bname = bname](const InputSpec& in) { return in.name == bname; }))  // clang < 16
          d.data = std::make_shared<interp::Storage>(d.dtype, d.data->size);
    return interp::run(g.root, b, o);
  };
  std::vector<interp::Output> outs = once();
  std::vector<double> times;
  for (int i = 0; i < s.repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    outs = once();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  row.interp = summarize(times);
  std::cerr << ": median " << fmt_time(row.interp.median) << "\n";
  if (outs.empty()) throw Error("ow bench: " + file.string() + " has no outputs to compare");
  const interp::Value& got = outs[0].value;
  if (s.interp_only) return row;

  std::cerr << "[bench] " << name << ": numpy (" << s.python << "), 1 warm-up + " << s.repeat << " runs" << std::flush;
  fs::path ref_path = dir / "numpy_out.npy";
  try {
    NumpyRun nr = run_numpy(s.python, s.script.string(), spec.kind, dir, s.repeat, ref_path, s.threads);
    row.numpy = nr.t;
    std::cerr << ": median " << fmt_time(nr.t.median) << "\n";
    for (auto& l : nr.info)
      if (std::find(numpy_info.begin(), numpy_info.end(), l) == numpy_info.end()) numpy_info.push_back(l);
  } catch (const Error& e) {
    std::cerr << ": failed\n" << e.what() << "\n";
    row.error = "numpy failed";
    return row;
  }

  interp::NpyArray ref = interp::load_npy(ref_path.string());
  if (ref.data->size != got.numel()) {
    row.error = "numpy gave " + std::to_string(ref.data->size) + " elements, the interpreter " + std::to_string(got.numel());
    row.wrong = true;
    return row;
  }
  double max_diff = 0, max_ref = 0;
  bool nan = false;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double r = ref.data->as<float>()[i], x = interp::get_element(got, i);
    if (std::isnan(x) != std::isnan(r)) nan = true;
    max_diff = std::max(max_diff, std::fabs(x - r));
    max_ref = std::max(max_ref, std::fabs(r));
  }
  row.rel_err = nan ? NAN : max_ref > 0 ? max_diff / max_ref : max_diff;
  row.wrong = nan || !(*row.rel_err <= s.tolerance);
  return row;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) out.push_back(t);
  return out;
}

void print_table(const std::vector<Row>& rows, double tolerance) {
  std::printf("%-18s %14s %14s %14s %14s %14s %20s\n", "case", "interp median", "interp min", "numpy median", "numpy min", "interp/numpy",
              "max|diff|/max|ref|");
  for (const Row& r : rows) {
    std::string nm = r.numpy ? fmt_time(r.numpy->median) : "-", nmin = r.numpy ? fmt_time(r.numpy->min) : "-", ratio = "-", err = r.error.empty() ? "-" : r.error;
    if (r.numpy && r.numpy->median > 0) {
      char b[32];
      std::snprintf(b, sizeof b, "%.1fx", r.interp.median / r.numpy->median);
      ratio = b;
    }
    if (r.rel_err) {
      char b[48];
      std::snprintf(b, sizeof b, "%.2e%s", *r.rel_err, r.wrong ? " WRONG" : "");
      err = b;
    }
    std::printf("%-18s %14s %14s %14s %14s %14s %20s\n", r.name.c_str(), fmt_time(r.interp.median).c_str(), fmt_time(r.interp.min).c_str(), nm.c_str(),
                nmin.c_str(), ratio.c_str(), err.c_str());
  }
  bool any_wrong = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.wrong; });
  if (any_wrong) std::printf("WRONG: the interpreter's output differs from numpy's by more than --tolerance %g\n", tolerance);
}

int cmd_bench(const Args& args) {
  po::options_description opts("options");
  opts.add_options()("cases", po::value<std::string>()->default_value(kDefaultCases), "comma-separated case names (reference/cases/NAME.uop)")(
      "repeat", po::value<int>()->default_value(20), "timed runs per side (after one warm-up); the median and min are reported")(
      "numpy", po::value<std::string>()->default_value("/usr/bin/python3"), "python interpreter with numpy")(
      "cases-dir", po::value<std::string>(), "directory of the .uop cases (default: reference/cases found above the executable or CWD)")(
      "script", po::value<std::string>(), "the numpy script (default: tools/bench_numpy.py found the same way)")(
      "seed", po::value<uint64_t>()->default_value(0), "seed of the random inputs")(
      "tolerance", po::value<double>()->default_value(1e-3), "max|diff|/max|ref| above which the output is flagged WRONG")(
      "numpy-threads", po::value<int>(), "set OPENBLAS/OMP/MKL_NUM_THREADS for numpy (default: its own choice)")(
      "interp-only", "time only the interpreter (no numpy, no check; for profiling)")(
      "init-outputs", "bind the buffers the graph writes zero-filled instead of leaving them uninitialized (no poison tracking)")(
      "keep", "keep the temporary directory of .npy inputs and outputs");
  po::positional_options_description pos;
  po::variables_map vm;
  if (!parse_options("bench", "[--cases A,B,...] [--repeat N] [--numpy PYTHON] [--cases-dir DIR] [--interp-only]", opts, pos, args, vm)) return 0;

  Settings s;
  s.repeat = vm["repeat"].as<int>();
  if (s.repeat < 1) throw Error("ow bench: --repeat must be at least 1");
  s.python = vm["numpy"].as<std::string>();
  s.seed = vm["seed"].as<uint64_t>();
  s.tolerance = vm["tolerance"].as<double>();
  s.interp_only = vm.count("interp-only") > 0;
  s.init_outputs = vm.count("init-outputs") > 0;
  if (vm.count("numpy-threads")) s.threads = vm["numpy-threads"].as<int>();
  s.cases_dir = vm.count("cases-dir") ? fs::path(vm["cases-dir"].as<std::string>()) : find_in_repo("reference/cases", true, "the reference cases", "--cases-dir");
  if (!s.interp_only) s.script = vm.count("script") ? fs::path(vm["script"].as<std::string>()) : find_in_repo("tools/bench_numpy.py", false, "the numpy script", "--script");
  std::vector<std::string> names = split_commas(vm["cases"].as<std::string>());
  if (names.empty()) throw Error("ow bench: --cases names no case");
  for (const std::string& n : names) case_spec(n);  // fail early on an unknown recipe

  std::string tmpl = (fs::temp_directory_path() / "ow-bench-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw Error(std::string("ow bench: cannot create a temporary directory: ") + std::strerror(errno));
  s.tmp = tmpl;
  struct Cleanup {
    fs::path dir;
    bool keep;
    ~Cleanup() {
      std::error_code ec;
      if (keep) std::cerr << "[bench] inputs and outputs kept in " << dir.string() << "\n";
      else fs::remove_all(dir, ec);
    }
  } cleanup{s.tmp, vm.count("keep") > 0};

  std::vector<Row> rows;
  std::vector<std::string> info;
  for (const std::string& n : names) rows.push_back(bench_case(n, s, info));

  print_table(rows, s.tolerance);
  for (const std::string& l : info) std::printf("%s\n", l.c_str());
  // Timings on a busy machine are noisy: say how busy it was.
  double l1 = 0, l5 = 0, l15 = 0;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) == 3)
      std::printf("load average: %.2f %.2f %.2f on %u cores\n", l1, l5, l15, std::thread::hardware_concurrency());
    std::fclose(f);
  }
  bool failed = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.wrong || !r.error.empty(); });
  return failed ? 1 : 0;
}

}  // namespace

std::vector<Command> bench_commands() { return {{"bench", "time the interpreter against numpy on the benchmark cases", cmd_bench}}; }

}  // namespace ow::cli
