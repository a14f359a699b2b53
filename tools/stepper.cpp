// ow step: a debugger for graph evaluation (see stepper.h). The interpreter runs in the caller
// of its hooks; the session stops inside on_step and reads commands until one resumes.
#include "stepper.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "backends/program.h"
#include "interp/value.h"
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

std::string dims_text(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
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

struct Quit {};  // thrown from inside the hook to abandon the evaluation (not an ow::Error)

const char* kHelp =
    "commands (a script on stdin works the same; empty lines and # comments are skipped):\n"
    "  step, s             run to the next evaluated node, into range loops and kernels\n"
    "  next, n             run to the next node at this nesting level (as many ranges bound or fewer)\n"
    "  finish              run until the current loop is left (fewer ranges bound)\n"
    "  continue, c         run to the next breakpoint or the end\n"
    "  break %N            stop after node %N (numbered as by `ow print`) is evaluated\n"
    "  break RANGE=VALUE   stop when range RANGE becomes bound to VALUE (break m1=2)\n"
    "  break poison        stop at every evaluated node whose value contains poison\n"
    "  break divergence    (--lowered) stop at the first kernel launch whose stored buffers differ\n"
    "                      between the compiled tcc kernel and the interpreter\n"
    "  break               list breakpoints;  delete [ID]  remove one or all\n"
    "  print %N|BUFFER     values, shape, dtype and poison summary (p)\n"
    "  where               range bindings and the path from the root to the current node (bt)\n"
    "  graph               the current node and its sources 2 levels down, as .uop lines\n"
    "  help                this list\n"
    "  quit, q             stop and exit (status 0)\n";

class Session {
 public:
  Session(UOp root, interp::BufferMap& buffers, std::istream& in, std::ostream& out, const StepperOptions& o)
      : root_(root), buffers_(buffers), in_(in), out_(out), o_(o), p_(number_graph(root)) {
    for (UOp u : p_.order) {
      if (u->op == Ops::BUFFER) buffer_nodes_.emplace(u->arg.tuple()->at(0).as<std::string>(), u);
      if (u->op == Ops::RANGE) range_names_.insert(range_name(u));
      if (u->op == Ops::KERNEL) ++kernel_count_;
    }
  }

  int run() {
    out_ << "ow step: " << (o_.file.empty() ? "<graph>" : o_.file) << ": " << p_.order.size() << " nodes"
         << (o_.lowered ? " (lowered: " + std::to_string(kernel_count_) + " kernels; kernel launches are the steps)" : "")
         << "; evaluation not started (type help for commands)\n";
    if (!command_loop()) return 0;
    interp::Options opts;
    opts.on_enter = [this](UOp u) { stack_.push_back(u); };
    opts.on_step = [this](const interp::Step& s) { on_step(s); };
    try {
      std::vector<interp::Output> outs = interp::run(root_, buffers_, opts);
      state_ = State::Finished;
      out_ << "evaluation finished after " << steps_ << " steps" << (o_.lowered ? " (" + std::to_string(launches_) + " kernel launches)" : "") << "\n";
      for (const interp::Output& x : outs) {
        ValueStats st = value_stats(x.value);
        out_ << "  output " << x.name << ": " << to_string(x.value.dtype) << " " << dims_text(x.value.shape()) << stats_text(st) << "\n";
      }
    } catch (const Quit&) {
      return 0;
    } catch (const Error& e) {
      state_ = State::Failed;
      out_ << "evaluation failed: " << e.what() << "\n";
    }
    stack_.clear();
    if (!command_loop()) return 0;
    return 0;
  }

 private:
  enum class Mode { Step, Next, Finish, Continue };
  enum class State { NotStarted, Stopped, Finished, Failed };
  enum class Act { Stay, Resume, Quit };
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
  std::map<std::string, UOp> buffer_nodes_;
  std::set<std::string> range_names_;
  size_t kernel_count_ = 0;

  State state_ = State::NotStarted;
  Mode mode_ = Mode::Step;
  size_t depth_ = 0;
  std::vector<Break> breaks_;
  int next_break_ = 1;
  std::vector<UOp> stack_;  // nodes being evaluated (on_enter), outermost first
  std::unordered_map<const UOpNode*, Seen> seen_;
  UOp cur_;
  Bindings cur_bind_;
  std::vector<UOp> cur_stack_;
  uint64_t steps_ = 0, launches_ = 0;
  bool divergence_checked_ = false;
  int64_t divergent_launch_ = -1;  // 1-based launch number, or -1
  std::string divergence_;
  std::string last_command_;

  // ---------- the hook ----------
  void on_step(const interp::Step& s) {
    if (!stack_.empty() && stack_.back() == s.node) stack_.pop_back();
    ++steps_;
    bool kernel = s.node->op == Ops::KERNEL;
    if (kernel) ++launches_;
    seen_[s.node.get()] = Seen{*s.value, s.bindings, steps_};
    if (o_.lowered && !kernel) return;  // lowered: host-side index math is not a step
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
    bool stop = !hits.empty();
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
    out_ << "stopped after " << node_name(p_, s.node) << " " << op_name(s.node->op);
    if (kernel) out_ << " " << kernel_name(s.node) << " (launch " << launches_ << ")";
    else out_ << " " << to_string(s.value->dtype) << " " << dims_text(s.value->shape());
    out_ << " with " << interp::bindings_text(s.bindings) << " (step " << steps_ << ")";
    for (const std::string& h : hits) out_ << " [" << h << "]";
    out_ << "\n  " << p_.line(s.node) << "\n";
    if (!kernel) out_ << "  value:" << stats_text(value_stats(*s.value)) << "\n";
    for (const Break& b : breaks_)
      if (b.kind == Break::Divergence && kernel && static_cast<int64_t>(launches_) == divergent_launch_) out_ << "  " << divergence_ << "\n";
    if (!command_loop()) throw Quit{};
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
  // Reads commands until one resumes evaluation (true) or the session ends (false).
  bool command_loop() {
    while (true) {
      if (o_.prompt) out_ << "(ow) " << std::flush;
      std::string line;
      if (!std::getline(in_, line)) {
        out_ << (o_.prompt ? "\n" : "") << "end of input: quitting\n";
        return false;
      }
      size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
      line = b == std::string::npos ? "" : line.substr(b, e - b + 1);
      if (line.empty() && o_.prompt) line = last_command_;  // an empty line repeats (gdb)
      if (line.empty() || line[0] == '#') continue;
      if (o_.echo) out_ << "(ow) " << line << "\n";
      last_command_ = line;
      Act a = Act::Stay;
      try {
        a = dispatch(line);
      } catch (const Error& err) {
        out_ << "error: " << err.what() << "\n";
      }
      if (a == Act::Quit) return false;
      if (a == Act::Resume) return true;
    }
  }

  Act dispatch(const std::string& line) {
    std::istringstream ss(line);
    std::string cmd, arg, extra;
    ss >> cmd >> arg >> extra;
    if (!extra.empty()) {
      out_ << cmd << ": too many arguments (type help)\n";
      return Act::Stay;
    }
    auto no_arg = [&]() {
      if (arg.empty()) return true;
      out_ << cmd << " takes no argument (type help)\n";
      return false;
    };
    if (cmd == "help" || cmd == "h") {
      out_ << kHelp;
      return Act::Stay;
    }
    if (cmd == "quit" || cmd == "q" || cmd == "exit") return no_arg() ? Act::Quit : Act::Stay;
    if (cmd == "step" || cmd == "s" || cmd == "next" || cmd == "n" || cmd == "finish" || cmd == "continue" || cmd == "c") {
      if (!no_arg()) return Act::Stay;
      if (state_ == State::Finished || state_ == State::Failed) {
        out_ << "the evaluation has " << (state_ == State::Finished ? "finished" : "failed") << "; print still works, quit exits\n";
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
    if (cmd == "break" || cmd == "b") {
      if (arg.empty()) list_breaks();
      else add_break(arg);
      return Act::Stay;
    }
    if (cmd == "delete" || cmd == "d") {
      if (arg.empty()) {
        breaks_.clear();
        out_ << "deleted all breakpoints\n";
      } else {
        auto it = std::find_if(breaks_.begin(), breaks_.end(), [&](const Break& b) { return std::to_string(b.id) == arg; });
        if (it == breaks_.end()) out_ << "delete: no breakpoint " << arg << " (break lists them)\n";
        else {
          out_ << "deleted breakpoint " << arg << "\n";
          breaks_.erase(it);
        }
      }
      return Act::Stay;
    }
    if (cmd == "print" || cmd == "p") {
      if (arg.empty()) out_ << "print takes %N (a node, numbered as by ow print) or a buffer name\n";
      else print(arg);
      return Act::Stay;
    }
    if (cmd == "where" || cmd == "bt") {
      if (no_arg()) where();
      return Act::Stay;
    }
    if (cmd == "graph") {
      if (no_arg()) graph();
      return Act::Stay;
    }
    out_ << "unknown command '" << cmd << "' (type help for the list)\n";
    return Act::Stay;
  }

  // %N -> node, or null after printing why not.
  UOp parse_node(const std::string& cmd, const std::string& arg) {
    std::string digits = arg.substr(1);
    bool ok = !digits.empty() && digits.size() < 10 && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    size_t n = ok ? std::stoul(digits) : 0;
    if (!ok || n >= p_.order.size()) {
      out_ << cmd << ": no node " << arg << " (the graph has %0 .. %" << p_.order.size() - 1 << "; ow print FILE numbers them)\n";
      return UOp();
    }
    return p_.order[n];
  }

  void add_break(const std::string& arg) {
    Break b;
    b.id = next_break_;
    b.text = arg;
    if (arg[0] == '%') {
      UOp u = parse_node("break", arg);
      if (!u) return;
      if (o_.lowered && u->op != Ops::KERNEL) {
        out_ << "break: with --lowered only KERNEL launches are steps, and " << arg << " is a " << op_name(u->op) << "\n";
        return;
      }
      b.kind = Break::Node;
      b.node = u.get();
      b.text = arg + " " + std::string(op_name(u->op));
    } else if (arg == "poison") {
      if (o_.lowered) {
        out_ << "break poison: not available with --lowered (kernels do not report poison per node); print BUFFER shows a buffer's poison mask\n";
        return;
      }
      b.kind = Break::Poison;
    } else if (arg == "divergence") {
      if (!o_.lowered) {
        out_ << "break divergence: needs --lowered (it compares compiled kernel launches with the interpreter)\n";
        return;
      }
      if (!find_divergence()) return;
      b.kind = Break::Divergence;
      b.text = "divergence at launch " + std::to_string(divergent_launch_);
    } else if (size_t eq = arg.find('='); eq != std::string::npos) {
      std::string name = arg.substr(0, eq), val = arg.substr(eq + 1);
      if (!range_names_.count(name)) {
        std::string all;
        for (const std::string& r : range_names_) all += (all.empty() ? "" : ", ") + r;
        out_ << "break: no range named '" << name << "' (ranges: " << (all.empty() ? "none" : all) << ")\n";
        return;
      }
      size_t used = 0;
      int64_t v = 0;
      try {
        v = std::stoll(val, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (val.empty() || used != val.size()) {
        out_ << "break: '" << val << "' is not an integer (break RANGE=VALUE, e.g. break m1=2)\n";
        return;
      }
      b.kind = Break::Range;
      b.range = name;
      b.value = v;
      b.held = std::any_of(cur_bind_.begin(), cur_bind_.end(), [&](const auto& x) { return x.second == v && range_name(x.first) == name; });
    } else {
      out_ << "break: expected %N, RANGE=VALUE, poison or divergence, got '" << arg << "'\n";
      return;
    }
    ++next_break_;
    breaks_.push_back(b);
    out_ << "breakpoint " << b.id << ": " << b.text << "\n";
  }

  // Runs the program once more, checked (tcc against the interpreter, launch by launch), on a
  // copy of the inputs as given. Returns whether a divergence was found (and sets the launch).
  bool find_divergence() {
    if (!divergence_checked_) {
      divergence_checked_ = true;
      interp::BufferMap copy;
      for (auto& [name, d] : o_.initial) {
        interp::BufferData c = d;
        c.data = std::make_shared<interp::Storage>(*d.data);
        if (d.poison) c.poison = std::make_shared<interp::Storage>(*d.poison);
        copy[name] = c;
      }
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

  void print(const std::string& arg) {
    if (arg[0] == '%') {
      UOp u = parse_node("print", arg);
      if (!u) return;
      auto it = seen_.find(u.get());
      if (it == seen_.end()) {
        out_ << arg << " " << op_name(u->op) << " has not been evaluated yet\n  " << p_.line(u) << "\n";
        return;
      }
      out_ << arg << " " << op_name(u->op) << ", as evaluated at step " << it->second.step << " with " << interp::bindings_text(it->second.bindings) << ":\n";
      if (u->op == Ops::KERNEL) {
        out_ << "  a kernel launch has no value; print one of its buffers:";
        for (size_t i = 1; i < u->src.size(); ++i)
          if (u->src[i]->op == Ops::BUFFER) out_ << " " << u->src[i]->arg.tuple()->at(0).as<std::string>();
        out_ << "\n";
        return;
      }
      print_value(it->second.value);
      return;
    }
    auto node = buffer_nodes_.find(arg);
    auto data = buffers_.find(arg);
    if (node == buffer_nodes_.end() && data == buffers_.end()) {
      std::string all;
      for (auto& [n, u] : buffer_nodes_) all += (all.empty() ? "" : ", ") + n;
      out_ << "print: no node or buffer named '" << arg << "' (nodes: %0 .. %" << p_.order.size() - 1 << "; buffers: " << (all.empty() ? "none" : all) << ")\n";
      return;
    }
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
    out_ << "buffer " << arg << " (" << d.data->size << " elements" << (v.shape().size() != 1 ? ", shown as " + dims_text(v.shape()) : "") << "):\n";
    print_value(v);
  }

  void print_value(const interp::Value& v) {
    ValueStats st = value_stats(v);
    out_ << "  " << to_string(v.dtype) << " " << dims_text(v.shape()) << ", " << st.count << " elements";
    if (st.poison) out_ << "; poison: " << st.poison << " elements (uninitialized), first at " << index_text(v.shape(), st.first_poison);
    else out_ << "; no poison";
    out_ << "\n";
    if (st.clean) out_ << "  min=" << element_text(st.min) << " max=" << element_text(st.max) << " mean=" << element_text(st.mean) << (st.poison ? " (over the clean elements)" : "") << "\n";
    interp::Value mask;
    if (v.poison) mask = interp::mask_view(v, v.poison);
    const auto& shape = v.shape();
    int64_t last = shape.empty() ? 1 : std::max<int64_t>(shape.back(), 1), limit = 200;
    for (int64_t start = 0; start < st.count; start += std::min<int64_t>(last, 10)) {
      if (start >= limit) {
        out_ << "  ... (" << st.count - start << " more elements)\n";
        break;
      }
      int64_t in_row = start % last, n = std::min<int64_t>({10, last - in_row, st.count - start});
      std::vector<int64_t> idx = interp::unflatten(shape, start);
      std::string label;
      for (size_t i = 0; i + 1 < idx.size(); ++i) label += std::to_string(idx[i]) + ", ";
      if (!shape.empty()) label += std::to_string(in_row) + ":" + std::to_string(in_row + n);
      out_ << "  [" << label << "]";
      for (int64_t i = start; i < start + n; ++i)
        out_ << " " << (v.poison && interp::get_element(mask, i) != 0 ? "poison" : element_text(interp::get_element(v, i)));
      out_ << "\n";
    }
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

  void where() {
    if (state_ != State::Stopped) {
      out_ << (state_ == State::NotStarted ? "evaluation not started" : "no current node: the evaluation has ended") << "\n";
      return;
    }
    out_ << "bindings: " << interp::bindings_text(cur_bind_) << "\n";
    // The evaluation stack, joined to the root by a shortest path where the interpreter walked
    // effects (SINK, GROUP, END) without evaluating them as values.
    std::vector<UOp> chain = cur_stack_;
    chain.push_back(cur_);
    std::vector<UOp> path = path_between(root_, chain.front());
    if (path.empty()) path.push_back(chain.front());
    path.insert(path.end(), chain.begin() + 1, chain.end());
    out_ << "path:";
    for (size_t i = 0; i < path.size(); ++i) out_ << (i ? " > " : " ") << node_name(p_, path[i]) << " " << op_name(path[i]->op);
    out_ << "\n";
  }

  void graph() {
    if (state_ != State::Stopped) {
      out_ << "graph: no current node (" << (state_ == State::NotStarted ? "evaluation not started" : "the evaluation has ended") << ")\n";
      return;
    }
    std::set<size_t> keep{p_.number.at(cur_.get())};
    for (UOp s : cur_->src) {
      keep.insert(p_.number.at(s.get()));
      for (UOp t : s->src) keep.insert(p_.number.at(t.get()));
    }
    out_ << "# " << node_name(p_, cur_) << " and its sources 2 levels down (other %N are defined outside this excerpt)\n";
    for (size_t n : keep) {
      UOp u = p_.order[n];
      out_ << p_.line(u);
      std::string note = u->shape.dims.empty() ? "" : "shape " + render_shape(u->shape.dims);
      if (u == cur_) note += (note.empty() ? "" : ", ") + std::string("<- current");
      if (!note.empty()) out_ << "  # " << note;
      out_ << "\n";
    }
  }
};

}  // namespace

int run_stepper(UOp root, interp::BufferMap& buffers, std::istream& in, std::ostream& out, const StepperOptions& opts) {
  Session s(root, buffers, in, out, opts);
  return s.run();
}

}  // namespace ow::cli
