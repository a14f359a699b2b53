// ow step: a debugger for graph evaluation (tools/step/stepper.h): breakpoints on nodes, range
// bindings, poison and (lowered) compiled-vs-interpreted divergence; step/next/finish/continue.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli.h"
#include "step/line_editor.h"
#include "lower/lower.h"
#include "step/stepper.h"
#include "uop/error.h"

namespace ow::cli {

namespace {

int cmd_step(const Args& args) {
  po::options_description opts("options");
  opts.add_options()("file", po::value<std::string>()->required(), "graph file (.uop)")(
      "lowered", "step through the lowered program (lower::lower) instead: each kernel launch is a step");
  add_input_options(opts);
  add_print_options(opts);
  add_budget_options(opts);
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_options("step", "FILE [--in NAME=PATH.npy]... [--lowered]\n\n"
                     "Evaluates the graph with the reference interpreter and stops to take commands\n"
                     "(type help inside). Commands come from stdin; when stdin is not a terminal each\n"
                     "one is echoed after a \"(ow) \" prompt, so a piped script reads as a transcript, and\n"
                     "ow exits 1 at its end if a command failed. At a terminal: line editing, history\n"
                     "(Up/Down, kept in ~/.ow_history), Tab completion, Enter repeats step/next/continue,\n"
                     "Ctrl-C stops a running evaluation.",
                     opts, pos, args, vm))
    return 0;
  std::string file = vm["file"].as<std::string>();
  ParsedGraph g = load_graph(file);
  StepperOptions so;
  so.file = file;
  so.lowered = vm.count("lowered") > 0;
  so.format = print_options(vm);
  so.max_steps = apply_budgets(vm);
  for (auto& [node, loc] : g.where) so.file_names.emplace(node, loc.name);
  bool tty = isatty(STDIN_FILENO) == 1;
  so.echo = !tty;
  so.prompt = tty;
  so.catch_interrupt = tty;  // from a pipe nobody can type at the prompt: Ctrl-C ends ow
  // Line editing only when both ends are the terminal (ow step FILE > log keeps plain reads).
  std::unique_ptr<LineEditor> editor;
  if (tty && isatty(STDOUT_FILENO) == 1) {
    const char* home = std::getenv("HOME");
    editor = std::make_unique<LineEditor>(STDIN_FILENO, STDOUT_FILENO, home && *home ? std::string(home) + "/.ow_history" : "");
    so.editor = editor.get();
  }
  interp::BufferMap buffers = load_inputs(vm, g.root, "step").buffers;
  UOp root = so.lowered ? lower::lower(g.root) : g.root;
  so.initial = copy_buffers(buffers);
  return run_stepper(root, buffers, std::cin, std::cout, so);
}

}  // namespace

std::vector<Command> step_commands() { return {{"step", "debug an evaluation step by step (breakpoints, print, where)", cmd_step}}; }

}  // namespace ow::cli
