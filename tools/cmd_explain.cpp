// ow explain: walk the lowering pipeline and say, pass by pass, which rules fired on which nodes,
// how the graph's size changed, and whether the interpreter still computes the same outputs.
#include <iostream>

#include "cli.h"
#include "backends/backend.h"
#include "lowering/trace_lowering.h"
#include "lowering/validate.h"

namespace ow::cli {

namespace {

std::string indent(const std::string& text, const std::string& pad) {
  std::string out;
  for (size_t a = 0, b; a < text.size(); a = b + 1) {
    b = text.find('\n', a);
    if (b == std::string::npos) b = text.size();
    out += pad + text.substr(a, b - a) + "\n";
  }
  return out;
}

void explain_firings(const PassTrace& t, size_t examples) {
  if (t.firings.empty()) {
    std::cout << "  no rule fired on this graph: the pass leaves it as it is\n";
    return;
  }
  std::vector<RuleGroup> groups = group_by_rule(t.firings);
  std::cout << "  " << t.firings.size() << " firing(s) of " << groups.size() << " rule(s):\n";
  Printed in = number_graph(t.before), out = number_graph(t.after);
  for (const RuleGroup& g : groups) {
    std::cout << "    " << g.rule << "  x" << g.firings.size() << "\n";
    for (size_t i = 0; i < g.firings.size() && i < examples; ++i) {
      auto [x, y] = rewrite_texts(g.firings[i]->before, in, g.firings[i]->after, out);
      std::cout << "      " << x << "\n        -> " << y << "\n";
    }
    if (g.firings.size() > examples) std::cout << "      ... and " << g.firings.size() - examples << " more\n";
  }
}

int cmd_explain(const Args& args) {
  po::options_description opts("options");
  opts.add_options()("file", po::value<std::string>()->required(), "graph file (.uop)")(
      "examples", po::value<size_t>()->default_value(3), "firings shown per rule")(
      "compiler", po::value<std::string>()->default_value("cc"), "the kernel-opt stage for this compiler: cc or tcc");
  add_input_options(opts);
  add_budget_options(opts, false);
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_options("explain", "FILE [--in NAME=PATH.npy]... [--random-inputs [SEED]] [--examples N] [--compiler cc|tcc]", opts, pos, args, vm)) return 0;
  UOp root = load_graph(vm["file"].as<std::string>()).root;
  apply_budgets(vm);
  interp::BufferMap inputs = load_inputs(vm, root, "explain").buffers;
  std::vector<interp::Output> want = evaluate(root, inputs);
  std::cout << "input graph: " << toposort(root).size() << " nodes, " << want.size() << " output(s) evaluated by the interpreter\n";
  int status = 0;
  for (const PassTrace& t : trace_lowering(root, backend::target_named(vm["compiler"].as<std::string>(), "--compiler"))) {
    std::cout << "\n== pass " << t.pass->name << ": " << t.pass->what << "\n";
    std::cout << "  nodes: " << toposort(t.before).size() << " -> " << toposort(t.after).size() << "\n";
    explain_firings(t, vm["examples"].as<size_t>());
    Verdict v = validate_pass(want, t.pass->name, t.after, inputs);
    std::cout << "  interpreter: " << (v.ok ? "outputs unchanged, bit for bit\n" : "OUTPUTS CHANGED\n" + indent(v.text, "    "));
    if (!v.ok) status = 1;
  }
  return status;
}

}  // namespace

std::vector<Command> explain_commands() {
  return {{"explain", "walk the lowering passes: rules fired, node counts, interpreter verdict", cmd_explain}};
}

}  // namespace ow::cli
