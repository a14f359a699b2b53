// ow bench --scaling: costs that should grow like the work (issue 18). Two sweeps, each with the
// cost per unit and the ratio of the largest to the smallest, which should stay near 1:
//  - the interpreter's cost per step of an assign scan (scan_with_assign, D = 16) of N = 100,
//    1000, 10000 steps, its output left uninitialized (poison tracked) as `ow run` leaves it;
//  - lowering's cost per layer of a vmapped MLP (linear + relu layers, width 16) of depth 4, 16,
//    64, each repetition built with fresh buffer names, so every node is new (a cold lowering);
// and the scan at N = 10000 compiled (tcc, cc) against numpy's Python loop, per step.
// Times are the thread's CPU time: on a shared machine a long run is preempted more often than a
// short one, which would inflate exactly the ratios measured here. Wall time is shown beside.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "backends/program.h"
#include "bench.h"
#include "cases.h"
#include "cli.h"
#include "interp/compare.h"
#include "interp/interp.h"
#include "interp/npy.h"
#include "lower/lower.h"
#include "tensor/tensor.h"

namespace ow::cli::bench {

// (bench.h) reference/cases.cpp's vmap_layers with `depth` linear + relu layers; names get `tag` appended.
UOp deep_mlp(int64_t depth, int64_t rows, int64_t width, const std::string& tag) {
  Tensor img = Tensor::empty({rows, width}, dtypes::float32, "img" + tag);
  std::vector<std::function<Tensor(const Tensor&)>> layers;
  for (int64_t k = 0; k < depth; ++k) {
    Tensor w = Tensor::empty({width, width}, dtypes::float32, "w" + std::to_string(k) + tag);
    layers.push_back([=](const Tensor& x) { return x.linear(w.T()).relu(); });
  }
  UOp a = UOp::range(rows, -1, AxisType::OUTER);
  Tensor out = img.at({Slice{Dim(a), Dim(a + 1)}}).sequential(layers);
  Tensor sum = out.pad({std::make_pair(Dim(a), Dim(rows - a - 1)), std::nullopt}).reduce({a}, Ops::ADD);
  return UOp::sink({sum.uop()}, Arg(ArgTuple{Arg("out")}));
}

double compiled_seconds_per_step(UOp program, int64_t steps, const interp::BufferMap& inputs, const std::string& tier, bool walked, int repeat,
                                 std::vector<interp::Output>& outs) {
  backend::RunOptions ro;
  ro.backend = backend::parse_backend(tier);
  if (walked) ro.on_launch = [](UOp, const auto&) {};  // a launch hook keeps the loop on the host
  backend::Program p(program, ro);
  // The same buffers every run, as numpy's loop reruns on its arrays (a fresh 10 MB copy of mats
  // per run would add about 0.1 us per step to what is measured).
  interp::BufferMap b = copy_buffers(inputs);
  outs = p.run(b);  // warm-up
  std::vector<double> t;
  for (int k = 0; k < repeat; ++k) {
    auto t0 = Clock::now();
    p.run(b);
    t.push_back(seconds_since(t0) / double(steps));
  }
  return summarize(t).median;
}

namespace {

double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}
double wall_now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// CPU and wall seconds per unit of work of each run.
struct Runs {
  std::vector<double> cpu, wall;
  template <class F> void time(double units, F&& f) {
    double c0 = cpu_now(), w0 = wall_now();
    f();
    cpu.push_back((cpu_now() - c0) / units);
    wall.push_back((wall_now() - w0) / units);
  }
};



// Seconds per step of interp::run on the scan of n steps.
Runs scan_step(int64_t n, int64_t d, int repeat, uint64_t seed) {
  UOp g = cases::scan_with_assign(n, d);
  interp::BufferMap in;
  for (InputSpec spec : {InputSpec{"vec", {1, d}, 1.0}, InputSpec{"mats", {n, d, d}, 1.0 / std::sqrt(double(d))}})
    in[spec.name] = interp::BufferData{dtypes::float32, random_input(spec, "scaling", seed).data, nullptr};
  Runs r;
  for (int k = 0; k < repeat; ++k) {
    interp::BufferMap b = copy_buffers(in);
    r.time(double(n), [&] { interp::run(g, b); });
  }
  return r;
}

// Seconds per layer of lower::lower on a fresh MLP of each depth, the depths taking turns (the
// table of interned nodes grows with every run, which would otherwise favour the first depth).
std::vector<Runs> lower_layers(const std::vector<int64_t>& depths, int repeat, std::vector<size_t>& nodes) {
  int fresh = 0;  // unique buffer names across every run: no node is reused
  std::vector<Runs> r(depths.size());
  nodes.assign(depths.size(), 0);
  for (int k = 0; k < repeat; ++k)
    for (size_t d = 0; d < depths.size(); ++d) {
      UOp g = deep_mlp(depths[d], 4, 16, "_" + std::to_string(fresh++));
      nodes[d] = toposort(g).size();
      r[d].time(double(depths[d]), [&] { lower::lower(g); });
    }
  return r;
}

// The scan of n steps on tcc and cc (a prepared Program, compile excluded) and numpy's Python
// loop `v = dot(v, M[k], out=out[k])` on the same inputs (bench_numpy.py --kind scan): seconds per step, medians.
struct CompiledScan {
  double tcc = NAN, cc = NAN, numpy = NAN;
  std::string check = "bit-exact";
};

CompiledScan compiled_scan(const Settings& s, int64_t n, int64_t d) {
  UOp g = cases::scan_with_assign(n, d);
  interp::BufferMap in;
  fs::path dir = s.tmp / "scaling-scan";
  fs::create_directories(dir);
  for (InputSpec spec : {InputSpec{"vec", {1, d}, 1.0}, InputSpec{"mats", {n, d, d}, 1.0 / std::sqrt(double(d))}}) {
    interp::Value v = random_input(spec, "scaling", s.seed);
    in[spec.name] = interp::BufferData{dtypes::float32, v.data, nullptr};
    interp::save_npy((dir / (spec.name + ".npy")).string(), v);
  }
  interp::BufferMap ref = copy_buffers(in);
  interp::Value want = interp::run(g, ref).at(0).value;
  CompiledScan c;
  UOp program = lower::lower(g);
  for (const char* be : {"tcc", "cc"}) {
    std::vector<interp::Output> outs;
    (std::string(be) == "tcc" ? c.tcc : c.cc) = compiled_seconds_per_step(program, n, in, be, false, s.repeat, outs);
    if (outs.empty() || first_difference(want, outs[0].value)) c.check = std::string("WRONG (") + be + ")";
  }
  Settings np = s;
  if (np.script.empty()) np.script = find_in_repo("tools/bench/bench_numpy.py", false, "the numpy script", "--script");
  try {
    c.numpy = run_numpy(np, "scan", dir, dir / "numpy_out.npy").t.median / double(n);
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error& e) {
    std::printf("  numpy failed: %s\n", e.what());
  }
  return c;
}

void compiled_scan_table(const Settings& s) {
  const int64_t n = 10000, d = 16;
  std::printf("\ncompiled: the same scan, N = %lld, D = %lld, steady state (compile excluded), wall time per step; numpy: its fastest Python loop, v = dot(v, M[k], out=out[k])\n",
              static_cast<long long>(n), static_cast<long long>(d));
  CompiledScan c = compiled_scan(s, n, d);
  std::printf("%14s %14s %14s  %s\n", "tcc/step", "cc/step", "numpy/step", "check (vs interp)");
  auto us = [](double t) { return std::to_string(t * 1e6).substr(0, 5) + " us"; };  // a step is well under 1 us: fmt_time's 0.1 us steps are too coarse
  std::printf("%14s %14s %14s  %s\n", us(c.tcc).c_str(), us(c.cc).c_str(), us(c.numpy).c_str(), c.check.c_str());
  for (auto [name, t] : {std::pair{"tcc", c.tcc}, std::pair{"cc", c.cc}})
    std::printf("  numpy / %s per step: %s (target >= 5x: %s)\n", name, fmt_ratio(c.numpy / t).c_str(), met(c.numpy / t >= 5));
}

void row(long long size, const char* extra, int runs, const Runs& r) {
  Timing c = summarize(r.cpu), w = summarize(r.wall);
  std::printf("%8lld %8s %6d %14s %14s %14s\n", size, extra, runs, fmt_time(c.median).c_str(), fmt_time(c.min).c_str(), fmt_time(w.median).c_str());
  std::fflush(stdout);
}

}  // namespace

