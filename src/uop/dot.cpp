#include "uop/dot.h"

#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "uop/shape.h"
#include "uop/symbolic.h"
#include "uop/text.h"

namespace ow {

namespace {

constexpr size_t kInlineChars = 24;  // an operand expression up to this long is written into its user's label
constexpr size_t kExprChars = 240;   // an expression node shows at most this much of its text
constexpr size_t kLineChars = 48;    // labels wrap at about this width

const char* axis_color(AxisType a) {
  switch (a) {
    case AxisType::OUTER: return "#f4a582";
    case AxisType::REDUCE: case AxisType::GROUP_REDUCE: return "#fddbc7";
    case AxisType::LOOP: return "#d1e5f0";
    case AxisType::GLOBAL: case AxisType::LOCAL: case AxisType::WARP: case AxisType::THREAD: return "#92c5de";
    default: return "#e0e0e0";
  }
}

// Fill colours of the op classes (dot_legend() names them).
constexpr const char* kScalarColor = "#f7f7f7";  // constants, variables, index expressions
constexpr const char* kBufferColor = "#b8e186";
constexpr const char* kMovementColor = "#c2a5cf";
constexpr const char* kReduceColor = "#fee08b";
constexpr const char* kMemoryColor = "#fdae61";
constexpr const char* kElementwiseColor = "#abd9e9";

const char* op_color(UOp u) {
  Ops op = u->op;
  if (op == Ops::RANGE) return axis_color(range_axis(u));
  if (op == Ops::CONST || op == Ops::DEFINE_VAR || op == Ops::BIND) return kScalarColor;
  if (op == Ops::BUFFER || op == Ops::DEFINE_GLOBAL) return kBufferColor;
  if (is_movement(op)) return kMovementColor;
  if (op == Ops::REDUCE || op == Ops::REDUCE_AXIS || op == Ops::REDUCE_BACKWARD) return kReduceColor;
  if (op == Ops::STORE || op == Ops::ASSIGN || op == Ops::AFTER || op == Ops::END || op == Ops::LOAD || op == Ops::INDEX) return kMemoryColor;
  if (is_elementwise(op)) return kElementwiseColor;
  return "#ffffff";
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') out += "\\n";
    else {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
  }
  return out;
}

// "(a, b, c)" broken into lines of about kLineChars (items are short: %N or an inline operand).
std::string operand_list(const std::vector<std::string>& items) {
  std::string out, line = "(";
  for (size_t i = 0; i < items.size(); ++i) {
    std::string item = items[i] + (i + 1 < items.size() ? ", " : ")");
    if (line.size() + item.size() > kLineChars && line.size() > 1) {
      out += line.substr(0, line.size() - 1) + "\n";  // without the trailing space
      line.clear();
    }
    line += item;
  }
  return out + line;
}

// Which nodes become boxes, and what the others look like inside their users' labels.
class Picture {
 public:
  explicit Picture(UOp root) : p_(number_graph(root)), root_(root) {
    for (UOp u : p_.order) classify(u);
    for (UOp u : p_.order)
      if (!is_pure(u) || u == root_) drawn_.insert(u.get());
    for (UOp u : p_.order)
      if (!is_pure(u))
        for (UOp s : u->src)
          if (is_pure(s) && text(s).size() > kInlineChars) drawn_.insert(s.get());
    kernel_of_ = kernel_owners();
  }

  size_t write(std::ostream& os) {
    size_t boxes = 0;
    os << "digraph G {\nrankdir=BT;\nnode [shape=box, style=\"rounded,filled\", fontname=\"monospace\", fontsize=10];\n"
       << "edge [fontsize=8, color=\"#555555\"];\n";
    std::map<size_t, std::vector<UOp>> clusters;  // kernel number -> its drawn nodes
    for (UOp u : p_.order) {
      if (!drawn(u)) continue;
      ++boxes;
      auto k = kernel_of_.find(u.get());
      if (k != kernel_of_.end()) clusters[k->second].push_back(u);
      else write_node(os, u);
    }
    for (auto& [k, nodes] : clusters) {
      os << "subgraph cluster_" << k << " {\nlabel=\"" << escape("kernel " + p_.name(p_.order[k]) + " " + to_string(p_.order[k]->arg))
         << "\"; style=\"rounded,dashed\"; color=\"#8796a5\"; fontname=\"monospace\"; fontsize=10;\n";
      for (UOp u : nodes) write_node(os, u);
      os << "}\n";
    }
    for (UOp u : p_.order)
      if (drawn(u)) write_edges(os, u);
    os << "}\n";
    return boxes;
  }

 private:
  Printed p_;
  UOp root_;
  std::unordered_set<const UOpNode*> pure_, drawn_;
  std::unordered_map<const UOpNode*, std::string> text_;
  std::unordered_map<const UOpNode*, size_t> kernel_of_;

  bool is_pure(UOp u) const { return pure_.count(u.get()) > 0; }
  bool drawn(UOp u) const { return drawn_.count(u.get()) > 0; }
  size_t number(UOp u) const { return p_.number.at(u.get()); }

