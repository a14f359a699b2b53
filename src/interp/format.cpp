// numpy-like printing of values (interp/format.h). Floats follow numpy's default rules: one
// notation for the whole array (scientific when a nonzero magnitude is >= 1e8 or < 1e-4, or the
// largest is over 1000x the smallest), each element with the fewest digits that read back to the
// same number in its own dtype, integer parts right-aligned, fractions padded with spaces.
#include "interp/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "interp/dispatch.h"
#include "uop/floats.h"
#include "uop/shape.h"

namespace ow::interp {

namespace {

// Does text read back to x in the value's dtype? float32 values compare as float32, so 0.1f
// prints as 0.1 rather than 0.100000001; the narrow floats likewise in their own format (float16
// as numpy prints it; bfloat16 and the fp8s by the same rule).
bool reads_back(const char* text, double x, DType dtype) {
  return fp::round_to(dtype, std::strtod(text, nullptr)) == x;
}

// The digits after the point of the shortest printf rendering of x (conversion 'f' or 'e')
// that reads back; past `precision` digits, x rounded to `precision` without trailing zeros.
int shortest_digits(double x, char conv, int precision, DType dtype) {
  char fmt[8] = {'%', '.', '*', conv, 0}, buf[400];
  for (int k = 0; k < precision; ++k) {
    std::snprintf(buf, sizeof buf, fmt, k, x);
    if (reads_back(buf, x, dtype)) return k;
  }
  std::snprintf(buf, sizeof buf, fmt, precision, x);
  std::string t = buf;
  size_t end = conv == 'e' ? t.find('e') : t.size(), zeros = 0;
  while (zeros < static_cast<size_t>(precision) && t[end - 1 - zeros] == '0') ++zeros;
  return precision - static_cast<int>(zeros);
}

std::string printf_text(double x, char conv, int digits) {
  char fmt[8] = {'%', '.', '*', conv, 0}, buf[400];
  std::snprintf(buf, sizeof buf, fmt, digits, x);
  return buf;
}

// How every float element of one array is written.
struct FloatStyle {
  bool scientific = false;
  int digits = 0;  // scientific: mantissa digits after the point, the same for all elements
  DType dtype;
  int precision = 8;
  size_t int_width = 0, frac_width = 0;  // positional: widths of "-12" and of ".5" parts
};

std::string float_text(double x, const FloatStyle& s) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  if (s.scientific) {
    std::string t = printf_text(x, 'e', s.digits);
    size_t e = t.find('e');
    if (s.digits == 0 && e != std::string::npos) t.insert(e, 1, '.');  // numpy writes "1.e-05"
    return t;
  }
  std::string t = printf_text(x, 'f', shortest_digits(x, 'f', s.precision, s.dtype));
  if (t.find('.') == std::string::npos) t += ".";
  return t;
}

FloatStyle float_style(const std::vector<double>& xs, DType dtype, int precision) {
  FloatStyle s;
  s.dtype = dtype;
  s.precision = precision;
  double lo = INFINITY, hi = 0;
  for (double x : xs)
    if (std::isfinite(x) && x != 0) lo = std::min(lo, std::fabs(x)), hi = std::max(hi, std::fabs(x));
  s.scientific = hi > 0 && (hi >= 1e8 || lo < 1e-4 || hi / lo > 1e3);
  if (s.scientific)
    for (double x : xs)
      if (std::isfinite(x)) s.digits = std::max(s.digits, shortest_digits(x, 'e', precision, dtype));
  return s;
}

// Pads positional float texts so the points line up: "-1.5 ", " 2.25".
void align_points(std::vector<std::string>& texts) {
  size_t int_w = 0, frac_w = 0;
  for (const std::string& t : texts) {
    size_t dot = t.find('.');
    if (dot == std::string::npos) continue;  // nan, inf
    int_w = std::max(int_w, dot);
    frac_w = std::max(frac_w, t.size() - dot);
  }
  for (std::string& t : texts) {
    size_t dot = t.find('.');
    if (dot == std::string::npos) continue;
    t = std::string(int_w - dot, ' ') + t + std::string(frac_w - (t.size() - dot), ' ');
  }
}

// The row-major flat indices of the elements shown, per axis: all of them, or the edge items
// with -1 standing for "...".
std::vector<std::vector<int64_t>> shown_indices(const std::vector<int64_t>& shape, bool summarize, int64_t edge) {
  std::vector<std::vector<int64_t>> axes;
  for (int64_t n : shape) {
    std::vector<int64_t> idx;
    if (summarize && n > 2 * edge) {
      for (int64_t i = 0; i < edge; ++i) idx.push_back(i);
      idx.push_back(-1);
      for (int64_t i = n - edge; i < n; ++i) idx.push_back(i);
    } else {
      for (int64_t i = 0; i < n; ++i) idx.push_back(i);
    }
    axes.push_back(std::move(idx));
  }
  return axes;
}

// Integers are read from storage, not through double: 64-bit values beyond 2^53 print exactly.
std::string int_text(const Value& v, int64_t flat) {
  int64_t at = v.view.offset_of(unflatten(v.shape(), flat));
  return dispatch(v.dtype, [&](auto tag) -> std::string {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) return std::to_string(+v.data->as<T>()[at]);  // + : char8_t as a number
    else throw InternalError("int_text of " + to_string(v.dtype));
  });
}

