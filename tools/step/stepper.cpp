// ow step: a debugger for graph evaluation (see stepper.h). The interpreter runs in the caller
// of its hooks; the session stops inside on_step and reads commands until one resumes.
#include "stepper.h"
#include "session.h"
#include "trace.h"
#include "uop/args.h"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <deque>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "backends/program.h"
#include "interp/value.h"
#include "line_editor.h"
#include "uop/error.h"
#include "uop/shape.h"

namespace ow::cli {

namespace {

// Ctrl-C during evaluation (StepperOptions::catch_interrupt): the handler only sets this flag;
// the hook sees it at the next step and stops there as at a breakpoint.
volatile std::sig_atomic_t interrupted = 0;
void on_sigint(int) { interrupted = 1; }

// Installs on_sigint for the session's lifetime. SA_RESTART: a read at the prompt continues.
struct InterruptHandler {
  bool on;
  struct sigaction saved {};
  explicit InterruptHandler(bool install) : on(install) {
    if (!on) return;
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, &saved);
  }
  ~InterruptHandler() {
    if (on) sigaction(SIGINT, &saved, nullptr);
  }
};

// The session leaves the interpreter by throwing this from inside the hook (not an ow::Error,
// which the interpreter would report as a failed node).
struct Leave {
  stepping::Act act;
};

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

const char* kHelp =
    "commands (a script on stdin works the same; empty lines and # comments are skipped):\n"
    "  step, s             run to the next evaluated node, into range loops and kernels\n"
    "  next, n             run to the next node at this nesting level (as many ranges bound or fewer)\n"
    "  finish              run until the current loop is left (fewer ranges bound)\n"
    "  continue, c         run to the next breakpoint or the end (Ctrl-C stops where it is)\n"
    "  restart             start the evaluation again with the same inputs and breakpoints\n"
    "                      and run to the first breakpoint\n"
    "  break NODE          stop after NODE is evaluated\n"
    "  break RANGE=VALUE   stop when range RANGE becomes bound to VALUE (break m1=2)\n"
    "  break poison        stop at every evaluated node whose value contains poison\n"
    "  break divergence    (--lowered) stop at the first kernel launch whose stored buffers differ\n"
    "                      between the compiled tcc kernel and the interpreter\n"
    "  break               list breakpoints;  delete [ID]  remove one or all\n"
    "  print NODE|BUFFER   values, shape, dtype and poison summary (p)\n"
    "  where [NODE]        range bindings and every node on the path from the root to the\n"
    "                      current node (or NODE) (bt)\n"
    "  graph [NODE]        the current node (or NODE) and its sources 2 levels down, as .uop lines\n"
    "  help                this list\n"
    "  quit, q             stop and exit (status 0; 1 for a script in which a command failed)\n"
    "a NODE is %N (numbered as by `ow print`, as shown here), %NAME (the file's own name for it)\n"
    "or an output name. At a terminal: Up/Down recall earlier commands, Tab completes, Enter on\n"
    "an empty line repeats step, next, finish or continue.\n";

const std::vector<std::string> kCommands{"step", "next", "finish", "continue", "restart", "break", "delete", "print", "where", "graph", "help", "quit"};

const char* const kInterrupted = "interrupted (Ctrl-C)";

bool is_motion(const std::string& cmd) {
  for (const char* m : {"step", "s", "next", "n", "finish", "continue", "c"})
    if (cmd == m) return true;
  return false;
}

}  // namespace

namespace stepping {

// User text quoted in a message: control characters (a stray escape sequence) as \xHH.
std::string printable(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (c >= 0x20 && c != 0x7f) {
      o += static_cast<char>(c);
      continue;
    }
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    o += buf;
  }
  return o;
}

std::string join(const std::vector<std::string>& words) {
  std::string all;
  for (const std::string& w : words) all += (all.empty() ? "" : ", ") + w;
  return all.empty() ? "none" : all;
}

Session::Session(UOp root, interp::BufferMap& buffers, std::istream& in, std::ostream& out, const StepperOptions& o)
    : root_(root), buffers_(buffers), in_(in), out_(out), o_(o), p_(number_graph(root)) {
  for (UOp u : p_.order) {
    if (u->op == Ops::BUFFER) buffer_nodes_.emplace(buffer_name(u), u);
    if (u->op == Ops::RANGE) range_names_.insert(range_name(u));
    if (u->op == Ops::KERNEL) ++kernel_count_;
    auto named = o_.file_names.find(u.get());
    if (named != o_.file_names.end()) file_nodes_.emplace(named->second, u);
  }
  name_outputs();
  if (o_.editor) o_.editor->set_completer([this](const std::string& line, size_t start) { return completions(line, start); });
}

