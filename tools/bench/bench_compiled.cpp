// ow bench, the compiled path's modes (the options and the steady-state table are in
// cmd_bench.cpp):
//   --compile       per-kernel compile latency of tcc and cc, uncached;
//   --first-result  time to first result per reference case (lower + render + compile + run);
//   --micro         a*b+1 on 16M float32 and a 512^3 float32 matmul, tcc/cc vs numpy.
// Benchmarks, not tests. Compiles are cached by source (in process, and on disk for cc), so a real
// compile needs a source never seen before: --compile prepends a unique comment, --first-result
// renames every kernel (the name is the C function's, so the whole path runs as it would on a
// new program), and both point cc's disk cache (XDG_CACHE_HOME) into the temporary directory.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <set>

#include "backends/c/render.h"
#include "backends/compiler.h"
#include "backends/program.h"
#include "bench.h"
#include "cli.h"
#include "interp/npy.h"
#include "lower/lower.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/pattern.h"
#include "uop/text.h"

namespace ow::cli::bench {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A string no earlier compile (this process, or cc's disk cache from an earlier one) has seen.
std::string nonce() {
  static unsigned long long n = 0;
  static const unsigned long long stamp = (unsigned long long)Clock::now().time_since_epoch().count() ^ ((unsigned long long)getpid() << 40);
  char b[48];
  std::snprintf(b, sizeof b, "%llx_%llu", stamp, n++);
  return b;
}

// cc's disk cache into the temporary directory: real compiles, and no litter in ~/.cache.
void private_cc_cache(const Settings& s) {
  fs::path d = s.tmp / "xdg-cache";
  fs::create_directories(d);
  setenv("XDG_CACHE_HOME", d.c_str(), 1);
}

std::vector<std::string> case_names(const Settings& s) {
  if (!s.cases.empty()) return s.cases;
  std::vector<std::string> names;
  for (auto& e : fs::directory_iterator(s.cases_dir))
    if (e.path().extension() == ".uop") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<UOp> kernels_of(UOp program) {
  std::vector<UOp> ks;
  for (UOp u : toposort(program))
    if (u->op == Ops::KERNEL) ks.push_back(u);
  return ks;
}

// The program with every KERNEL renamed NAME_<suffix>: same C, new function name, so the
// compile cache has never seen its sources.
UOp rename_kernels(UOp program, const std::string& suffix) {
  std::vector<std::pair<UOp, UOp>> map;
  for (UOp k : kernels_of(program)) {
    ArgTuple t = *k->arg.tuple();
    t[0] = t[0].as<std::string>() + "_" + suffix;
    map.push_back({k, k.with_arg(t)});
  }
  UOp out = substitute(program, map);
  for (UOp k : kernels_of(out))
    if (kernel_name(k).find(suffix) == std::string::npos) throw Error("ow bench: renaming the kernels of a program missed one");
  return out;
}

double median_of(std::vector<double> v) { return v.empty() ? NAN : summarize(std::move(v)).median; }

const char* met(bool ok) { return ok ? "MET" : "NOT MET"; }

}  // namespace

Timing time_compiled(UOp program, const interp::BufferMap& inputs, const std::string& backend, int repeat, std::vector<interp::Output>& outs) {
  backend::RunOptions ro;
  ro.backend = backend;
  backend::Program prepared(program, ro);  // renders and compiles every kernel
  {
    interp::BufferMap b = copy_buffers(inputs);
    outs = prepared.run(b);  // warm-up
  }
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    interp::BufferMap b = copy_buffers(inputs);  // fresh inputs (a program may write them); not timed
    auto t0 = Clock::now();
    prepared.run(b);
    times.push_back(since(t0));
  }
  return summarize(times);
}

double render_and_lookup(UOp program, const std::string& backend, int repeat) {
  auto c = backend::make_compiler(backend);
  std::vector<UOp> ks = kernels_of(program);
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = Clock::now();
    for (UOp k : ks) {
      backend::RenderedKernel r = backend::render_kernel(k);
      c->compile(r.source)->symbol(r.name);
    }
    times.push_back(since(t0));
  }
  return summarize(times).median;
}

