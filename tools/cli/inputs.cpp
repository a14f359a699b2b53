// Input buffers for every `ow` command that runs a graph: --in NAME=PATH.npy checked against the
// graph's buffers (interp/inputs.h holds the rules the C++ API applies too), and seeded random
// data only when asked for (--random-inputs), announced on stderr.
#include <iostream>
#include <map>
#include <set>

#include "cli.h"
#include "uop/shape.h"
#include "interp/dispatch.h"
#include "interp/inputs.h"
#include "interp/npy.h"
#include "tensor/random.h"
#include "uop/error.h"

namespace ow::cli {

std::pair<std::string, std::string> name_eq_path(const std::string& s, const char* opt) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) throw Error(std::string("--") + opt + " takes NAME=PATH.npy, got '" + s + "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

void add_input_options(po::options_description& opts) {
  opts.add_options()("in", po::value<std::vector<std::string>>()->composing(), "give a buffer its data: NAME=PATH.npy (repeatable; PATH - reads stdin)")(
      "random-inputs", po::value<uint64_t>()->implicit_value(1)->value_name("SEED"),
      "seeded random data for every buffer not given with --in (announced on stderr)")(
      "flat-inputs", "accept an .npy of any shape with the buffer's element count (read row-major); by default its shape must be the one the graph first views the buffer as");
}

namespace {

interp::BufferData load_one(const interp::BufferSpec& spec, const std::string& path, bool flat) {
  interp::NpyArray a = path == "-" ? interp::parse_npy(read_file("-"), "<stdin>") : interp::load_npy(path);
  return input_data(spec, a, path == "-" ? "<stdin>" : path, flat, "pass --flat-inputs");
}

template <class T> void fill(interp::Storage& s, Random& rng) {
  T* p = s.as<T>();
  for (int64_t i = 0; i < s.size; ++i) {
    if constexpr (interp::is_float_v<T>) p[i] = static_cast<T>(rng.uniform() * 2.0f - 1.0f);
    else if constexpr (std::is_same_v<T, uint8_t>) p[i] = static_cast<T>(rng.next() & 1);
    else if constexpr (std::is_unsigned_v<T>) p[i] = static_cast<T>(rng.next() % 17);
    else p[i] = static_cast<T>(static_cast<int64_t>(rng.next() % 17) - 8);
  }
}

}  // namespace

interp::BufferData input_data(const interp::BufferSpec& spec, const interp::NpyArray& a, const std::string& where, bool flat, const std::string& flat_hint) {
  int64_t n = a.data->size;
  if (flat ? n != spec.size : a.shape != spec.shape) {
    std::string msg = where + ": shape " + shape_text(a.shape) + " does not match buffer '" + spec.name + "', which the graph views as " + shape_text(spec.shape);
    if (!flat && n == spec.size) msg += " (the same " + std::to_string(n) + " elements: " + flat_hint + " to read them row-major)";
    throw Error(msg);
  }
  return interp::BufferData{spec.dtype, interp::npy_as(a, spec.dtype, where, spec.name), nullptr};
}

Inputs load_inputs(const po::variables_map& vm, UOp graph, const std::string& cmd) {
  std::vector<interp::BufferSpec> specs = interp::graph_buffers(graph);
  Inputs in;
  if (vm.count("in"))
    for (const std::string& arg : vm["in"].as<std::vector<std::string>>()) {
      auto [name, path] = name_eq_path(arg, "in");
      if (in.buffers.count(name)) throw Error("--in " + name + " is given twice");
      in.buffers[name] = load_one(interp::find_buffer(specs, name), path, vm.count("flat-inputs") > 0);
    }
  if (vm.count("random-inputs")) {
    in.seed = vm["random-inputs"].as<uint64_t>();
    in.randomized = fill_random_inputs(graph, in.buffers, *in.seed);
    if (!in.randomized.empty()) {
      std::string list;
      for (const std::string& n : in.randomized) list += (list.empty() ? "" : ", ") + n;
      std::cerr << "ow " << cmd << ": random inputs (seed " << *in.seed << "): " << list << "\n";
    }
  }
  interp::check_inputs(specs, in.buffers, {}, [](const std::string& name) { return "; give it with --in " + name + "=PATH.npy, or pass --random-inputs for seeded random data"; });
  return in;
}

std::vector<std::string> fill_random_inputs(UOp root, interp::BufferMap& buffers, uint64_t seed) {
  Random rng;
  rng.seed(seed);
  std::vector<std::string> filled;
  for (const interp::BufferSpec& spec : interp::graph_buffers(root)) {
    if (buffers.count(spec.name)) continue;
    auto data = std::make_shared<interp::Storage>(spec.dtype, spec.size);
    interp::dispatch(spec.dtype, [&](auto tag) { fill<typename decltype(tag)::type>(*data, rng); });
    buffers[spec.name] = interp::BufferData{spec.dtype, data, nullptr};
    filled.push_back(spec.name);
  }
  return filled;
}

}  // namespace ow::cli
