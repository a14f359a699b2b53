// The core of `ow step` (a debugger for graph evaluation) and of `ow run --trace=json`: both
// sit on the interpreter's hooks (interp::Options::on_step after every node evaluation and every
// KERNEL launch, on_enter before), so evaluation runs exactly as in `ow run`; the debugger reads
// its commands inside the hook. Nodes are shown as %N, numbered as by `ow print` (number_graph);
// commands also take the file's own %NAME and output names.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <unordered_map>
#include <vector>

#include "interp/format.h"
#include "interp/interp.h"
#include "uop/text.h"

namespace ow::cli {

// Statistics of a value. min/max/mean are over the clean (non-poison) elements, ignoring NaN
// for min/max (mean is NaN if a clean element is); `clean == 0` means there are none.
struct ValueStats {
  int64_t count = 0, clean = 0, poison = 0;
  int64_t first_poison = -1;  // flat (row-major) index of the first poisoned element, or -1
  double min = 0, max = 0, mean = 0;
};
ValueStats value_stats(const interp::Value& v);

std::string json_escape(const std::string& s);          // a JSON string literal, quotes included
std::string json_number(double x);                      // finite: %.9g; NaN/inf: "nan", "inf", "-inf"

// One line of `ow run --trace=json` (no newline): an object with the keys
//   step (1, 2, ...), node ("%N"), op, dtype, shape (array), bindings (object range -> value,
//   outermost first), count, poison (poisoned elements), min, max, mean
// where min/max/mean are numbers, the strings "nan"/"inf"/"-inf", or null when no element is
// clean (empty values such as a KERNEL launch, or all poison).
std::string trace_json(const interp::Step& s, const Printed& numbering, uint64_t step);

class LineEditor;

struct StepperOptions {
  std::string file;      // for the banner
  bool lowered = false;  // root is a lowered program: steps are KERNEL launches
  // A scripted session (stdin is not a terminal): echo each command read, so the transcript
  // reads as one, and exit 1 at the end if a command failed (unknown command, bad name, ...).
  bool echo = false;
  bool prompt = false;   // interactive: print "(ow) " before reading; Enter repeats a motion
  LineEditor* editor = nullptr;  // interactive at a terminal: read commands through it (else `in`)
  bool catch_interrupt = false;  // Ctrl-C (SIGINT) stops a running evaluation at its next step
  interp::BufferMap initial;  // the inputs as given: `restart` and `break divergence` start from them
  std::unordered_map<const UOpNode*, std::string> file_names;  // the .uop file's names (no %), for %NAME
  interp::FormatOptions format;  // how `print` writes values (--full, --precision)
  uint64_t max_steps = 0;        // node evaluations allowed (--max-steps; 0: no limit)
};

// Runs a debugging session over root: commands from `in` (or opts.editor), the transcript on
// `out`. Returns the exit code: 0, or 1 for a script (echo) in which a command failed.
int run_stepper(UOp root, interp::BufferMap& buffers, std::istream& in, std::ostream& out, const StepperOptions& opts);

}  // namespace ow::cli
