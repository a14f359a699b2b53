// ow fuzz: differential fuzzing of the compiled path against the interpreter. For every seed a
// random valid tensor graph (src/fuzz) gets seeded random inputs; the interpreter evaluates it
// (the definition), then backend::run_graph in check mode lowers it and runs every kernel both
// compiled and interpreted. Any error of the compiled path is a finding: it is shrunk and written
// as DIR/fuzz-<seed>.uop with an `ow check` command that reproduces it. Gradient graphs (a share
// of the seeds, src/fuzz/generate.h) are also checked against central differences in float64
// (src/fuzz/gradcheck.h); the gradients the interpreter refuses are counted by kind.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <thread>
#include <cstring>

#include "cli/progress.h"
#include <sys/wait.h>
#include <unistd.h>

#include "backends/program.h"
#include "cli.h"
#include "interp/inputs.h"
#include "fuzz/generate.h"
#include "fuzz/gradcheck.h"
#include "uop/error.h"
#include "uop/text.h"

namespace ow::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<uint64_t> g_current_seed{0};
std::atomic<int64_t> g_started_ms{-1};  // when the current graph started (-1: idle)

int64_t now_ms() { return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count(); }

extern "C" void on_fatal_signal(int sig) {
  char buf[128];
  int n = std::snprintf(buf, sizeof buf, "\nfuzz: signal %d while running seed %llu (reproduce: ow fuzz --seed %llu --count 1)\n", sig,
                        static_cast<unsigned long long>(g_current_seed.load()), static_cast<unsigned long long>(g_current_seed.load()));
  if (n > 0) (void)!write(2, buf, static_cast<size_t>(n));
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// A coarse class of a compiled-path error, so the shrinker keeps the same kind of failure.
std::string category(const std::string& msg) {
  if (msg.rfind("gradient differs from central differences", 0) == 0) return "gradient-vs-fd";
  if (msg.rfind("finite differences:", 0) == 0) return "fd-error";
  if (msg.rfind("gradient expansion:", 0) == 0) return "gradient-expansion";
  if (msg.find("diverges") != std::string::npos) return "kernel-diverges";
  if (msg.find("after lowering") != std::string::npos) return "output-mismatch";
  if (msg.rfind("kernel ", 0) == 0) {
    if (msg.find("compile") != std::string::npos || msg.find("error:") != std::string::npos) return "kernel-compile";
    return "kernel-error";
  }
  if (msg.rfind("internal:", 0) == 0) return "internal";
  if (msg.rfind("hang:", 0) == 0) return "hang";
  if (msg.rfind("crash:", 0) == 0) return "crash:" + msg.substr(msg.find("signal"), 9);
  std::string c;
  for (char ch : msg.substr(0, std::min({msg.find(':'), msg.find('\n'), size_t{40}})))
    if (!std::isdigit(static_cast<unsigned char>(ch))) c += ch;
  return "other:" + c;
}

// What went wrong, by the type of what was thrown (it crosses the fork as one character).
enum class Kind : char { Ok = '1', User = '0', Unsupported = 'u', Uninitialized = 'p', Budget = 'b', Mismatch = 'm', Internal = 'i' };

struct Outcome {
  bool ok = true;
  std::string error;
  Kind kind = Kind::Ok;
};

Outcome failed(const std::string& error, Kind kind = Kind::User) { return {false, error, kind}; }

// Inside a catch (...): the exception in flight as an Outcome.
Outcome caught() {
  try {
    throw;
  } catch (const Unsupported& e) {
    return failed(e.what(), Kind::Unsupported);
  } catch (const UninitializedRead& e) {
    return failed(e.what(), Kind::Uninitialized);
  } catch (const BudgetExceeded& e) {
    return failed(e.what(), Kind::Budget);
  } catch (const backend::CheckMismatch& e) {
    return failed(e.what(), Kind::Mismatch);
  } catch (const Error& e) {
    return failed(e.what());
  } catch (const InternalError& e) {
    return failed(std::string("internal: ") + e.what(), Kind::Internal);
  } catch (const std::exception& e) {
    return failed(std::string("internal: ") + e.what(), Kind::Internal);
  }
}

// A refusal's kind: its message without the node, names and numbers.
std::string refusal_kind(const std::string& msg) {
  std::string m = msg.substr(0, msg.find(" (at ")), out;
  bool quoted = false;
  for (size_t i = 0; i < m.size(); ++i) {
    char c = m[i];
    if (c == '\'' && (quoted || i == 0 || m[i - 1] == ' ')) quoted = !quoted, out += quoted ? "'" : "";  // a quoted name, not "loop's"
    else if (!quoted && !std::isdigit(static_cast<unsigned char>(c))) out += c;
  }
  return out;
}

// The gradients of a gradient graph against central differences (after the interpreter has
// evaluated it, so an error here is a finding).
Outcome finite_differences(UOp g, const interp::BufferMap& inputs, uint64_t seed, fuzz::FdCheck* stats = nullptr) {
  try {
    fuzz::FdCheck c = fuzz::check_finite_differences(g, inputs, seed);
    if (stats) *stats = c;
    return c.ok ? Outcome{} : failed(c.error);
  } catch (const Error& e) {
    return failed(std::string("finite differences: ") + e.what());
  }
}

// The interpreter on the tensor graph: an error here is the generator's bug (or, for a gradient
// graph whose losses evaluate, the gradient expansion's).
Outcome interpret(UOp g, const interp::BufferMap& inputs) {
  try {
    interp::BufferMap b = copy_buffers(inputs);
    interp::run(g, b);
    return {};
  } catch (...) {
    return caught();
  }
}

// A gradient graph whose losses the interpreter evaluates but whose gradients it neither
// evaluates nor refuses: the expansion built something wrong.
Outcome expansion(UOp g, const interp::BufferMap& inputs) {
  std::vector<UOp> losses;
  ArgTuple names;
  for (UOp u : toposort(g))
    if (u->op == Ops::GRADIENT && std::find(losses.begin(), losses.end(), u->src[0]) == losses.end())
      losses.push_back(u->src[0]), names.emplace_back("loss" + std::to_string(names.size()));
  if (losses.empty() || !interpret(UOp::sink(losses, Arg(names)), inputs).ok) return {};
  Outcome o = interpret(g, inputs);
  if (o.ok || o.error.rfind("gradient:", 0) == 0) return {};
  return failed("gradient expansion: " + o.error);
}

// direct: the tier alone (as `ow run --backend tcc` runs it), not in lockstep with the interpreter.
// The buffers of `all` that the graph only reads: the ones it writes are left without data.
interp::BufferMap only_inputs(UOp g, const interp::BufferMap& all) {
  interp::BufferMap in;
  for (const interp::BufferSpec& s : interp::graph_buffers(g))
    if (s.input && all.count(s.name)) in.emplace(s.name, all.at(s.name));
  return in;
}

Outcome compiled(UOp g, const interp::BufferMap& inputs, const std::string& tier, bool bounds_check, bool direct = false) {
  try {
    backend::RunOptions ro;
    ro.backend = direct ? tier : "check";
    ro.compiler = tier;
    ro.bounds_check = bounds_check;
    interp::BufferMap b = copy_buffers(inputs);
    backend::run_graph(g, b, ro);
    return {};
  } catch (...) {
    return caught();
  }
}

// The compiled path in a child process, so a crash or a hang of the lowering or of a compiled
// kernel is a finding like any other (category crash-signal-N / hang) instead of ending the run.
Outcome compiled_isolated(UOp g, const interp::BufferMap& inputs, const std::string& tier, bool bounds_check, int timeout_s, bool direct) {
  std::cout << std::flush;
  std::cerr << std::flush;
  int fd[2];
  if (pipe(fd) != 0) return compiled(g, inputs, tier, bounds_check, direct);
  pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]);
    close(fd[1]);
    return compiled(g, inputs, tier, bounds_check, direct);
  }
  if (pid == 0) {
    close(fd[0]);
    std::signal(SIGSEGV, SIG_DFL);
    std::signal(SIGBUS, SIG_DFL);
    std::signal(SIGFPE, SIG_DFL);
    std::signal(SIGILL, SIG_DFL);
    std::signal(SIGABRT, SIG_DFL);
    if (timeout_s > 0) alarm(static_cast<unsigned>(timeout_s));
    Outcome o = compiled(g, inputs, tier, bounds_check, direct);
    std::string msg = static_cast<char>(o.kind) + o.error;
    size_t off = 0;
    while (off < msg.size()) {
      ssize_t n = write(fd[1], msg.data() + off, msg.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fd[1]);
    _exit(0);
  }
  close(fd[1]);
  std::string msg;
  char buf[4096];
  for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<size_t>(n));
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    if (sig == SIGALRM) return failed("hang: the compiled path took more than " + std::to_string(timeout_s) + " s", Kind::Internal);
    return failed("crash: the compiled path died of signal " + std::to_string(sig) + " (" + strsignal(sig) + ")", Kind::Internal);
  }
  if (msg.empty()) return failed("crash: the compiled path exited without a result", Kind::Internal);
  return {msg[0] == '1', msg.substr(1), static_cast<Kind>(msg[0])};
}