// ---------- --compile ----------

int bench_compile(const Settings& s) {
  private_cc_cache(s);
  const int tcc_rounds = s.repeat, cc_rounds = std::max(1, std::min(s.repeat, 3));
  struct K {
    std::string where;
    backend::RenderedKernel r;
  };
  std::vector<K> ks;
  std::vector<std::string> failed;
  for (const std::string& name : case_names(s)) {
    try {
      ParsedGraph g = load_graph((s.cases_dir / (name + ".uop")).string());
      for (UOp k : kernels_of(lower::lower(g.root))) ks.push_back({name, backend::render_kernel(k)});
    } catch (const Error& e) {
      failed.push_back(name + ": " + std::string(e.what()).substr(0, 120));
    }
  }
  std::cerr << "[bench] --compile: " << ks.size() << " kernels; tcc " << tcc_rounds << " rounds, cc " << cc_rounds << " rounds\n";
  std::map<std::string, std::vector<double>> all;                         // compiler -> every sample
  std::map<std::string, std::map<std::string, std::vector<double>>> per;  // compiler -> case -> samples
  for (const std::string comp : {"tcc", "cc"}) {
    auto c = backend::make_compiler(comp);
    int rounds = comp == "tcc" ? tcc_rounds : cc_rounds;
    for (int round = 0; round < rounds; ++round)
      for (const K& k : ks) {
        std::string src = "/* ow bench " + nonce() + " */\n" + k.r.source;
        auto t0 = Clock::now();
        auto lib = c->compile(src);
        lib->symbol(k.r.name);
        double t = since(t0);
        all[comp].push_back(t);
        per[comp][k.where].push_back(t);
      }
    backend::CompileStats st = c->stats();
    if (st.cache_hits) std::printf("warning: %s answered %llu compiles from its cache\n", comp.c_str(), (unsigned long long)st.cache_hits);
  }
  std::vector<double> sizes;
  for (const K& k : ks) sizes.push_back(double(k.r.source.size()));

  std::printf("compile latency per kernel (render excluded; compile() + symbol lookup, uncached: unique comment)\n");
  std::printf("%-28s %8s %12s %12s %8s\n", "case", "kernels", "tcc median", "cc median", "cc/tcc");
  std::map<std::string, int> count;
  for (const K& k : ks) ++count[k.where];
  for (auto& [name, n] : count) {
    double t = median_of(per["tcc"][name]), c = median_of(per["cc"][name]);
    std::printf("%-28s %8d %12s %12s %8s\n", name.c_str(), n, fmt_time(t).c_str(), fmt_time(c).c_str(), fmt_ratio(c / t).c_str());
  }
  std::printf("\n%-8s %8s %12s %12s %12s %12s\n", "compiler", "samples", "median", "p90", "min", "max");
  for (const std::string comp : {"tcc", "cc"}) {
    auto& v = all[comp];
    if (v.empty()) continue;
    std::printf("%-8s %8zu %12s %12s %12s %12s\n", comp.c_str(), v.size(), fmt_time(median_of(v)).c_str(), fmt_time(percentile(v, 0.9)).c_str(),
                fmt_time(*std::min_element(v.begin(), v.end())).c_str(), fmt_time(*std::max_element(v.begin(), v.end())).c_str());
  }
  if (ks.empty()) return 1;
  double tm = median_of(all["tcc"]), cm = median_of(all["cc"]);
  std::printf("kernel C source: median %.0f bytes, max %.0f bytes\n", median_of(sizes), *std::max_element(sizes.begin(), sizes.end()));
  std::printf("ratio cc/tcc (medians): %s\n", fmt_ratio(cm / tm).c_str());
  std::printf("target tcc median < 1 ms: %s (%s)\n", met(tm < 1e-3), fmt_time(tm).c_str());
  std::printf("target tcc >= 30x below cc: %s (%s)\n", met(cm / tm >= 30), fmt_ratio(cm / tm).c_str());
  for (auto& f : failed) std::printf("skipped (does not lower or render): %s\n", f.c_str());
  return failed.empty() ? 0 : 1;
}

// ---------- --first-result ----------