int Session::run() {
  out_ << "ow step: " << (o_.file.empty() ? "<graph>" : o_.file) << ": " << p_.order.size() << " nodes"
       << (o_.lowered ? " (lowered: " + std::to_string(kernel_count_) + " kernels; kernel launches are the steps)" : "")
       << "; evaluation not started (type help for commands)\n";
  note_numbering();
  Act a = command_loop();
  while (a != Act::Quit) {
    if (a == Act::Restart && state_ != State::NotStarted) reset();
    a = evaluate();
  }
  if (o_.echo && errors_) {
    out_ << "the script had " << errors_ << " failed command" << (errors_ > 1 ? "s" : "") << ": exit status 1\n";
    return 1;
  }
  return 0;
}

void Session::name_outputs() {
  std::vector<UOp> outs = root_->op == Ops::SINK ? root_->src : std::vector<UOp>{root_};
  for (size_t i = 0; i < outs.size(); ++i) {
    std::string name = output_name(root_, i);
    output_nodes_.emplace(name, outs[i]);
    output_names_.push_back(name);
  }
}

void Session::note_numbering() {
  if (o_.lowered) return;  // the lowered program is numbered anew anyway
  for (auto& [name, u] : file_nodes_)
    if (all_digits(name) && "%" + name != node_name(p_, u)) {
      out_ << "note: this file numbers its nodes in another order than `ow print`: %N here is ow print's %N, "
              "as this session shows them\n";
      return;
    }
}

Act Session::evaluate() {
  interp::Options opts;
  opts.max_evals = o_.max_steps;
  opts.on_enter = [this](UOp u) { stack_.push_back(u); };
  opts.on_step = [this](const interp::Step& s) { on_step(s); };
  try {
    finished(interp::run(root_, buffers_, opts));
  } catch (const Leave& l) {
    return l.act;
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error& e) {
    state_ = State::Failed;
    out_ << "evaluation failed: " << e.what() << "\n";
  }
  stack_.clear();
  return command_loop();
}

void Session::finished(const std::vector<interp::Output>& outs) {
  state_ = State::Finished;
  out_ << "evaluation finished after " << steps_ << " steps" << (o_.lowered ? " (" + std::to_string(launches_) + " kernel launches)" : "") << "\n";
  for (const interp::Output& x : outs) {
    ValueStats st = value_stats(x.value);
    out_ << "  output " << x.name << ": " << to_string(x.value.dtype) << " " << shape_text(x.value.shape()) << stats_text(st) << "\n";
    results_[x.name] = x.value;
  }
}

void Session::reset() {
  buffers_ = interp::copy_buffers(o_.initial);
  seen_.clear();
  results_.clear();
  stack_.clear();
  cur_stack_.clear();
  cur_bind_.clear();
  cur_ = UOp();
  steps_ = launches_ = 0;
  for (Break& b : breaks_) b.held = false;
  state_ = State::NotStarted;
  out_ << "restarting: evaluation from the start with the same inputs (" << breaks_.size() << " breakpoint" << (breaks_.size() == 1 ? "" : "s") << ")\n";
}

void Session::on_step(const interp::Step& s) {
  if (!stack_.empty() && stack_.back() == s.node) stack_.pop_back();
  ++steps_;
  bool kernel = s.node->op == Ops::KERNEL;
  if (kernel) ++launches_;
  seen_[s.node.get()] = Seen{*s.value, s.bindings, steps_};
  if (o_.lowered && !kernel) return;  // lowered: host-side index math is not a step
  std::vector<std::string> hits = breaks_hit(s, kernel);
  bool stop = !hits.empty();
  if (interrupted) {
    interrupted = 0;
    hits.push_back(kInterrupted);
    stop = true;
  }
  switch (mode_) {
    case Mode::Step: stop = true; break;
    case Mode::Next: stop = stop || s.bindings.size() <= depth_; break;
    case Mode::Finish: stop = stop || s.bindings.size() < depth_; break;
    case Mode::Continue: break;
  }
  if (!stop) return;
  state_ = State::Stopped;
  cur_ = s.node;
  cur_bind_ = s.bindings;
  cur_stack_ = stack_;
  if (!hits.empty() && hits.back() == kInterrupted) out_ << "\n";  // after the terminal's "^C"
  out_ << "stopped after " << node_name(p_, s.node) << " " << op_name(s.node->op);
  if (kernel) out_ << " " << kernel_name(s.node) << " (launch " << launches_ << ")";
  else out_ << " " << to_string(s.value->dtype) << " " << shape_text(s.value->shape());
  out_ << " with " << interp::bindings_text(s.bindings) << " (step " << steps_ << ")";
  for (const std::string& h : hits) out_ << " [" << h << "]";
  out_ << "\n  " << p_.line(s.node) << "\n";
  if (!kernel) out_ << "  value:" << stats_text(value_stats(*s.value)) << "\n";
  for (const Break& b : breaks_)
    if (b.kind == Break::Divergence && kernel && static_cast<int64_t>(launches_) == divergent_launch_) out_ << "  " << divergence_ << "\n";
  Act a = command_loop();
  if (a != Act::Resume) throw Leave{a};
}

