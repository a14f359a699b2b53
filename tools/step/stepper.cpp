// ow step: a debugger for graph evaluation (see stepper.h). The interpreter runs in the caller
// of its hooks; the session stops inside on_step and reads commands until one resumes.
#include "stepper.h"
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

ValueStats value_stats(const interp::Value& v) {
  ValueStats s;
  s.count = v.numel();
  if (s.count == 0) return s;
  interp::Value mask;
  bool masked = v.poison != nullptr;
  if (masked) mask = interp::mask_view(v, v.poison);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  bool ordered = false;
  for (int64_t i = 0; i < s.count; ++i) {
    if (masked && interp::get_element(mask, i) != 0) {
      if (s.first_poison < 0) s.first_poison = i;
      ++s.poison;
      continue;
    }
    ++s.clean;
    double x = interp::get_element(v, i);
    sum += x;
    if (x == x) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      ordered = true;
    }
  }
  if (s.clean) {
    double nan = std::numeric_limits<double>::quiet_NaN();
    s.mean = sum / static_cast<double>(s.clean);
    s.min = ordered ? lo : nan;
    s.max = ordered ? hi : nan;
  }
  return s;
}

std::string json_escape(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"') o += "\\\"";
    else if (c == '\\') o += "\\\\";
    else if (c == '\n') o += "\\n";
    else if (c == '\t') o += "\\t";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else o += static_cast<char>(c);
  }
  return o + "\"";
}

