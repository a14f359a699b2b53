// The debugger session of `ow step` (stepper.h), declared for the three files that define it:
// stepper.cpp (the session, the interpreter's hook, the command loop), breakpoints.cpp (break,
// delete, the divergence search) and inspect.cpp (print, where, graph).
#pragma once
#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "interp/interp.h"
#include "stepper.h"
#include "trace.h"
#include "uop/text.h"

namespace ow::cli::stepping {

// What a command does to the evaluation.
enum class Act { Stay, Resume, Restart, Quit };

std::string printable(const std::string& s);               // control characters as \xHH
std::string join(const std::vector<std::string>& words);   // "a, b, c", or "none"

class Session {
 public:
  Session(UOp root, interp::BufferMap& buffers, std::istream& in, std::ostream& out, const StepperOptions& o);

  int run();

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
  void name_outputs();

  // %N is ow print's numbering everywhere (the transcript shows it); say so when the file
  // numbers its nodes differently, since %N typed from the file would then mean another node.
  void note_numbering();

  // ---------- running ----------
  // Evaluates from the current state's start, then reads commands after the end. Returns
  // Restart or Quit.
  Act evaluate();

  void finished(const std::vector<interp::Output>& outs);

  // Back to the start: the inputs as given, nothing evaluated; breakpoints stay.
  void reset();

  // ---------- the hook ----------
  void on_step(const interp::Step& s);

  // The breakpoints this step hits, as "breakpoint ID: TEXT".
  std::vector<std::string> breaks_hit(const interp::Step& s, bool kernel);

  std::string kernel_name(UOp k) const;

  std::string stats_text(const ValueStats& st) const;

  // ---------- the command loop ----------
  // Reads commands until one resumes evaluation, restarts it or ends the session.
  Act command_loop();

  std::optional<std::string> read_command();

  Act dispatch(const std::string& line);

  // step, next, finish or continue: sets the mode and resumes (or says why not).
  Act motion(const std::string& cmd);

  // ---------- names ----------
  // A node as the user names it: %N (ow print's numbering, which the transcript shows), %NAME
  // (the name the .uop file gave it) or an output name.
  UOp find_node(const std::string& cmd, const std::string& arg);

  UOp lookup_node(const std::string& arg);

  // Tab completion (LineEditor): commands, then the names the command's argument takes.
  std::vector<std::string> completions(const std::string& line, size_t word_start);

  // ---------- breakpoints ----------
  void add_break(const std::string& arg);

  // break RANGE=VALUE
  void range_break(const std::string& arg, Break& b);

  void delete_break(const std::string& arg);

  // Runs the program once more, checked (tcc against the interpreter, launch by launch), on a
  // copy of the inputs as given. Returns whether a divergence was found (and sets the launch).
  bool find_divergence();

  void list_breaks();

  // ---------- print ----------
  // The shape a flat buffer is shown in: that of a RESHAPE of it to static dims, if any.
  std::vector<int64_t> display_shape(UOp buf, int64_t size);

  // print NODE|BUFFER: a buffer name first (an output may share it: `out` is both in a scan),
  // then a node.
  void print(const std::string& arg);

  void print_node(UOp u, const std::string& arg);

  void print_buffer(const std::string& arg);

  void print_value(const interp::Value& v);

  // ---------- where, graph ----------
  // A shortest path of source edges from `from` down to `to` (both included), or empty.
  std::vector<UOp> path_between(UOp from, UOp to);

  // Every node from the root down to the last of `chain`, which lists nodes in evaluation
  // order (each a descendant of the one before). The interpreter does not enter every node
  // between two of them (effects such as SINK, GROUP, END are walked, view ops are folded into
  // their readers): those are filled in with a shortest path of source edges.
  std::vector<UOp> full_path(const std::vector<UOp>& chain);

  void print_path(const std::vector<UOp>& path);

  void where();

  // where NODE: how the root reaches NODE (a shortest path; the graph may have others).
  void show_path(UOp u);

  // The node (the current one by default) and its sources 2 levels down.
  void graph(UOp at);
};

}  // namespace ow::cli::stepping
