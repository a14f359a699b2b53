// ow bench --micro: a*b+1 on 16M float32 and a 512^3 float32 matmul, tcc and cc against numpy
// (a*b+1, a@b), steady state (compile excluded). Each compiled backend is timed twice: a prepared
// Program returning a fresh output every run, and the same Program writing into one preallocated
// output (numpy: out=). numpy runs first: its output is the reference of the checks.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "backends/program.h"
#include "bench.h"
#include "cases.h"
#include "cli.h"
#include "interp/npy.h"
#include "lower/lower.h"
#include "uop/error.h"

namespace ow::cli::bench {

namespace {

// c = a @ b as REDUCE_AXIS of an expanded product: (512,512,1) * (1,512,512) summed over axis 1.
const char* kMatmul = R"(%0 = BUFFER float32 () ("a", 262144)
%1 = CONST index () 512
%2 = CONST index () 1
%3 = RESHAPE float32 (%0, %1, %1, %2)
%4 = EXPAND float32 (%3, %1, %1, %1)
%5 = BUFFER float32 () ("b", 262144)
%6 = RESHAPE float32 (%5, %2, %1, %1)
%7 = EXPAND float32 (%6, %1, %1, %1)
%8 = MUL float32 (%4, %7)
%9 = REDUCE_AXIS float32 (%8) (Ops.ADD, (1,))
%10 = RESHAPE float32 (%9, %1, %1)
%11 = SINK void (%10) ("c",)
)";

constexpr int64_t kAxpbSize = 16777216, kMatmulSide = 512;

struct Micro {
  std::string name, kind, text;  // kind: bench_numpy.py --kind
  std::vector<InputSpec> inputs;
};

// One backend's row.
struct Line {
  std::string backend;
  Timing t, reuse;  // fresh output / preallocated output (out=)
  bool has_reuse = false;
  std::string check;
};

struct MicroRun {
  std::string name, kind;
  std::vector<Line> lines;
  const Line* line(const std::string& backend) const {
    for (const Line& l : lines)
      if (l.backend == backend) return &l;
    return nullptr;
  }
};

// The random inputs, bound for ours and written as .npy for numpy.
std::map<std::string, interp::Value> write_inputs(const Micro& m, const fs::path& dir, uint64_t seed, interp::BufferMap& buffers) {
  std::map<std::string, interp::Value> values;
  for (const InputSpec& in : m.inputs) {
    interp::Value v = random_input(in, "micro_" + m.kind, seed);
    interp::save_npy((dir / (in.name + ".npy")).string(), v);
    buffers[in.name] = interp::BufferData{dtypes::float32, v.data, nullptr};
    values[in.name] = v;
  }
  return values;
}

// matmul tolerance per element: both sides sum the same 512 exact-up-to-rounding products, in
// different orders (ours sequential, BLAS blocked and maybe with FMA). Each float32 sum of n
// terms is within gamma_n * sum_k |a_ik b_kj| of the exact value, gamma_n = n u / (1 - n u),
// u = 2^-24 (Higham, Accuracy and Stability, 3.1), the products adding at most one more
// rounding each; so two such sums differ by at most 2 * gamma_(n+1) * sum_k |a_ik||b_kj|.
// Typical errors are ~sqrt(n) u, far below: the bound flags real bugs, not reordering.
std::vector<double> matmul_bound(const float* a, const float* b, int64_t M) {
  std::vector<double> bound(size_t(M * M), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < M; ++k) {
      double aik = std::fabs(double(a[i * M + k]));
      for (int64_t j = 0; j < M; ++j) bound[size_t(i * M + j)] += aik * std::fabs(double(b[k * M + j]));
    }
  double nu = double(M + 1) * std::ldexp(1.0, -24), gamma = nu / (1 - nu);
  for (double& x : bound) x *= 2 * gamma;
  return bound;
}

// fl(fl(a*b)+1) on both sides (cc: -ffp-contract=off): bit for bit. `wrong`: some element differs.
std::string check_axpb(const interp::Value& got, const float* ref, bool& wrong) {
  int64_t bad_at = -1, diffs = 0;
  double worst = 0;  // max |diff|
  for (int64_t i = 0; i < got.numel(); ++i) {
    double x = interp::get_element(got, i), r = ref[i];
    if (!(x == r) && !(x != x && r != r)) ++diffs, bad_at = bad_at < 0 ? i : bad_at, worst = std::max(worst, std::fabs(x - r));
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, diffs ? "WRONG: %lld elements differ from numpy (first %lld, max |diff| %.3g)" : "bit-exact vs numpy", (long long)diffs,
                (long long)bad_at, worst);
  wrong = diffs > 0;
  return buf;
}

// Every element within matmul_bound of numpy's. `wrong`: some element is not.
std::string check_matmul(const interp::Value& got, const float* ref, const std::vector<double>& bound, bool& wrong) {
  int64_t diffs = 0;
  double worst = 0;  // max |diff| / bound
  for (int64_t i = 0; i < got.numel(); ++i) {
    double q = std::fabs(interp::get_element(got, i) - ref[i]) / bound[size_t(i)];
    if (!(q <= 1)) ++diffs;
    worst = std::max(worst, q);
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "%smax |diff|/bound %.2e vs numpy (bound: 2*gamma_513*sum|a||b|)%s", diffs ? "WRONG: " : "", worst,
                diffs ? (" at " + std::to_string(diffs) + " elements").c_str() : "");
  wrong = diffs > 0;
  return buf;
}

// The prepared Program writing into one preallocated output `c` of `numel` elements (Program's
// out=, as numpy's out=), after one warm-up run.
Timing time_into_preallocated(UOp program, const interp::BufferMap& inputs, const std::string& backend, int64_t numel, int repeat) {
  backend::RunOptions ro;
  ro.backend = backend::parse_backend(backend);
  backend::Program prepared(program, ro);
  interp::BufferMap keep = inputs;
  keep["c"] = interp::BufferData{dtypes::float32, std::make_shared<interp::Storage>(dtypes::float32, numel), nullptr};
  prepared.run(keep);
  std::vector<double> ts;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = Clock::now();
    prepared.run(keep);
    ts.push_back(seconds_since(t0));
  }
  return summarize(ts);
}

