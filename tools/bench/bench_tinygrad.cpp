// ow bench --tinygrad: outerworld and tinygrad side by side on the same graph and inputs.
//
// Each case's .uop is run three ways: tinygrad (tools/bench/bench_tinygrad.py imports the graph into
// tinygrad UOps and realizes it on its CPU device), and `ow run` on tcc and on cc. Two figures:
//   first result  tinygrad: in process, imports excluded, its kernel disk cache off (CACHELEVEL=0);
//                 ow: the whole `ow run` process (start, parse, lower, render, compile, run,
//                 print), its compile cache cold (a fresh cache directory per run);
//   steady        tinygrad: the graph built and realized again (kernels cached in memory);
//                 ow: a prepared Program run again (compile excluded), as the default mode times it.
// tinygrad's output is compared with the interpreter's (max|diff|/max|ref|), ow's bit for bit.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "backends/program.h"
#include "bench.h"
#include "cli.h"
#include "interp/compare.h"
#include "interp/npy.h"
#include "lower/lower.h"
#include "uop/args.h"
#include "uop/error.h"

namespace ow::cli::bench {

namespace {

const char* kTinygradCases[] = {"scan_with_assign", "scan_big_16x256", "scan_big_64x128", "vmap_mlp_32x128"};

// The tinygrad checkout to import: $OW_TINYGRAD, else shared/tinygrad above the executable or the
// current directory (the team's layout), else "" (an installed tinygrad, if any).
std::string tinygrad_dir() {
  if (const char* e = std::getenv("OW_TINYGRAD"); e && *e) return e;
  try {
    return find_in_repo("shared/tinygrad/tinygrad", true, "tinygrad", "OW_TINYGRAD").parent_path().string();
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error&) {
    return "";
  }
}

// Seconds of one `ow run` process with a cold compile cache (median of `n`); throws on failure.
double ow_process(const fs::path& file, const interp::BufferMap& in, const fs::path& dir, const std::string& backend, int n) {
  std::vector<std::string> argv = {fs::read_symlink("/proc/self/exe").string(), "run", file.string(), "--flat-inputs", "--backend", backend};
  for (auto& [name, b] : in) argv.insert(argv.end(), {"--in", name + "=" + (dir / (name + ".npy")).string()});
  std::vector<double> t;
  for (int i = 0; i < n; ++i) {
    std::string cache = (dir / ("cache-" + backend + std::to_string(i))).string();
    std::vector<std::string> env = child_environment({}, {"OW_CACHE_DIR=" + cache, "XDG_CACHE_HOME=" + cache});
    auto t0 = Clock::now();
    Captured run = spawn_and_capture(argv, env);  // its printed outputs are not needed
    t.push_back(seconds_since(t0));
    if (!run.ok()) {
      std::string cmd;
      for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
      throw Error("ow run on " + backend + " failed (" + run.how_it_ended() + "): " + cmd);
    }
  }
  return summarize(t).median;
}

struct Side {
  double first = NAN, steady = NAN;
  std::string check;
};

Side ow_side(const fs::path& file, UOp root, const interp::BufferMap& in, const interp::Value& want, const fs::path& dir, const std::string& backend, int repeat) {
  Side side;
  side.first = ow_process(file, in, dir, backend, 3);
  std::vector<interp::Output> outs;
  side.steady = time_compiled(lower::lower(root), in, backend, repeat, outs).median;
  side.check = !outs.empty() && !first_difference(want, outs[0].value) ? "bit-exact" : "WRONG";
  return side;
}

Side tinygrad_side(const Settings& s, const fs::path& file, const interp::Value& want, const fs::path& dir) {
  Side side;
  fs::path out = dir / "tinygrad_out.npy";
  try {
    NumpyRun r = run_numpy(s, file.string(), dir, out);
    side.first = r.first.value_or(NAN), side.steady = r.t.median;
    interp::NpyArray a = interp::load_npy(out.string());
    char buf[48];
    double e = a.data->size == want.numel() && a.dtype == dtypes::float32 ? rel_err(want, a.data->as<float>()) : NAN;
    std::snprintf(buf, sizeof buf, "%srel err %.1e", e <= s.tolerance ? "" : "WRONG: ", e);
    side.check = buf;
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error&) {
    side.check = "tinygrad could not run it (its reason is above)";
  }
  return side;
}

std::string cell(double t) { return std::isnan(t) ? "-" : fmt_time(t); }
std::string ratio(double a, double b) { return std::isnan(a) || std::isnan(b) ? "-" : fmt_ratio(a / b); }

}  // namespace

int bench_tinygrad(const Settings& s0) {
  Settings s = s0;
  s.script = find_in_repo("tools/bench/bench_tinygrad.py", false, "the tinygrad script", "--script");
  std::string tg = tinygrad_dir();
  const char* pp = std::getenv("PYTHONPATH");
  if (!tg.empty()) setenv("PYTHONPATH", (tg + (pp && *pp ? std::string(":") + pp : "")).c_str(), 1);
  setenv("CACHELEVEL", "0", 1);  // tinygrad's compiled-kernel disk cache: a first result compiles
  std::printf("tinygrad: %s; ow first result = the whole `ow run` process, cold compile cache\n", tg.empty() ? "an installed one, if any" : tg.c_str());
  std::printf("%-18s | %10s %10s | %10s %10s | %10s %10s | %9s %9s | %s\n", "case", "tg first", "tg steady", "tcc first", "tcc steady", "cc first", "cc steady",
              "tg/tcc 1st", "tg/cc st", "check (tinygrad; ow)");
  bool bad = false;
  std::vector<std::string> cases = s.cases.empty() ? std::vector<std::string>(std::begin(kTinygradCases), std::end(kTinygradCases)) : s.cases;
  for (const std::string& name : cases) {
    fs::path file = s.cases_dir / (name + ".uop"), dir = s.tmp / ("tinygrad-" + name);
    fs::create_directories(dir);
    ParsedGraph g = load_graph(file.string());
    interp::BufferMap in;
    fill_random_inputs(g.root, in, s.seed);
    for (auto& [n, b] : in) {
      interp::Value v;
      v.dtype = b.dtype, v.view = interp::View::contiguous({b.data->size}), v.data = b.data;
      interp::save_npy((dir / (n + ".npy")).string(), v);
    }
    interp::BufferMap ref = copy_buffers(in);
    interp::Value want = interp::run(g.root, ref).at(0).value;
    std::cerr << "[bench] --tinygrad " << name << "\n";
    Side t = tinygrad_side(s, file, want, dir), tcc = ow_side(file, g.root, in, want, dir, "tcc", s.repeat), cc = ow_side(file, g.root, in, want, dir, "cc", s.repeat);
    bad |= tcc.check != "bit-exact" || cc.check != "bit-exact" || t.check.rfind("WRONG", 0) == 0;
    std::printf("%-18s | %10s %10s | %10s %10s | %10s %10s | %9s %9s | %s; %s\n", name.c_str(), cell(t.first).c_str(), cell(t.steady).c_str(), cell(tcc.first).c_str(),
                cell(tcc.steady).c_str(), cell(cc.first).c_str(), cell(cc.steady).c_str(), ratio(t.first, tcc.first).c_str(), ratio(t.steady, cc.steady).c_str(),
                t.check.c_str(), tcc.check == cc.check ? tcc.check.c_str() : (tcc.check + "/" + cc.check).c_str());
    std::fflush(stdout);
  }
  return bad ? 1 : 0;
}

}  // namespace ow::cli::bench