std::string json_number(double x) {
  if (std::isnan(x)) return "\"nan\"";
  if (std::isinf(x)) return x > 0 ? "\"inf\"" : "\"-inf\"";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

namespace {

std::string node_name(const Printed& p, UOp u) {
  auto it = p.number.find(u.get());
  return it == p.number.end() ? "?" : "%" + std::to_string(it->second);
}

std::string element_text(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

std::string index_text(const std::vector<int64_t>& shape, int64_t flat) {
  std::string t;
  for (int64_t i : interp::unflatten(shape, flat)) t += (t.empty() ? "" : ", ") + std::to_string(i);
  return "[" + t + "]";
}

}  // namespace

std::string trace_json(const interp::Step& s, const Printed& numbering, uint64_t step) {
  ValueStats st = value_stats(*s.value);
  std::string j = "{\"step\":" + std::to_string(step) + ",\"node\":" + json_escape(node_name(numbering, s.node)) +
                  ",\"op\":" + json_escape(std::string(op_name(s.node->op))) + ",\"dtype\":" + json_escape(to_string(s.value->dtype)) + ",\"shape\":[";
  const auto& shape = s.value->shape();
  for (size_t i = 0; i < shape.size(); ++i) j += (i ? "," : "") + std::to_string(shape[i]);
  j += "],\"bindings\":{";
  for (size_t i = 0; i < s.bindings.size(); ++i) j += (i ? "," : "") + json_escape(range_name(s.bindings[i].first)) + ":" + std::to_string(s.bindings[i].second);
  j += "},\"count\":" + std::to_string(st.count) + ",\"poison\":" + std::to_string(st.poison);
  if (st.clean) j += ",\"min\":" + json_number(st.min) + ",\"max\":" + json_number(st.max) + ",\"mean\":" + json_number(st.mean);
  else j += ",\"min\":null,\"max\":null,\"mean\":null";
  return j + "}";
}

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
enum class Act { Stay, Resume, Restart, Quit };
struct Leave {
  Act act;
};

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

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string join(const std::vector<std::string>& words) {
  std::string all;
  for (const std::string& w : words) all += (all.empty() ? "" : ", ") + w;
  return all.empty() ? "none" : all;
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

class Session {
 public:
  Session(UOp root, interp::BufferMap& buffers, std::istream& in, std::ostream& out, const StepperOptions& o)
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

  int run() {
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

 private:
  enum class Mode { Step, Next, Finish, Continue };
  enum class State { NotStarted, Stopped, Finished, Failed };
  struct Break {
    int id;
    enum Kind { Node, Range, Poison, Divergence } kind;
    const UOpNode* node = nullptr;
    std::string range;
    int64_t value = 0;
    bool held = false;  // Range: the condition held at the previous step (breaks on becoming true)
    std::string text;
  };
  struct Seen {
    interp::Value value;
    std::vector<std::pair<UOp, int64_t>> bindings;
    uint64_t step;
  };
  using Bindings = std::vector<std::pair<UOp, int64_t>>;

  UOp root_;
  interp::BufferMap& buffers_;
  std::istream& in_;
  std::ostream& out_;
  const StepperOptions& o_;
  Printed p_;
  std::map<std::string, UOp> buffer_nodes_, file_nodes_, output_nodes_;
  std::vector<std::string> output_names_;  // in the SINK's order
  std::set<std::string> range_names_;
  size_t kernel_count_ = 0;

  State state_ = State::NotStarted;
  Mode mode_ = Mode::Step;
  size_t depth_ = 0;
  std::vector<Break> breaks_;
  int next_break_ = 1;
  std::vector<UOp> stack_;  // nodes being evaluated (on_enter), outermost first
  std::unordered_map<const UOpNode*, Seen> seen_;
  std::map<std::string, interp::Value> results_;  // the outputs, once the evaluation finished
  UOp cur_;
  Bindings cur_bind_;
  std::vector<UOp> cur_stack_;
  uint64_t steps_ = 0, launches_ = 0;
  bool divergence_checked_ = false;
  int64_t divergent_launch_ = -1;  // 1-based launch number, or -1
  std::string divergence_;
  std::string repeat_;  // the command an empty line repeats (a motion), or ""
  int errors_ = 0;      // commands that failed (a script exits 1 if any did)

  // The outputs' names, as the interpreter gives them (interp::Interpreter::outputs).
  void name_outputs() {
    std::vector<UOp> outs = root_->op == Ops::SINK ? root_->src : std::vector<UOp>{root_};
    for (size_t i = 0; i < outs.size(); ++i) {
      std::string name = output_name(root_, i);
      output_nodes_.emplace(name, outs[i]);
      output_names_.push_back(name);
    }
  }

  // %N is ow print's numbering everywhere (the transcript shows it); say so when the file
  // numbers its nodes differently, since %N typed from the file would then mean another node.
  void note_numbering() {
    if (o_.lowered) return;  // the lowered program is numbered anew anyway
    for (auto& [name, u] : file_nodes_)
      if (all_digits(name) && "%" + name != node_name(p_, u)) {
        out_ << "note: this file numbers its nodes in another order than `ow print`: %N here is ow print's %N, "
                "as this session shows them\n";
        return;
      }
  }

  // ---------- running ----------
  // Evaluates from the current state's start, then reads commands after the end. Returns
  // Restart or Quit.
  Act evaluate() {
    interp::Options opts;
    opts.max_evals = o_.max_steps;
    opts.on_enter = [this](UOp u) { stack_.push_back(u); };
    opts.on_step = [this](const interp::Step& s) { on_step(s); };
    try {
      finished(interp::run(root_, buffers_, opts));
    } catch (const Leave& l) {
      return l.act;
    } catch (const Error& e) {
      state_ = State::Failed;
      out_ << "evaluation failed: " << e.what() << "\n";
    }
    stack_.clear();
    return command_loop();
  }

  void finished(const std::vector<interp::Output>& outs) {
    state_ = State::Finished;
    out_ << "evaluation finished after " << steps_ << " steps" << (o_.lowered ? " (" + std::to_string(launches_) + " kernel launches)" : "") << "\n";
    for (const interp::Output& x : outs) {
      ValueStats st = value_stats(x.value);
      out_ << "  output " << x.name << ": " << to_string(x.value.dtype) << " " << shape_text(x.value.shape()) << stats_text(st) << "\n";
      results_[x.name] = x.value;
    }
  }

  // Back to the start: the inputs as given, nothing evaluated; breakpoints stay.
  void reset() {
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

  // ---------- the hook ----------
  void on_step(const interp::Step& s) {
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

  // The breakpoints this step hits, as "breakpoint ID: TEXT".
  std::vector<std::string> breaks_hit(const interp::Step& s, bool kernel) {
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

  std::string kernel_name(UOp k) const {
    const ArgTuple* t = k->arg.tuple();
    return t && !t->empty() && t->at(0).is<std::string>() ? t->at(0).as<std::string>() : "";
  }

  std::string stats_text(const ValueStats& st) const {
    std::string t;
    if (st.clean) t += " min=" + element_text(st.min) + " max=" + element_text(st.max) + " mean=" + element_text(st.mean);
    if (st.poison) t += " poison: " + std::to_string(st.poison) + " of " + std::to_string(st.count) + " elements";
    else t += " no poison";
    return t;
  }

  // ---------- the command loop ----------
  // Reads commands until one resumes evaluation, restarts it or ends the session.
  Act command_loop() {
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
      } catch (const Error& err) {
        out_ << "error: " << err.what() << "\n";
        ++errors_;
      }
      if (a == Act::Resume) interrupted = 0;  // a Ctrl-C typed at the prompt is not for the run
      if (a != Act::Stay) return a;
    }
  }

  std::optional<std::string> read_command() {
    if (o_.editor) {
      out_.flush();
      return o_.editor->read_line("(ow) ");
    }
    if (o_.prompt) out_ << "(ow) " << std::flush;
    std::string line;
    if (!std::getline(in_, line)) return std::nullopt;
    return line;
  }

  Act dispatch(const std::string& line) {
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

  // step, next, finish or continue: sets the mode and resumes (or says why not).
  Act motion(const std::string& cmd) {
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

  // ---------- names ----------
  // A node as the user names it: %N (ow print's numbering, which the transcript shows), %NAME
  // (the name the .uop file gave it) or an output name.
  UOp find_node(const std::string& cmd, const std::string& arg) {
    if (UOp u = lookup_node(arg)) return u;
    throw Error(cmd + ": no node " + printable(arg) + " (the graph has %0 .. %" + std::to_string(p_.order.size() - 1) +
                " as numbered by ow print FILE, the file's own %names, and the outputs " + join(output_names_) + ")");
  }

  UOp lookup_node(const std::string& arg) {
    if (arg[0] != '%') {
      auto out = output_nodes_.find(arg);
      return out == output_nodes_.end() ? UOp() : out->second;
    }
    std::string id = arg.substr(1);
    if (all_digits(id) && std::stoul(id) < p_.order.size()) return p_.order[std::stoul(id)];
    auto named = file_nodes_.find(id);
    return named == file_nodes_.end() ? UOp() : named->second;
  }

  // Tab completion (LineEditor): commands, then the names the command's argument takes.
  std::vector<std::string> completions(const std::string& line, size_t word_start) {
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

  // ---------- breakpoints ----------
  void add_break(const std::string& arg) {
    Break b;
    b.id = next_break_;
    b.text = arg;
    if (arg == "poison") {
      if (o_.lowered) throw Error("break poison: not available with --lowered (kernels do not report poison per node); print BUFFER shows a buffer's poison mask");
      b.kind = Break::Poison;
    } else if (arg == "divergence") {
      if (!o_.lowered) throw Error("break divergence: needs --lowered (it compares compiled kernel launches with the interpreter)");
      if (!find_divergence()) return;
      b.kind = Break::Divergence;
      b.text = "divergence at launch " + std::to_string(divergent_launch_);
    } else if (arg.find('=') != std::string::npos) {
      range_break(arg, b);
    } else if (arg[0] == '%' || output_nodes_.count(arg)) {
      UOp u = find_node("break", arg);
      if (o_.lowered && u->op != Ops::KERNEL)
        throw Error("break: with --lowered only KERNEL launches are steps, and " + printable(arg) + " is a " + std::string(op_name(u->op)));
      b.kind = Break::Node;
      b.node = u.get();
      b.text = node_name(p_, u) + " " + std::string(op_name(u->op)) + (arg != node_name(p_, u) ? " (" + arg + ")" : "");
    } else {
      throw Error("break: expected %N, %NAME, an output name, RANGE=VALUE, poison or divergence, got '" + printable(arg) + "'");
    }
    ++next_break_;
    breaks_.push_back(b);
    out_ << "breakpoint " << b.id << ": " << b.text << "\n";
  }

  // break RANGE=VALUE
  void range_break(const std::string& arg, Break& b) {
    size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq), val = arg.substr(eq + 1);
    if (name[0] == '%') {  // a RANGE node by its %N or the file's %NAME
      UOp u = find_node("break", name);
      if (u->op != Ops::RANGE) throw Error("break: " + name + " is " + node_name(p_, u) + " " + std::string(op_name(u->op)) + ", not a RANGE");
      name = range_name(u);
    }
    if (!range_names_.count(name))
      throw Error("break: no range named '" + printable(name) + "' (ranges: " + join({range_names_.begin(), range_names_.end()}) + ")");
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(val, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (val.empty() || used != val.size()) throw Error("break: '" + printable(val) + "' is not an integer (break RANGE=VALUE, e.g. break m1=2)");
    b.kind = Break::Range;
    if (name != arg.substr(0, eq)) b.text = name + "=" + val + " (" + arg + ")";
    b.range = name;
    b.value = v;
    b.held = std::any_of(cur_bind_.begin(), cur_bind_.end(), [&](const auto& x) { return x.second == v && range_name(x.first) == name; });
  }

  void delete_break(const std::string& arg) {
    if (arg.empty()) {
      breaks_.clear();
      out_ << "deleted all breakpoints\n";
      return;
    }
    auto it = std::find_if(breaks_.begin(), breaks_.end(), [&](const Break& b) { return std::to_string(b.id) == arg; });
    if (it == breaks_.end()) throw Error("delete: no breakpoint " + printable(arg) + " (break lists them)");
    out_ << "deleted breakpoint " << arg << "\n";
    breaks_.erase(it);
  }

  // Runs the program once more, checked (tcc against the interpreter, launch by launch), on a
  // copy of the inputs as given. Returns whether a divergence was found (and sets the launch).
  bool find_divergence() {
    if (!divergence_checked_) {
      divergence_checked_ = true;
      interp::BufferMap copy = interp::copy_buffers(o_.initial);
      backend::RunOptions ro;
      ro.backend = "check";
      ro.compiler = "tcc";
      int64_t ok = 0;
      ro.on_launch = [&](UOp, const std::vector<std::pair<std::string, int64_t>>&) { ++ok; };
      try {
        backend::run_program(root_, copy, ro);
        out_ << "break divergence: a checked run found none: all " << ok << " kernel launches store the same bits with tcc as with the interpreter; breakpoint not set\n";
        return false;
      } catch (const Error& e) {
        std::string what = e.what();
        if (what.rfind("check: kernel", 0) != 0) {
          out_ << "break divergence: the checked run failed before any divergence: " << what << "\n";
          return false;
        }
        divergent_launch_ = ok + 1;  // on_launch runs after a launch's comparison succeeded
        divergence_ = what.substr(0, what.find('\n'));
      }
    }
    if (divergent_launch_ < 0) {
      out_ << "break divergence: no divergence (checked already)\n";
      return false;
    }
    if (static_cast<int64_t>(launches_) >= divergent_launch_) out_ << "note: launch " << divergent_launch_ << " has already run (current: " << launches_ << ")\n";
    out_ << "a checked run diverges at kernel launch " << divergent_launch_ << ": " << divergence_ << "\n";
    return true;
  }

  void list_breaks() {
    if (breaks_.empty()) out_ << "no breakpoints\n";
    for (const Break& b : breaks_) out_ << "breakpoint " << b.id << ": " << b.text << "\n";
  }

  // ---------- print ----------
  // The shape a flat buffer is shown in: that of a RESHAPE of it to static dims, if any.
  std::vector<int64_t> display_shape(UOp buf, int64_t size) {
    for (UOp u : p_.order)
      if (u->op == Ops::RESHAPE && !u->src.empty() && u->src[0] == buf)
        if (auto d = static_dims(u->shape.dims)) {
          int64_t n = 1;
          for (int64_t x : *d) n *= x;
          if (n == size) return *d;
        }
    return {size};
  }

  // print NODE|BUFFER: a buffer name first (an output may share it: `out` is both in a scan),
  // then a node.
  void print(const std::string& arg) {
    if (arg[0] != '%' && (buffer_nodes_.count(arg) || buffers_.count(arg))) return print_buffer(arg);
    UOp u = lookup_node(arg);
    if (!u) {
      std::vector<std::string> names;
      for (auto& [n, x] : buffer_nodes_) names.push_back(n);
      throw Error("print: no node or buffer named '" + printable(arg) + "' (nodes: %0 .. %" + std::to_string(p_.order.size() - 1) +
                  " and the file's own %names; outputs: " + join(output_names_) + "; buffers: " + join(names) + ")");
    }
    auto result = results_.find(arg);
    if (arg[0] != '%' && result != results_.end()) {
      out_ << "output " << arg << " (" << node_name(p_, u) << " " << op_name(u->op) << "), as the evaluation returned it:\n";
      return print_value(result->second);
    }
    print_node(u, arg);
  }

  void print_node(UOp u, const std::string& arg) {
    std::string label = arg == node_name(p_, u) ? arg : arg + " (" + node_name(p_, u) + ")";
    auto it = seen_.find(u.get());
    if (it == seen_.end()) {
      out_ << label << " " << op_name(u->op) << " has not been evaluated yet\n  " << p_.line(u) << "\n";
      return;
    }
    out_ << label << " " << op_name(u->op) << ", as evaluated at step " << it->second.step << " with " << interp::bindings_text(it->second.bindings) << ":\n";
    if (u->op == Ops::KERNEL) {
      out_ << "  a kernel launch has no value; print one of its buffers:";
      for (size_t i = 1; i < u->src.size(); ++i)
        if (u->src[i]->op == Ops::BUFFER) out_ << " " << buffer_name(u->src[i]);
      out_ << "\n";
      return;
    }
    print_value(it->second.value);
  }

  void print_buffer(const std::string& arg) {
    auto node = buffer_nodes_.find(arg);
    auto data = buffers_.find(arg);
    if (data == buffers_.end()) {
      out_ << "buffer " << arg << " was not given data: it is uninitialized (all poison) once evaluation starts\n";
      return;
    }
    const interp::BufferData& d = data->second;
    interp::Value v;
    v.dtype = d.dtype;
    v.view = interp::View::contiguous(node == buffer_nodes_.end() ? std::vector<int64_t>{d.data->size} : display_shape(node->second, d.data->size));
    v.data = d.data;
    v.poison = d.poison;
    out_ << "buffer " << arg << " (" << d.data->size << " elements" << (v.shape().size() != 1 ? ", shown as " + shape_text(v.shape()) : "") << "):\n";
    print_value(v);
  }

  void print_value(const interp::Value& v) {
    ValueStats st = value_stats(v);
    out_ << "  " << to_string(v.dtype) << " " << shape_text(v.shape()) << ", " << st.count << " elements";
    if (st.poison) out_ << "; poison: " << st.poison << " elements (uninitialized), first at " << index_text(v.shape(), st.first_poison);
    else out_ << "; no poison";
    out_ << "\n";
    if (st.clean) out_ << "  min=" << element_text(st.min) << " max=" << element_text(st.max) << " mean=" << element_text(st.mean) << (st.poison ? " (over the clean elements)" : "") << "\n";
    out_ << interp::indent_lines(interp::format_array(v, o_.format), "  ") << "\n";
  }

  // ---------- where, graph ----------
  // A shortest path of source edges from `from` down to `to` (both included), or empty.
  std::vector<UOp> path_between(UOp from, UOp to) {
    std::unordered_map<const UOpNode*, UOp> parent;
    std::deque<UOp> q{from};
    parent[from.get()] = UOp();
    while (!q.empty()) {
      UOp u = q.front();
      q.pop_front();
      if (u == to) {
        std::vector<UOp> path;
        for (UOp x = u; x; x = parent[x.get()]) path.push_back(x);
        std::reverse(path.begin(), path.end());
        return path;
      }
      for (UOp s : u->src)
        if (parent.emplace(s.get(), u).second) q.push_back(s);
    }
    return {};
  }

  // Every node from the root down to the last of `chain`, which lists nodes in evaluation
  // order (each a descendant of the one before). The interpreter does not enter every node
  // between two of them (effects such as SINK, GROUP, END are walked, view ops are folded into
  // their readers): those are filled in with a shortest path of source edges.
  std::vector<UOp> full_path(const std::vector<UOp>& chain) {
    std::vector<UOp> path{root_};
    for (UOp u : chain) {
      std::vector<UOp> step = path_between(path.back(), u);
      if (step.empty()) path.push_back(u);  // not below the previous node: keep the stack's order
      else path.insert(path.end(), step.begin() + 1, step.end());
    }
    return path;
  }

  void print_path(const std::vector<UOp>& path) {
    out_ << "path:";
    for (size_t i = 0; i < path.size(); ++i) out_ << (i ? " > " : " ") << node_name(p_, path[i]) << " " << op_name(path[i]->op);
    out_ << "\n";
  }

  void where() {
    if (state_ != State::Stopped) {
      out_ << (state_ == State::NotStarted ? "evaluation not started" : "no current node: the evaluation has ended") << "\n";
      return;
    }
    out_ << "bindings: " << interp::bindings_text(cur_bind_) << "\n";
    std::vector<UOp> chain = cur_stack_;
    chain.push_back(cur_);
    print_path(full_path(chain));
  }

  // where NODE: how the root reaches NODE (a shortest path; the graph may have others).
  void show_path(UOp u) { print_path(full_path({u})); }

  // The node (the current one by default) and its sources 2 levels down.
  void graph(UOp at) {
    if (!at && state_ != State::Stopped) {
      out_ << "graph: no current node (" << (state_ == State::NotStarted ? "evaluation not started" : "the evaluation has ended") << "); graph NODE shows any node\n";
      return;
    }
    if (!at) at = cur_;
    std::set<size_t> keep{p_.number.at(at.get())};
    for (UOp s : at->src) {
      keep.insert(p_.number.at(s.get()));
      for (UOp t : s->src) keep.insert(p_.number.at(t.get()));
    }
    out_ << "# " << node_name(p_, at) << " and its sources 2 levels down (other %N are defined outside this excerpt)\n";
    for (size_t n : keep) {
      UOp u = p_.order[n];
      out_ << p_.line(u);
      std::string note = u->shape.dims.empty() ? "" : "shape " + render_shape(u->shape.dims);
      if (u == cur_ && state_ == State::Stopped) note += (note.empty() ? "" : ", ") + std::string("<- current");
      if (!note.empty()) out_ << "  # " << note;
      out_ << "\n";
    }
  }
};

}  // namespace

int run_stepper(UOp root, interp::BufferMap& buffers, std::istream& in, std::ostream& out, const StepperOptions& opts) {
  InterruptHandler on_ctrl_c(opts.catch_interrupt);
  Session s(root, buffers, in, out, opts);
  return s.run();
}

}  // namespace ow::cli
