// One evaluation step as text, shared by `ow run --trace=json` and the debugger (ow step).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "uop/text.h"

namespace ow::cli {

// Statistics of a value. min/max/mean are over the clean (non-poison) elements, ignoring NaN
// for min/max (mean is NaN if a clean element is); `clean == 0` means there are none.
struct ValueStats {
  int64_t count = 0, clean = 0, poison = 0;
  int64_t first_poison = -1;  // flat (row-major) index of the first poisoned element, or -1
  double min = 0, max = 0, mean = 0;
};
ValueStats value_stats(const interp::Value& v);

std::string json_number(double x);  // finite: %.9g; NaN/inf: "nan", "inf", "-inf"

// One line of `ow run --trace=json` (no newline): an object with the keys
//   step (1, 2, ...), node ("%N"), op, dtype, shape (array), bindings (object range -> value,
//   outermost first), count, poison (poisoned elements), min, max, mean
// where min/max/mean are numbers, the strings "nan"/"inf"/"-inf", or null when no element is
// clean (empty values such as a KERNEL launch, or all poison).
std::string trace_json(const interp::Step& s, const Printed& numbering, uint64_t step);

// "%N" of u in a numbering ("?" if it has none); an element as %.9g; a flat index as "[i, j]".
std::string node_name(const Printed& p, UOp u);
std::string element_text(double x);
std::string index_text(const std::vector<int64_t>& shape, int64_t flat);

}  // namespace ow::cli
