// ow report: one self-contained HTML page about a graph's lowering. The C++ side collects
// everything as one JSON blob (graphs as inline SVG per pass, printed lines, input values, the
// rules fired, the C of every kernel and the host schedule, buffer snapshots after every
// host-loop iteration (report/timeline.h), the check verdict per kernel); the page's template,
// CSS and JS live in tools/report/report_assets.h and draw it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>

#include "backends/c/render.h"
#include "backends/program.h"
#include "cli.h"
#include "report/graphviz.h"
#include "json/json.h"
#include "report/report_assets.h"
#include "report/report_values.h"
#include "report/timeline.h"
#include "lowering/trace_lowering.h"
#include "uop/args.h"
#include "uop/dot.h"
#include "uop/error.h"
#include "lowering/validate.h"

namespace ow::cli {

namespace {

// Limits that keep the page small and the command fast on the largest cases.
constexpr size_t kExamples = 5;           // firings shown per rule
constexpr size_t kMaxSteps = 400;         // rewrite steps one can walk through per pass

// Budgets that keep the command fast; each has a flag, and whatever one cuts is named on stderr.
struct Budgets {
  size_t max_layout_boxes = 1500;  // --max-layout-nodes: larger pictures are not laid out
  int layout_ms = 20000;           // --layout-budget-ms: Graphviz's time for all stages together
  uint64_t max_evals = 300000;     // --validation-budget: interpreter evaluations per pass
};

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t a = 0, b; a < text.size(); a = b + 1) {
    b = text.find('\n', a);
    if (b == std::string::npos) b = text.size();
    lines.push_back(text.substr(a, b - a));
  }
  return lines;
}

// ---- the graph at every stage ------------------------------------------------------------------

struct Stage {
  std::string name, what;
  UOp graph;
  const PassTrace* trace = nullptr;  // null for the input graph
  Verdict verdict;
  std::string svg, note;
  std::unique_ptr<ValueRecorder> values;  // what the interpreter computed while checking this stage
  int same_as = -1;  // the earlier stage with this very graph (a pass that changed nothing): its drawing and values serve
};

void write_firings(Json& j, const PassTrace& t) {
  Printed in = number_graph(t.before), out = number_graph(t.after);
  j.key("firings").begin_arr();
  for (const RuleGroup& g : group_by_rule(t.firings)) {
    j.begin_obj().field("rule", g.rule).field("count", static_cast<double>(g.firings.size())).key("examples").begin_arr();
    for (size_t i = 0; i < g.firings.size() && i < kExamples; ++i) {
      auto [x, y] = rewrite_texts(g.firings[i]->before, in, g.firings[i]->after, out, 140);
      j.begin_arr().str(x).str(y).end_arr();
    }
    j.end_arr().end_obj();
  }
  j.end_arr();
  // Every firing in the order it happened: the node it rewrote, numbered as in the graph the pass
  // received (-1: a node an earlier firing of this pass made), and what it became.
  j.key("steps").begin_arr();
  for (size_t i = 0; i < t.firings.size() && i < kMaxSteps; ++i) {
    const Firing& f = t.firings[i];
    auto at = in.number.find(f.before.get());
    j.begin_obj().field("rule", f.rule).field("node", at == in.number.end() ? -1.0 : static_cast<double>(at->second));
    auto [x, y] = rewrite_texts(f.before, in, f.after, out, 200);
    j.field("before", x).field("after", y).end_obj();
  }
  j.end_arr().field("totalSteps", static_cast<double>(t.firings.size()));
}

void write_stage(Json& j, const Stage& s) {
  j.begin_obj().field("name", s.name).field("what", s.what);
  j.field("nodes", static_cast<double>(toposort(s.graph).size()));
  j.key("ok").boolean(s.verdict.ok).field("verdict", s.verdict.text);
  j.field("svg", s.svg).field("note", s.note).field("sameAs", static_cast<double>(s.same_as));
  j.key("lines").begin_arr();
  for (const std::string& l : split_lines(print_graph(s.graph))) j.str(l);
  j.end_arr();
  j.key("values");
  if (s.values) s.values->write(j);
  else j.begin_obj().end_obj();
  if (s.trace) write_firings(j, *s.trace);
  else j.key("firings").begin_arr().end_arr().key("steps").begin_arr().end_arr().field("totalSteps", 0.0);
  j.end_obj();
}

// ---- the lowered program: C, host schedule, check verdict per kernel --------------------------

struct KernelInfo {
  std::string name, source, check = "not launched";
  bool ok = true;
  int64_t launches = 0;
};