  // Pure: a constant, or an ALU op whose sources are pure, ranges or variables; its value
  // depends on nothing but the loop indices, so its text says everything about it.
  void classify(UOp u) {
    bool pure = u->op == Ops::CONST;
    if (is_elementwise(u->op) && !u->src.empty()) {
      pure = true;
      for (UOp s : u->src) pure = pure && (is_pure(s) || s->op == Ops::RANGE || s->op == Ops::DEFINE_VAR);
    }
    if (pure) pure_.insert(u.get());
  }

  const std::string& text(UOp u) {
    auto it = text_.find(u.get());
    if (it == text_.end()) it = text_.emplace(u.get(), render_expr(u, kExprChars)).first;
    return it->second;
  }

  // The ranges and variables an expression reads, in first-use order.
  std::vector<UOp> leaves(UOp u) const {
    std::vector<UOp> out, stack{u};
    std::unordered_set<const UOpNode*> seen{u.get()};
    while (!stack.empty()) {
      UOp x = stack.back();
      stack.pop_back();
      if (!is_pure(x)) out.push_back(x);
      else
        for (auto it = x->src.rbegin(); it != x->src.rend(); ++it)
          if (seen.insert(it->get()).second) stack.push_back(*it);
    }
    return out;
  }

  // Each drawn node inside exactly one kernel's body belongs to that kernel's box.
  std::unordered_map<const UOpNode*, size_t> kernel_owners() const {
    std::unordered_map<const UOpNode*, size_t> owner;
    std::unordered_set<const UOpNode*> shared;
    for (UOp k : p_.order) {
      if (k->op != Ops::KERNEL || k->src.empty()) continue;
      for (UOp u : toposort(k->src[0])) {
        auto [it, fresh] = owner.emplace(u.get(), number(k));
        if (!fresh && it->second != number(k)) shared.insert(u.get());
      }
    }
    for (const UOpNode* u : shared) owner.erase(u);
    return owner;
  }

  std::string label(UOp u) {
    if (is_pure(u)) {  // an expression node: its text, wrapped
      std::string t = text(u), out = p_.name(u) + " " + to_string(u->dtype);
      for (size_t at = 0; at < t.size(); at += kLineChars) out += "\n" + t.substr(at, kLineChars);
      return out;
    }
    std::string s = p_.name(u) + " " + std::string(op_name(u->op)) + " " + to_string(u->dtype);
    if (!u->src.empty()) {
      std::vector<std::string> operands;
      for (UOp x : u->src) operands.push_back(drawn(x) ? p_.name(x) : text(x));
      s += "\n" + operand_list(operands);
    }
    if (u->op == Ops::RANGE) s += "\nrange " + range_name(u) + " " + std::string(axis_name(range_axis(u)));
    else if (!u->arg.none()) {
      std::string a = to_string(u->arg);
      s += "\n" + (a.size() > 60 ? a.substr(0, 57) + "..." : a);
    }
    if (u->shape.kind == ShapeInfo::Kind::Shaped) s += "\nshape " + render_shape(u->shape.dims);
    return s;
  }

  void write_node(std::ostream& os, UOp u) {
    os << number(u) << " [label=\"" << escape(label(u)) << "\"";
    if (is_pure(u)) os << ", style=\"filled,dashed\", fillcolor=\"" << kScalarColor << "\"];\n";
    else os << ", fillcolor=\"" << op_color(u) << "\"];\n";
  }

  // Solid edges from drawn sources (labelled with their index where that helps), dashed ones
  // from the ranges and variables of operands written inline.
  void write_edges(std::ostream& os, UOp u) {
    std::map<size_t, std::vector<size_t>> solid;  // source number -> its operand indices
    std::set<size_t> dashed;
    if (is_pure(u)) {
      for (UOp l : leaves(u)) dashed.insert(number(l));
    } else {
      for (size_t i = 0; i < u->src.size(); ++i) {
        UOp s = u->src[i];
        if (drawn(s)) solid[number(s)].push_back(i);
        else
          for (UOp l : leaves(s)) dashed.insert(number(l));
      }
    }
    bool label = !is_commutative(u->op) && solid.size() >= 2;
    for (auto& [from, idx] : solid) {
      os << from << " -> " << number(u);
      if (label) {
        std::string l;
        for (size_t i : idx) l += (l.empty() ? "" : ",") + std::to_string(i);
        os << " [label=\"" << l << "\"]";
      }
      os << ";\n";
    }
    for (size_t from : dashed)
      if (!solid.count(from)) os << from << " -> " << number(u) << " [style=dashed, color=\"#9aa5b1\"];\n";
  }
};

}  // namespace

size_t write_dot(std::ostream& os, UOp root) { return Picture(root).write(os); }

std::vector<std::pair<std::string, std::string>> dot_legend() {
  return {{"OUTER range", axis_color(AxisType::OUTER)},
          {"REDUCE range", axis_color(AxisType::REDUCE)},
          {"LOOP range", axis_color(AxisType::LOOP)},
          {"GLOBAL/LOCAL range", axis_color(AxisType::GLOBAL)},
          {"buffer", kBufferColor},
          {"movement", kMovementColor},
          {"reduction", kReduceColor},
          {"memory and effects", kMemoryColor},
          {"elementwise", kElementwiseColor},
          {"constant, variable, index expression", kScalarColor}};
}

}  // namespace ow
