// Agreement as outerworld means it everywhere (check mode, ow check --passes, benchmarks):
// bit for bit. Same shape and dtype-exact equality of every element, a NaN matches a NaN, and
// +0 and -0 differ (they divide differently). Integers compare in their own type, so int64 and
// uint64 values beyond 2^53 are not rounded through double first.
#pragma once
#include <cstdint>
#include <optional>

#include "interp/value.h"

namespace ow::interp {

struct Difference {
  int64_t index;  // row-major element index; -1: the shapes (or dtypes) differ
  double a, b;    // the two elements, for messages
};

// The first difference, skipping elements where `a` is poison when skip_poison_of_a is set (an
// uninitialized element has no value to agree with).
std::optional<Difference> first_difference(const Value& a, const Value& b, bool skip_poison_of_a = false);

}  // namespace ow::interp
