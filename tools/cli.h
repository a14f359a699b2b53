// Shared pieces of the `ow` command line: subcommand table, file reading, option parsing
// (tools/cli/command_line.cpp), inputs, printing and budgets (tools/cli/).
#pragma once
#include <boost/program_options.hpp>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "interp/format.h"
#include "interp/inputs.h"
#include "interp/compare.h"
#include "interp/interp.h"
#include "interp/npy.h"
#include "uop/text.h"

namespace ow::cli {

namespace po = boost::program_options;

using Args = std::vector<std::string>;  // arguments after the subcommand name

struct Command {
  std::string name;
  std::string summary;
  std::function<int(const Args&)> run;
};

// Parses args against the options (with positional names) and handles --help.
// Returns false when help was printed (the command should exit 0).
bool parse_options(const std::string& cmd, const std::string& usage, po::options_description& opts,
                   const po::positional_options_description& pos, const Args& args, po::variables_map& vm);

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& data);

// "a,,b" -> {"a", "b"}: the non-empty comma-separated items of an option's value.
std::vector<std::string> split_commas(const std::string& s);

// The number `text` starts with, in std::stod's (T floating) or std::stoll's syntax, into
// `value`; returns how many characters it took: 0 for none, or one out of range.
template <class T> size_t leading_number(const std::string& text, T& value) {
  size_t used = 0;
  try {
    if constexpr (std::is_floating_point_v<T>) value = std::stod(text, &used);
    else value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  return used;
}

// Reads, parses and verifies a .uop file; throws ParseError at the first problem.
ParsedGraph load_graph(const std::string& path, bool strict = false);
// The text and path load_graph last read ("" when none): ow.cpp saves it for a bug report.
struct GraphSource {
  std::string text, path;
};
const GraphSource& last_graph();

// Inputs (tools/cli/inputs.cpp): --in NAME=PATH.npy, --flat-inputs, --random-inputs[=SEED].
std::pair<std::string, std::string> name_eq_path(const std::string& s, const char* opt);
void add_input_options(po::options_description& opts);
struct Inputs {
  interp::BufferMap buffers;
  std::vector<std::string> randomized;  // buffers given seeded random data (--random-inputs)
  std::optional<uint64_t> seed;
};
// The buffers for a run of graph, checked against it (interp/inputs.h): unknown or repeated
// names, shapes, dtypes (converted only where exact) and missing inputs are errors. Random data
// is announced on stderr as "ow CMD: random inputs (seed S): a, b".
Inputs load_inputs(const po::variables_map& vm, UOp graph, const std::string& cmd);
// One input's data from a parsed .npy (`where` names it in messages): its shape must be the
// buffer's (graph_buffers), or only its element count when flat; the dtype converts only where
// exact. A shape with the right count says how to pass it flat: "... elements: <flat_hint> to
// read them row-major)".
interp::BufferData input_data(const interp::BufferSpec& spec, const interp::NpyArray& a, const std::string& where, bool flat, const std::string& flat_hint);
// Seeded random data for every non-temporary buffer of root not in `buffers`; returns their names.
std::vector<std::string> fill_random_inputs(UOp root, interp::BufferMap& buffers, uint64_t seed);
// Printing values (tools/cli/printing.cpp): --full, --precision; "NAME: float32 (2, 3)\n[[...]]\n"
// with every line of the array after `indent`.
void add_print_options(po::options_description& opts);
interp::FormatOptions print_options(const po::variables_map& vm);
std::string value_block(const std::string& name, const interp::Value& v, const interp::FormatOptions& o, const std::string& indent = "");

// Budgets (tools/cli/budgets.cpp): --max-memory SIZE, --max-steps N. apply_budgets sets the memory
// limit and returns the step limit (0: none).
void add_budget_options(po::options_description& opts, bool steps = true);
uint64_t apply_budgets(const po::variables_map& vm);

// Lowering (tools/cli/lowering.cpp): --skip-pass PASS, checked by lower::lower itself.
void add_lowering_options(po::options_description& opts);
std::set<std::string> skipped_passes(const po::variables_map& vm);

using interp::copy_buffers;  // a deep copy (src/interp)

using interp::Difference;  // bit-for-bit agreement (src/interp/compare.h)
using interp::first_difference;

std::vector<Command> graph_commands();  // print, verify, dot
std::vector<Command> run_commands();    // run
std::vector<Command> case_commands();   // cases
std::vector<Command> bench_commands();  // bench
std::vector<Command> lower_commands();  // lower, check
std::vector<Command> fuzz_commands();   // fuzz
std::vector<Command> explain_commands();  // explain (tools/cmd_explain.cpp)
std::vector<Command> report_commands();   // report (tools/cmd_report.cpp)
std::vector<Command> step_commands();   // step (tools/cmd_step.cpp)
std::vector<Command> grad_commands();   // grad (tools/cmd_grad.cpp)
std::vector<Command> serve_commands();  // serve (tools/cmd_serve.cpp)

}  // namespace ow::cli
