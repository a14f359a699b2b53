// How `ow` commands print values: interp/format.h's numpy-like printer, with --full and
// --precision, under a "NAME: dtype (shape)" header.
#include "cli.h"
#include "interp/format.h"

namespace ow::cli {

void add_print_options(po::options_description& opts) {
  opts.add_options()("full", "print every element (default: values over 1000 elements show 3 at each end of each axis, as numpy)")(
      "precision", po::value<int>()->default_value(8), "digits after the point, at most (as numpy's precision)");
}

interp::FormatOptions print_options(const po::variables_map& vm) {
  interp::FormatOptions o;
  o.full = vm.count("full") > 0;
  if (vm.count("precision")) o.precision = vm["precision"].as<int>();
  if (o.precision < 0 || o.precision > 17) throw Error("--precision must be 0..17, got " + std::to_string(o.precision));
  return o;
}

std::string value_block(const std::string& name, const interp::Value& v, const interp::FormatOptions& o, const std::string& indent) {
  return name + ": " + interp::format_header(v) + "\n" + interp::indent_lines(interp::format_array(v, o), indent) + "\n";
}

}  // namespace ow::cli
