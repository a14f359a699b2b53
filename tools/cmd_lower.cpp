// ow lower: run the lowering pipeline (src/lower) and print the graph after a pass, or all.
#include <iostream>

#include "cli.h"
#include "lower/lower.h"
#include "uop/error.h"

namespace ow::cli {

namespace {

int cmd_lower(const Args& args) {
  po::options_description opts("options");
  std::string names;
  for (const auto& p : lower::passes()) names += (names.empty() ? "" : "|") + p.name;
  opts.add_options()("file", po::value<std::string>()->required(), "graph file (.uop)")(
      "dump-after", po::value<std::string>()->default_value("schedule"), ("print the graph after this pass: " + names + "|all").c_str())(
      "list", "list the passes and what each does");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_options("lower", "FILE [--dump-after PASS|all]", opts, pos, args, vm)) return 0;
  if (vm.count("list")) {
    for (const auto& p : lower::passes()) std::cout << p.name << std::string(12 - p.name.size(), ' ') << p.what << "\n";
    return 0;
  }
  std::string which = vm["dump-after"].as<std::string>();
  bool known = which == "all";
  for (const auto& p : lower::passes()) known = known || p.name == which;
  if (!known) throw Error("ow lower: unknown pass '" + which + "' (passes: " + names + ", or all)");
  UOp root = load_graph(vm["file"].as<std::string>()).root;
  lower::lower(root, [&](const lower::Pass& p, UOp g) {
    if (which != "all" && which != p.name) return;
    if (which == "all") std::cout << "# ---- after " << p.name << ": " << p.what << "\n";
    std::cout << print_graph(g);
  });
  return 0;
}

}  // namespace

std::vector<Command> lower_commands() {
  return {{"lower", "run the lowering passes and print the graph after one (or all)", cmd_lower}};
}

}  // namespace ow::cli