// One compiled backend on one workload, checked against numpy's output `ref`. `bad`: WRONG or failed.
Line compiled_line(const Micro& m, UOp root, const interp::BufferMap& inputs, const interp::NpyArray& ref, const std::vector<double>& bound,
                   const std::string& be, int repeat, bool& bad) {
  std::cerr << "[bench] --micro " << m.name << ": " << be << std::flush;
  Line l{be, {}, {}, false, ""};
  try {
    UOp program = lower::lower(root);
    std::vector<interp::Output> outs;
    l.t = time_compiled(program, inputs, be, repeat, outs);
    const interp::Value& got = outs.at(0).value;
    l.reuse = time_into_preallocated(program, inputs, be, got.numel(), repeat), l.has_reuse = true;
    std::cerr << ": median " << fmt_time(l.t.median) << " (" << kernels_of(program).size() << " kernels)\n";
    if (got.numel() != ref.data->size) throw Error("output has " + std::to_string(got.numel()) + " elements, numpy's " + std::to_string(ref.data->size));
    bool wrong = false;
    const float* rf = ref.data->as<float>();
    l.check = m.kind == "axpb" ? check_axpb(got, rf, wrong) : check_matmul(got, rf, bound, wrong);
    bad |= wrong;
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error& e) {
    std::cerr << ": failed\n" << e.what() << "\n";
    l.check = "failed: " + std::string(e.what()).substr(0, 80);
    std::replace(l.check.begin(), l.check.end(), '\n', ' ');
    bad = true;
  }
  return l;
}

// numpy, then tcc and cc, on one workload; numpy's version lines are merged into `info`.
MicroRun run_micro(const Settings& s, const Micro& m, std::vector<std::string>& info, bool& bad) {
  ParsedGraph g = parse_graph(m.text, "<micro " + m.kind + ">");
  verify_parsed(g);
  fs::path dir = s.tmp / ("micro_" + m.kind);
  fs::create_directories(dir);
  interp::BufferMap inputs;
  std::map<std::string, interp::Value> in_vals = write_inputs(m, dir, s.seed, inputs);
  std::cerr << "[bench] --micro " << m.name << ": numpy" << std::flush;
  fs::path ref_path = dir / "numpy_out.npy";
  NumpyRun nr = run_numpy(s, m.kind, dir, ref_path);
  merge_info(info, nr.info);
  std::cerr << ": median " << fmt_time(nr.t.median) << "\n";
  interp::NpyArray ref = interp::load_npy(ref_path.string());
  std::vector<double> bound;
  if (m.kind == "matmul") bound = matmul_bound(in_vals["a"].data->as<float>(), in_vals["b"].data->as<float>(), kMatmulSide);
  MicroRun run{m.name, m.kind, {}};
  for (const std::string be : {"tcc", "cc"}) run.lines.push_back(compiled_line(m, g.root, inputs, ref, bound, be, s.repeat, bad));
  run.lines.push_back({"numpy", nr.t, nr.reuse.value_or(Timing{}), nr.reuse.has_value(), "reference"});
  return run;
}

