// ow bench, the compiled path's modes (the options and the steady-state table are in
// cmd_bench.cpp):
//   --compile       per-kernel compile latency of tcc and cc, uncached;
//   --first-result  time to first result per reference case (lower + render + compile + run);
// (--micro, its steady state against numpy, is in bench_micro.cpp).
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
#include "opt/opt.h"
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

// A string no earlier compile (this process, or cc's disk cache from an earlier one) has seen.
std::string nonce() {
  static unsigned long long n = 0;
  static const unsigned long long stamp = (unsigned long long)Clock::now().time_since_epoch().count() ^ ((unsigned long long)getpid() << 40);
  char b[48];
  std::snprintf(b, sizeof b, "%llx_%llu", stamp, n++);
  return b;
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

namespace {

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

}  // namespace

Timing time_compiled(UOp program, const interp::BufferMap& inputs, const std::string& backend, int repeat, std::vector<interp::Output>& outs) {
  backend::RunOptions ro;
  ro.backend = backend::parse_backend(backend);
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
    times.push_back(seconds_since(t0));
  }
  return summarize(times);
}

double render_and_lookup(UOp program, const std::string& backend, int repeat) {
  auto c = backend::make_compiler(backend);
  backend::RenderOptions ro;
  ro.target = backend::target_named(backend);
  std::vector<UOp> ks;  // in launch order, as Program renders them (the same unit: a cache hit)
  for (const HostLaunch& l : host_program(opt::optimize(program, opt::options_for(ro.target))).launches) ks.push_back(l.kernel);
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = Clock::now();
    backend::RenderedUnit u = backend::render_unit(ks, ro);  // as Program does: one unit, one lookup
    auto lib = c->compile(u.source);
    for (const backend::RenderedKernel& r : u.kernels) lib->symbol(r.name);
    times.push_back(seconds_since(t0));
  }
  return summarize(times).median;
}

// ---------- --compile ----------

namespace {

// One kernel of a reference case, rendered.
struct CaseKernel {
  std::string where;  // the case
  backend::RenderedKernel r;
};

// Every kernel of the cases; a case that does not lower or render is said in `failed`.
std::vector<CaseKernel> rendered_kernels(const Settings& s, backend::Target t, std::vector<std::string>& failed) {
  backend::RenderOptions ro;
  ro.target = t;
  std::vector<CaseKernel> ks;
  for (const std::string& name : case_names(s)) {
    try {
      ParsedGraph g = load_graph((s.cases_dir / (name + ".uop")).string());
      for (UOp k : kernels_of(opt::optimize(lower::lower(g.root), opt::options_for(t)))) ks.push_back({name, backend::render_kernel(k, ro)});
    } catch (const InternalError&) {
      throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
    } catch (const Error& e) {
      failed.push_back(name + ": " + std::string(e.what()).substr(0, 120));
    }
  }
  return ks;
}

// Seconds of each compile (compile() + symbol lookup) of one compiler, all and per case.
struct CompileSamples {
  std::vector<double> all;
  std::map<std::string, std::vector<double>> per_case;
};

// `rounds` rounds over every kernel, each source made new by a unique comment.
CompileSamples time_compiles(const std::vector<CaseKernel>& ks, const std::string& comp, int rounds) {
  CompileSamples out;
  auto c = backend::make_compiler(comp);
  for (int round = 0; round < rounds; ++round)
    for (const CaseKernel& k : ks) {
      std::string src = "/* ow bench " + nonce() + " */\n" + k.r.source;
      auto t0 = Clock::now();
      auto lib = c->compile(src);
      lib->symbol(k.r.name);
      double t = seconds_since(t0);
      out.all.push_back(t);
      out.per_case[k.where].push_back(t);
    }
  backend::CompileStats st = c->stats();
  if (st.cache_hits) std::printf("warning: %s answered %llu compiles from its cache\n", comp.c_str(), (unsigned long long)st.cache_hits);
  return out;
}

void print_compile_tables(const std::vector<CaseKernel>& ks, std::map<std::string, CompileSamples>& by) {
  std::printf("compile latency per kernel (render excluded; compile() + symbol lookup, uncached: unique comment)\n");
  std::printf("%-28s %8s %12s %12s %8s\n", "case", "kernels", "tcc median", "cc median", "cc/tcc");
  std::map<std::string, int> count;
  for (const CaseKernel& k : ks) ++count[k.where];
  for (auto& [name, n] : count) {
    double t = median_or_nan(by["tcc"].per_case[name]), c = median_or_nan(by["cc"].per_case[name]);
    std::printf("%-28s %8d %12s %12s %8s\n", name.c_str(), n, fmt_time(t).c_str(), fmt_time(c).c_str(), fmt_ratio(c / t).c_str());
  }
  std::printf("\n%-8s %8s %12s %12s %12s %12s\n", "compiler", "samples", "median", "p90", "min", "max");
  for (const std::string comp : {"tcc", "cc"}) {
    auto& v = by[comp].all;
    if (v.empty()) continue;
    std::printf("%-8s %8zu %12s %12s %12s %12s\n", comp.c_str(), v.size(), fmt_time(median_or_nan(v)).c_str(), fmt_time(percentile(v, 0.9)).c_str(),
                fmt_time(*std::min_element(v.begin(), v.end())).c_str(), fmt_time(*std::max_element(v.begin(), v.end())).c_str());
  }
}

void print_compile_targets(const std::vector<CaseKernel>& ks, std::map<std::string, CompileSamples>& by) {
  std::vector<double> sizes;
  for (const CaseKernel& k : ks) sizes.push_back(double(k.r.source.size()));
  double tm = median_or_nan(by["tcc"].all), cm = median_or_nan(by["cc"].all);
  std::printf("kernel C source: median %.0f bytes, max %.0f bytes\n", median_or_nan(sizes), *std::max_element(sizes.begin(), sizes.end()));
  std::printf("ratio cc/tcc (medians): %s\n", fmt_ratio(cm / tm).c_str());
  std::printf("target tcc median < 1 ms: %s (%s)\n", met(tm < 1e-3), fmt_time(tm).c_str());
  std::printf("target tcc >= 30x below cc: %s (%s)\n", met(cm / tm >= 30), fmt_ratio(cm / tm).c_str());
}

}  // namespace

