// --max-memory and --max-steps: the limits a run works within (interp/budget.h holds the memory
// accounting; steps are node evaluations for the interpreter, kernel launches when compiled).
#include <cctype>

#include "cli.h"
#include "interp/budget.h"
#include "uop/error.h"

namespace ow::cli {

namespace {

// "4G", "512M", "1.5GiB", "1000000" (bytes); "0" or "none" for no limit.
uint64_t parse_size(const std::string& text) {
  if (text == "none") return 0;
  double x = 0;
  size_t used = leading_number(text, x);
  std::string unit = text.substr(used);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::pair<const char*, double> units[] = {{"", 1}, {"B", 1}, {"K", 1024.0}, {"KB", 1024.0}, {"KIB", 1024.0}, {"M", 1048576.0}, {"MB", 1048576.0}, {"MIB", 1048576.0},
                                                  {"G", 1073741824.0}, {"GB", 1073741824.0}, {"GIB", 1073741824.0}, {"T", 1099511627776.0}, {"TB", 1099511627776.0}, {"TIB", 1099511627776.0}};
  for (auto& [name, scale] : units)
    if (used > 0 && x >= 0 && unit == name) return static_cast<uint64_t>(x * scale);
  throw Error("--max-memory takes a size such as 512M, 4G or none, got '" + text + "'");
}

}  // namespace

void add_budget_options(po::options_description& opts, bool steps) {
  opts.add_options()("max-memory", po::value<std::string>()->value_name("SIZE"),
                     ("memory all values and buffers may take together, e.g. 512M, 4G, none (default: half of physical memory, " +
                      interp::bytes_text(interp::memory_limit()) + " here)").c_str());
  if (steps)
    opts.add_options()("max-steps", po::value<uint64_t>()->default_value(0)->value_name("N"),
                       "stop after N node evaluations (interpreter) or kernel launches (compiled); 0: no limit");
}

uint64_t apply_budgets(const po::variables_map& vm) {
  if (vm.count("max-memory")) interp::set_memory_limit(parse_size(vm["max-memory"].as<std::string>()));
  return vm.count("max-steps") ? vm["max-steps"].as<uint64_t>() : 0;
}

}  // namespace ow::cli