std::vector<KernelInfo> render_kernels(UOp program, std::string& prelude) {
  std::vector<KernelInfo> out;
  for (UOp k : toposort(program)) {
    if (k->op != Ops::KERNEL) continue;
    KernelInfo info;
    try {
      backend::RenderedKernel r = backend::render_kernel(k);
      info.name = r.name;
      size_t body = r.source.find("int " + r.name + "(");
      if (prelude.empty() && body != std::string::npos) prelude = r.source.substr(0, body);
      info.source = body == std::string::npos ? r.source : r.source.substr(body);
    } catch (const InternalError&) {
      throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
    } catch (const Error& e) {
      info.name = buffer_name(k);
      info.source = std::string("/* cannot render: ") + e.what() + " */";
    }
    out.push_back(info);
  }
  return out;
}

// Runs the program with backend check (the interpreter and tcc in lockstep) and records each
// kernel's verdict; the first divergence stops the run and is charged to the kernel it names.
// The kernel being launched, if any: an error thrown then is that kernel's (either side of the check).
struct LaunchWatch : HostHooks {
  std::string launching;
  void before_launch(const HostLaunch& l, const HostBindings&) override { launching = l.name; }
  void after_launch(const HostLaunch&, const HostBindings&) override { launching.clear(); }
};

std::string check_kernels(UOp program, const interp::BufferMap& inputs, std::vector<KernelInfo>& kernels) {
  std::map<std::string, KernelInfo*> by_name;
  for (KernelInfo& k : kernels) by_name[k.name] = &k;
  backend::RunOptions ro;
  ro.backend = backend::Backend::Check;
  ro.on_launch = [&](UOp k, const auto&) {
    if (auto it = by_name.find(backend::c_identifier(buffer_name(k))); it != by_name.end()) {
      it->second->launches++;
      it->second->check = "OK: " + std::to_string(it->second->launches) + " launch(es) agree with the interpreter bit for bit";
    }
  };
  LaunchWatch watch;
  ro.observer = &watch;
  interp::BufferMap b = copy_buffers(inputs);
  try {
    backend::run_program(program, b, ro);
    return "every kernel agrees with the interpreter";
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error& e) {
    std::string msg = e.what();
    if (auto it = by_name.find(backend::c_identifier(watch.launching)); !watch.launching.empty() && it != by_name.end())
      it->second->check = msg, it->second->ok = false;
    return "divergence: " + msg;
  }
}

// ---- the command ---------------------------------------------------------------------------------

struct Clock {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
};

// What a budget cut, for the summary on stderr: "the drawing of rangeify (...)"; and drawings
// Graphviz could not make, which no budget explains.
struct Cuts {
  std::vector<std::string> drawings, validations, failed;
  void tell(std::ostream& os) const {
    if (!failed.empty()) {
      os << "warning: Graphviz 'dot' is missing or failed, so " << failed.size() << " stage(s) have no drawing:";
      for (const std::string& f : failed) os << " " << f;
      os << " (apt-get install graphviz)\n";
    }
    auto list = [&](const std::vector<std::string>& items, const char* what, const char* flag) {
      if (items.empty()) return;
      os << "warning: the report's budget cut " << items.size() << " " << what << ":\n";
      for (const std::string& i : items) os << "  " << i << "\n";
      os << "  (raise it with " << flag << ")\n";
    };
    list(drawings, "drawing(s)", "--layout-budget-ms MS or --max-layout-nodes N");
    list(validations, "validation(s)", "--validation-budget EVALS");
  }
};

// The interpreter's verdict on a pass within the evaluation budget (some intermediate graphs,
// BUFFERIZE evaluated element by element, take the interpreter seconds); records the values it
// computes on the way (unless `values` is null).
Verdict budgeted_verdict(const std::vector<interp::Output>& want, const PassTrace& t, const interp::BufferMap& inputs, const Budgets& b,
                         ValueRecorder* values, Cuts& cuts) {
  interp::Options o;
  o.max_evals = b.max_evals;
  if (values) o.on_step = [values](const interp::Step& s) { values->on_step(s); };
  Verdict v = validate_pass(want, t.pass->name, t.after, inputs, o);
  if (!v.over_budget) return v;
  std::string budget = std::to_string(b.max_evals) + " node evaluations";
  cuts.validations.push_back("the validation of pass " + t.pass->name + " (more than " + budget + ")");
  return {true, "not validated in the report (more than " + budget + "; raise with --validation-budget): ow check --passes validates it"};
}