int bench_first_result(const Settings& s) {
  private_cc_cache(s);
  const std::vector<std::string> comps = {"tcc", "cc"};
  struct Split {
    std::vector<double> lower, first, steady, total, render;
  };
  struct CaseRow {
    std::string name;
    size_t kernels = 0;
    std::map<std::string, Split> by;
    std::string check = "bit-exact";
    bool bad = false;
  };
  std::vector<CaseRow> rows;
  for (const std::string& name : case_names(s)) {
    CaseRow row{name, 0, {}, "bit-exact", false};
    try {
      ParsedGraph g = load_graph((s.cases_dir / (name + ".uop")).string());  // parse: not timed
      interp::BufferMap inputs;
      fill_random_inputs(g.root, inputs, s.seed);
      interp::BufferMap rb = copy_buffers(inputs);
      std::vector<interp::Output> want = interp::run(g.root, rb);
      for (const std::string& comp : comps) {
        int rounds = comp == "tcc" ? s.repeat : std::max(1, std::min(s.repeat, 3));
        backend::RunOptions ro;
        ro.backend = comp;
        for (int i = 0; i < rounds; ++i) {
          auto t0 = Clock::now();
          UOp program = lower::lower(g.root);
          double t_lower = since(t0);
          UOp fresh = rename_kernels(program, "ob" + nonce());  // not timed: stands for a program never compiled
          row.kernels = kernels_of(fresh).size();
          interp::BufferMap b = copy_buffers(inputs);
          auto t1 = Clock::now();
          std::vector<interp::Output> got = backend::run_program(fresh, b, ro);  // render + compile + run
          double t_first = since(t1);
          interp::BufferMap b2 = copy_buffers(inputs);
          auto t2 = Clock::now();
          backend::run_program(fresh, b2, ro);  // the same program again: compile cache hits
          double t_steady = since(t2);
          auto t3 = Clock::now();
          for (UOp k : kernels_of(fresh)) backend::render_kernel(k);  // the render alone (what run_program does first)
          double t_render = since(t3);
          Split& sp = row.by[comp];
          sp.lower.push_back(t_lower), sp.first.push_back(t_first), sp.steady.push_back(t_steady), sp.total.push_back(t_lower + t_first);
          sp.render.push_back(t_render);
          if (i == 0)
            for (size_t o = 0; o < want.size(); ++o) {
              auto d = o < got.size() ? first_difference(want[o].value, got[o].value) : std::optional<Difference>(Difference{-1, 0, 0});
              if (d) row.check = "WRONG (" + comp + ": output " + want[o].name + " element " + std::to_string(d->index) + ")", row.bad = true;
            }
        }
      }
    } catch (const Error& e) {
      row.check = "failed: " + std::string(e.what()).substr(0, 100), row.bad = true;
      std::replace(row.check.begin(), row.check.end(), '\n', ' ');
    }
    std::cerr << "[bench] --first-result " << name << ": " << (row.by.count("tcc") ? fmt_time(median_of(row.by["tcc"].total)) : row.check) << "\n";
    rows.push_back(row);
  }

  std::printf("time to first result, in process, parse excluded: lower + render + compile (uncached) + run; medians of %d (tcc) / %d (cc) rounds\n", s.repeat,
              std::max(1, std::min(s.repeat, 3)));
  std::printf("  split: lower | 1st run = render + compile + run | render = rendering the kernels alone | steady = the same run again, compiled\n");
  std::printf("         (so compile ~ 1st run - steady - render; steady includes the per-run render + cache lookup, see ow bench's steady-state mode)\n");
  std::printf("%-26s %4s | %9s %9s %9s %9s %9s | %9s %9s %9s %9s %9s | %6s  %s\n", "case", "kern", "tcc lower", "1st run", "render", "steady", "TOTAL", "cc lower",
              "1st run", "render", "steady", "TOTAL", "cc/tcc", "check vs interp");
  std::map<std::string, std::vector<double>> totals;
  for (CaseRow& r : rows) {
    std::string cells[2][5];
    double tot[2] = {NAN, NAN};
    for (int c = 0; c < 2; ++c) {
      auto it = r.by.find(comps[c]);
      if (it == r.by.end()) {
        for (auto& x : cells[c]) x = "-";
        continue;
      }
      Split& sp = it->second;
      tot[c] = median_of(sp.total);
      totals[comps[c]].push_back(tot[c]);
      cells[c][0] = fmt_time(median_of(sp.lower)), cells[c][1] = fmt_time(median_of(sp.first)), cells[c][2] = fmt_time(median_of(sp.render)),
      cells[c][3] = fmt_time(median_of(sp.steady)), cells[c][4] = fmt_time(tot[c]);
    }
    std::printf("%-26s %4zu | %9s %9s %9s %9s %9s | %9s %9s %9s %9s %9s | %6s  %s\n", r.name.c_str(), r.kernels, cells[0][0].c_str(), cells[0][1].c_str(),
                cells[0][2].c_str(), cells[0][3].c_str(), cells[0][4].c_str(), cells[1][0].c_str(), cells[1][1].c_str(), cells[1][2].c_str(), cells[1][3].c_str(),
                cells[1][4].c_str(),
                std::isnan(tot[0]) || std::isnan(tot[1]) ? "-" : fmt_ratio(tot[1] / tot[0]).c_str(), r.check.c_str());
  }
  std::printf("median over cases: tcc %s, cc %s\n", fmt_time(median_of(totals["tcc"])).c_str(), fmt_time(median_of(totals["cc"])).c_str());
  for (CaseRow& r : rows)
    if (r.name == "scan_with_assign" && r.by.count("tcc")) {
      double t = median_of(r.by["tcc"].total);
      std::printf("target scan_with_assign on tcc < 5 ms: %s (%s)\n", met(t < 5e-3), fmt_time(t).c_str());
    }
  bool bad = std::any_of(rows.begin(), rows.end(), [](const CaseRow& r) { return r.bad; });
  return bad ? 1 : 0;
}

