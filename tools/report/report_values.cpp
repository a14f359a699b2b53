#include "report_values.h"

#include <algorithm>

#include "interp/format.h"

namespace ow::cli {

ValueRecorder::ValueRecorder(UOp root) : numbered_(number_graph(root)) {
  // Sources come first in the numbering, so each node's ranges are its sources' plus its own.
  for (UOp u : numbered_.order) {
    std::vector<const UOpNode*>& r = ranges_[u.get()];
    if (u->op == Ops::RANGE) r.push_back(u.get());
    for (UOp s : u->src)
      for (const UOpNode* x : ranges_[s.get()])
        if (std::find(r.begin(), r.end(), x) == r.end()) r.push_back(x);
  }
}

// "m1=2 r3=0": the active bindings of the ranges the node reads. The interpreter reports every
// binding in force, but a node that ignores a range has one value for all of its values.
std::string ValueRecorder::binding_key(UOp u, const std::vector<std::pair<UOp, int64_t>>& bindings) const {
  const std::vector<const UOpNode*>& reads = ranges_.at(u.get());
  std::string key;
  for (auto& [r, v] : bindings)
    if (std::find(reads.begin(), reads.end(), r.get()) != reads.end()) key += (key.empty() ? "" : " ") + range_name(r) + "=" + std::to_string(v);
  return key;
}

void ValueRecorder::on_step(const interp::Step& s) {
  auto at = numbered_.number.find(s.node.get());
  if (!s.value || at == numbered_.number.end()) return;
  NodeValues& nv = values_[at->second];
  std::string key = binding_key(s.node, s.bindings);
  for (auto& [k, _] : nv.bindings)
    if (k == key) return;  // evaluated again for the same binding: the same value
  if (nv.bindings.size() >= kMaxBindings || chars_ > kMaxChars) {
    ++nv.more;
    return;
  }
  // Small enough to read beside the graph: fewer edge items the more axes there are.
  interp::FormatOptions o;
  o.precision = 4;
  o.threshold = 64;
  o.edge_items = std::max<int64_t>(1, 4 - static_cast<int64_t>(s.value->shape().size()));
  o.line_width = 60;
  std::string text = interp::format_header(*s.value) + "\n" + interp::format_array(*s.value, o);
  chars_ += text.size();
  nv.bindings.emplace_back(key, std::move(text));
}

void ValueRecorder::write(Json& j) const {
  j.begin_obj();
  for (auto& [n, nv] : values_) {
    j.key(std::to_string(n)).begin_obj().key("bindings").begin_arr();
    for (auto& [k, text] : nv.bindings) j.begin_arr().str(k).str(text).end_arr();
    j.end_arr().field("more", static_cast<double>(nv.more)).end_obj();
  }
  j.end_obj();
}

}  // namespace ow::cli
