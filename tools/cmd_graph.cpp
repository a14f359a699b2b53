// ow print / verify / dot: read a .uop file, check it, show it.
#include <chrono>
#include <iostream>
#include <sstream>

#include "cli.h"
#include "report/graphviz.h"
#include "uop/dot.h"
#include "uop/error.h"

namespace ow::cli {

namespace {

int cmd_print(const Args& args) {
  po::options_description opts("options");
  opts.add_options()("file", po::value<std::string>()->required(), "graph file (.uop)")(
      "output,o", po::value<std::string>(), "write to this file instead of stdout");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_options("print", "FILE [-o OUT]", opts, pos, args, vm)) return 0;
  std::string text = print_graph(load_graph(vm["file"].as<std::string>()).root);
  if (vm.count("output")) write_file(vm["output"].as<std::string>(), text);
  else std::cout << text;
  return 0;
}

int cmd_verify(const Args& args) {
  po::options_description opts("options");
  opts.add_options()("file", po::value<std::string>()->required(), "graph file (.uop)")(
      "strict", "also reject legal but suspicious graphs (a REDUCE over a range its value ignores)");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_options("verify", "FILE [--strict]", opts, pos, args, vm)) return 0;
  std::string file = vm["file"].as<std::string>();
  ParsedGraph g = load_graph(file, vm.count("strict") > 0);
  std::cout << file << ": ok (" << toposort(g.root).size() << " nodes)\n";
  return 0;
}

// The SVG by Graphviz; large pictures get the fast layout, said on stderr.
void render_svg(const std::string& dot_text, size_t boxes, const std::string& svg_path) {
  if (!graphviz_installed()) throw Error("Graphviz 'dot' is not installed, so no SVG can be drawn (apt-get install graphviz); use -o to write the DOT file");
  bool fast = boxes > kFastLayoutBoxes;
  if (fast)
    std::cerr << "note: " << boxes << " boxes (more than " << kFastLayoutBoxes
              << "): fast layout with straight edges and fewer crossing-reduction rounds\n";
  DotJob job = start_dot(dot_text, fast);
  std::string svg = finish_dot(job, std::chrono::steady_clock::time_point::max());
  if (svg.empty()) throw Error("Graphviz 'dot' failed to write " + svg_path);
  write_file(svg_path, svg);
}

int cmd_dot(const Args& args) {
  po::options_description opts("options");
  opts.add_options()("file", po::value<std::string>()->required(), "graph file (.uop)")(
      "output,o", po::value<std::string>(), "write DOT here instead of stdout")(
      "svg", po::value<std::string>(),
      ("also render an SVG with Graphviz 'dot' (more than " + std::to_string(kFastLayoutBoxes) + " boxes: a fast layout with straight edges)").c_str());
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_options("dot", "FILE [-o OUT.dot] [--svg OUT.svg]", opts, pos, args, vm)) return 0;
  std::ostringstream dot;
  size_t boxes = write_dot(dot, load_graph(vm["file"].as<std::string>()).root);
  if (vm.count("output")) write_file(vm["output"].as<std::string>(), dot.str());
  else if (!vm.count("svg")) std::cout << dot.str();
  if (vm.count("svg")) render_svg(dot.str(), boxes, vm["svg"].as<std::string>());
  return 0;
}

}  // namespace

std::vector<Command> graph_commands() {
  return {
      {"print", "print a graph in normalized .uop form", cmd_print},
      {"verify", "check a graph against the verifier's rules", cmd_verify},
      {"dot", "draw a graph as Graphviz DOT (and SVG), constants and index math inside the labels", cmd_dot},
  };
}

}  // namespace ow::cli
