#include "uop/dtype.h"

#include <array>
#include <charconv>

namespace ow {

namespace {
constexpr std::array<std::string_view, 10> kNames = {"void",    "bool",    "int32",   "int64",  "index",
                                                     "float16", "float32", "float64", "uint32", "uint64"};
}

int DType::itemsize() const {
  if (ptr) return 8;
  switch (scalar) {
    case Scalar::Void: return 0;
    case Scalar::Bool: return 1;
    case Scalar::Float16: return 2;
    case Scalar::Int32: case Scalar::Uint32: case Scalar::Float32: return 4;
    default: return 8;
  }
}

std::string to_string(DType d) {
  std::string s(kNames[static_cast<size_t>(d.scalar)]);
  if (d.ptr) {
    s += '*';
    if (d.size >= 0) s += std::to_string(d.size);
  }
  return s;
}

std::optional<DType> dtype_from_string(std::string_view s) {
  auto star = s.find('*');
  std::string_view base = s.substr(0, star);
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] != base) continue;
    DType d(static_cast<Scalar>(i));
    if (star == std::string_view::npos) return d;
    std::string_view num = s.substr(star + 1);
    if (num.empty()) return d.pointer(-1);
    int64_t n = 0;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
    if (ec != std::errc() || p != num.data() + num.size() || n < 0) return std::nullopt;
    return d.pointer(n);
  }
  return std::nullopt;
}

}  // namespace ow