int bench_scaling(const Settings& s) {
  const int64_t D = 16;
  std::printf("interpreter: assign scan out[k] = vec @ M0 @ ... @ Mk, D = %lld, out uninitialized; CPU time per step (median, min) and wall time (median)\n",
              static_cast<long long>(D));
  std::printf("%8s %8s %6s %14s %14s %14s\n", "N", "", "runs", "cpu/step", "min", "wall/step");
  std::vector<double> per_step;
  for (int64_t n : {100, 1000, 10000}) {
    int runs = n >= 10000 ? std::min(s.repeat, 3) : s.repeat;
    Runs r = scan_step(n, D, runs, s.seed);
    per_step.push_back(summarize(r.cpu).median);
    row(static_cast<long long>(n), "", runs, r);
  }
  ratio_line("per step N=10000 / N=100", per_step[2], per_step[0], 1.3);
  std::printf("\nlowering: vmapped MLP (4 rows, width 16, linear + relu per layer), fresh nodes each run, depths taking turns; CPU time per layer (median, min) and wall (median)\n");
  std::printf("%8s %8s %6s %14s %14s %14s\n", "depth", "nodes", "runs", "cpu/layer", "min", "wall/layer");
  std::vector<int64_t> depths{4, 16, 64};
  std::vector<size_t> nodes;
  std::vector<Runs> runs = lower_layers(depths, s.repeat, nodes);
  std::vector<double> per_layer;
  for (size_t d = 0; d < depths.size(); ++d) {
    per_layer.push_back(summarize(runs[d].cpu).median);
    row(static_cast<long long>(depths[d]), std::to_string(nodes[d]).c_str(), s.repeat, runs[d]);
  }
  ratio_line("per layer depth 64 / depth 4", per_layer[2], per_layer[0], 1.3);
  compiled_scan_table(s);
  return 0;
}

}  // namespace ow::cli::bench