std::vector<std::string> Session::breaks_hit(const interp::Step& s, bool kernel) {
  std::vector<std::string> hits;
  int64_t poison_first = -1, poison_count = 0;
  for (Break& b : breaks_) {
    bool hit = false;
    switch (b.kind) {
      case Break::Node: hit = s.node.get() == b.node; break;
      case Break::Range: {
        bool holds = std::any_of(s.bindings.begin(), s.bindings.end(), [&](const auto& x) { return x.second == b.value && range_name(x.first) == b.range; });
        hit = holds && !b.held;
        b.held = holds;
        break;
      }
      case Break::Poison: hit = interp::any_poison(*s.value, &poison_first, &poison_count); break;
      case Break::Divergence: hit = kernel && static_cast<int64_t>(launches_) == divergent_launch_; break;
    }
    if (hit) hits.push_back("breakpoint " + std::to_string(b.id) + ": " + b.text);
  }
  return hits;
}

std::string Session::kernel_name(UOp k) const {
  const ArgTuple* t = k->arg.tuple();
  return t && !t->empty() && t->at(0).is<std::string>() ? t->at(0).as<std::string>() : "";
}

std::string Session::stats_text(const ValueStats& st) const {
  std::string t;
  if (st.clean) t += " min=" + element_text(st.min) + " max=" + element_text(st.max) + " mean=" + element_text(st.mean);
  if (st.poison) t += " poison: " + std::to_string(st.poison) + " of " + std::to_string(st.count) + " elements";
  else t += " no poison";
  return t;
}

Act Session::command_loop() {
  while (true) {
    std::optional<std::string> read = read_command();
    if (!read) {
      out_ << (o_.prompt && !o_.editor ? "\n" : "") << "end of input: quitting\n";
      return Act::Quit;
    }
    std::string line = *read;
    size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    line = b == std::string::npos ? "" : line.substr(b, e - b + 1);
    if (line.empty() && o_.prompt) line = repeat_;  // Enter repeats a motion (as gdb does)
    if (line.empty() || line[0] == '#') continue;
    if (o_.echo) out_ << "(ow) " << printable(line) << "\n";
    std::string cmd = line.substr(0, line.find_first_of(" \t"));
    repeat_ = is_motion(cmd) ? line : "";
    Act a = Act::Stay;
    try {
      a = dispatch(line);
    } catch (const InternalError&) {
      throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
    } catch (const Error& err) {
      out_ << "error: " << err.what() << "\n";
      ++errors_;
    }
    if (a == Act::Resume) interrupted = 0;  // a Ctrl-C typed at the prompt is not for the run
    if (a != Act::Stay) return a;
  }
}

std::optional<std::string> Session::read_command() {
  if (o_.editor) {
    out_.flush();
    return o_.editor->read_line("(ow) ");
  }
  if (o_.prompt) out_ << "(ow) " << std::flush;
  std::string line;
  if (!std::getline(in_, line)) return std::nullopt;
  return line;
}

