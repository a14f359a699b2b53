// ow run: evaluate a graph with the reference interpreter.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>

#include "cli.h"
#include "cli/progress.h"
#include "step/trace.h"
#include "backends/program.h"
#include "grad/error_bound.h"
#include "grad/gradient.h"
#include "interp/interp.h"
#include "interp/npy.h"
#include "uop/error.h"

namespace ow::cli {

namespace {

// A value on one line of the text trace: numpy's layout with the line breaks taken out, and
// values over 12 elements cut to their edges unless --full.
std::string one_line(const interp::Value& v, interp::FormatOptions o) {
  o.line_width = std::numeric_limits<int>::max();
  if (!o.full) o.threshold = 12;
  std::string text = interp::format_array(v, o);
  std::string line;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      line += text[i];
      continue;
    }
    while (i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == ' ')) ++i;
    line += ' ';
  }
  return line;
}

po::options_description run_options() {
  po::options_description opts("options");
  opts.add_options()("file", po::value<std::string>()->required(), "graph file (.uop)")(
      "out", po::value<std::vector<std::string>>()->composing(), "save a named output: NAME=PATH.npy (repeatable)")(
      "trace", po::value<std::string>()->implicit_value("text"),
      "print every evaluation step with its range bindings (to stderr). --trace=json: one JSON object per step per "
      "line, with keys step, node (\"%N\" as numbered by ow print), op, dtype, shape, bindings (range name -> value), "
      "count, poison (poisoned elements) and min/max/mean over the clean elements: numbers, the strings \"nan\", "
      "\"inf\", \"-inf\", or null when no element is clean (a KERNEL launch, an all-poison value)")(
      "trace-out", po::value<std::string>(), "write the trace to this file instead of stderr")(
      "backend", po::value<std::string>()->default_value("interp"), "interp (the reference interpreter) | tcc (libtcc JIT) | cc (system compiler) | check (compiled and interpreted, compared kernel by kernel) | auto (tcc, then cc once compiled in the background: for programs run many times)")(
      "compiler", po::value<std::string>()->default_value("tcc"), "with --backend check: the compiled tier to check (tcc | cc)")(
      "compile", po::value<std::string>()->default_value("program"), "compiled backends: program (all kernels in one translation unit, one compile) | kernel (one compile per kernel)")(
      "error-bound", "after each float or integer output NAME, NAME:bound (float64: |value - the exact value| at most this, for any rounding order, reference/SEMANTICS.md S8.1) and NAME:invalid_origin (the first node, as ow print numbers it, that made a NaN of operands that were not or converted a float out of an integer's range, or -1); interpreter only")(
      "bounds-check", "compiled kernels check every memory access");
  add_input_options(opts);
  add_print_options(opts);
  add_budget_options(opts);
  add_lowering_options(opts);
  return opts;
}

// --trace[=json] and --trace-out: a hook writing every evaluation step to the trace's stream.
struct Trace {
  std::ofstream file;
  std::ostream* out = &std::cerr;
  Printed numbering;
  uint64_t steps = 0;
};

void add_trace(const po::variables_map& vm, const ParsedGraph& g, const interp::FormatOptions& print, Trace& t, interp::Options& o) {
  if (vm.count("trace-out")) {
    if (!vm.count("trace")) throw Error("--trace-out needs --trace or --trace=json");
    t.file.open(vm["trace-out"].as<std::string>());
    if (!t.file) throw Error(vm["trace-out"].as<std::string>() + ": cannot write file");
    t.out = &t.file;
  }
  if (!vm.count("trace")) return;
  std::string mode = vm["trace"].as<std::string>();
  if (mode == "json") {
    t.numbering = number_graph(g.root);
    o.on_step = [&t](const interp::Step& s) { *t.out << trace_json(s, t.numbering, ++t.steps) << "\n"; };
  } else if (mode == "text") {
    o.on_step = [&t, &g, print](const interp::Step& s) {
      auto it = g.where.find(s.node.get());
      std::string name = it == g.where.end() ? "?" : "%" + it->second.name;
      *t.out << "[" << interp::bindings_text(s.bindings) << "] " << name << " " << op_name(s.node->op) << " " << interp::format_header(*s.value) << " "
             << one_line(*s.value, print) << "\n";
    };
  } else {
    throw Error("--trace takes no value (text) or =json, got '" + mode + "'");
  }
}

// A progress bar on a terminal (tools/cli/progress.h): the outermost OUTER range's iteration, or
// the number of node evaluations. Costs nothing when stderr is not a terminal.
void add_progress(Progress& bar, uint64_t& evals, interp::Options& o) {
  auto inner = o.on_step;
  o.on_step = [&bar, &evals, inner](const interp::Step& s) {
    if (inner) inner(s);
    ++evals;
    if ((evals & 255) != 0) return;
    for (auto& [r, k] : s.bindings)
      if (range_axis(r) == AxisType::OUTER && r->src[0]->op == Ops::CONST) {
        bar.set_total(static_cast<int64_t>(r->src[0].const_value()));
        bar.update(k, range_name(r) + "=" + std::to_string(k) + ", " + std::to_string(evals) + " evaluations");
        return;
      }
    bar.set_total(0);
    bar.update(static_cast<int64_t>(evals), "evaluations");
  };
}