// Every stage's picture by Graphviz, two layouts at a time (two cores), in pass order, until
// the layout deadline.
void draw_stages(std::vector<Stage>& stages, const Budgets& b, Cuts& cuts) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(b.layout_ms);
  for (size_t i = 0; i < stages.size(); i += 2) {
    std::vector<DotJob> jobs;
    for (size_t k = i; k < std::min(i + 2, stages.size()); ++k) {
      if (stages[k].same_as >= 0) {
        jobs.emplace_back();
        continue;
      }
      std::ostringstream dot;
      size_t boxes = write_dot(dot, stages[k].graph);
      if (boxes > b.max_layout_boxes) {
        stages[k].note = "no drawing: " + std::to_string(boxes) + " boxes are more than the report lays out (--max-layout-nodes " +
                         std::to_string(b.max_layout_boxes) + "); the printed lines follow";
        cuts.drawings.push_back("the drawing of " + stages[k].name + " (" + std::to_string(boxes) + " boxes, more than " +
                                std::to_string(b.max_layout_boxes) + ")");
      }
      bool skip = boxes > b.max_layout_boxes || std::chrono::steady_clock::now() > deadline;
      jobs.push_back(skip ? DotJob{} : start_dot(dot.str(), boxes > kFastLayoutBoxes));
    }
    for (size_t k = i; k < std::min(i + 2, stages.size()); ++k) {
      if (!stages[k].note.empty() || stages[k].same_as >= 0) continue;
      stages[k].svg = finish_dot(jobs[k - i], deadline);
      if (!stages[k].svg.empty()) continue;
      bool late = std::chrono::steady_clock::now() > deadline;
      stages[k].note = late ? "no drawing: the report's " + std::to_string(b.layout_ms) + " ms for layouts ran out (--layout-budget-ms); the printed lines follow"
                            : "no drawing: Graphviz 'dot' is missing or failed; the printed lines follow";
      if (late) cuts.drawings.push_back("the drawing of " + stages[k].name + " (layouts ran past " + std::to_string(b.layout_ms) + " ms)");
      else cuts.failed.push_back(stages[k].name);
    }
  }
}

std::vector<Stage> build_stages(UOp root, const std::vector<PassTrace>& traces, const std::vector<interp::Output>& want, const interp::BufferMap& inputs,
                                std::unique_ptr<ValueRecorder> input_values, const Budgets& b, Cuts& cuts) {
  std::vector<Stage> stages;
  stages.push_back({"input", "the graph as written, evaluated by the interpreter", root, nullptr, {true, "the reference: " + std::to_string(want.size()) + " output(s)"}, "", "",
                    std::move(input_values)});
  for (const PassTrace& t : traces) {
    const Stage& prev = stages.back();
    int same_as = prev.graph != t.after ? -1 : prev.same_as >= 0 ? prev.same_as : static_cast<int>(stages.size()) - 1;
    auto values = same_as >= 0 ? nullptr : std::make_unique<ValueRecorder>(t.after);
    Verdict v = budgeted_verdict(want, t, inputs, b, values.get(), cuts);
    stages.push_back({t.pass->name, t.pass->what, t.after, &t, v, "", "", std::move(values), same_as});
  }
  draw_stages(stages, b, cuts);
  return stages;
}

void add_report_budget_options(po::options_description& opts) {
  Budgets d;
  opts.add_options()("layout-budget-ms", po::value<int>()->default_value(d.layout_ms), "Graphviz's time for all drawings together (ms)")(
      "max-layout-nodes", po::value<size_t>()->default_value(d.max_layout_boxes), "pictures with more boxes than this are not drawn")(
      "validation-budget", po::value<uint64_t>()->default_value(d.max_evals), "interpreter evaluations allowed for validating one pass");
}

Budgets budgets(const po::variables_map& vm) {
  return {vm["max-layout-nodes"].as<size_t>(), vm["layout-budget-ms"].as<int>(), vm["validation-budget"].as<uint64_t>()};
}

// scan.uop -> scan.html (in the current directory); stdin -> report.html.
std::string default_output(const std::string& file) {
  std::string stem = file == "-" ? "report" : std::filesystem::path(file).stem().string();
  return (stem.empty() ? std::string("report") : stem) + ".html";
}

