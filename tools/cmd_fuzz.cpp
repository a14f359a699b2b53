// ow fuzz: differential fuzzing of the compiled path against the interpreter. For every seed a
// random valid tensor graph (src/fuzz) gets seeded random inputs; the interpreter evaluates it
// (the definition), then backend::run_graph in check mode lowers it and runs every kernel both
// compiled and interpreted (tools/fuzz_run: each run's outcome, typed). Any error of the compiled
// path is a finding: it is shrunk and written as DIR/fuzz-<seed>.uop with an `ow check` command
// that reproduces it. Gradient graphs (a share of the seeds, src/fuzz/generate.h) are also
// checked against central differences in float64 (src/fuzz/gradcheck.h); the gradients the
// interpreter refuses are counted by kind.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "cli.h"
#include "cli/progress.h"
#include "fuzz/generate.h"
#include "fuzz_run/outcome.h"
#include "uop/error.h"
#include "uop/text.h"

namespace ow::cli {

namespace {

using namespace fuzz_run;
using Clock = std::chrono::steady_clock;
using Seeds = std::map<std::string, std::vector<uint64_t>>;  // kind -> seeds
using Check = std::function<Outcome(UOp, const interp::BufferMap&)>;

std::atomic<uint64_t> g_current_seed{0};
std::atomic<int64_t> g_started_ms{-1};  // when the current graph started (-1: idle)

// The process's CPU time: a hang is work that does not end, and a loaded machine must not make
// a slow wall clock look like one (a niced run gets a fiftieth of a core beside a build).
int64_t now_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return int64_t{t.tv_sec} * 1000 + t.tv_nsec / 1000000;
}

extern "C" void on_fatal_signal(int sig) {
  char buf[128];
  int n = std::snprintf(buf, sizeof buf, "\nfuzz: signal %d while running seed %llu (reproduce: ow fuzz --seed %llu --count 1)\n", sig,
                        static_cast<unsigned long long>(g_current_seed.load()), static_cast<unsigned long long>(g_current_seed.load()));
  if (n > 0) (void)!write(2, buf, static_cast<size_t>(n));
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// Ends the process when one graph takes 10x the compiled path's timeout in CPU time (a hang
// outside the isolated child, where no limit reaches).
class Watchdog {
 public:
  explicit Watchdog(int timeout_s) : thread_([this, timeout_s] { watch(timeout_s); }) {}
  ~Watchdog() {
    done_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;

  void watch(int timeout_s) {
    while (!done_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      int64_t s = g_started_ms.load();
      if (timeout_s <= 0 || s < 0 || now_ms() - s <= int64_t{timeout_s} * 10000) continue;
      unsigned long long seed = g_current_seed.load();
      std::fprintf(stderr, "\nfuzz: seed %llu took more than %d s (a hang?): reproduce with ow fuzz --seed %llu --count 1\n", seed, timeout_s, seed);
      std::fflush(stderr);
      _exit(3);
    }
  }
};

struct Config {
  uint64_t seed0 = 1, count = 100, cc_every = 50;
  std::vector<backend::Backend> tiers;
  bool explicit_tiers = false;
  std::string out_dir;
  bool keep_going = false, shrink = true, shrink_all = false, quiet = false, stats = false, print = false;
  bool passes = false;  // translation validation of every lowering pass instead of the compiled tiers
  CompiledRun how;
};

// The options; nullopt when --help was printed.
std::optional<Config> parse_config(const Args& args) {
  po::options_description opts("options");
  opts.add_options()("seed", po::value<uint64_t>()->default_value(1), "first seed; graph k uses seed S+k")(
      "count", po::value<uint64_t>()->default_value(100), "number of graphs")(
      "passes", "instead of the compiled tiers, evaluate the graph after every lowering pass and compare (ow check --passes on every graph)")(
      "compiler", po::value<std::vector<std::string>>()->composing(),
      "compiled tier to check on EVERY graph (repeatable: tcc, cc). Default: tcc on every graph and cc on every --cc-every'th "
      "(cc compiles take ~30-50 ms per kernel, tcc ~1 ms)")(
      "cc-every", po::value<uint64_t>()->default_value(50), "without --compiler: also check cc on graphs whose seed is a multiple of this (0: never)")(
      "out", po::value<std::string>()->default_value("fuzz-findings"), "directory for the shrunk reproducers fuzz-<seed>.uop/.txt")(
      "keep-going", "continue after the first finding")(
      "no-shrink", "write findings as generated, without shrinking")(
      "shrink-all", "shrink and write every finding (default: only the first of each error category)")(
      "no-bounds-check", "compiled kernels without access checks (default: checked, so an out-of-bounds access is a finding, not a crash of the run)")(
      "timeout", po::value<int>()->default_value(30), "CPU seconds the compiled path may take on one graph (a hang finding; 10x that in wall time if it blocks); the run aborts if a whole graph takes 10x that in CPU time")(
      "no-fork", "run the compiled path in this process (a crash ends the run; for debugging)")(
      "stats", "print how often each op and construct occurred")(
      "print", "print every generated graph (for debugging the generator)")(
      "quiet,q", "only findings and the summary line");
  po::variables_map vm;
  if (!parse_options("fuzz", "[--seed S] [--count N] [--compiler tcc|cc]... [--out DIR] [--keep-going]", opts, {}, args, vm)) return std::nullopt;
  Config c;
  c.seed0 = vm["seed"].as<uint64_t>(), c.count = vm["count"].as<uint64_t>(), c.cc_every = vm["cc-every"].as<uint64_t>();
  c.explicit_tiers = vm.count("compiler") > 0;
  c.tiers = backend::kCompilers;
  if (c.explicit_tiers) {
    c.tiers.clear();
    for (const std::string& t : vm["compiler"].as<std::vector<std::string>>()) c.tiers.push_back(backend::parse_backend(t, "ow fuzz: --compiler", backend::kCompilers));
  }
  c.out_dir = vm["out"].as<std::string>();
  c.keep_going = vm.count("keep-going"), c.shrink = !vm.count("no-shrink"), c.shrink_all = vm.count("shrink-all");
  c.quiet = vm.count("quiet"), c.stats = vm.count("stats"), c.print = vm.count("print"), c.passes = vm.count("passes") > 0;
  c.how = {!vm.count("no-bounds-check"), !vm.count("no-fork"), vm["timeout"].as<int>()};
  return c;
}

// "  kind: N (seeds a b c ...)", the first 10 seeds of each kind
void print_by_kind(const char* title, const Seeds& kinds) {
  if (kinds.empty()) return;
  std::cout << title << "\n";
  for (const auto& [k, seeds] : kinds) {
    std::cout << "  " << k << ": " << seeds.size() << " (seeds";
    for (size_t i = 0; i < seeds.size() && i < 10; ++i) std::cout << " " << seeds[i];
    std::cout << (seeds.size() > 10 ? " ...)\n" : ")\n");
  }
}

class Fuzzer {
 public:
  explicit Fuzzer(Config c) : c_(std::move(c)) {}

  // One graph; false when the run should stop (a finding without --keep-going).
  bool run_seed(uint64_t seed);
  void print_summary(double secs) const;
  uint64_t graphs() const { return graphs_; }
  uint64_t findings() const { return findings_; }
  uint64_t generator_errors() const { return gen_errors_; }

 private:
  Config c_;
  uint64_t graphs_ = 0, findings_ = 0, gen_errors_ = 0, runs_tcc_ = 0, runs_cc_ = 0, nodes_total_ = 0, attempts_extra_ = 0;
  uint64_t run_errors_ = 0;  // graphs whose run stops with an error (S2.1) on the interpreter and every tier
  uint64_t unsupported_ = 0, poison_graphs_ = 0, grad_graphs_ = 0, fd_checked_ = 0, fd_unreliable_ = 0, runs_passes_ = 0;
  std::map<std::string, uint64_t> op_count_, form_count_;
  Seeds by_category_, unsupported_kinds_, grad_refused_;
  std::set<std::string> first_of_category_;

  bool checks(backend::Backend tier, uint64_t seed) const {
    return tier != backend::Backend::Cc || c_.explicit_tiers || (c_.cc_every != 0 && seed % c_.cc_every == 0);
  }
  Outcome run_compiled(UOp g, const interp::BufferMap& in, backend::Backend tier, bool direct = false) const {
    return compiled(g, in, tier, c_.how, direct);
  }
  Outcome uninitialized_refused(UOp g, const interp::BufferMap& in, backend::Backend tier) const;
  Outcome error_reported(UOp g, const interp::BufferMap& in, backend::Backend tier) const;
  bool check_run_error(uint64_t seed, UOp root, const interp::BufferMap& inputs);
  void count(const fuzz::Generated& gen, const std::vector<UOp>& nodes);
  void check_uninitialized(uint64_t seed, UOp root, const interp::BufferMap& inputs);
  bool check_reference(uint64_t seed, const fuzz::Generated& gen, const interp::BufferMap& inputs, bool& stop);
  bool check_tiers(uint64_t seed, UOp root, const interp::BufferMap& inputs);
  bool check_gradients(uint64_t seed, UOp root, const interp::BufferMap& inputs);
  bool check_passes(uint64_t seed, UOp root, const interp::BufferMap& inputs);
  void report(uint64_t seed, UOp root, const std::string& tier, const Outcome& o, const Check& check, const std::string& cmd_template);
  UOp shrunk(uint64_t seed, UOp root, const std::string& cat, const Check& check) const;
};

// Uninitialized memory, as the interpreter defines it, must stop every backend: a graph whose
// output reads a written buffer left without data is refused by tcc and cc too (a compiled run
// never tracks it itself; backends/program.cpp asks the kernel-level interpreter first).
Outcome Fuzzer::uninitialized_refused(UOp g, const interp::BufferMap& in, backend::Backend tier) const {
  interp::BufferMap partial = only_inputs(g, in);
  Outcome ref = interpret(g, partial);
  if (ref.kind != Kind::Uninitialized) return {};
  Outcome got = run_compiled(g, partial, tier, true);
  if (got.kind == Kind::Uninitialized || got.kind == Kind::Unsupported) return {};
  if (!got.ok) return got;
  return failed("uninitialized: " + std::string(backend_name(tier)) + " computed a value where the interpreter says: " + ref.error.substr(0, ref.error.find('\n')), Kind::User,
                "uninitialized-computed");
}

void Fuzzer::count(const fuzz::Generated& gen, const std::vector<UOp>& nodes) {
  attempts_extra_ += static_cast<uint64_t>(gen.attempts - 1);
  nodes_total_ += nodes.size();
  if (!c_.stats) return;
  std::set<std::string> ops;
  for (UOp u : nodes) ops.insert(std::string(op_name(u->op)));
  for (const auto& o : ops) ++op_count_[o];
  for (const auto& f : gen.forms) ++form_count_[f];
}

// A run the interpreter stops with an error (an integer division by zero, a negative integer
// exponent, ...: S2.1) must stop on every tier too, never give numbers. Run alone, as `ow run
// --backend tcc` runs it (check mode would stop at the interpreter's own error).
Outcome Fuzzer::error_reported(UOp g, const interp::BufferMap& in, backend::Backend tier) const {
  Outcome ref = interpret(g, in);
  if (ref.ok || ref.kind != Kind::User) return {};
  Outcome got = run_compiled(g, in, tier, true);
  if (!got.ok) return {};
  return failed("error: " + std::string(backend_name(tier)) + " computed outputs where the interpreter stops: " + ref.error.substr(0, ref.error.find('\n')), Kind::User,
                "error-not-reported");
}

// True on a finding.
bool Fuzzer::check_run_error(uint64_t seed, UOp root, const interp::BufferMap& inputs) {
  for (backend::Backend tier : c_.tiers) {
    if (!checks(tier, seed)) continue;
    (tier == backend::Backend::Cc ? runs_cc_ : runs_tcc_)++;
    Outcome e = error_reported(root, inputs, tier);
    if (e.ok) continue;
    report(seed, root, std::string(backend_name(tier)), e, [&, tier](UOp g, const interp::BufferMap& in) { return error_reported(g, in, tier); },
           "ow run FILE --random-inputs " + std::to_string(seed) + " --backend " + std::string(backend_name(tier)));
    return true;
  }
  ++run_errors_;
  return false;
}

// Every fifth graph also runs with the buffers it writes left without data.
void Fuzzer::check_uninitialized(uint64_t seed, UOp root, const interp::BufferMap& inputs) {
  if (seed % 5 != 0 || interpret(root, only_inputs(root, inputs)).kind != Kind::Uninitialized) return;
  ++poison_graphs_;
  for (backend::Backend tier : c_.tiers) {
    if (!checks(tier, seed)) continue;
    Outcome u = uninitialized_refused(root, inputs, tier);
    if (u.ok) continue;
    report(seed, root, std::string(backend_name(tier)), u, [&](UOp g, const interp::BufferMap& in) { return uninitialized_refused(g, in, tier); },
           "ow fuzz --seed " + std::to_string(seed) + " --count 1 --compiler " + std::string(backend_name(tier)));
    return;
  }
}

// The interpreter's verdict on the generated graph; false when the graph goes no further
// (refused gradient, generator error, or a finding of the gradient expansion: then `stop`).
bool Fuzzer::check_reference(uint64_t seed, const fuzz::Generated& gen, const interp::BufferMap& inputs, bool& stop) {
  Outcome ref = interpret(gen.root, inputs);
  if (ref.ok) {
    Outcome v = virtual_folds(gen.root, inputs);
    if (v.ok) return true;
    report(seed, gen.root, "interp", v, virtual_folds, "ow fuzz --seed " + std::to_string(seed) + " --count 1");
    stop = !c_.keep_going;
    return false;
  }
  if (gen.loss && ref.kind == Kind::NotDifferentiable) {  // a clear refusal, not a finding
    grad_refused_[ref.label].push_back(seed);  // by reason (grad::reason_name)
    return false;
  }
  if (gen.loss)
    if (Outcome e = expansion(gen.root, inputs); !e.ok) {
      report(seed, gen.root, "interp", e, expansion, "ow check FILE --random-inputs " + std::to_string(seed));
      stop = !c_.keep_going;
      return false;
    }
  if (ref.kind == Kind::User && !c_.passes) {  // a run that stops with an error: every tier must stop too
    stop = check_run_error(seed, gen.root, inputs) && !c_.keep_going;
    return false;
  }
  ++gen_errors_;
  std::cout << "seed " << seed << ": generator error (the interpreter rejects the graph): " << ref.error << "\n";
  if (gen_errors_ <= 3) std::cout << print_graph(gen.root);
  return false;
}

// The compiled tiers against the interpreter; true on a finding.
bool Fuzzer::check_tiers(uint64_t seed, UOp root, const interp::BufferMap& inputs) {
  for (backend::Backend tier : c_.tiers) {
    if (!checks(tier, seed)) continue;
    (tier == backend::Backend::Cc ? runs_cc_ : runs_tcc_)++;
    Outcome got = run_compiled(root, inputs, tier);
    if (got.ok) continue;
    if (got.kind == Kind::Unsupported) {
      ++unsupported_;
      unsupported_kinds_[category(got)].push_back(seed);  // Unsupported's reason
      return false;
    }
    report(seed, root, std::string(backend_name(tier)), got, [&](UOp g, const interp::BufferMap& in) { return interpret(g, in).ok ? run_compiled(g, in, tier) : Outcome{}; },
           "ow check FILE --random-inputs " + std::to_string(seed) + " --compiler " + std::string(backend_name(tier)) + (c_.how.bounds_check ? " --bounds-check" : ""));
    return true;
  }
  return false;
}

// A gradient graph's gradients against central differences; true on a finding.
bool Fuzzer::check_gradients(uint64_t seed, UOp root, const interp::BufferMap& inputs) {
  ++grad_graphs_;
  fuzz::FdCheck st;
  Outcome fd = finite_differences(root, inputs, seed, &st);
  fd_checked_ += static_cast<uint64_t>(st.checked);
  fd_unreliable_ += static_cast<uint64_t>(st.unreliable);
  if (fd.ok) return false;
  report(seed, root, "fd", fd, [&](UOp g, const interp::BufferMap& in) { return interpret(g, in).ok ? finite_differences(g, in, seed) : Outcome{}; },
         "ow check FILE --finite-differences --random-inputs " + std::to_string(seed));
  return true;
}

// --passes: every stage of the lowering evaluated and compared (translation validation); true on
// a finding.
bool Fuzzer::check_passes(uint64_t seed, UOp root, const interp::BufferMap& inputs) {
  ++runs_passes_;
  Outcome o = passes(root, inputs);
  if (o.ok) return false;
  if (o.kind == Kind::Unsupported) {
    ++unsupported_;
    unsupported_kinds_[category(o)].push_back(seed);
    return false;
  }
  report(seed, root, "passes", o, [&](UOp g, const interp::BufferMap& in) { return interpret(g, in).ok ? passes(g, in) : Outcome{}; },
         "ow check FILE --passes --random-inputs " + std::to_string(seed));
  return true;
}

bool Fuzzer::run_seed(uint64_t seed) {
  ++graphs_;
  fuzz::Generated gen;
  try {
    gen = fuzz::generate(seed);
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error& e) {
    ++gen_errors_;
    std::cout << "seed " << seed << ": generator error: " << e.what() << "\n";
    return true;
  }
  if (c_.print) std::cout << "# seed " << seed << "\n" << print_graph(gen.root);
  count(gen, toposort(gen.root));
  interp::BufferMap inputs;
  fill_random_inputs(gen.root, inputs, seed);
  if (!gen.loss) check_uninitialized(seed, gen.root, inputs);
  bool stop = false, found = false;
  if (check_reference(seed, gen, inputs, stop)) {
    found = c_.passes ? check_passes(seed, gen.root, inputs) : check_tiers(seed, gen.root, inputs);
    if (!found && gen.loss) found = check_gradients(seed, gen.root, inputs);
  }
  reset_uop_table();  // nothing refers to this graph any more; keep memory flat over long runs
  return !stop && !(found && !c_.keep_going);
}

// A finding: counted by category; the first of each category is shrunk (keeping the category
// under `check`) and written as DIR/fuzz-SEED.uop with the command that reproduces it.
void Fuzzer::report(uint64_t seed, UOp root, const std::string& tier, const Outcome& o, const Check& check, const std::string& cmd_template) {
  ++findings_;
  std::string cat = category(o);
  by_category_[cat].push_back(seed);
  std::cout << "seed " << seed << ": FINDING (" << tier << ", " << cat << "): " << o.error << "\n";
  if (!first_of_category_.insert(cat).second && !c_.shrink_all) {
    std::cout << "  (category seen before: not shrunk; --shrink-all to shrink every finding)\n";
    return;
  }
  UOp small = c_.shrink ? shrunk(seed, root, cat, check) : root;
  interp::BufferMap in;
  fill_random_inputs(small, in, seed);
  Outcome again = check(small, in);
  std::filesystem::create_directories(c_.out_dir);
  std::string base = c_.out_dir + "/fuzz-" + std::to_string(seed);
  write_file(base + ".uop", print_graph(small));
  std::string cmd = cmd_template;
  if (size_t f = cmd.find("FILE"); f != std::string::npos) cmd.replace(f, 4, base + ".uop");
  write_file(base + ".txt", "# " + cmd + "\n# category: " + cat + "\n" + again.error + "\n\n# the graph as generated:\n" + print_graph(root));
  std::cout << "  reproducer: " << base << ".uop\n  " << cmd << "\n  error: " << again.error << "\n";
}

UOp Fuzzer::shrunk(uint64_t seed, UOp root, const std::string& cat, const Check& check) const {
  fuzz::ShrinkStats st;
  UOp small = fuzz::shrink(
      root,
      [&](UOp c) {
        interp::BufferMap in;
        fill_random_inputs(c, in, seed);
        Outcome o = check(c, in);
        return !o.ok && category(o) == cat;
      },
      &st);
  std::cout << "  shrunk from " << st.nodes_before << " to " << st.nodes_after << " nodes (" << st.tries << " tries)\n";
  return small;
}

void Fuzzer::print_summary(double secs) const {
  if (c_.stats) {
    std::cout << "graphs containing each op (of " << graphs_ << "):\n";
    for (const auto& [o, n] : op_count_) std::cout << "  " << o << " " << n << "\n";
    std::cout << "graphs using each construct:\n";
    for (const auto& [f, n] : form_count_) std::cout << "  " << f << " " << n << "\n";
    std::cout << "nodes per graph: " << (graphs_ ? static_cast<double>(nodes_total_) / static_cast<double>(graphs_) : 0)
              << " on average; rejected generator tries: " << attempts_extra_ << "\n";
  }
  print_by_kind("findings by category:", by_category_);
  print_by_kind("refused as not supported by the compiled path yet (not findings):", unsupported_kinds_);
  print_by_kind("gradients refused with a clear error (not findings):", grad_refused_);
  uint64_t refused = 0;
  for (const auto& [k, v] : grad_refused_) refused += v.size();
  std::cout << "gradient graphs: " << grad_graphs_ << " checked against central differences (" << fd_checked_ << " elements compared, "
            << fd_unreliable_ << " skipped as not converged), " << refused << " refused\n";
  std::cout << "checked: " << runs_tcc_ << " tcc runs, " << runs_cc_ << " cc runs, " << runs_passes_ << " graphs with every lowering pass validated, "
            << unsupported_ << " graphs not supported; " << run_errors_ << " graphs whose run stops with an error on every tier as on the interpreter; " << poison_graphs_
            << " graphs with written buffers left without data refused as the interpreter refuses them\n";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", secs);
  std::cout << "fuzz: " << graphs_ << " graphs, " << findings_ << " findings, " << gen_errors_ << " generator errors, " << buf << " s\n";
}

int cmd_fuzz(const Args& args) {
  std::optional<Config> c = parse_config(args);
  if (!c) return 0;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, on_fatal_signal);
  Fuzzer fuzzer(*c);
  auto t0 = Clock::now();
  {
    Watchdog watchdog(c->how.timeout_s);
    Progress bar("fuzz", static_cast<int64_t>(c->count));  // drawn only on a terminal
    for (uint64_t i = 0; i < c->count; ++i) {
      bar.update(static_cast<int64_t>(i), std::to_string(fuzzer.findings()) + " findings");
      std::cout << std::flush;
      g_current_seed = c->seed0 + i;
      g_started_ms = now_ms();
      bool go_on = fuzzer.run_seed(c->seed0 + i);
      g_started_ms = -1;
      if (!go_on) break;
      if (!c->quiet && fuzzer.graphs() % 1000 == 0)
        std::cout << "fuzz: " << fuzzer.graphs() << " graphs, " << fuzzer.findings() << " findings, " << fuzzer.generator_errors() << " generator errors, "
                  << std::chrono::duration<double>(Clock::now() - t0).count() << " s\n" << std::flush;
    }
  }
  fuzzer.print_summary(std::chrono::duration<double>(Clock::now() - t0).count());
  return fuzzer.findings() > 0 ? 1 : 0;
}

}  // namespace

std::vector<Command> fuzz_commands() {
  return {{"fuzz", "differential fuzzing: random graphs, compiled path vs the interpreter", cmd_fuzz}};
}

}  // namespace ow::cli
