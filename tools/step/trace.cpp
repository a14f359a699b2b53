// One evaluation step as text: value statistics and the JSON line of `ow run --trace=json`
// (trace.h); the debugger prints steps with the same helpers.
#include "trace.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "interp/value.h"
#include "json/json.h"

namespace ow::cli {

ValueStats value_stats(const interp::Value& v) {
  ValueStats s;
  s.count = v.numel();
  if (s.count == 0) return s;
  interp::Value mask;
  bool masked = v.poison != nullptr;
  if (masked) mask = interp::mask_view(v, v.poison);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  bool ordered = false;
  for (int64_t i = 0; i < s.count; ++i) {
    if (masked && interp::get_element(mask, i) != 0) {
      if (s.first_poison < 0) s.first_poison = i;
      ++s.poison;
      continue;
    }
    ++s.clean;
    double x = interp::get_element(v, i);
    sum += x;
    if (x == x) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      ordered = true;
    }
  }
  if (s.clean) {
    double nan = std::numeric_limits<double>::quiet_NaN();
    s.mean = sum / static_cast<double>(s.clean);
    s.min = ordered ? lo : nan;
    s.max = ordered ? hi : nan;
  }
  return s;
}

std::string json_number(double x) {
  if (std::isnan(x)) return "\"nan\"";
  if (std::isinf(x)) return x > 0 ? "\"inf\"" : "\"-inf\"";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

std::string node_name(const Printed& p, UOp u) {
  auto it = p.number.find(u.get());
  return it == p.number.end() ? "?" : "%" + std::to_string(it->second);
}

std::string element_text(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

std::string index_text(const std::vector<int64_t>& shape, int64_t flat) {
  std::string t;
  for (int64_t i : interp::unflatten(shape, flat)) t += (t.empty() ? "" : ", ") + std::to_string(i);
  return "[" + t + "]";
}

std::string trace_json(const interp::Step& s, const Printed& numbering, uint64_t step) {
  ValueStats st = value_stats(*s.value);
  std::string j = "{\"step\":" + std::to_string(step) + ",\"node\":" + json_string(node_name(numbering, s.node)) +
                  ",\"op\":" + json_string(std::string(op_name(s.node->op))) + ",\"dtype\":" + json_string(to_string(s.value->dtype)) + ",\"shape\":[";
  const auto& shape = s.value->shape();
  for (size_t i = 0; i < shape.size(); ++i) j += (i ? "," : "") + std::to_string(shape[i]);
  j += "],\"bindings\":{";
  for (size_t i = 0; i < s.bindings.size(); ++i) j += (i ? "," : "") + json_string(range_name(s.bindings[i].first)) + ":" + std::to_string(s.bindings[i].second);
  j += "},\"count\":" + std::to_string(st.count) + ",\"poison\":" + std::to_string(st.poison);
  if (st.clean) j += ",\"min\":" + json_number(st.min) + ",\"max\":" + json_number(st.max) + ",\"mean\":" + json_number(st.mean);
  else j += ",\"min\":null,\"max\":null,\"mean\":null";
  return j + "}";
}

}  // namespace ow::cli
