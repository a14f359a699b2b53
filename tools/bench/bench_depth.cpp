// ow bench --depth: what a deep model costs per layer. A vmapped MLP (batch 8, width 64, linear
// + relu layers) of depth L = 4, 16, 64 with the gradient of every layer's weight, the way a
// training step differentiates it: per depth the kernels after lowering, the C the cc unit holds
// (functions written, kernels sharing one), and per layer the lowering, the interpreter, tcc's
// first result and cc's cold first result (disk cache off, fresh kernel names). Then whether a
// compiled assign scan whose output is given no data costs what it costs with the output given.
// Each line of targets says MET or NOT MET; every compiled output is checked against the
// interpreter's, bit for bit.
#include <cmath>
#include <cstdio>
#include <iostream>

#include "backends/c/render.h"
#include "backends/program.h"
#include "bench.h"
#include "cases.h"
#include "cli.h"
#include "interp/compare.h"
#include "lower/lower.h"
#include "opt/opt.h"
#include "tensor/tensor.h"
#include "uop/args.h"
#include "uop/error.h"

namespace ow::cli::bench {

namespace {

// The loss sum(mlp(img)) of a vmapped MLP of `depth` layers (deep_mlp) and its gradient with
// respect to every weight, as the outputs w<k>_grad.
UOp grad_mlp(int64_t depth, int64_t rows, int64_t width, const std::string& tag) {
  UOp net = deep_mlp(depth, rows, width, tag);
  Tensor loss = Tensor(net->src[0]).sum();
  std::vector<UOp> grads;
  ArgTuple names;
  for (UOp u : toposort(net))
    if (u->op == Ops::BUFFER && buffer_name(u).rfind("w", 0) == 0) {
      grads.push_back(UOp::make(Ops::GRADIENT, dtypes::float32, {loss.uop(), u}));
      names.push_back(Arg(buffer_name(u) + "_grad"));
    }
  return UOp::sink(grads, Arg(names));
}

struct DepthRow {
  int64_t depth = 0;
  size_t nodes = 0, kernels = 0, functions = 0, c_bytes = 0;
  std::vector<double> lower, interp, tcc, cc;  // seconds per layer, per round
  std::string check = "bit-exact";
};

bool same_outputs(const std::vector<interp::Output>& want, const std::vector<interp::Output>& got) {
  if (want.size() != got.size()) return false;
  for (size_t o = 0; o < want.size(); ++o)
    if (first_difference(want[o].value, got[o].value)) return false;
  return true;
}

// One round at one depth: fresh buffer names (no interned node reused), then each stage timed.
void depth_round(int64_t depth, int round, DepthRow& row, uint64_t seed) {
  double L = double(depth);
  UOp g = grad_mlp(depth, 8, 64, "_d" + std::to_string(round));
  row.nodes = toposort(g).size();
  interp::BufferMap inputs;
  fill_random_inputs(g, inputs, seed);
  interp::BufferMap ib = copy_buffers(inputs);
  auto t0 = Clock::now();
  std::vector<interp::Output> want = interp::run(g, ib);
  row.interp.push_back(seconds_since(t0) / L);
  t0 = Clock::now();
  UOp program = lower::lower(g);
  double lowered = seconds_since(t0);
  row.lower.push_back(lowered / L);
  row.kernels = kernels_of(program).size();
  backend::RenderOptions cc_opts;
  cc_opts.target = backend::Target::cc;
  backend::RenderedUnit unit = backend::render_unit(kernels_of(opt::optimize(program, opt::options_for(cc_opts.target))), cc_opts);
  row.functions = unit.kernels.size() - unit.shared, row.c_bytes = unit.source.size();
  for (const char* tier : {"tcc", "cc"}) {
    backend::RunOptions ro;
    ro.backend = backend::parse_backend(tier);
    UOp fresh = rename_kernels(program, "dp" + nonce());  // never compiled before
    interp::BufferMap b = copy_buffers(inputs);
    t0 = Clock::now();
    std::vector<interp::Output> got = backend::run_program(fresh, b, ro);
    (std::string(tier) == "tcc" ? row.tcc : row.cc).push_back((lowered + seconds_since(t0)) / L);
    if (!same_outputs(want, got)) row.check = std::string("WRONG (") + tier + ")";
  }
}

// A compiled assign scan of n steps from a fresh Program (lowered, compiled from the cache) to
// its result, `out` given zeros or given no data (the runner must then decide whether an output
// reads uninitialized memory): seconds, median of `repeat`, the two taking turns.
void scan_without_out(const Settings& s) {
  const int64_t n = 10000, d = 16;
  UOp g = cases::scan_with_assign(n, d);
  interp::BufferMap given;
  fill_random_inputs(g, given, s.seed);
  auto zeros = std::make_shared<interp::Storage>(dtypes::float32, n * d);
  given["out"] = interp::BufferData{dtypes::float32, zeros, nullptr};
  interp::BufferMap missing = copy_buffers(given);
  missing.erase("out");
  std::printf("\nassign scan, N = %lld, D = %lld: a fresh Program's first result (lower + compile, cached + run), `out` given zeros vs given no data; median of %d\n",
              static_cast<long long>(n), static_cast<long long>(d), s.repeat);
  std::printf("%-8s %14s %14s %8s\n", "backend", "out given", "out missing", "ratio");
  for (const char* tier : {"tcc", "cc"}) {
    backend::RunOptions ro;
    ro.backend = backend::parse_backend(tier);
    std::vector<double> t[2];
    for (int k = 0; k <= s.repeat; ++k)
      for (int side = 0; side < 2; ++side) {
        interp::BufferMap b = copy_buffers(side ? missing : given);
        auto t0 = Clock::now();
        backend::run_program(lower::lower(g), b, ro);
        if (k > 0) t[side].push_back(seconds_since(t0));  // (round 0 compiles)
      }
    double a = median_or_nan(t[0]), m = median_or_nan(t[1]);
    std::printf("%-8s %14s %14s %8s\n", tier, fmt_time(a).c_str(), fmt_time(m).c_str(), fmt_ratio(m / a).c_str());
    ratio_line(std::string(tier) + ": out missing / out given", m, a, 1.2);
  }
}

}  // namespace

int bench_depth(const Settings& s) {
  const std::vector<int64_t> depths{4, 16, 64};
  std::vector<DepthRow> rows(depths.size());
  int rounds = std::max(1, std::min(s.repeat, 3));
  DiskCacheOff off;  // cc's first results compile
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < depths.size(); ++i) {  // the depths take turns
      rows[i].depth = depths[i];
      depth_round(depths[i], r, rows[i], s.seed);
      std::cerr << "[bench] --depth L=" << depths[i] << " round " << r + 1 << ": " << rows[i].check << "\n";
    }
  std::printf("vmapped MLP, batch 8, width 64, linear + relu per layer, the gradient of every weight; medians of %d round(s), seconds per layer\n", rounds);
  std::printf("  tcc / cc first = lower + render + compile + run, kernels never compiled before (cc: disk cache off)\n");
  std::printf("%6s %8s %8s %10s %10s | %11s %11s %11s %11s  %s\n", "depth", "nodes", "kernels", "functions", "C bytes", "lower", "interp", "tcc first", "cc first", "check vs interp");
  bool bad = false;
  for (const DepthRow& r : rows) {
    std::printf("%6lld %8zu %8zu %10zu %10zu | %11s %11s %11s %11s  %s\n", static_cast<long long>(r.depth), r.nodes, r.kernels, r.functions, r.c_bytes,
                fmt_time(median_or_nan(r.lower)).c_str(), fmt_time(median_or_nan(r.interp)).c_str(), fmt_time(median_or_nan(r.tcc)).c_str(),
                fmt_time(median_or_nan(r.cc)).c_str(), r.check.c_str());
    bad = bad || r.check != "bit-exact";
  }
  const DepthRow &small = rows.front(), &big = rows.back();
  std::printf("targets, depth %lld against depth %lld:\n", static_cast<long long>(big.depth), static_cast<long long>(small.depth));
  ratio_line("kernels", double(big.kernels), double(small.kernels), double(big.depth / small.depth) * 1.3);
  ratio_line("lowering per layer", median_or_nan(big.lower), median_or_nan(small.lower), 1.3);
  ratio_line("interpreter per layer", median_or_nan(big.interp), median_or_nan(small.interp), 1.3);
  ratio_line("tcc first result per layer", median_or_nan(big.tcc), median_or_nan(small.tcc), 1.3);
  ratio_line("cc cold first result per layer", median_or_nan(big.cc), median_or_nan(small.cc), 2.0);
  scan_without_out(s);
  return bad ? 1 : 0;
}

}  // namespace ow::cli::bench