int bench_compile(const Settings& s) {
  private_cc_cache(s);
  std::vector<std::string> failed, failed_cc;
  std::vector<CaseKernel> ks = rendered_kernels(s, backend::Target::tcc, failed), ks_cc = rendered_kernels(s, backend::Target::cc, failed_cc);
  std::cerr << "[bench] --compile: " << ks.size() << " kernels; tcc " << s.repeat << " rounds, cc " << cc_rounds(s.repeat) << " rounds\n";
  std::map<std::string, CompileSamples> by;  // compiler -> samples, each of the C written for it
  by["tcc"] = time_compiles(ks, "tcc", s.repeat);
  by["cc"] = time_compiles(ks_cc, "cc", cc_rounds(s.repeat));
  print_compile_tables(ks, by);
  if (ks.empty()) return 1;
  print_compile_targets(ks, by);
  for (auto& f : failed) std::printf("skipped (does not lower or render): %s\n", f.c_str());
  return failed.empty() ? 0 : 1;
}

// ---------- --first-result ----------

namespace {

const char* const kTiers[2] = {"tcc", "cc"};

// Seconds of each round of one compiler on one case.
struct Split {
  std::vector<double> lower, first, steady, total, render;
};

struct CaseRow {
  std::string name;
  size_t kernels = 0;
  std::map<std::string, Split> by;  // compiler -> its rounds
  std::string check = "bit-exact";
  bool bad = false;
};

// One round: lower, fresh kernel names (a program never compiled), the first run (render +
// compile + run), the same run again and the render alone. The first round's outputs are
// checked against the interpreter's `want`.
void first_result_round(UOp root, const interp::BufferMap& inputs, const std::vector<interp::Output>& want, const std::string& comp, bool check, CaseRow& row) {
  backend::RunOptions ro;
  ro.backend = backend::parse_backend(comp);
  auto t0 = Clock::now();
  UOp program = lower::lower(root);
  double t_lower = seconds_since(t0);
  UOp fresh = rename_kernels(program, "ob" + nonce());  // not timed: stands for a program never compiled
  row.kernels = kernels_of(fresh).size();
  interp::BufferMap b = copy_buffers(inputs);
  auto t1 = Clock::now();
  std::vector<interp::Output> got = backend::run_program(fresh, b, ro);  // render + compile + run
  double t_first = seconds_since(t1);
  interp::BufferMap b2 = copy_buffers(inputs);
  auto t2 = Clock::now();
  backend::run_program(fresh, b2, ro);  // the same program again: compile cache hits
  double t_steady = seconds_since(t2);
  auto t3 = Clock::now();
  backend::RenderOptions only;
  only.target = backend::target_named(comp);
  backend::render_unit(kernels_of(opt::optimize(fresh, opt::options_for(only.target))), only);  // the kernel-opt passes and the render (what run_program does first)
  double t_render = seconds_since(t3);
  Split& sp = row.by[comp];
  sp.lower.push_back(t_lower), sp.first.push_back(t_first), sp.steady.push_back(t_steady), sp.total.push_back(t_lower + t_first);
  sp.render.push_back(t_render);
  if (check)
    for (size_t o = 0; o < want.size(); ++o) {
      auto d = o < got.size() ? first_difference(want[o].value, got[o].value) : std::optional<Difference>(Difference{-1, 0, 0});
      if (d) row.check = "WRONG (" + comp + ": output " + want[o].name + " element " + std::to_string(d->index) + ")", row.bad = true;
    }
}

CaseRow first_result_case(const Settings& s, const std::string& name) {
  CaseRow row{name, 0, {}, "bit-exact", false};
  try {
    ParsedGraph g = load_graph((s.cases_dir / (name + ".uop")).string());  // parse: not timed
    interp::BufferMap inputs;
    fill_random_inputs(g.root, inputs, s.seed);
    interp::BufferMap rb = copy_buffers(inputs);
    std::vector<interp::Output> want = interp::run(g.root, rb);
    for (const std::string comp : kTiers) {
      if (!has_backend(s, comp)) continue;
      int rounds = comp == "tcc" ? s.repeat : cc_rounds(s.repeat);
      for (int i = 0; i < rounds; ++i) first_result_round(g.root, inputs, want, comp, i == 0, row);
    }
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error& e) {
    row.check = "failed: " + std::string(e.what()).substr(0, 100), row.bad = true;
    std::replace(row.check.begin(), row.check.end(), '\n', ' ');
  }
  std::cerr << "[bench] --first-result " << name << ": " << (row.by.count("tcc") ? fmt_time(median_or_nan(row.by["tcc"].total)) : row.check) << "\n";
  return row;
}

// One row of the table; `totals` collects each compiler's median total.
void print_first_result_row(CaseRow& r, std::map<std::string, std::vector<double>>& totals) {
  std::string cells[2][5];
  double tot[2] = {NAN, NAN};
  for (int c = 0; c < 2; ++c) {
    auto it = r.by.find(kTiers[c]);
    if (it == r.by.end()) {
      for (auto& x : cells[c]) x = "-";
      continue;
    }
    Split& sp = it->second;
    tot[c] = median_or_nan(sp.total);
    totals[kTiers[c]].push_back(tot[c]);
    cells[c][0] = fmt_time(median_or_nan(sp.lower)), cells[c][1] = fmt_time(median_or_nan(sp.first)), cells[c][2] = fmt_time(median_or_nan(sp.render)),
    cells[c][3] = fmt_time(median_or_nan(sp.steady)), cells[c][4] = fmt_time(tot[c]);
  }
  std::printf("%-26s %4zu | %9s %9s %9s %9s %9s | %9s %9s %9s %9s %9s | %6s  %s\n", r.name.c_str(), r.kernels, cells[0][0].c_str(), cells[0][1].c_str(),
              cells[0][2].c_str(), cells[0][3].c_str(), cells[0][4].c_str(), cells[1][0].c_str(), cells[1][1].c_str(), cells[1][2].c_str(), cells[1][3].c_str(),
              cells[1][4].c_str(), std::isnan(tot[0]) || std::isnan(tot[1]) ? "-" : fmt_ratio(tot[1] / tot[0]).c_str(), r.check.c_str());
}

void print_first_result_table(std::vector<CaseRow>& rows, int repeat) {
  std::printf("time to first result, in process, parse excluded: lower + render + compile (uncached) + run; medians of %d (tcc) / %d (cc) rounds\n", repeat,
              cc_rounds(repeat));
  std::printf("  split: lower | 1st run = kernel-opt passes + render + compile + run | render = the kernel-opt passes and rendering alone | steady = the same run again, compiled\n");
  std::printf("         (so compile ~ 1st run - steady - render; steady includes the per-run render + cache lookup, see ow bench's steady-state mode)\n");
  std::printf("%-26s %4s | %9s %9s %9s %9s %9s | %9s %9s %9s %9s %9s | %6s  %s\n", "case", "kern", "tcc lower", "1st run", "render", "steady", "TOTAL", "cc lower",
              "1st run", "render", "steady", "TOTAL", "cc/tcc", "check vs interp");
  std::map<std::string, std::vector<double>> totals;
  for (CaseRow& r : rows) print_first_result_row(r, totals);
  std::printf("median over cases: tcc %s, cc %s\n", fmt_time(median_or_nan(totals["tcc"])).c_str(), fmt_time(median_or_nan(totals["cc"])).c_str());
  for (CaseRow& r : rows)
    if (r.name == "scan_with_assign" && r.by.count("tcc")) {
      double t = median_or_nan(r.by["tcc"].total);
      std::printf("target scan_with_assign on tcc < 5 ms: %s (%s)\n", met(t < 5e-3), fmt_time(t).c_str());
    }
}

}  // namespace

int bench_first_result(const Settings& s) {
  private_cc_cache(s);
  std::vector<CaseRow> rows;
  for (const std::string& name : case_names(s)) rows.push_back(first_result_case(s, name));
  print_first_result_table(rows, s.repeat);
  bool bad = std::any_of(rows.begin(), rows.end(), [](const CaseRow& r) { return r.bad; });
  if (has_backend(s, "cc") && s.cases.empty()) bad = bench_compile_modes(s) != 0 || bad;  // its own cases: not when --cases picks others
  return bad ? 1 : 0;
}

}  // namespace ow::cli::bench
