// ow lower: run the lowering pipeline (src/lower) and print the graph after a pass, or all.
#include <iostream>

#include "cli.h"
#include "backends/c/render.h"
#include "backends/program.h"
#include "fuzz/gradcheck.h"
#include "interp/interp.h"
#include "lower/lower.h"
#include "uop/error.h"
#include "lowering/validate.h"

namespace ow::cli {

namespace {

int cmd_lower(const Args& args) {
  po::options_description opts("options");
  std::string names;
  for (const auto& p : lower::passes()) names += (names.empty() ? "" : "|") + p.name;
  opts.add_options()("file", po::value<std::string>(), "graph file (.uop)")(
      "dump-after", po::value<std::string>(), ("print the graph after this pass: " + names + "|all (default: the last pass run)").c_str())(
      "list", "list the passes and what each does")(
      "compiler", po::value<std::string>()->default_value("cc"), "the kernel-opt stage for this compiler: cc or tcc");
  add_lowering_options(opts);
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_options("lower", "FILE [--dump-after PASS|all]", opts, pos, args, vm)) return 0;
  if (vm.count("list")) {
    for (const auto& p : lower::passes()) std::cout << p.name << std::string(12 - p.name.size(), ' ') << p.what << (p.optional ? " (optional)" : "") << "\n";
    for (const auto& s : lower::optional_steps()) std::cout << "optional step of " << s.pass << ", " << s.name << ": " << s.what << "\n";
    return 0;
  }
  if (!vm.count("file")) throw Error("ow lower: missing FILE (usage: ow lower FILE [--dump-after PASS|all], or ow lower --list)");
  std::string which = vm.count("dump-after") ? vm["dump-after"].as<std::string>() : "";
  bool known = which.empty() || which == "all";
  for (const auto& p : lower::passes()) known = known || p.name == which;
  if (!known) throw Error("ow lower: unknown pass '" + which + "' (passes: " + names + ", or all)");
  lower::Context ctx = lower::through_kernel_opt(backend::target_named(vm["compiler"].as<std::string>(), "--compiler"));
  ctx.skip = skipped_passes(vm);
  if (ctx.skip.count(which)) throw Error("ow lower: --dump-after " + which + ": that pass is skipped (--skip-pass), there is no graph after it");
  UOp root = load_graph(vm["file"].as<std::string>()).root;
  UOp last = lower::lower(root, ctx, [&](const lower::Pass& p, UOp g) {
    if (which != "all" && which != p.name) return;
    if (which == "all") std::cout << "# ---- after " << p.name << ": " << p.what << "\n";
    std::cout << print_graph(g);
  });
  if (which.empty()) std::cout << print_graph(last);
  return 0;
}

// ow show-c: the host schedule, then the program's translation unit (backends/c show_c).
int cmd_show_c(const Args& args) {
  po::options_description opts("options");
  opts.add_options()("file", po::value<std::string>()->required(), "graph file (.uop)")(
      "bounds-check", "render the guarded accesses of --bounds-check")(
      "compiler", po::value<std::string>()->default_value("cc"), "the C written for this compiler: cc (register tiles, two threads) or tcc (unrolled loops, vector calls)")(
      "full", "print the program's one translation unit exactly as the compiler sees it (default: the kernels, then their shared declarations once)");
  add_lowering_options(opts);
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_options("show-c", "FILE [--compiler tcc|cc] [--bounds-check] [--full]", opts, pos, args, vm)) return 0;
  backend::RenderOptions ro;
  ro.bounds_check = vm.count("bounds-check") > 0;
  ro.target = backend::target_named(vm["compiler"].as<std::string>(), "--compiler");
  lower::Context ctx;
  ctx.skip = skipped_passes(vm);
  ctx.kernel_opt = opt::options_for(ro.target, ro.bounds_check, ctx.skip);  // as the runner does
  UOp program = lower::lower(load_graph(vm["file"].as<std::string>()).root, ctx);
  std::cout << backend::show_c(program, ro, vm.count("full") > 0);
  return 0;
}

// Samples elements of every GRADIENT output of a whole float64 buffer (src/fuzz/gradcheck.h).
int check_gradients(UOp root, const interp::BufferMap& inputs, uint64_t seed) {
  fuzz::FdCheck c = fuzz::check_finite_differences(root, inputs, seed);
  if (!c.ok) throw Error(c.error);
  if (c.checked == 0) throw Error("check: no gradient element could be compared with central differences (" + std::to_string(c.unreliable) + " not converged)");
  std::cout << "finite differences: " << c.checked << " gradient elements agree (" << c.unreliable << " skipped as not converged)\n";
  return 0;
}

int cmd_check(const Args& args) {
  po::options_description opts("options");
  opts.add_options()("file", po::value<std::string>()->required(), "graph file (.uop)")(
      "passes", "evaluate the graph after every lowering pass and name the first that changes an output")(
      "compiler", po::value<std::vector<std::string>>()->composing(), "without --passes: compiled tiers to check against the interpreter (default: tcc and cc)")(
      "bounds-check", "compiled kernels check every memory access")(
      "compile", po::value<std::string>()->default_value("program"), "program (all kernels in one translation unit) | kernel (one compile per kernel)")(
      "finite-differences", "instead: the graph's GRADIENT outputs (of whole float64 buffers) against central differences in float64");
  add_input_options(opts);
  add_budget_options(opts);
  add_lowering_options(opts);
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_options("check", "FILE [--passes | --finite-differences] [--compiler tcc|cc]... [--in NAME=PATH.npy]... [--random-inputs [SEED]]", opts, pos, args, vm)) return 0;
  UOp root = load_graph(vm["file"].as<std::string>()).root;
  uint64_t max_steps = apply_budgets(vm);
  Inputs in = load_inputs(vm, root, "check");
  interp::BufferMap& inputs = in.buffers;
  if (vm.count("passes")) return check_passes(root, inputs);
  if (vm.count("finite-differences")) return check_gradients(root, inputs, in.seed.value_or(1));  // the seed also picks the elements sampled
  if (std::string m = vm["compile"].as<std::string>(); m != "program" && m != "kernel") throw Error("--compile must be program or kernel, got '" + m + "'");
  std::vector<std::string> tiers = vm.count("compiler") ? vm["compiler"].as<std::vector<std::string>>() : std::vector<std::string>{"tcc", "cc"};
  for (const std::string& t : tiers) {
    backend::RunOptions ro;
    ro.backend = backend::Backend::Check;
    ro.compiler = backend::parse_backend(t, "--compiler", backend::kCompilers);
    ro.bounds_check = vm.count("bounds-check") > 0;
    ro.compile_mode = vm["compile"].as<std::string>();
    ro.max_launches = max_steps;
    ro.skip_passes = skipped_passes(vm);
    int launches = 0;
    ro.on_launch = [&](UOp, const auto&) { ++launches; };
    interp::BufferMap b = copy_buffers(inputs);
    auto outs = backend::run_graph(root, b, ro);
    std::cout << t << ": " << outs.size() << " output(s) and " << launches << " kernel launches agree with the interpreter bit for bit\n";
  }
  return 0;
}

}  // namespace

std::vector<Command> lower_commands() {
  return {{"lower", "run the lowering passes and print the graph after one (or all)", cmd_lower},
          {"show-c", "print the host schedule and the C of every kernel", cmd_show_c},
          {"check", "compiled kernels vs the interpreter (or, with --passes, every lowering pass)", cmd_check}};
}

}  // namespace ow::cli