// The page's data (report_assets.h reads it): stages, kernels, host schedule, timeline; the
// caller adds the time taken and closes the object.
void write_report(Json& j, const std::string& file, const std::vector<Stage>& stages, UOp program, const std::string& prelude,
                  const std::vector<KernelInfo>& kernels, const std::string& check, const Timeline& timeline) {
  j.begin_obj().field("file", file).field("run", timeline.note).field("check", check);
  j.field("maxBindings", static_cast<double>(ValueRecorder::kMaxBindings)).field("maxValueChars", static_cast<double>(ValueRecorder::kMaxChars));
  j.key("legend").begin_arr();
  for (auto& [what, colour] : dot_legend()) j.begin_arr().str(what).str(colour).end_arr();
  j.end_arr();
  j.key("stages").begin_arr();
  for (const Stage& s : stages) write_stage(j, s);
  j.end_arr();
  j.field("host", backend::render_program(program)).field("prelude", prelude);
  j.key("kernels").begin_arr();
  for (const KernelInfo& k : kernels)
    j.begin_obj().field("name", k.name).field("source", k.source).field("check", k.check).key("ok").boolean(k.ok).end_obj();
  j.end_arr();
  j.key("timeline");
  timeline.write(j);
}

// The inputs given seeded random data, said on the page as on stderr.
void write_random_inputs(Json& j, const Inputs& in) {
  std::string random;
  for (const std::string& n : in.randomized) random += (random.empty() ? "" : ", ") + n;
  if (!random.empty()) j.field("random_inputs", "random inputs (seed " + std::to_string(*in.seed) + "): " + random);
}

void add_report_options(po::options_description& opts) {
  opts.add_options()("file", po::value<std::string>()->required(), "graph file (.uop)")(
      "output,o", po::value<std::string>(), "the HTML file to write (default: the graph file's name with .html, in the current directory)")(
      "timings", "print how long each phase took (stderr)");
  add_input_options(opts);
  add_budget_options(opts, false);
  add_report_budget_options(opts);
}

// The inputs the user gave (not random): the timeline's heat maps mark the others.
std::set<std::string> given_inputs(const Inputs& in) {
  std::set<std::string> given;
  for (auto& [name, b] : in.buffers)
    if (!std::count(in.randomized.begin(), in.randomized.end(), name)) given.insert(name);
  return given;
}

// Stages with a drawing, their own or the identical stage's they point to.
size_t drawn_stages(const std::vector<Stage>& stages) {
  return std::count_if(stages.begin(), stages.end(), [&](const Stage& s) { return !stages[s.same_as >= 0 ? s.same_as : &s - stages.data()].svg.empty(); });
}

int cmd_report(const Args& args) {
  po::options_description opts("options");
  add_report_options(opts);
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_options("report", "FILE [-o REPORT.html] [--in NAME=PATH.npy]... [--random-inputs [SEED]] [--layout-budget-ms MS] [--max-layout-nodes N] [--validation-budget EVALS]",
                     opts, pos, args, vm))
    return 0;
  Clock clock;
  auto phase = [&, timings = vm.count("timings") > 0](const char* what) {
    if (timings) std::cerr << "  " << clock.seconds() << " s: " << what << "\n";
  };
  std::string file = vm["file"].as<std::string>();
  UOp root = load_graph(file).root;
  apply_budgets(vm);
  Inputs in = load_inputs(vm, root, "report");
  interp::BufferMap& inputs = in.buffers;
  std::set<std::string> given = given_inputs(in);  // now: a run may add the buffers it writes

  // The input graph's values, per range binding.
  auto values = std::make_unique<ValueRecorder>(root);
  interp::Options io;
  io.on_step = [&](const interp::Step& s) { values->on_step(s); };
  std::vector<interp::Output> want = evaluate(root, inputs, io);
  phase("input graph evaluated");

  Cuts cuts;
  std::vector<PassTrace> traces = trace_lowering(root);
  std::vector<Stage> stages = build_stages(root, traces, want, inputs, std::move(values), budgets(vm), cuts);
  phase("passes validated and drawn");
  UOp program = traces.back().after;

  Timeline timeline = record_timeline(program, inputs, given);
  phase("host-loop timeline recorded");

  std::string prelude;
  std::vector<KernelInfo> kernels = render_kernels(program, prelude);
  std::string check = check_kernels(program, inputs, kernels);
  phase("kernels rendered and checked");

  Json j;
  write_report(j, file, stages, program, prelude, kernels, check, timeline);
  j.field("seconds", clock.seconds());
  write_random_inputs(j, in);
  j.end_obj();

  std::string out = vm.count("output") ? vm["output"].as<std::string>() : default_output(file);
  write_file(out, report_page(file, j.text()));
  cuts.tell(std::cerr);
  std::cout << out << ": " << stages.size() << " stages (" << drawn_stages(stages) << " drawn), " << kernels.size() << " kernel(s); " << check << " (" << clock.seconds() << " s)\n";
  return 0;
}

}  // namespace

std::vector<Command> report_commands() {
  return {{"report", "write one self-contained HTML page: graphs per pass, C, host-loop heat maps, check", cmd_report}};
}

}  // namespace ow::cli