Act Session::dispatch(const std::string& line) {
  std::istringstream ss(line);
  std::string cmd, arg, extra;
  ss >> cmd >> arg >> extra;
  if (!extra.empty()) throw Error(cmd + ": too many arguments (type help)");
  auto no_arg = [&]() {
    if (!arg.empty()) throw Error(cmd + " takes no argument (type help)");
  };
  if (cmd == "help" || cmd == "h") {
    out_ << kHelp;
    return Act::Stay;
  }
  if (cmd == "quit" || cmd == "q" || cmd == "exit") {
    no_arg();
    return Act::Quit;
  }
  if (is_motion(cmd)) {
    no_arg();
    return motion(cmd);
  }
  if (cmd == "restart") {
    no_arg();
    mode_ = Mode::Continue;
    return Act::Restart;
  }
  if (cmd == "break" || cmd == "b") {
    if (arg.empty()) list_breaks();
    else add_break(arg);
    return Act::Stay;
  }
  if (cmd == "delete" || cmd == "d") {
    delete_break(arg);
    return Act::Stay;
  }
  if (cmd == "print" || cmd == "p") {
    if (arg.empty()) throw Error("print takes %N (a node, numbered as by ow print), %NAME, an output or a buffer name");
    print(arg);
    return Act::Stay;
  }
  if (cmd == "where" || cmd == "bt") {
    if (arg.empty()) where();
    else show_path(find_node("where", arg));
    return Act::Stay;
  }
  if (cmd == "graph") {
    graph(arg.empty() ? UOp() : find_node("graph", arg));
    return Act::Stay;
  }
  throw Error("unknown command '" + printable(cmd) + "' (type help for the list)");
}

Act Session::motion(const std::string& cmd) {
  if (state_ == State::Finished || state_ == State::Failed) {
    out_ << "the evaluation has " << (state_ == State::Finished ? "finished" : "failed") << "; print still works, restart runs it again, quit exits\n";
    return Act::Stay;
  }
  if (cmd == "step" || cmd == "s") mode_ = Mode::Step;
  else if (cmd == "continue" || cmd == "c") mode_ = Mode::Continue;
  else if (cmd == "next" || cmd == "n") {
    mode_ = Mode::Next;
    depth_ = cur_bind_.size();
  } else {
    if (cur_bind_.empty()) {
      out_ << "finish: not inside a loop (no range is bound here); use next or continue\n";
      return Act::Stay;
    }
    mode_ = Mode::Finish;
    depth_ = cur_bind_.size();
  }
  return Act::Resume;
}

UOp Session::find_node(const std::string& cmd, const std::string& arg) {
  if (UOp u = lookup_node(arg)) return u;
  throw Error(cmd + ": no node " + printable(arg) + " (the graph has %0 .. %" + std::to_string(p_.order.size() - 1) +
              " as numbered by ow print FILE, the file's own %names, and the outputs " + join(output_names_) + ")");
}

UOp Session::lookup_node(const std::string& arg) {
  if (arg[0] != '%') {
    auto out = output_nodes_.find(arg);
    return out == output_nodes_.end() ? UOp() : out->second;
  }
  std::string id = arg.substr(1);
  if (all_digits(id) && std::stoul(id) < p_.order.size()) return p_.order[std::stoul(id)];
  auto named = file_nodes_.find(id);
  return named == file_nodes_.end() ? UOp() : named->second;
}

std::vector<std::string> Session::completions(const std::string& line, size_t word_start) {
  std::istringstream ss(line.substr(0, word_start));
  std::vector<std::string> before;
  for (std::string w; ss >> w;) before.push_back(w);
  if (before.empty()) return kCommands;
  if (before.size() > 1) return {};
  const std::string& cmd = before[0];
  std::vector<std::string> words;
  if (cmd == "delete" || cmd == "d") {
    for (const Break& b : breaks_) words.push_back(std::to_string(b.id));
    return words;
  }
  bool brk = cmd == "break" || cmd == "b", prt = cmd == "print" || cmd == "p";
  if (!brk && !prt && cmd != "where" && cmd != "bt" && cmd != "graph") return {};
  for (size_t i = 0; i < p_.order.size(); ++i) words.push_back("%" + std::to_string(i));
  for (auto& [name, u] : file_nodes_) words.push_back("%" + name);
  words.insert(words.end(), output_names_.begin(), output_names_.end());
  if (prt)
    for (auto& [name, u] : buffer_nodes_) words.push_back(name);
  if (brk) {
    for (const std::string& r : range_names_) words.push_back(r + "=");
    words.push_back(o_.lowered ? "divergence" : "poison");
  }
  return words;
}

}  // namespace stepping

int run_stepper(UOp root, interp::BufferMap& buffers, std::istream& in, std::ostream& out, const StepperOptions& opts) {
  InterruptHandler on_ctrl_c(opts.catch_interrupt);
  stepping::Session s(root, buffers, in, out, opts);
  return s.run();
}

}  // namespace ow::cli