class Printer {
 public:
  Printer(const Value& v, const FormatOptions& o) : v_(v), o_(o) {
    if (v.poison) mask_ = mask_view(v, v.poison);
    bool summarize = !o.full && v.numel() > o.threshold;
    axes_ = shown_indices(v.shape(), summarize, o.edge_items);
    collect(0, 0);
    write_texts();
  }

  std::string text() {
    if (v_.shape().empty() || v_.unshaped) return texts_.empty() ? "" : trim(texts_[0]);
    if (v_.numel() == 0) return "[]";
    std::string out;
    next_ = 0;
    emit(out, 0, "");
    return out;
  }

 private:
  const Value& v_;
  const FormatOptions& o_;
  Value mask_;
  std::vector<std::vector<int64_t>> axes_;
  std::vector<int64_t> flats_;  // shown elements in print order (no "..." entries)
  std::vector<std::string> texts_;
  size_t next_ = 0;
  size_t width_ = 0;

  static std::string trim(const std::string& t) {
    size_t a = t.find_first_not_of(' '), b = t.find_last_not_of(' ');
    return a == std::string::npos ? t : t.substr(a, b - a + 1);
  }

  void collect(size_t axis, int64_t flat) {
    if (axis == axes_.size()) return flats_.push_back(flat);
    int64_t stride = 1;
    for (size_t a = axis + 1; a < axes_.size(); ++a) stride *= v_.shape()[a];
    for (int64_t i : axes_[axis])
      if (i >= 0) collect(axis + 1, flat + i * stride);
  }

  bool poisoned(int64_t flat) const { return v_.poison && get_element(mask_, flat) != 0; }

  void write_texts() {
    std::vector<double> xs;
    for (int64_t f : flats_)
      if (!poisoned(f)) xs.push_back(get_element(v_, f));
    FloatStyle style;
    if (v_.dtype.is_float()) style = float_style(xs, v_.dtype, o_.precision);
    for (int64_t f : flats_) {
      double x = get_element(v_, f);
      if (poisoned(f)) texts_.push_back("poison");
      else if (v_.dtype.is_float()) texts_.push_back(float_text(x, style));
      else if (v_.dtype.is_bool()) texts_.push_back(x != 0 ? "True" : "False");
      else texts_.push_back(int_text(v_, f));
    }
    if (v_.dtype.is_float() && !style.scientific) align_points(texts_);
    for (const std::string& t : texts_) width_ = std::max(width_, t.size());
    for (std::string& t : texts_) t = std::string(width_ - t.size(), ' ') + t;
  }

  // Appends the sub-array at `axis` (its '[' at the current column, `indent` before nested rows).
  void emit(std::string& out, size_t axis, const std::string& indent) {
    out += "[";
    size_t last = axes_.size() - 1;
    std::string inner = indent + " ";
    size_t column = inner.size();
    bool first = true;
    for (int64_t i : axes_[axis]) {
      if (!first) {
        if (axis == last) {
          // numpy's rule: the element and its separator must end before the closing brackets.
          size_t word = i < 0 ? 3 : width_, limit = o_.line_width - 1 - axis;
          if (column + 1 + word > limit) {
            out.erase(out.find_last_not_of(' ') + 1);  // a wrapped line ends at its last digit
            out += "\n" + inner, column = inner.size();
          } else {
            out += " ", ++column;
          }
        } else {
          out += std::string(last - axis, '\n') + inner;
        }
      }
      first = false;
      if (axis == last) {
        std::string t = i < 0 ? "..." : texts_[next_++];
        out += t;
        column += t.size();
      } else if (i < 0) {
        out += "...";
      } else {
        emit(out, axis + 1, inner);
      }
    }
    out += "]";
  }
};

}  // namespace

std::string format_array(const Value& v, const FormatOptions& o) { return Printer(v, o).text(); }

std::string format_header(const Value& v) {
  std::string s = to_string(v.dtype) + " " + shape_text(v.shape());
  int64_t count = 0;
  if (any_poison(v, nullptr, &count)) s += ", " + std::to_string(count) + " of " + std::to_string(v.numel()) + " elements poison";
  return s;
}

std::string indent_lines(const std::string& text, const std::string& indent) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start && c != '\n') out += indent;
    out += c;
    line_start = c == '\n';
  }
  return out;
}

std::string format_element(double x, DType dtype, int precision) {
  Value v = scalar(dtype, x);
  FormatOptions o;
  o.precision = precision;
  return format_array(v, o);
}

}  // namespace ow::interp