int cmd_fuzz(const Args& args) {
  po::options_description opts("options");
  opts.add_options()("seed", po::value<uint64_t>()->default_value(1), "first seed; graph k uses seed S+k")(
      "count", po::value<uint64_t>()->default_value(100), "number of graphs")(
      "compiler", po::value<std::vector<std::string>>()->composing(),
      "compiled tier to check on EVERY graph (repeatable: tcc, cc). Default: tcc on every graph and cc on every --cc-every'th "
      "(cc compiles take ~30-50 ms per kernel, tcc ~1 ms)")(
      "cc-every", po::value<uint64_t>()->default_value(50), "without --compiler: also check cc on graphs whose seed is a multiple of this (0: never)")(
      "out", po::value<std::string>()->default_value("fuzz-findings"), "directory for the shrunk reproducers fuzz-<seed>.uop/.txt")(
      "keep-going", "continue after the first finding")(
      "no-shrink", "write findings as generated, without shrinking")(
      "shrink-all", "shrink and write every finding (default: only the first of each error category)")(
      "no-bounds-check", "compiled kernels without access checks (default: checked, so an out-of-bounds access is a finding, not a crash of the run)")(
      "timeout", po::value<int>()->default_value(30), "seconds the compiled path may take on one graph (a hang finding); the run aborts if a whole graph takes 10x that")(
      "no-fork", "run the compiled path in this process (a crash ends the run; for debugging)")(
      "stats", "print how often each op and construct occurred")(
      "print", "print every generated graph (for debugging the generator)")(
      "quiet,q", "only findings and the summary line");
  po::positional_options_description pos;
  po::variables_map vm;
  if (!parse_options("fuzz", "[--seed S] [--count N] [--compiler tcc|cc]... [--out DIR] [--keep-going]", opts, pos, args, vm)) return 0;
  uint64_t seed0 = vm["seed"].as<uint64_t>(), count = vm["count"].as<uint64_t>(), cc_every = vm["cc-every"].as<uint64_t>();
  bool explicit_tiers = vm.count("compiler") > 0;
  std::vector<std::string> tiers = explicit_tiers ? vm["compiler"].as<std::vector<std::string>>() : std::vector<std::string>{"tcc", "cc"};
  for (const std::string& t : tiers)
    if (t != "tcc" && t != "cc") throw Error("ow fuzz: --compiler takes tcc or cc, got '" + t + "'");
  std::string out_dir = vm["out"].as<std::string>();
  bool keep_going = vm.count("keep-going") > 0, shrink_on = !vm.count("no-shrink"), bounds = !vm.count("no-bounds-check");
  bool quiet = vm.count("quiet") > 0;
  int timeout = vm["timeout"].as<int>();
  bool fork_on = !vm.count("no-fork");
  auto run_compiled = [&](UOp g, const interp::BufferMap& in, const std::string& tier, bool direct = false) {
    return fork_on ? compiled_isolated(g, in, tier, bounds, timeout, direct) : compiled(g, in, tier, bounds, direct);
  };
  // Uninitialized memory, as the interpreter defines it, must stop every backend: a graph whose
  // output reads a written buffer left without data is refused by tcc and cc too (a compiled run
  // never tracks it itself; backends/program.cpp asks the kernel-level interpreter first).
  uint64_t poison_graphs = 0;
  auto uninitialized_refused = [&](UOp g, const interp::BufferMap& in, const std::string& tier) -> Outcome {
    interp::BufferMap partial = only_inputs(g, in);
    Outcome ref = interpret(g, partial);
    if (ref.kind != Kind::Uninitialized) return {};
    Outcome got = run_compiled(g, partial, tier, true);
    if (got.kind == Kind::Uninitialized || got.kind == Kind::Unsupported) return {};
    return failed(got.ok ? "uninitialized: " + tier + " computed a value where the interpreter says: " + ref.error.substr(0, ref.error.find('\n')) : got.error, got.ok ? Kind::User : got.kind);
  };

  std::signal(SIGSEGV, on_fatal_signal);
  std::signal(SIGBUS, on_fatal_signal);
  std::signal(SIGFPE, on_fatal_signal);
  std::signal(SIGILL, on_fatal_signal);
  std::signal(SIGABRT, on_fatal_signal);
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      int64_t s = g_started_ms.load();
      if (timeout > 0 && s >= 0 && now_ms() - s > int64_t{timeout} * 10000) {
        std::fprintf(stderr, "\nfuzz: seed %llu took more than %d s (a hang?): reproduce with ow fuzz --seed %llu --count 1\n",
                     static_cast<unsigned long long>(g_current_seed.load()), timeout, static_cast<unsigned long long>(g_current_seed.load()));
        std::fflush(stderr);
        _exit(3);
      }
    }
  });

  auto t0 = Clock::now();
  uint64_t unsupported = 0;  // graphs the compiled path refuses with a clear message: counted, not findings
  std::map<std::string, std::vector<uint64_t>> unsupported_kinds;  // kind -> seeds
  uint64_t graphs = 0, findings = 0, gen_errors = 0, runs_tcc = 0, runs_cc = 0, nodes_total = 0, attempts_extra = 0;
  std::map<std::string, uint64_t> op_count, form_count;
  std::map<std::string, std::vector<uint64_t>> by_category;
  std::set<std::string> first_of_category;
  std::map<std::string, std::vector<uint64_t>> grad_refused;  // gradient refusals by kind -> seeds
  uint64_t grad_graphs = 0, fd_checked = 0, fd_unreliable = 0;
  // A finding: counted by category; the first of each category is shrunk (keeping the category
  // under `check`) and written as DIR/fuzz-SEED.uop with the command that reproduces it.
  auto report = [&](uint64_t seed, UOp root, const std::string& tier, const std::string& error,
                    const std::function<Outcome(UOp, const interp::BufferMap&)>& check, const std::string& cmd_template) {
    ++findings;
    std::string cat = category(error);
    by_category[cat].push_back(seed);
    std::cout << "seed " << seed << ": FINDING (" << tier << ", " << cat << "): " << error << "\n";
    if (!first_of_category.insert(cat).second && !vm.count("shrink-all")) {
      std::cout << "  (category seen before: not shrunk; --shrink-all to shrink every finding)\n";
      return;
    }
    UOp small = root;
    if (shrink_on) {
      fuzz::ShrinkStats st;
      small = fuzz::shrink(
          root,
          [&](UOp c) {
            interp::BufferMap in;
            fill_random_inputs(c, in, seed);
            Outcome o = check(c, in);
            return !o.ok && category(o.error) == cat;
          },
          &st);
      std::cout << "  shrunk from " << st.nodes_before << " to " << st.nodes_after << " nodes (" << st.tries << " tries)\n";
    }
    interp::BufferMap in;
    fill_random_inputs(small, in, seed);
    Outcome again = check(small, in);
    std::filesystem::create_directories(out_dir);
    std::string base = out_dir + "/fuzz-" + std::to_string(seed);
    write_file(base + ".uop", print_graph(small));
    std::string cmd = cmd_template;
    if (size_t f = cmd.find("FILE"); f != std::string::npos) cmd.replace(f, 4, base + ".uop");
    write_file(base + ".txt", "# " + cmd + "\n# category: " + cat + "\n" + again.error + "\n\n# the graph as generated:\n" + print_graph(root));
    std::cout << "  reproducer: " << base << ".uop\n  " << cmd << "\n  error: " << again.error << "\n";
  };
  Progress bar("fuzz", static_cast<int64_t>(count));  // drawn only on a terminal
  for (uint64_t i = 0; i < count; ++i) {
    bar.update(static_cast<int64_t>(i), std::to_string(findings) + " findings");
    uint64_t seed = seed0 + i;
    std::cout << std::flush;
    g_current_seed = seed;
    g_started_ms = now_ms();
    ++graphs;
    fuzz::Generated gen;
    try {
      gen = fuzz::generate(seed);
    } catch (const Error& e) {
      ++gen_errors;
      std::cout << "seed " << seed << ": generator error: " << e.what() << "\n";
      continue;
    }
    attempts_extra += static_cast<uint64_t>(gen.attempts - 1);
    UOp root = gen.root;
    if (vm.count("print")) std::cout << "# seed " << seed << "\n" << print_graph(root);
    std::vector<UOp> nodes = toposort(root);
    nodes_total += nodes.size();
    if (vm.count("stats")) {
      std::set<std::string> ops;
      for (UOp u : nodes) ops.insert(std::string(op_name(u->op)));
      for (const auto& o : ops) ++op_count[o];
      for (const auto& f : gen.forms) ++form_count[f];
    }
    interp::BufferMap inputs;
    fill_random_inputs(root, inputs, seed);
    // every fifth graph also runs with the buffers it writes left without data
    if (!gen.loss && seed % 5 == 0 && interpret(root, only_inputs(root, inputs)).kind == Kind::Uninitialized) {
      ++poison_graphs;
      for (const std::string& tier : tiers) {
        if (tier == "cc" && !explicit_tiers && (cc_every == 0 || seed % cc_every != 0)) continue;
        Outcome u = uninitialized_refused(root, inputs, tier);
        if (u.ok) continue;
        report(seed, root, tier, u.error, [&](UOp c, const interp::BufferMap& in) { return uninitialized_refused(c, in, tier); },
               "ow fuzz --seed " + std::to_string(seed) + " --count 1 --compiler " + tier);
        break;
      }
    }
    Outcome ref = interpret(root, inputs);
    if (!ref.ok && gen.loss && ref.error.rfind("gradient:", 0) == 0) {  // a clear refusal, not a finding
      grad_refused[refusal_kind(ref.error)].push_back(seed);
      g_started_ms = -1;
      reset_uop_table();
      continue;
    }
    if (!ref.ok && gen.loss) {
      if (Outcome e = expansion(root, inputs); !e.ok) {
        report(seed, root, "interp", e.error, expansion, "ow check FILE --random-inputs " + std::to_string(seed));
        g_started_ms = -1;
        reset_uop_table();
        if (!keep_going) break;
        continue;
      }
    }
    if (!ref.ok) {
      ++gen_errors;
      std::cout << "seed " << seed << ": generator error (the interpreter rejects the graph): " << ref.error << "\n";
      if (gen_errors <= 3) std::cout << print_graph(root);
      continue;
    }
    bool found = false;
    for (const std::string& tier : tiers) {
      if (tier == "cc" && !explicit_tiers && (cc_every == 0 || seed % cc_every != 0)) continue;
      (tier == "cc" ? runs_cc : runs_tcc)++;
      Outcome got = run_compiled(root, inputs, tier);
      if (got.ok) continue;
      if (got.kind == Kind::Unsupported) {
        ++unsupported;
        std::string kind = got.error.substr(0, got.error.find(" (not supported"));
        unsupported_kinds[kind.find("empty dimension") != std::string::npos ? "an empty dimension" : kind].push_back(seed);
        break;
      }
      found = true;
      report(seed, root, tier, got.error, [&](UOp c, const interp::BufferMap& in) { return interpret(c, in).ok ? run_compiled(c, in, tier) : Outcome{}; },
             "ow check FILE --random-inputs " + std::to_string(seed) + " --compiler " + tier + (bounds ? " --bounds-check" : ""));
      break;
    }
    if (!found && gen.loss) {
      ++grad_graphs;
      fuzz::FdCheck st;
      Outcome fd = finite_differences(root, inputs, seed, &st);
      fd_checked += static_cast<uint64_t>(st.checked);
      fd_unreliable += static_cast<uint64_t>(st.unreliable);
      if (!fd.ok) {
        found = true;
        report(seed, root, "fd", fd.error, [&](UOp c, const interp::BufferMap& in) { return interpret(c, in).ok ? finite_differences(c, in, seed) : Outcome{}; },
               "ow check FILE --finite-differences --random-inputs " + std::to_string(seed));
      }
    }
    g_started_ms = -1;
    reset_uop_table();  // nothing refers to this graph any more; keep memory flat over long runs
    if (found && !keep_going) break;
    if (!quiet && graphs % 1000 == 0) {
      double s = std::chrono::duration<double>(Clock::now() - t0).count();
      std::cout << "fuzz: " << graphs << " graphs, " << findings << " findings, " << gen_errors << " generator errors, " << s << " s\n" << std::flush;
    }
  }
  done = true;
  watchdog.join();
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (vm.count("stats")) {
    std::cout << "graphs containing each op (of " << graphs << "):\n";
    for (const auto& [o, n] : op_count) std::cout << "  " << o << " " << n << "\n";
    std::cout << "graphs using each construct:\n";
    for (const auto& [f, n] : form_count) std::cout << "  " << f << " " << n << "\n";
    std::cout << "nodes per graph: " << (graphs ? static_cast<double>(nodes_total) / static_cast<double>(graphs) : 0) << " on average; rejected generator tries: " << attempts_extra
              << "\n";
  }
  // "  kind: N (seeds a b c ...)", the first 10 seeds of each kind
  auto by_kind = [](const char* title, const auto& kinds) {
    if (kinds.empty()) return;
    std::cout << title << "\n";
    for (const auto& [k, seeds] : kinds) {
      std::cout << "  " << k << ": " << seeds.size() << " (seeds";
      for (size_t i = 0; i < seeds.size() && i < 10; ++i) std::cout << " " << seeds[i];
      std::cout << (seeds.size() > 10 ? " ...)\n" : ")\n");
    }
  };
  by_kind("findings by category:", by_category);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", secs);
  by_kind("refused as not supported by the compiled path yet (not findings):", unsupported_kinds);
  by_kind("gradients refused with a clear error (not findings):", grad_refused);
  std::cout << "gradient graphs: " << grad_graphs << " checked against central differences (" << fd_checked << " elements compared, "
            << fd_unreliable << " skipped as not converged), " << [&] { uint64_t n = 0; for (auto& [k, v] : grad_refused) n += v.size(); return n; }()
            << " refused\n";
  std::cout << "checked: " << runs_tcc << " tcc runs, " << runs_cc << " cc runs, " << unsupported << " graphs not supported; " << poison_graphs
            << " graphs with written buffers left without data refused as the interpreter refuses them\n";
  std::cout << "fuzz: " << graphs << " graphs, " << findings << " findings, " << gen_errors << " generator errors, " << buf << " s\n";
  return findings > 0 ? 1 : 0;
}

}  // namespace

std::vector<Command> fuzz_commands() {
  return {{"fuzz", "differential fuzzing: random graphs, compiled path vs the interpreter", cmd_fuzz}};
}

}  // namespace ow::cli
