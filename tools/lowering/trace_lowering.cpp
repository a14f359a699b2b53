// Recording the lowering pipeline (trace_lowering.h).
#include "trace_lowering.h"

#include <map>

namespace ow::cli {

std::vector<PassTrace> trace_lowering(UOp root, opt::Target t) {
  std::vector<PassTrace> out;
  std::vector<Firing> current;
  lower::Context ctx = lower::through_kernel_opt(t);
  ctx.on_fire = [&](const Rule& r, UOp before, UOp after) { current.push_back({r.name, before, after}); };
  UOp before = root;
  lower::lower(root, ctx, [&](const lower::Pass& p, UOp g) {
    out.push_back({&p, before, g, std::move(current)});
    current.clear();
    before = g;
  });
  return out;
}

std::vector<RuleGroup> group_by_rule(const std::vector<Firing>& firings) {
  std::vector<RuleGroup> groups;
  std::map<std::string, size_t> at;
  for (const Firing& f : firings) {
    auto [it, fresh] = at.emplace(f.rule, groups.size());
    if (fresh) groups.push_back({f.rule, {}});
    groups[it->second].firings.push_back(&f);
  }
  return groups;
}

namespace {
// The first pair of corresponding sources (depth first) whose lines differ, as "X -> Y".
std::string changed_source(UOp a, const Printed& in, UOp b, const Printed& out, int depth) {
  if (depth > 8 || a->src.size() != b->src.size()) return "";
  for (size_t i = 0; i < a->src.size(); ++i) {
    if (a->src[i] == b->src[i]) continue;
    std::string x = compact_node(a->src[i], in, 1000), y = compact_node(b->src[i], out, 1000);
    if (x != y) return x + " -> " + y;
    if (std::string deeper = changed_source(a->src[i], in, b->src[i], out, depth + 1); !deeper.empty()) return deeper;
  }
  return "";
}
}  // namespace

std::pair<std::string, std::string> rewrite_texts(UOp before, const Printed& in, UOp after, const Printed& out, size_t max_chars) {
  std::string x = compact_node(before, in, max_chars), y = compact_node(after, out, max_chars);
  if (compact_node(before, in, 1000) != compact_node(after, out, 1000)) return {x, y};
  std::string why = changed_source(before, in, after, out, 0);
  if (why.empty() && !(before->tag == after->tag)) why = "tag " + to_string(before->tag) + " -> " + to_string(after->tag);
  if (why.size() > 2 * max_chars) why = why.substr(0, 2 * max_chars - 3) + "...";
  return {x, why.empty() ? y : y + "; source: " + why};
}

std::string compact_node(UOp u, const Printed& g, size_t max_chars) {
  std::string s;
  if (auto it = g.number.find(u.get()); it != g.number.end()) {
    s = g.line(u);
    if (size_t eq = s.find(" = "); eq != std::string::npos) s.erase(eq, 2);
  } else {
    s = "new " + std::string(op_name(u->op)) + " " + to_string(u->dtype) + " (";
    for (size_t i = 0; i < u->src.size(); ++i) {
      auto at = g.number.find(u->src[i].get());
      s += (i ? ", " : "") + (at != g.number.end() ? g.name(u->src[i]) : std::string("new ") + std::string(op_name(u->src[i]->op)));
    }
    s += ")";
    if (!u->arg.none()) s += " " + to_string(u->arg);
  }
  if (s.size() > max_chars) s = s.substr(0, max_chars - 3) + "...";
  return s;
}

}  // namespace ow::cli
