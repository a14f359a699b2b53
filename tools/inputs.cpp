// Input buffers for ow run / check / fuzz: --in NAME=PATH.npy, or seeded random data.
#include <cstring>

#include "cli.h"
#include "interp/npy.h"
#include "tensor/random.h"
#include "uop/error.h"

namespace ow::cli {

std::pair<std::string, std::string> name_eq_path(const std::string& s, const char* opt) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) throw Error(std::string("--") + opt + " takes NAME=PATH.npy, got '" + s + "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

void add_input_options(po::options_description& opts, bool seed) {
  opts.add_options()("in", po::value<std::vector<std::string>>()->composing(), "bind an input buffer: NAME=PATH.npy (repeatable)");
  if (seed) opts.add_options()("seed", po::value<uint64_t>()->default_value(1), "seed for the random data of inputs not given with --in");
}

interp::BufferMap load_inputs(const po::variables_map& vm) {
  interp::BufferMap buffers;
  if (!vm.count("in")) return buffers;
  for (const std::string& s : vm["in"].as<std::vector<std::string>>()) {
    auto [name, path] = name_eq_path(s, "in");
    interp::NpyArray a = interp::load_npy(path);
    buffers[name] = interp::BufferData{a.dtype, a.data, nullptr};
  }
  return buffers;
}

namespace {
template <class T> void fill(interp::Storage& s, Random& rng) {
  T* p = s.as<T>();
  for (int64_t i = 0; i < s.size; ++i) {
    if constexpr (std::is_floating_point_v<T>) p[i] = static_cast<T>(rng.uniform() * 2.0f - 1.0f);
    else if constexpr (std::is_same_v<T, uint8_t>) p[i] = static_cast<T>(rng.next() & 1);
    else p[i] = static_cast<T>(static_cast<int64_t>(rng.next() % 17) - 8);
  }
}
}  // namespace

void fill_random_inputs(UOp root, interp::BufferMap& buffers, uint64_t seed) {
  Random rng;
  rng.seed(seed);
  for (UOp u : toposort(root)) {
    if (u->op != Ops::BUFFER) continue;
    const ArgTuple& t = *u->arg.tuple();
    const std::string& name = t[0].as<std::string>();
    if (buffers.count(name) || name.rfind('_', 0) == 0) continue;
    auto data = std::make_shared<interp::Storage>(u->dtype, t[1].as<int64_t>());
    switch (u->dtype.scalar) {
      case Scalar::Float32: fill<float>(*data, rng); break;
      case Scalar::Float64: fill<double>(*data, rng); break;
      case Scalar::Int32: fill<int32_t>(*data, rng); break;
      case Scalar::Int64: case Scalar::Index: fill<int64_t>(*data, rng); break;
      case Scalar::Bool: fill<uint8_t>(*data, rng); break;
      default: throw Error("no random data for buffer '" + name + "' of dtype " + to_string(u->dtype));
    }
    buffers[name] = interp::BufferData{u->dtype, data, nullptr};
  }
}

std::optional<Difference> first_difference(const interp::Value& a, const interp::Value& b) {
  if (a.shape() != b.shape()) return Difference{-1, 0, 0};
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = interp::get_element(a, i), y = interp::get_element(b, i);
    bool same = (x != x && y != y) || (x == y && std::signbit(x) == std::signbit(y));
    if (!same) return Difference{i, x, y};
  }
  return std::nullopt;
}

}  // namespace ow::cli
