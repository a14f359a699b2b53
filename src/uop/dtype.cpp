#include "uop/dtype.h"

#include <array>
#include <charconv>
#include <limits>

namespace ow {

namespace {
// Indexed by Scalar.
constexpr std::array<std::string_view, 17> kNames = {
    "void", "bool", "int32", "int64", "index", "float16", "float32", "float64", "uint32", "uint64",
    "int8", "uint8", "int16", "uint16", "bfloat16", "fp8e4m3", "fp8e5m2"};
}

int DType::itemsize() const {
  if (ptr) return 8;
  switch (scalar) {
    case Scalar::Void: return 0;
    case Scalar::Bool: case Scalar::Int8: case Scalar::Uint8: case Scalar::Fp8e4m3: case Scalar::Fp8e5m2: return 1;
    case Scalar::Int16: case Scalar::Uint16: case Scalar::Float16: case Scalar::BFloat16: return 2;
    case Scalar::Int32: case Scalar::Uint32: case Scalar::Float32: return 4;
    default: return 8;
  }
}

std::pair<int64_t, int64_t> int_limits(DType d) {
  if (d.is_bool()) return {0, 1};
  if (d.is_unsigned() && d.itemsize() < 8) return {0, (int64_t{1} << (8 * d.itemsize())) - 1};
  if (d.is_signed_int() && d.itemsize() < 8) {
    int64_t half = int64_t{1} << (8 * d.itemsize() - 1);
    return {-half, half - 1};
  }
  return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
}

int64_t wrap_int(DType d, uint64_t bits) {
  if (d.is_bool()) return bits != 0;
  int n = 8 * d.itemsize();
  if (n >= 64) return static_cast<int64_t>(bits);
  bits &= (uint64_t{1} << n) - 1;
  if (d.is_signed_int() && (bits >> (n - 1)) != 0) return static_cast<int64_t>(bits) - (int64_t{1} << n);
  return static_cast<int64_t>(bits);
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

std::string dtype_names_text() {
  std::string s = "void, ";
  for (DType d : kValueDTypes) s += to_string(d) + ", ";
  return s + "index, or a pointer like float32*10";
}

}  // namespace ow
