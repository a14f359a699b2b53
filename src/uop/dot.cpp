#include "uop/dot.h"

// Boost.Graph's edge iterator trips GCC 12's -Wmaybe-uninitialized inside Boost's own headers.
// (clang has no -Wmaybe-uninitialized and would warn about the unknown option)
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "uop/shape.h"
#include "uop/text.h"

namespace ow {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

const char* axis_color(AxisType a) {
  switch (a) {
    case AxisType::OUTER: return "#f4a582";
    case AxisType::REDUCE: case AxisType::GROUP_REDUCE: return "#fddbc7";
    case AxisType::LOOP: return "#d1e5f0";
    case AxisType::GLOBAL: case AxisType::LOCAL: case AxisType::WARP: case AxisType::THREAD: return "#92c5de";
    default: return "#e0e0e0";
  }
}

const char* op_color(UOp u) {
  Ops op = u->op;
  if (op == Ops::RANGE) return axis_color(range_axis(u));
  if (op == Ops::CONST || op == Ops::DEFINE_VAR || op == Ops::BIND) return "#f7f7f7";
  if (op == Ops::BUFFER || op == Ops::DEFINE_GLOBAL) return "#b8e186";
  if (is_movement(op)) return "#c2a5cf";
  if (op == Ops::REDUCE || op == Ops::REDUCE_AXIS || op == Ops::REDUCE_BACKWARD) return "#fee08b";
  if (op == Ops::STORE || op == Ops::ASSIGN || op == Ops::AFTER || op == Ops::END || op == Ops::LOAD || op == Ops::INDEX) return "#fdae61";
  if (is_elementwise(op)) return "#abd9e9";
  return "#ffffff";
}

std::string label(UOp u, const Printed& p) {
  std::string s = p.name(u) + " " + std::string(op_name(u->op)) + "\n" + to_string(u->dtype);
  if (u->op == Ops::RANGE) s += "\nrange " + range_name(u);
  else if (!u->arg.none()) {
    std::string a = to_string(u->arg);
    s += "\n" + (a.size() > 60 ? a.substr(0, 57) + "..." : a);
  }
  if (u->shape.kind == ShapeInfo::Kind::Shaped) s += "\n" + render_shape(u->shape.dims);
  return s;
}

}  // namespace

void write_dot(std::ostream& os, UOp root) {
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                      boost::property<boost::edge_index_t, size_t>>;
  Printed p = number_graph(root);
  Graph g(p.order.size());
  for (UOp u : p.order)
    for (size_t i = 0; i < u->src.size(); ++i) boost::add_edge(p.number.at(u->src[i].get()), p.number.at(u.get()), i, g);

  auto vertex_writer = [&](std::ostream& out, size_t v) {
    UOp u = p.order[v];
    out << "[label=\"" << escape(label(u, p)) << "\", fillcolor=\"" << op_color(u) << "\"]";
  };
  auto edge_writer = [&](std::ostream& out, Graph::edge_descriptor e) {
    UOp user = p.order[boost::target(e, g)];
    if (user->src.size() > 1) out << "[label=\"" << boost::get(boost::edge_index, g, e) << "\"]";
  };
  auto graph_writer = [](std::ostream& out) {
    out << "rankdir=BT;\nnode [shape=box, style=\"rounded,filled\", fontname=\"monospace\", fontsize=10];\n"
        << "edge [fontsize=8, color=\"#555555\"];\n";
  };
  boost::write_graphviz(os, g, vertex_writer, edge_writer, graph_writer);
}

}  // namespace ow
