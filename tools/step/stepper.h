// The core of `ow step` (a debugger for graph evaluation); it and `ow run --trace=json` (trace.h)
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
