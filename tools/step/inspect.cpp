// ow step's views of the evaluation: print NODE|BUFFER, where (the path from the root), graph.
#include <algorithm>
#include <deque>
#include <ostream>

#include "session.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/shape.h"

namespace ow::cli::stepping {

std::vector<int64_t> Session::display_shape(UOp buf, int64_t size) {
  for (UOp u : p_.order)
    if (u->op == Ops::RESHAPE && !u->src.empty() && u->src[0] == buf)
      if (auto d = static_dims(u->shape.dims)) {
        int64_t n = 1;
        for (int64_t x : *d) n *= x;
        if (n == size) return *d;
      }
  return {size};
}

void Session::print(const std::string& arg) {
  if (arg[0] != '%' && (buffer_nodes_.count(arg) || buffers_.count(arg))) return print_buffer(arg);
  UOp u = lookup_node(arg);
  if (!u) {
    std::vector<std::string> names;
    for (auto& [n, x] : buffer_nodes_) names.push_back(n);
    throw Error("print: no node or buffer named '" + printable(arg) + "' (nodes: %0 .. %" + std::to_string(p_.order.size() - 1) +
                " and the file's own %names; outputs: " + join(output_names_) + "; buffers: " + join(names) + ")");
  }
  auto result = results_.find(arg);
  if (arg[0] != '%' && result != results_.end()) {
    out_ << "output " << arg << " (" << node_name(p_, u) << " " << op_name(u->op) << "), as the evaluation returned it:\n";
    return print_value(result->second);
  }
  print_node(u, arg);
}

void Session::print_node(UOp u, const std::string& arg) {
  std::string label = arg == node_name(p_, u) ? arg : arg + " (" + node_name(p_, u) + ")";
  auto it = seen_.find(u.get());
  if (it == seen_.end()) {
    out_ << label << " " << op_name(u->op) << " has not been evaluated yet\n  " << p_.line(u) << "\n";
    return;
  }
  out_ << label << " " << op_name(u->op) << ", as evaluated at step " << it->second.step << " with " << interp::bindings_text(it->second.bindings) << ":\n";
  if (u->op == Ops::KERNEL) {
    out_ << "  a kernel launch has no value; print one of its buffers:";
    for (size_t i = 1; i < u->src.size(); ++i)
      if (u->src[i]->op == Ops::BUFFER) out_ << " " << buffer_name(u->src[i]);
    out_ << "\n";
    return;
  }
  print_value(it->second.value);
}

void Session::print_buffer(const std::string& arg) {
  auto node = buffer_nodes_.find(arg);
  auto data = buffers_.find(arg);
  if (data == buffers_.end()) {
    out_ << "buffer " << arg << " was not given data: it is uninitialized (all poison) once evaluation starts\n";
    return;
  }
  const interp::BufferData& d = data->second;
  interp::Value v;
  v.dtype = d.dtype;
  v.view = interp::View::contiguous(node == buffer_nodes_.end() ? std::vector<int64_t>{d.data->size} : display_shape(node->second, d.data->size));
  v.data = d.data;
  v.poison = d.poison;
  out_ << "buffer " << arg << " (" << d.data->size << " elements" << (v.shape().size() != 1 ? ", shown as " + shape_text(v.shape()) : "") << "):\n";
  print_value(v);
}

void Session::print_value(const interp::Value& v) {
  ValueStats st = value_stats(v);
  out_ << "  " << to_string(v.dtype) << " " << shape_text(v.shape()) << ", " << st.count << " elements";
  if (st.poison) out_ << "; poison: " << st.poison << " elements (uninitialized), first at " << index_text(v.shape(), st.first_poison);
  else out_ << "; no poison";
  out_ << "\n";
  if (st.clean) out_ << "  min=" << element_text(st.min) << " max=" << element_text(st.max) << " mean=" << element_text(st.mean) << (st.poison ? " (over the clean elements)" : "") << "\n";
  out_ << interp::indent_lines(interp::format_array(v, o_.format), "  ") << "\n";
}

std::vector<UOp> Session::path_between(UOp from, UOp to) {
  std::unordered_map<const UOpNode*, UOp> parent;
  std::deque<UOp> q{from};
  parent[from.get()] = UOp();
  while (!q.empty()) {
    UOp u = q.front();
    q.pop_front();
    if (u == to) {
      std::vector<UOp> path;
      for (UOp x = u; x; x = parent[x.get()]) path.push_back(x);
      std::reverse(path.begin(), path.end());
      return path;
    }
    for (UOp s : u->src)
      if (parent.emplace(s.get(), u).second) q.push_back(s);
  }
  return {};
}

std::vector<UOp> Session::full_path(const std::vector<UOp>& chain) {
  std::vector<UOp> path{root_};
  for (UOp u : chain) {
    std::vector<UOp> step = path_between(path.back(), u);
    if (step.empty()) path.push_back(u);  // not below the previous node: keep the stack's order
    else path.insert(path.end(), step.begin() + 1, step.end());
  }
  return path;
}

void Session::print_path(const std::vector<UOp>& path) {
  out_ << "path:";
  for (size_t i = 0; i < path.size(); ++i) out_ << (i ? " > " : " ") << node_name(p_, path[i]) << " " << op_name(path[i]->op);
  out_ << "\n";
}

void Session::where() {
  if (state_ != State::Stopped) {
    out_ << (state_ == State::NotStarted ? "evaluation not started" : "no current node: the evaluation has ended") << "\n";
    return;
  }
  out_ << "bindings: " << interp::bindings_text(cur_bind_) << "\n";
  std::vector<UOp> chain = cur_stack_;
  chain.push_back(cur_);
  print_path(full_path(chain));
}

void Session::show_path(UOp u) {
print_path(full_path({u}));
}

void Session::graph(UOp at) {
  if (!at && state_ != State::Stopped) {
    out_ << "graph: no current node (" << (state_ == State::NotStarted ? "evaluation not started" : "the evaluation has ended") << "); graph NODE shows any node\n";
    return;
  }
  if (!at) at = cur_;
  std::set<size_t> keep{p_.number.at(at.get())};
  for (UOp s : at->src) {
    keep.insert(p_.number.at(s.get()));
    for (UOp t : s->src) keep.insert(p_.number.at(t.get()));
  }
  out_ << "# " << node_name(p_, at) << " and its sources 2 levels down (other %N are defined outside this excerpt)\n";
  for (size_t n : keep) {
    UOp u = p_.order[n];
    out_ << p_.line(u);
    std::string note = u->shape.dims.empty() ? "" : "shape " + render_shape(u->shape.dims);
    if (u == cur_ && state_ == State::Stopped) note += (note.empty() ? "" : ", ") + std::string("<- current");
    if (!note.empty()) out_ << "  # " << note;
    out_ << "\n";
  }
}

}  // namespace ow::cli::stepping
