// The `arg` (and `tag`) of a UOp: a small tagged value, like a Python literal in tinygrad.
// Doubles compare bitwise so NaN consts intern and round-trip like any other value.
#pragma once
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "uop/ops.h"

namespace ow {

struct Arg;
using ArgTuple = std::vector<Arg>;

struct Arg {
  std::variant<std::monostate, bool, int64_t, double, std::string, Ops, AxisType, ArgTuple> v;

  Arg() = default;
  Arg(bool b) : v(b) {}  // NOLINT: args are written like literals
  Arg(int x) : v(int64_t{x}) {}  // NOLINT
  Arg(int64_t x) : v(x) {}  // NOLINT
  Arg(double x) : v(x) {}  // NOLINT
  Arg(const char* s) : v(std::string(s)) {}  // NOLINT
  Arg(std::string s) : v(std::move(s)) {}  // NOLINT
  Arg(Ops o) : v(o) {}  // NOLINT
  Arg(AxisType a) : v(a) {}  // NOLINT
  Arg(ArgTuple t) : v(std::move(t)) {}  // NOLINT

  bool none() const { return std::holds_alternative<std::monostate>(v); }
  template <class T> bool is() const { return std::holds_alternative<T>(v); }
  template <class T> const T& as() const { return std::get<T>(v); }
  template <class T> const T* get_if() const { return std::get_if<T>(&v); }
  const ArgTuple* tuple() const { return get_if<ArgTuple>(); }

  size_t hash() const;
  bool operator==(const Arg& o) const;
  bool operator!=(const Arg& o) const { return !(*this == o); }
};

// Literal text: 3, -1.5, inf, nan, true, "name", Ops.ADD, AxisType.OUTER, (1, 2), (1,), ().
std::string to_string(const Arg& a);
// Shortest decimal form that reads back to the same double, always with '.', 'e', inf or nan.
std::string format_double(double d);
// The same for a double holding a float32 value: the shortest text that reads back to that float.
std::string format_float32(double d);

}  // namespace ow
