// The pieces every mode of `ow bench` shares (bench.h): deterministic inputs, finding the
// repository's files, timing and its text, and the numpy subprocess.
#include <glob.h>
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
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "bench.h"
#include "interp/npy.h"
#include "uop/error.h"

extern char** environ;

namespace ow::cli::bench {

namespace {

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

}  // namespace

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

static std::vector<fs::path> search_roots() {
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

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median_or_nan(std::vector<double> t) { return t.empty() ? NAN : summarize(std::move(t)).median; }

Timing summarize(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  size_t n = t.size();
  return {n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]), t.front()};
}

std::string fmt_time(double s) {
  char buf[32];
  if (s >= 1) std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (s >= 1e-3) std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else if (s >= 1e-4) std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  else if (s >= 1e-5) std::snprintf(buf, sizeof buf, "%.2f us", s * 1e6);
  else std::snprintf(buf, sizeof buf, "%.3f us", s * 1e6);  // three digits: 0.1 us was 15% of a 0.7 us run
  return buf;
}

double percentile(std::vector<double> t, double p) {
  if (t.empty()) return 0;
  std::sort(t.begin(), t.end());
  size_t k = size_t(std::ceil(p * double(t.size())));
  return t[k == 0 ? 0 : std::min(k, t.size()) - 1];
}

const char* met(bool target_met) { return target_met ? "MET" : "NOT MET"; }

int cc_rounds(int repeat) { return std::max(1, std::min(repeat, 3)); }

std::string fmt_ratio(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, r >= 10 ? "%.0fx" : r >= 1 ? "%.1fx" : "%.2fx", r);
  return buf;
}

bool has_backend(const Settings& s, const std::string& b) { return std::find(s.backends.begin(), s.backends.end(), b) != s.backends.end(); }

void ratio_line(const std::string& what, double big, double small, double target) {
  double r = big / small;
  std::printf("  %s: %.2fx (target <= %.1fx: %s)\n", what.c_str(), r, target, met(r <= target));
}

DiskCacheOff::DiskCacheOff() {
  if (const char* v = getenv("OW_CACHE_DIR")) old_ = v;
  setenv("OW_CACHE_DIR", "off", 1);
}
DiskCacheOff::~DiskCacheOff() { old_ ? (void)setenv("OW_CACHE_DIR", old_->c_str(), 1) : (void)unsetenv("OW_CACHE_DIR"); }

std::string load_line() {
  double l1 = 0, l5 = 0, l15 = 0;
  std::string out = "load average: unknown";
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) == 3) {
      char b[96];
      std::snprintf(b, sizeof b, "load average: %.2f %.2f %.2f", l1, l5, l15);
      out = b;
    }
    std::fclose(f);
  }
  return out + " on " + std::to_string(std::thread::hardware_concurrency()) + " cores";
}

void merge_info(std::vector<std::string>& all, const std::vector<std::string>& more) {
  for (auto& l : more)
    if (std::find(all.begin(), all.end(), l) == all.end()) all.push_back(l);
}

// ---------- the numpy subprocess ----------

// The directories to put first in numpy's library path so that libblas.so.3 (and liblapack.so.3)
// is `which` BLAS: Debian installs each BLAS in its own directory and the system's choice is an
// alternatives link, so this picks one per run without changing the machine. "auto": OpenBLAS
// when installed (the matmul target is against numpy with OpenBLAS), else the system's.
std::string blas_dirs(const std::string& which) {
  auto find = [](const char* pattern) -> std::string {
    glob_t g{};
    std::string dir;
    if (glob(pattern, 0, nullptr, &g) == 0 && g.gl_pathc > 0) dir = fs::path(g.gl_pathv[0]).parent_path().string();
    globfree(&g);
    return dir;
  };
  if (which == "system") return "";
  if (which == "openblas" || which == "auto") {
    for (const char* p : {"/usr/lib/*/openblas-pthread/libblas.so.3", "/usr/lib/*/openblas-openmp/libblas.so.3", "/usr/lib/*/openblas-serial/libblas.so.3"})
      if (std::string d = find(p); !d.empty()) return d;
    if (which == "auto") return "";
    throw Error("ow bench: --numpy-blas openblas: no /usr/lib/*/openblas-*/libblas.so.3 (apt-get install libopenblas0-pthread)");
  }
  if (which == "reference") {
    std::string blas = find("/usr/lib/*/blas/libblas.so.3"), lapack = find("/usr/lib/*/lapack/liblapack.so.3");
    if (blas.empty()) throw Error("ow bench: --numpy-blas reference: no /usr/lib/*/blas/libblas.so.3 (apt-get install libblas3)");
    return lapack.empty() ? blas : blas + ":" + lapack;
  }
  throw Error("ow bench: --numpy-blas must be auto, system, openblas or reference, not '" + which + "'");
}

