// The one printer of values, numpy-like, used by `ow run`, `ow step`, the text trace and the
// report: nested brackets, columns aligned, the shortest digits that read back to the same
// number (at most `precision` after the point), "..." between edge items of long axes, and
// uninitialized elements shown as `poison`.
#pragma once
#include <cstdint>
#include <string>

#include "interp/value.h"

namespace ow::interp {

struct FormatOptions {
  int precision = 8;         // digits after the point, at most (numpy's default)
  bool full = false;         // print every element, never summarize
  int64_t threshold = 1000;  // summarize values with more elements than this
  int64_t edge_items = 3;    // elements kept at each end of a summarized axis
  int line_width = 75;       // wrap the innermost axis at this many characters
};

// "[[1.  2.5]\n [3.  4. ]]"; a 0-d value is its one element.
std::string format_array(const Value& v, const FormatOptions& o = {});

// "float32 (2, 3)", with ", 2 of 6 elements poison" when some are uninitialized.
std::string format_header(const Value& v);

// text with `indent` before every non-empty line (for arrays printed under a header).
std::string indent_lines(const std::string& text, const std::string& indent);

// One element as format_array would write it alone (shortest round-trip digits).
std::string format_element(double x, DType dtype, int precision = 8);

}  // namespace ow::interp