// ---------- --micro ----------

namespace {

const char* kAxpb = R"(%0 = BUFFER float32 () ("a", 16777216)
%1 = BUFFER float32 () ("b", 16777216)
%2 = MUL float32 (%0, %1)
%3 = CONST float32 () 1.0
%4 = ADD float32 (%2, %3)
%5 = SINK void (%4) ("c",)
)";

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

struct Micro {
  std::string name, kind, text;
  std::vector<InputSpec> inputs;
};

}  // namespace

int bench_micro(const Settings& s) {
  const int64_t N = 16777216, M = 512;
  std::vector<Micro> micros = {{"a*b+1 16M f32", "axpb", kAxpb, {{"a", {N}, 1.0}, {"b", {N}, 1.0}}},
                               {"matmul 512^3 f32", "matmul", kMatmul, {{"a", {M, M}, 1.0}, {"b", {M, M}, 1.0}}}};
  struct Line {
    std::string backend;
    Timing t, reuse;
    bool has_reuse = false;
    std::string check;
  };
  std::vector<std::pair<std::string, std::vector<Line>>> table;
  std::vector<std::string> info;
  bool bad = false;
  std::map<std::string, std::map<std::string, double>> med;  // micro -> backend -> median
  std::map<std::string, std::map<std::string, double>> med_reuse;
  std::map<std::string, double> reuse_np;
  for (const Micro& m : micros) {
    ParsedGraph g = parse_graph(m.text, "<micro " + m.kind + ">");
    verify_parsed(g);
    fs::path dir = s.tmp / ("micro_" + m.kind);
    fs::create_directories(dir);
    interp::BufferMap inputs;
    std::map<std::string, interp::Value> in_vals;
    for (const InputSpec& in : m.inputs) {
      interp::Value v = random_input(in, "micro_" + m.kind, s.seed);
      interp::save_npy((dir / (in.name + ".npy")).string(), v);
      inputs[in.name] = interp::BufferData{dtypes::float32, v.data, nullptr};
      in_vals[in.name] = v;
    }
    std::vector<Line> lines;
    // numpy first: its output is the reference of the checks.
    std::cerr << "[bench] --micro " << m.name << ": numpy" << std::flush;
    fs::path ref_path = dir / "numpy_out.npy";
    NumpyRun nr = run_numpy(s, m.kind, dir, ref_path);
    merge_info(info, nr.info);
    std::cerr << ": median " << fmt_time(nr.t.median) << "\n";
    interp::NpyArray ref = interp::load_npy(ref_path.string());
    const float* rf = ref.data->as<float>();
    // matmul tolerance per element: both sides sum the same 512 exact-up-to-rounding products, in
    // different orders (ours sequential, BLAS blocked and maybe with FMA). Each float32 sum of n
    // terms is within gamma_n * sum_k |a_ik b_kj| of the exact value, gamma_n = n u / (1 - n u),
    // u = 2^-24 (Higham, Accuracy and Stability, 3.1), the products adding at most one more
    // rounding each; so two such sums differ by at most 2 * gamma_(n+1) * sum_k |a_ik||b_kj|.
    // Typical errors are ~sqrt(n) u, far below: the bound flags real bugs, not reordering.
    std::vector<double> bound;
    if (m.kind == "matmul") {
      const float *a = in_vals["a"].data->as<float>(), *b = in_vals["b"].data->as<float>();
      bound.assign(size_t(M * M), 0.0);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < M; ++k) {
          double aik = std::fabs(double(a[i * M + k]));
          for (int64_t j = 0; j < M; ++j) bound[size_t(i * M + j)] += aik * std::fabs(double(b[k * M + j]));
        }
      double nu = double(M + 1) * std::ldexp(1.0, -24), gamma = nu / (1 - nu);
      for (double& x : bound) x *= 2 * gamma;
    }
    for (const std::string be : {"tcc", "cc"}) {
      std::cerr << "[bench] --micro " << m.name << ": " << be << std::flush;
      Line l{be, {}, {}, false, ""};
      try {
        UOp program = lower::lower(g.root);
        std::vector<interp::Output> outs;
        l.t = time_compiled(program, inputs, be, s.repeat, outs);
        // The same writing into one preallocated output (Program's out=, as numpy's out=).
        backend::RunOptions ro;
        ro.backend = be;
        backend::Program prepared(program, ro);
        interp::BufferMap keep = inputs;
        keep["c"] = interp::BufferData{dtypes::float32, std::make_shared<interp::Storage>(dtypes::float32, outs.at(0).value.numel()), nullptr};
        prepared.run(keep);
        std::vector<double> ts;
        for (int i = 0; i < s.repeat; ++i) {
          auto t0 = Clock::now();
          prepared.run(keep);
          ts.push_back(since(t0));
        }
        l.reuse = summarize(ts), l.has_reuse = true;
        std::cerr << ": median " << fmt_time(l.t.median) << " (" << kernels_of(program).size() << " kernels)\n";
        const interp::Value& got = outs.at(0).value;
        if (got.numel() != ref.data->size) throw Error("output has " + std::to_string(got.numel()) + " elements, numpy's " + std::to_string(ref.data->size));
        int64_t bad_at = -1, diffs = 0;
        double worst = 0;  // max |diff| / bound (matmul) or max |diff| (a*b+1)
        for (int64_t i = 0; i < got.numel(); ++i) {
          double x = interp::get_element(got, i), r = rf[i], d = std::fabs(x - r);
          if (m.kind == "axpb") {  // fl(fl(a*b)+1) on both sides (cc: -ffp-contract=off): bit for bit
            if (!(x == r) && !(x != x && r != r)) ++diffs, bad_at = bad_at < 0 ? i : bad_at, worst = std::max(worst, d);
          } else {
            double q = d / bound[size_t(i)];
            if (!(q <= 1)) bad_at = bad_at < 0 ? i : bad_at, ++diffs;
            worst = std::max(worst, q);
          }
        }
        char buf[160];
        if (m.kind == "axpb")
          std::snprintf(buf, sizeof buf, diffs ? "WRONG: %lld elements differ from numpy (first %lld, max |diff| %.3g)" : "bit-exact vs numpy", (long long)diffs,
                        (long long)bad_at, worst);
        else
          std::snprintf(buf, sizeof buf, "%smax |diff|/bound %.2e vs numpy (bound: 2*gamma_513*sum|a||b|)%s", diffs ? "WRONG: " : "", worst,
                        diffs ? (" at " + std::to_string(diffs) + " elements").c_str() : "");
        l.check = buf;
        bad |= diffs > 0;
      } catch (const Error& e) {
        std::cerr << ": failed\n" << e.what() << "\n";
        l.check = "failed: " + std::string(e.what()).substr(0, 80);
        std::replace(l.check.begin(), l.check.end(), '\n', ' ');
        bad = true;
      }
      if (l.t.median > 0) med[m.kind][be] = l.t.median;
      if (l.has_reuse) med_reuse[m.kind][be] = l.reuse.median;
      lines.push_back(l);
    }
    lines.push_back({"numpy", nr.t, nr.reuse.value_or(Timing{}), nr.reuse.has_value(), "reference"});
    if (nr.reuse) reuse_np[m.kind] = nr.reuse->median;
    med[m.kind]["numpy"] = nr.t.median;
    table.push_back({m.name, lines});
  }

  std::printf("micro benchmarks, steady state (compile excluded), 1 warm-up + %d runs\n", s.repeat);
  std::printf("  fresh out = a prepared backend::Program returning a new output each run (numpy: a*b+1, a@b)\n");
  std::printf("  out=      = the same Program writing into one preallocated output (numpy: out=)\n");
  std::printf("%-18s %-7s %12s %12s %10s %12s %10s  %s\n", "workload", "backend", "fresh out", "min", "vs numpy", "out=", "vs numpy", "check");
  for (auto& [name, lines] : table) {
    double np = 0, npr = 0;
    for (auto& l : lines)
      if (l.backend == "numpy") np = l.t.median, npr = l.has_reuse ? l.reuse.median : 0;
    bool first = true;
    for (auto& l : lines) {
      std::string r1 = np > 0 && l.t.median > 0 ? fmt_ratio(l.t.median / np) : "-", r2 = npr > 0 && l.has_reuse ? fmt_ratio(l.reuse.median / npr) : "-";
      std::printf("%-18s %-7s %12s %12s %10s %12s %10s  %s\n", first ? name.c_str() : "", l.backend.c_str(), l.t.median > 0 ? fmt_time(l.t.median).c_str() : "-",
                  l.t.min > 0 ? fmt_time(l.t.min).c_str() : "-", r1.c_str(), l.has_reuse ? fmt_time(l.reuse.median).c_str() : "-", r2.c_str(), l.check.c_str());
      first = false;
    }
  }
  for (const std::string& l : info) std::printf("%s\n", l.c_str());
  auto ratio = [&](const std::string& k, const std::string& b) { return med[k].count(b) && med[k].count("numpy") ? med[k][b] / med[k]["numpy"] : NAN; };
  double ac = ratio("axpb", "cc"), at = ratio("axpb", "tcc"), mc = ratio("matmul", "cc");
  auto rr = [&](const std::string& k, const std::string& b) { return med_reuse[k].count(b) && reuse_np.count(k) ? med_reuse[k][b] / reuse_np[k] : NAN; };
  double acr = rr("axpb", "cc"), atr = rr("axpb", "tcc"), mcr = rr("matmul", "cc");
  std::printf("targets (fresh out | out=):\n");
  std::printf("target a*b+1 cc within 1.3x of numpy: %s (%s) | %s (%s)\n", met(ac <= 1.3), fmt_ratio(ac).c_str(), met(acr <= 1.3), fmt_ratio(acr).c_str());
  std::printf("target a*b+1 tcc within 3x of numpy: %s (%s) | %s (%s)\n", met(at <= 3), fmt_ratio(at).c_str(), met(atr <= 3), fmt_ratio(atr).c_str());
  std::printf("target matmul cc >= 50%% of numpy's speed (its best BLAS kernel, issue 18): %s (%.0f%%) | %s (%.0f%%)\n", met(1 / mc >= 0.5), 100 / mc, met(1 / mcr >= 0.5), 100 / mcr);
  return bad ? 1 : 0;
}

}  // namespace ow::cli::bench
