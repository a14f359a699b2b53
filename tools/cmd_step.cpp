// ow step: a debugger for graph evaluation (tools/stepper.h): breakpoints on nodes, range
// bindings, poison and (lowered) compiled-vs-interpreted divergence; step/next/finish/continue.
#include <unistd.h>

#include <iostream>

#include "cli.h"
#include "lower/lower.h"
#include "stepper.h"
#include "uop/error.h"

namespace ow::cli {

namespace {

int cmd_step(const Args& args) {
  po::options_description opts("options");
  opts.add_options()("file", po::value<std::string>()->required(), "graph file (.uop)")(
      "lowered", "step through the lowered program (lower::lower) instead: each kernel launch is a step");
  add_input_options(opts);
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_options("step", "FILE [--in NAME=PATH.npy]... [--lowered]\n\n"
                     "Evaluates the graph with the reference interpreter and stops to take commands\n"
                     "(type help inside). Commands come from stdin; when stdin is not a terminal each\n"
                     "one is echoed after a \"(ow) \" prompt, so a piped script reads as a transcript.",
                     opts, pos, args, vm))
    return 0;
  std::string file = vm["file"].as<std::string>();
  ParsedGraph g = load_graph(file);
  StepperOptions so;
  so.file = file;
  so.lowered = vm.count("lowered") > 0;
  bool tty = isatty(STDIN_FILENO) == 1;
  so.echo = !tty;
  so.prompt = tty;
  interp::BufferMap buffers = load_inputs(vm, g.root, "step").buffers;
  UOp root = g.root;
  if (so.lowered) {
    root = lower::lower(g.root);
    so.initial = copy_buffers(buffers);
  }
  return run_stepper(root, buffers, std::cin, std::cout, so);
}

}  // namespace

std::vector<Command> step_commands() { return {{"step", "debug an evaluation step by step (breakpoints, print, where)", cmd_step}}; }

}  // namespace ow::cli