std::vector<interp::Output> run_compiled(const po::variables_map& vm, backend::Backend backend, UOp root, interp::BufferMap& buffers, uint64_t max_steps) {
  backend::RunOptions ro;
  ro.backend = backend;
  if (backend == backend::Backend::Check) ro.compiler = backend::parse_backend(vm["compiler"].as<std::string>(), "--compiler", backend::kCompilers);
  ro.compile_mode = vm["compile"].as<std::string>();
  ro.bounds_check = vm.count("bounds-check") > 0;
  ro.max_launches = max_steps;
  ro.skip_passes = skipped_passes(vm);
  ro.graph_checked = true;  // load_graph verified it, load_inputs checked the buffers against it
  uint64_t launches = 0;
  if (backend == backend::Backend::Check) ro.on_launch = [&](UOp, const auto&) { ++launches; };  // only check reports it (a hook keeps loops on the host)
  std::vector<interp::Output> outs = backend::run_graph(root, buffers, ro);
  if (backend == backend::Backend::Check)  // a check that passes says so (on stderr: stdout stays the values)
    std::cerr << "ow run: check: " << launches << " kernel launches (" << backend::backend_name(ro.compiler) << ") and " << outs.size()
              << " output(s) agree with the interpreter bit for bit\n";
  return outs;
}

// --out NAME=PATH.npy for each output asked for; without --out, every output printed.
void write_outputs(const po::variables_map& vm, const std::vector<interp::Output>& outs, const interp::FormatOptions& print) {
  std::map<std::string, std::string> wanted;
  if (vm.count("out"))
    for (const std::string& s : vm["out"].as<std::vector<std::string>>()) {
      auto [name, path] = name_eq_path(s, "out");
      wanted[name] = path;
    }
  for (auto& [name, path] : wanted) {
    // (an explicit capture: clang < 16 cannot capture a structured binding)
    auto it = std::find_if(outs.begin(), outs.end(), [&, &name = name](const interp::Output& x) { return x.name == name; });
    if (it == outs.end()) throw Error("the graph has no output named '" + name + "'");
    interp::save_npy(path, it->value);
  }
  if (wanted.empty())
    for (const interp::Output& x : outs) std::cout << value_block(x.name, x.value, print);
}

int cmd_run(const Args& args) {
  po::options_description opts = run_options();
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_options("run", "FILE [--in NAME=PATH.npy]... [--out NAME=PATH.npy]... [--backend interp|tcc|cc|check|auto] [--trace[=json]]", opts, pos, args, vm)) return 0;
  ParsedGraph g = load_graph(vm["file"].as<std::string>());
  using backend::Backend;
  Backend backend = backend::parse_backend(vm["backend"].as<std::string>(), "--backend");
  if (std::string m = vm["compile"].as<std::string>(); m != "program" && m != "kernel") throw Error("--compile must be program or kernel, got '" + m + "'");
  if (backend == Backend::Interp && vm.count("skip-pass")) throw Error("--skip-pass: the interpreter runs the graph as written; lowering passes apply to --backend tcc, cc, check or auto");
  interp::FormatOptions print = print_options(vm);
  uint64_t max_steps = apply_budgets(vm);

  if (vm.count("error-bound")) {
    if (backend != Backend::Interp) throw Error("--error-bound runs on the interpreter (--backend interp)");
    g.root = grad::with_error_bounds(grad::expand(g.root));
  }
  interp::BufferMap buffers = load_inputs(vm, g.root, "run").buffers;
  interp::Options o;
  o.max_evals = max_steps;
  o.describe = [&](UOp u) { return g.line_of(u); };
  Trace trace;
  add_trace(vm, g, print, trace, o);  // checked (and --trace-out created) on every backend
  if (backend != Backend::Interp) {
    write_outputs(vm, run_compiled(vm, backend, g.root, buffers, max_steps), print);
    return 0;
  }
  Progress bar("ow run");
  uint64_t evals = 0;
  if (bar.enabled() && !(vm.count("trace") && !vm.count("trace-out"))) add_progress(bar, evals, o);
  std::vector<interp::Output> outs = interp::run(g.root, buffers, o);
  bar.finish();
  write_outputs(vm, outs, print);
  return 0;
}

}  // namespace

std::vector<Command> run_commands() { return {{"run", "evaluate a graph: the reference interpreter, or compiled (--backend tcc|cc|check)", cmd_run}}; }

}  // namespace ow::cli
