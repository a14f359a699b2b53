#include "uop/error.h"
#include "uop/shape.h"
#include "uop/text.h"

namespace ow {

std::string Printed::line(UOp u) const {
  std::string s = name(u) + " = " + std::string(op_name(u->op)) + " " + to_string(u->dtype) + " (";
  for (size_t i = 0; i < u->src.size(); ++i) s += (i ? ", " : "") + name(u->src[i]);
  s += ")";
  if (u->op == Ops::CONST && u->dtype.scalar == Scalar::Float32 && u->arg.is<double>()) s += " " + format_float32(u->arg.as<double>());
  else if (!u->arg.none()) s += " " + to_string(u->arg);
  if (!u->tag.none()) s += " tag=" + to_string(u->tag);
  return s;
}

Printed number_graph(UOp root) {
  Printed p;
  p.order = toposort(root);
  for (size_t i = 0; i < p.order.size(); ++i) p.number[p.order[i].get()] = i;
  return p;
}

namespace {
// A comment for readers: the range's printed name, or the node's shape. Ignored by the parser.
std::string comment(UOp u) {
  if (u->op == Ops::RANGE) return "  # range " + range_name(u);
  if (u->shape.kind == ShapeInfo::Kind::Shaped) return "  # shape " + render_shape(u->shape.dims);
  return "";
}
}  // namespace

std::string print_graph(UOp root) {
  Printed p = number_graph(root);
  std::string out;
  for (UOp u : p.order) out += p.line(u) + comment(u) + "\n";
  return out;
}

void verify_or_throw(UOp root, const VerifyOptions& opts) {
  auto issues = verify(root, opts);
  if (issues.empty()) return;
  Printed p = number_graph(root);
  const VerifyIssue& i = issues.front();
  throw Error(i.rule + ": " + i.message + " (at " + p.line(i.node) + ")");
}

}  // namespace ow
