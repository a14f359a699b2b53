#include "uop/arg.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>

namespace ow {

namespace {
size_t mix(size_t h, size_t x) { return h ^ (x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

uint64_t bits_of(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[(c >> 4) & 0xf];
      out += hex[c & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}
}  // namespace

size_t Arg::hash() const {
  size_t h = v.index();
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
        } else if constexpr (std::is_same_v<T, double>) {
          h = mix(h, std::hash<uint64_t>()(bits_of(x)));
        } else if constexpr (std::is_same_v<T, Ops> || std::is_same_v<T, AxisType>) {
          h = mix(h, static_cast<size_t>(x));
        } else if constexpr (std::is_same_v<T, ArgTuple>) {
          for (const Arg& a : x) h = mix(h, a.hash());
        } else {
          h = mix(h, std::hash<T>()(x));
        }
      },
      v);
  return h;
}

bool Arg::operator==(const Arg& o) const {
  if (v.index() != o.v.index()) return false;
  if (const double* d = get_if<double>()) return bits_of(*d) == bits_of(o.as<double>());
  return v == o.v;
}

std::string format_double(double d) {
  if (std::isnan(d)) return std::signbit(d) ? "-nan" : "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string format_float32(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(f) || std::isinf(f) || static_cast<double>(f) != d) return format_double(d);
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string to_string(const Arg& a) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) return "None";
        else if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, int64_t>) return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>) return format_double(x);
        else if constexpr (std::is_same_v<T, std::string>) return quote(x);
        else if constexpr (std::is_same_v<T, Ops>) return "Ops." + std::string(op_name(x));
        else if constexpr (std::is_same_v<T, AxisType>) return "AxisType." + std::string(axis_name(x));
        else {
          std::string s = "(";
          for (size_t i = 0; i < x.size(); ++i) s += (i ? ", " : "") + to_string(x[i]);
          return s + (x.size() == 1 ? ",)" : ")");
        }
      },
      a.v);
}

}  // namespace ow
