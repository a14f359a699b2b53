// --skip-pass NAME: lower without an optional pass (lower::Pass::optional) or optional step of a
// pass (lower::optional_steps), to see what it buys.
#include "cli.h"
#include "lower/lower.h"

namespace ow::cli {

void add_lowering_options(po::options_description& opts) {
  std::string optional;
  for (const auto& p : lower::passes())
    if (p.optional) optional += (optional.empty() ? "" : ", ") + p.name;
  for (const auto& s : lower::optional_steps()) optional += ", " + s.name + " (in " + s.pass + ")";
  opts.add_options()("skip-pass", po::value<std::vector<std::string>>()->composing()->value_name("PASS"),
                     ("lower without this optimisation (repeatable; optional: " + optional + ")").c_str());
}

std::set<std::string> skipped_passes(const po::variables_map& vm) {
  if (!vm.count("skip-pass")) return {};
  const auto& names = vm["skip-pass"].as<std::vector<std::string>>();
  return {names.begin(), names.end()};
}

}  // namespace ow::cli