// max|got - ref| / max|ref| (NaN when one has a NaN where the other has not).
double rel_err(const interp::Value& got, const float* ref) {
  double max_diff = 0, max_ref = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double r = ref[i], x = interp::get_element(got, i);
    if (std::isnan(x) != std::isnan(r)) return NAN;
    max_diff = std::max(max_diff, std::fabs(x - r));
    max_ref = std::max(max_ref, std::fabs(r));
  }
  return max_ref > 0 ? max_diff / max_ref : max_diff;
}

// ---------- child processes ----------

std::vector<std::string> child_environment(const std::vector<std::string>& drop, const std::vector<std::string>& add) {
  auto key_of = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  auto listed = [&](const std::vector<std::string>& list, const std::string& key) {
    return std::any_of(list.begin(), list.end(), [&](const std::string& x) { return key_of(x) == key; });
  };
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::string kv = *e; !listed(drop, key_of(kv)) && !listed(add, key_of(kv))) env.push_back(kv);
  env.insert(env.end(), add.begin(), add.end());
  return env;
}

namespace {

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& x : v) out.push_back(x.data());
  out.push_back(nullptr);
  return out;
}

std::string read_all(int fd) {
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    text.append(buf, size_t(n));
  }
  return text;
}

}  // namespace

Captured spawn_and_capture(std::vector<std::string> argv, std::vector<std::string> env) {
  std::vector<char*> args = c_strings(argv), envp = c_strings(env);
  int fds[2];
  if (pipe(fds) != 0) throw Error(std::string("ow bench: pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  pid_t pid = 0;
  const std::string& program = argv[0];
  // A bare name ("python3") is looked up in PATH, like a shell would.
  int rc = program.find('/') == std::string::npos ? posix_spawnp(&pid, program.c_str(), &fa, nullptr, args.data(), envp.data())
                                                  : posix_spawn(&pid, program.c_str(), &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw Error("ow bench: cannot start '" + program + "': " + std::strerror(rc));
  }
  Captured c;
  c.out = read_all(fds[0]);
  close(fds[0]);
  while (waitpid(pid, &c.status, 0) < 0 && errno == EINTR) {
  }
  return c;
}

bool Captured::ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string Captured::how_it_ended() const {
  return WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status)) : "killed by signal " + std::to_string(WTERMSIG(status));
}

// ---------- the numpy subprocess ----------

namespace {

// Ours without the OpenBLAS overrides that can slow numpy down, with the BLAS and thread count
// the command line asks for.
std::vector<std::string> numpy_environment(const Settings& s) {
  std::vector<std::string> add;
  if (!s.coretype.empty()) add.push_back("OPENBLAS_CORETYPE=" + s.coretype);
  if (!s.blas_dirs.empty()) {
    const char* old = std::getenv("LD_LIBRARY_PATH");
    add.push_back("LD_LIBRARY_PATH=" + s.blas_dirs + (old && *old ? std::string(":") + old : ""));
  }
  if (s.threads)
    for (const char* k : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"}) add.push_back(std::string(k) + "=" + std::to_string(*s.threads));
  return child_environment({"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"}, add);
}

// The script's stdout: "OW_BENCH_RESULT key=value ..." and lines of information.
NumpyRun parse_numpy_output(const Settings& s, const std::string& text) {
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
      if (k == "first_s") r.first = v;
      if (k == "reuse_median_s") r.reuse = r.reuse.value_or(Timing{}), r.reuse->median = v;
      if (k == "reuse_min_s") r.reuse = r.reuse.value_or(Timing{}), r.reuse->min = v;
    }
  }
  if (!found) throw Error("ow bench: " + s.script.string() + " printed no OW_BENCH_RESULT line; its output was:\n" + text);
  return r;
}

}  // namespace

NumpyRun run_numpy(const Settings& s, const std::string& kind, const fs::path& dir, const fs::path& out) {
  Captured c;
  try {
    c = spawn_and_capture({s.python, s.script.string(), "--kind", kind, "--dir", dir.string(), "--repeat", std::to_string(s.repeat), "--out", out.string()},
                          numpy_environment(s));
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (pass --numpy /path/to/python3 with numpy installed)");
  }
  if (!c.ok())
    throw Error("ow bench: '" + s.python + " " + s.script.string() + "' failed (" + c.how_it_ended() + "); is numpy installed for that interpreter? (choose one with --numpy)");
  return parse_numpy_output(s, c.out);
}

}  // namespace ow::cli::bench
