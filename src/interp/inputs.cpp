#include "interp/inputs.h"

#include <algorithm>
#include <map>
#include <set>

#include "interp/evaluator.h"
#include "interp/kernel_eval.h"
#include "uop/args.h"
#include "uop/kernel_slots.h"
#include "uop/shape.h"

namespace ow::interp {

namespace {

// Names of the buffers something stores into: STORE/ASSIGN targets, and the slots a KERNEL's
// ast stores to (in lowered programs).
std::set<std::string> written_names(const std::vector<UOp>& order) {
  std::set<std::string> written;
  for (UOp u : order) {
    if (is_write(u->op) && !u->src.empty())
      if (UOp b = base_buffer(u->src[0])) written.insert(buffer_name(b));
    if (u->op != Ops::KERNEL) continue;
    std::vector<UOp> slots;
    for (size_t i = 1; i < u->src.size(); ++i)
      if (u->src[i]->op == Ops::BUFFER) slots.push_back(u->src[i]);
    for (int64_t s : slots_stored(u->src[0]))
      if (s >= 0 && static_cast<size_t>(s) < slots.size()) written.insert(buffer_name(slots[static_cast<size_t>(s)]));
  }
  return written;
}

// The shape of the graph's first RESHAPE of a buffer (in printed order), when static.
std::map<const UOpNode*, std::vector<int64_t>> first_views(const std::vector<UOp>& order) {
  std::map<const UOpNode*, std::vector<int64_t>> views;
  for (UOp u : order) {
    if (u->op != Ops::RESHAPE || u->src.empty() || u->src[0]->op != Ops::BUFFER || views.count(u->src[0].get())) continue;
    if (auto dims = static_dims(u->shape.dims)) views[u->src[0].get()] = *dims;
  }
  return views;
}

// Edit distance, for "did you mean" (names are short).
size_t distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string unknown_name_message(const std::string& name, const std::vector<BufferSpec>& specs) {
  std::string msg = "no buffer named '" + name + "' in the graph";
  for (const BufferSpec& s : specs)
    if (distance(name, s.name) <= std::max<size_t>(1, name.size() / 3)) {
      msg += " (did you mean '" + s.name + "'?)";
      break;
    }
  return msg + "; its buffers: " + (specs.empty() ? "none" : names_text(specs));
}

}  // namespace

std::vector<BufferSpec> graph_buffers(UOp root) {
  std::vector<UOp> order = number_graph(root).order;
  std::set<std::string> written = written_names(order);
  auto views = first_views(order);
  std::vector<BufferSpec> specs;
  std::set<std::string> seen;
  for (UOp u : order) {
    if (u->op != Ops::BUFFER || is_temporary(buffer_name(u)) || !seen.insert(buffer_name(u)).second) continue;
    BufferSpec s{buffer_name(u), u->dtype, buffer_size(u), {buffer_size(u)}, !written.count(buffer_name(u))};
    if (auto it = views.find(u.get()); it != views.end()) s.shape = it->second;
    specs.push_back(s);
  }
  return specs;
}

BufferMap buffers_for(UOp graph, const BufferMap& all) {
  BufferMap mine;
  for (UOp u : toposort(graph))
    if (u->op == Ops::BUFFER)
      if (auto it = all.find(buffer_name(u)); it != all.end()) mine.insert(*it);
  return mine;
}

std::string names_text(const std::vector<BufferSpec>& specs, bool inputs_only) {
  std::string t;
  for (const BufferSpec& s : specs)
    if (s.input || !inputs_only) t += (t.empty() ? "" : ", ") + s.name;
  return t.empty() ? "none" : t;
}

const BufferSpec& find_buffer(const std::vector<BufferSpec>& specs, const std::string& name) {
  auto it = std::find_if(specs.begin(), specs.end(), [&](const BufferSpec& s) { return s.name == name; });
  if (it == specs.end()) throw Error(unknown_name_message(name, specs));
  return *it;
}

void check_inputs(const std::vector<BufferSpec>& specs, const BufferMap& given, const std::vector<std::string>& also_allowed,
                  const std::function<std::string(const std::string&)>& missing_hint) {
  for (auto& [name, d] : given) {
    if (is_temporary(name) || std::count(also_allowed.begin(), also_allowed.end(), name)) continue;
    const BufferSpec& s = find_buffer(specs, name);
    if (d.dtype != s.dtype) throw Error("buffer '" + name + "' was given " + to_string(d.dtype) + " data but the graph declares it " + to_string(s.dtype));
    if (d.data->size != s.size)
      throw Error("buffer '" + name + "' was given " + std::to_string(d.data->size) + " elements but the graph declares " + std::to_string(s.size));
  }
  for (const BufferSpec& s : specs)
    if (s.input && !given.count(s.name))
      throw Error("input '" + s.name + "' was given no data: the graph reads it and nothing writes it (inputs: " + names_text(specs, true) + ")" + (missing_hint ? missing_hint(s.name) : ""));
}

}  // namespace ow::interp