void print_micro_table(const std::vector<MicroRun>& runs, int repeat) {
  std::printf("micro benchmarks, steady state (compile excluded), 1 warm-up + %d runs\n", repeat);
  std::printf("  fresh out = a prepared backend::Program returning a new output each run (numpy: a*b+1, a@b)\n");
  std::printf("  out=      = the same Program writing into one preallocated output (numpy: out=)\n");
  std::printf("%-18s %-7s %12s %12s %10s %12s %10s  %s\n", "workload", "backend", "fresh out", "min", "vs numpy", "out=", "vs numpy", "check");
  for (const MicroRun& run : runs) {
    const Line* np_line = run.line("numpy");
    double np = np_line ? np_line->t.median : 0, npr = np_line && np_line->has_reuse ? np_line->reuse.median : 0;
    bool first = true;
    for (const Line& l : run.lines) {
      std::string r1 = np > 0 && l.t.median > 0 ? fmt_ratio(l.t.median / np) : "-", r2 = npr > 0 && l.has_reuse ? fmt_ratio(l.reuse.median / npr) : "-";
      std::printf("%-18s %-7s %12s %12s %10s %12s %10s  %s\n", first ? run.name.c_str() : "", l.backend.c_str(), l.t.median > 0 ? fmt_time(l.t.median).c_str() : "-",
                  l.t.min > 0 ? fmt_time(l.t.min).c_str() : "-", r1.c_str(), l.has_reuse ? fmt_time(l.reuse.median).c_str() : "-", r2.c_str(), l.check.c_str());
      first = false;
    }
  }
}

// Our median over numpy's on one workload (NaN when either is missing); `reuse`: the out= columns.
double vs_numpy(const std::vector<MicroRun>& runs, const std::string& kind, const std::string& backend, bool reuse) {
  for (const MicroRun& run : runs) {
    if (run.kind != kind) continue;
    const Line *ours = run.line(backend), *np = run.line("numpy");
    if (!ours || !np) return NAN;
    if (reuse) return ours->has_reuse && np->has_reuse ? ours->reuse.median / np->reuse.median : NAN;
    return ours->t.median > 0 ? ours->t.median / np->t.median : NAN;
  }
  return NAN;
}

void print_micro_targets(const std::vector<MicroRun>& runs) {
  double ac = vs_numpy(runs, "axpb", "cc", false), at = vs_numpy(runs, "axpb", "tcc", false), mc = vs_numpy(runs, "matmul", "cc", false);
  double acr = vs_numpy(runs, "axpb", "cc", true), atr = vs_numpy(runs, "axpb", "tcc", true), mcr = vs_numpy(runs, "matmul", "cc", true);
  std::printf("targets (fresh out | out=):\n");
  std::printf("target a*b+1 cc within 1.3x of numpy: %s (%s) | %s (%s)\n", met(ac <= 1.3), fmt_ratio(ac).c_str(), met(acr <= 1.3), fmt_ratio(acr).c_str());
  std::printf("target a*b+1 tcc within 3x of numpy: %s (%s) | %s (%s)\n", met(at <= 3), fmt_ratio(at).c_str(), met(atr <= 3), fmt_ratio(atr).c_str());
  std::printf("target matmul cc >= 50%% of numpy's speed (its best BLAS kernel, issue 18): %s (%.0f%%) | %s (%.0f%%)\n", met(1 / mc >= 0.5), 100 / mc, met(1 / mcr >= 0.5), 100 / mcr);
}

}  // namespace

int bench_micro(const Settings& s) {
  const int64_t N = kAxpbSize, M = kMatmulSide;
  std::vector<Micro> micros = {{"a*b+1 16M f32", "axpb", cases::axpb_text(N), {{"a", {N}, 1.0}, {"b", {N}, 1.0}}},
                               {"matmul 512^3 f32", "matmul", kMatmul, {{"a", {M, M}, 1.0}, {"b", {M, M}, 1.0}}}};
  std::vector<MicroRun> runs;
  std::vector<std::string> info;
  bool bad = false;
  for (const Micro& m : micros) runs.push_back(run_micro(s, m, info, bad));
  print_micro_table(runs, s.repeat);
  for (const std::string& l : info) std::printf("%s\n", l.c_str());
  print_micro_targets(runs);
  return bad ? 1 : 0;
}

}  // namespace ow::cli::bench
