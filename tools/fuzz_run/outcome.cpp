#include "fuzz_run/outcome.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <iostream>

#include "backends/program.h"
#include "grad/gradient.h"
#include "interp/compare.h"
#include "interp/inputs.h"
#include "lowering/validate.h"
#include "uop/error.h"

namespace ow::cli::fuzz_run {

Outcome failed(const std::string& error, Kind kind, const std::string& label) { return {false, error, kind, label}; }

namespace {

// The kinds of ow::Error (uop/error.h) among a run's outcomes, each named by kind_name.
constexpr std::pair<ErrorKind, Kind> kErrorKinds[] = {
    {ErrorKind::User, Kind::User},
    {ErrorKind::Unsupported, Kind::Unsupported},
    {ErrorKind::NotDifferentiable, Kind::NotDifferentiable},
    {ErrorKind::Uninitialized, Kind::Uninitialized},
    {ErrorKind::Budget, Kind::Budget},
    {ErrorKind::Internal, Kind::Internal},
};

Kind outcome_kind(ErrorKind k) {
  for (auto [e, o] : kErrorKinds)
    if (e == k) return o;
  return Kind::User;
}

// Inside a catch (...): the exception in flight as an Outcome, by its type.
Outcome caught() {
  try {
    throw;
  } catch (const Unsupported& e) {
    return failed(e.what(), Kind::Unsupported, reason_name(e.reason));
  } catch (const grad::NotDifferentiable& e) {
    return failed(e.what(), Kind::NotDifferentiable, grad::reason_name(e.reason));
  } catch (const backend::CheckMismatch& e) {
    return failed(e.what(), e.where == backend::CheckMismatch::Where::Kernel ? Kind::KernelDiverges : Kind::OutputMismatch);
  } catch (const backend::KernelFailed& e) {
    return failed(e.what(), Kind::KernelFailed);
  } catch (const Error& e) {
    Kind k = outcome_kind(e.kind());
    return failed(k == Kind::Internal ? std::string("internal: ") + e.what() : std::string(e.what()), k);
  } catch (const std::exception& e) {
    return failed(std::string("internal: ") + e.what(), Kind::Internal);
  }
}

// An error of no specific type: the start of its message without numbers, a label to group by.
std::string message_head(const std::string& msg) {
  std::string c;
  for (char ch : msg.substr(0, std::min({msg.find(':'), msg.find('\n'), size_t{40}})))
    if (!std::isdigit(static_cast<unsigned char>(ch))) c += ch;
  return "other:" + c;
}

}  // namespace

std::string category(const Outcome& o) {
  if (!o.label.empty()) return o.label;
  switch (o.kind) {
    case Kind::KernelDiverges: return "kernel-diverges";
    case Kind::OutputMismatch: return "output-mismatch";
    case Kind::KernelFailed: return "kernel-error";
    case Kind::User: return message_head(o.error);
    default:
      for (auto [e, k] : kErrorKinds)
        if (k == o.kind) return kind_name(e);
      return message_head(o.error);
  }
}

interp::BufferMap only_inputs(UOp g, const interp::BufferMap& all) {
  interp::BufferMap in;
  for (const interp::BufferSpec& s : interp::graph_buffers(g))
    if (s.input && all.count(s.name)) in.emplace(s.name, all.at(s.name));
  return in;
}

Outcome interpret(UOp g, const interp::BufferMap& inputs) {
  try {
    interp::BufferMap b = interp::copy_buffers(inputs);
    interp::run(g, b);
    return {};
  } catch (...) {
    return caught();
  }
}

Outcome virtual_folds(UOp g, const interp::BufferMap& inputs) {
  auto has_fold = [](UOp u) { return u->op == Ops::REDUCE_AXIS; };
  std::vector<UOp> nodes = toposort(g);
  if (std::none_of(nodes.begin(), nodes.end(), has_fold)) return {};
  auto outputs = [&](int64_t min) -> std::optional<std::vector<interp::Output>> {
    interp::Options o;
    o.virtual_fold_min = min;
    try {
      return evaluate(g, inputs, o);
    } catch (const InternalError&) {
      throw;  // a bug, not an error both runs share
    } catch (const Error&) {
      return std::nullopt;
    }
  };
  auto stored = outputs(-1), folded = outputs(0);
  if (!stored || !folded) {
    if (stored.has_value() == folded.has_value()) return {};
    return failed(std::string("folding REDUCE_AXIS operands without materializing them ") + (stored ? "fails" : "succeeds") + " where materializing them " + (stored ? "succeeds" : "fails"), Kind::User, "virtual-fold");
  }
  for (size_t i = 0; i < stored->size(); ++i)
    if (auto d = interp::first_difference((*stored)[i].value, (*folded)[i].value))
      return failed("output " + (*stored)[i].name + " differs when REDUCE_AXIS operands are folded without materializing them: element " +
                        std::to_string(d->index) + ": " + std::to_string(d->a) + " materialized vs " + std::to_string(d->b), Kind::User, "virtual-fold");
  return {};
}

Outcome passes(UOp g, const interp::BufferMap& inputs) {
  try {
    std::vector<interp::Output> want = evaluate(g, inputs);
    Outcome out;
    for_each_stage(g, [&](const std::string& pass, UOp lowered) {
      if (!out.ok) return;
      Verdict v = validate_pass(want, pass, lowered, inputs);
      std::string kind = "pass-";  // one word: "transposes (tcc)" -> "pass-transposes-tcc"
      for (char c : pass)
        if (c != '(' && c != ')') kind += c == ' ' ? '-' : c;
      if (!v.ok && !v.over_budget) out = failed(v.text, Kind::User, kind);
    });
    return out;
  } catch (...) {
    return caught();
  }
}

Outcome expansion(UOp g, const interp::BufferMap& inputs) {
  std::vector<UOp> losses;
  ArgTuple names;
  for (UOp u : toposort(g))
    if (u->op == Ops::GRADIENT && std::find(losses.begin(), losses.end(), u->src[0]) == losses.end())
      losses.push_back(u->src[0]), names.emplace_back("loss" + std::to_string(names.size()));
  if (losses.empty() || !interpret(UOp::sink(losses, Arg(names)), inputs).ok) return {};
  Outcome o = interpret(g, inputs);
  if (o.ok || o.kind == Kind::NotDifferentiable) return {};
  return failed("gradient expansion: " + o.error, o.kind, "gradient-expansion");
}

Outcome finite_differences(UOp g, const interp::BufferMap& inputs, uint64_t seed, fuzz::FdCheck* stats) {
  try {
    fuzz::FdCheck c = fuzz::check_finite_differences(g, inputs, seed);
    if (stats) *stats = c;
    return c.ok ? Outcome{} : failed(c.error, Kind::User, "gradient-vs-fd");
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    return failed(std::string("finite differences: ") + e.what(), Kind::User, "fd-error");
  }
}

namespace {

// The tier again with no hook watching: check mode keeps every host loop on the walk, a plain run
// compiles loops of launches into C (backends/c/host_loop.cpp), so that is checked too: its
// outputs must be the checked run's (which are the interpreter's) bit for bit.
Outcome unwatched(UOp g, const interp::BufferMap& inputs, backend::Backend tier, bool bounds_check, const std::vector<interp::Output>& want) {
  backend::RunOptions ro;
  ro.backend = tier;
  ro.bounds_check = bounds_check;
  interp::BufferMap b = interp::copy_buffers(inputs);
  std::vector<interp::Output> got = backend::run_graph(g, b, ro);
  for (size_t i = 0; i < want.size(); ++i) {
    std::optional<interp::Difference> d = i < got.size() ? interp::first_difference(want[i].value, got[i].value) : interp::Difference{-1, 0, 0};
    if (d)
      return failed("output '" + want[i].name + "' element " + std::to_string(d->index) + " differs between the checked run and a plain " + std::string(backend_name(tier)) +
                        " run (host loops in C): " + std::to_string(d->a) + " vs " + std::to_string(d->b),
                    Kind::OutputMismatch, "unwatched-mismatch");
  }
  return {};
}

Outcome compiled_here(UOp g, const interp::BufferMap& inputs, backend::Backend tier, bool bounds_check, bool direct) {
  try {
    backend::RunOptions ro;
    ro.backend = direct ? tier : backend::Backend::Check;
    ro.compiler = tier;
    ro.bounds_check = bounds_check;
    interp::BufferMap b = interp::copy_buffers(inputs);
    std::vector<interp::Output> want = backend::run_graph(g, b, ro);
    return direct ? Outcome{} : unwatched(g, inputs, tier, bounds_check, want);
  } catch (...) {
    return caught();
  }
}

void write_all(int fd, const std::string& msg) {
  for (size_t off = 0; off < msg.size();) {
    ssize_t n = write(fd, msg.data() + off, msg.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

// The child: default signal handlers (a crash kills it, the parent sees the signal), limits for
// hangs, and the outcome written back as its kind's character, its label (one line), then the
// message. A hang is CPU time over the timeout (SIGXCPU), so a loaded machine, which slows the
// wall clock 50x for a niced run, reports no false hangs; the wall-clock alarm at
// kWallFactor x the timeout catches a child blocked without using CPU (a compiler that never
// returns).
constexpr int kWallFactor = 10;

[[noreturn]] void child(int fd, UOp g, const interp::BufferMap& inputs, backend::Backend tier, const CompiledRun& how, bool direct) {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGXCPU}) std::signal(sig, SIG_DFL);
  if (how.timeout_s > 0) {
    rlimit cpu{static_cast<rlim_t>(how.timeout_s), static_cast<rlim_t>(how.timeout_s) + 1};
    setrlimit(RLIMIT_CPU, &cpu);
    alarm(static_cast<unsigned>(how.timeout_s * kWallFactor));
  }
  Outcome o = compiled_here(g, inputs, tier, how.bounds_check, direct);
  write_all(fd, static_cast<char>(o.kind) + o.label + '\n' + o.error);
  close(fd);
  _exit(0);
}

// The parent: the child's outcome, or its death by a signal (a crash, or the alarm: a hang).
Outcome wait_for(pid_t pid, int fd, const CompiledRun& how) {
  std::string msg;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) msg.append(buf, static_cast<size_t>(n));
  close(fd);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    if (sig == SIGXCPU) return failed("hang: the compiled path used more than " + std::to_string(how.timeout_s) + " s of CPU", Kind::Internal, "hang");
    if (sig == SIGALRM)
      return failed("hang: the compiled path took more than " + std::to_string(how.timeout_s * kWallFactor) + " s of wall time (blocked?)", Kind::Internal, "hang");
    return failed("crash: the compiled path died of signal " + std::to_string(sig) + " (" + strsignal(sig) + ")", Kind::Internal,
                  "crash:signal " + std::to_string(sig));
  }
  size_t eol = msg.find('\n');
  if (eol == std::string::npos) return failed("crash: the compiled path exited without a result", Kind::Internal, "crash");
  return {msg[0] == '1', msg.substr(eol + 1), static_cast<Kind>(msg[0]), msg.substr(1, eol - 1)};
}

}  // namespace

// In a child process, so a crash or a hang of the lowering or of a compiled kernel is a finding
// like any other instead of ending the run.
Outcome compiled(UOp g, const interp::BufferMap& inputs, backend::Backend tier, const CompiledRun& how, bool direct) {
  if (!how.fork) return compiled_here(g, inputs, tier, how.bounds_check, direct);
  std::cout << std::flush;
  std::cerr << std::flush;
  int fd[2];
  if (pipe(fd) != 0) return compiled_here(g, inputs, tier, how.bounds_check, direct);
  pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]);
    close(fd[1]);
    return compiled_here(g, inputs, tier, how.bounds_check, direct);
  }
  if (pid == 0) {
    close(fd[0]);
    child(fd[1], g, inputs, tier, how, direct);
  }
  close(fd[1]);
  return wait_for(pid, fd[0], how);
}

}  // namespace ow::cli::fuzz_run
