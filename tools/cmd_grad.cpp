// ow grad: a graph with the gradients of one output added as outputs <NAME>_grad.
#include <algorithm>
#include <iostream>

#include "cli.h"
#include "grad/gradient.h"
#include "uop/args.h"
#include "uop/error.h"

namespace ow::cli {

namespace {

// The buffer as the graph first views it (the RESHAPE the Tensor API reads it through), or the
// BUFFER itself: the variable `--wrt NAME` means (SEMANTICS S9: its contents as given).
UOp variable(UOp root, const std::string& name) {
  std::vector<std::string> known;
  UOp buffer;
  for (UOp u : toposort(root)) {
    if (u->op == Ops::RESHAPE && u->src[0]->op == Ops::BUFFER && buffer_name(u->src[0]) == name) return u;
    if (u->op != Ops::BUFFER) continue;
    if (buffer_name(u) == name) buffer = u;
    if (std::find(known.begin(), known.end(), buffer_name(u)) == known.end()) known.push_back(buffer_name(u));
  }
  if (buffer) return buffer;
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  throw Error("--wrt " + name + ": the graph has no buffer of that name (its buffers: " + (list.empty() ? "none" : list) + ")");
}

int cmd_grad(const Args& args) {
  po::options_description opts("options");
  opts.add_options()("file", po::value<std::string>()->required(), "graph file (.uop)")(
      "wrt", po::value<std::string>()->required(), "buffers to differentiate with respect to: NAME[,NAME...]")(
      "of", po::value<std::string>(), "the output to differentiate (default: the first)")(
      "expand", "print the graph with every GRADIENT expanded (as the first lowering pass does)")(
      "output,o", po::value<std::string>(), "write to this file instead of stdout");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_options("grad", "FILE --wrt NAME[,NAME...] [--of OUTPUT] [--expand] [-o OUT]", opts, pos, args, vm)) return 0;
  UOp root = load_graph(vm["file"].as<std::string>()).root;
  if (root->op != Ops::SINK || root->arg.none()) throw Error("ow grad needs a graph whose root is a SINK naming its outputs");
  std::vector<UOp> src = root->src;
  ArgTuple names = *root->arg.tuple();
  size_t of = 0;
  if (vm.count("of")) {
    std::string want = vm["of"].as<std::string>();
    auto it = std::find_if(names.begin(), names.end(), [&](const Arg& a) { return a.as<std::string>() == want; });
    if (it == names.end()) throw Error("--of " + want + ": the graph has no output of that name");
    of = static_cast<size_t>(it - names.begin());
  }
  UOp loss = src[of];
  if (loss->dtype.is_void() || !loss->dtype.is_float()) throw Error("output '" + names[of].as<std::string>() + "' is not a float value: it has no gradient");
  for (const std::string& n : split_commas(vm["wrt"].as<std::string>())) {
    UOp x = variable(root, n);
    src.push_back(UOp::make(Ops::GRADIENT, x->dtype, {loss, x}));
    names.emplace_back(n + "_grad");
  }
  UOp out = UOp::sink(src, Arg(names));
  if (vm.count("expand")) out = grad::expand(out);
  std::string text = print_graph(out);
  if (vm.count("output")) write_file(vm["output"].as<std::string>(), text);
  else std::cout << text;
  return 0;
}

}  // namespace

std::vector<Command> grad_commands() { return {{"grad", "add the gradients of an output with respect to buffers as outputs", cmd_grad}}; }

}  // namespace ow::cli
