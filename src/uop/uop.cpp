#include "uop/uop.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "uop/error.h"
#include "uop/floats.h"
#include "uop/node_set.h"
#include "uop/shape.h"
#include "uop/symbolic.h"
#include "uop/verify.h"

namespace ow {

namespace {

size_t mix(size_t h, size_t x) { return h ^ (x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

size_t structural_hash(Ops op, DType dtype, const std::vector<UOp>& src, const Arg& arg, const Arg& tag) {
  size_t h = mix(static_cast<size_t>(op), static_cast<size_t>(dtype.scalar));
  h = mix(h, (dtype.ptr ? 1u : 0u) + static_cast<size_t>(dtype.size) * 2);
  for (UOp s : src) h = mix(h, s->hash);
  h = mix(h, arg.hash());
  return mix(h, tag.hash());
}

// The intern table. Nodes are owned here; the multimap is keyed by structural hash.
struct Table {
  std::mutex mu;
  std::unordered_multimap<size_t, std::unique_ptr<UOpNode>> nodes;
  std::atomic<uint64_t> serial{0};
};

Table& table() {
  static Table* t = new Table();  // never destroyed: nodes may be used by static destructors
  return *t;
}

const UOpNode* find_locked(Table& t, size_t h, Ops op, DType dtype, const std::vector<UOp>& src,
                           const Arg& arg, const Arg& tag) {
  auto [it, end] = t.nodes.equal_range(h);
  for (; it != end; ++it) {
    const UOpNode& n = *it->second;
    if (n.op == op && n.dtype == dtype && n.src == src && n.arg == arg && n.tag == tag) return &n;
  }
  return nullptr;
}

}  // namespace

UOp UOp::make(Ops op, DType dtype, std::vector<UOp> src, Arg arg, Arg tag) {
  for (UOp s : src)
    if (!s) throw Error("internal: null source while building " + std::string(op_name(op)));
  Table& t = table();
  size_t h = structural_hash(op, dtype, src, arg, tag);
  {
    std::lock_guard<std::mutex> lock(t.mu);
    if (const UOpNode* n = find_locked(t, h, op, dtype, src, arg, tag)) return UOp(n);
  }
  // Analyses run outside the lock: shape inference simplifies dims, which builds nodes.
  auto node = std::make_unique<UOpNode>();
  node->op = op;
  node->dtype = dtype;
  node->src = std::move(src);
  node->arg = std::move(arg);
  node->tag = std::move(tag);
  node->hash = h;
  auto [lo, hi] = compute_bounds(*node);
  node->lo = lo;
  node->hi = hi;
  node->shape = infer_shape(*node);
  node->free = free_ranges_of_new_node(*node);
  std::lock_guard<std::mutex> lock(t.mu);
  if (const UOpNode* n = find_locked(t, h, node->op, node->dtype, node->src, node->arg, node->tag)) return UOp(n);
  node->serial = t.serial++;
  const UOpNode* raw = node.get();
  t.nodes.emplace(h, std::move(node));
  return UOp(raw);
}

UOp UOp::replace_src(std::vector<UOp> src) const {
  if (src == n_->src) return *this;
  return make(n_->op, n_->dtype, std::move(src), n_->arg, n_->tag);
}
UOp UOp::with_arg(Arg arg) const { return make(n_->op, n_->dtype, n_->src, std::move(arg), n_->tag); }
UOp UOp::with_tag(Arg tag) const { return make(n_->op, n_->dtype, n_->src, n_->arg, std::move(tag)); }

UOp UOp::cnst(DType dtype, double value) {
  if (dtype.is_bool()) return make(Ops::CONST, dtype, {}, Arg(value != 0.0));
  if (dtype.is_int()) {
    if (dtype == dtypes::uint64 && value >= 0x1p63 && value < 0x1p64)  // the bits, as the arg holds them
      return int_const(dtype, static_cast<int64_t>(static_cast<uint64_t>(value)));
    if (!std::isfinite(value) || std::fabs(value) > 9.2e18)
      throw Error("constant " + format_double(value) + " does not fit " + to_string(dtype));
    return int_const(dtype, static_cast<int64_t>(value));
  }
  value = fp::round_to(dtype, value);
  if (std::isnan(value)) value = std::copysign(std::numeric_limits<double>::quiet_NaN(), value);  // one NaN per sign
  return make(Ops::CONST, dtype, {}, Arg(value));
}

UOp UOp::int_const(DType dtype, int64_t value) {
  if (dtype.is_int() && dtype.itemsize() < 8) value = wrap_int(dtype, static_cast<uint64_t>(value));  // uint64: the arg holds the bits
  return make(Ops::CONST, dtype, {}, Arg(value));
}

UOp UOp::range(UOp end, int64_t id, AxisType axis, std::vector<int64_t> sub_ids) {
  ArgTuple arg{Arg(id)};
  for (int64_t s : sub_ids) arg.emplace_back(s);
  arg.emplace_back(axis);
  return make(Ops::RANGE, dtypes::index, {end}, Arg(std::move(arg)));
}

UOp UOp::range(int64_t end, int64_t id, AxisType axis, std::vector<int64_t> sub_ids) {
  return range(index(end), id, axis, std::move(sub_ids));
}

UOp UOp::variable(const std::string& name, int64_t lo, int64_t hi, DType dtype) {
  return make(Ops::DEFINE_VAR, dtype, {}, Arg(ArgTuple{Arg(name), Arg(lo), Arg(hi)}));
}

UOp UOp::sink(std::vector<UOp> srcs, Arg names) { return make(Ops::SINK, dtypes::void_, std::move(srcs), std::move(names)); }

UOp UOp::const_like(double value) const { return cnst(n_->dtype.base(), value); }
UOp UOp::const_like(int64_t value) const {
  DType d = n_->dtype.base();
  return d.is_int() ? int_const(d, value) : cnst(d, static_cast<double>(value));
}
UOp UOp::bind(UOp value) const { return make(Ops::BIND, n_->dtype, {*this, value}); }

UOp UOp::alu(Ops op, std::vector<UOp> rest) const {
  std::vector<UOp> src{*this};
  src.insert(src.end(), rest.begin(), rest.end());
  DType out = is_comparison(op) ? dtypes::bool_ : n_->dtype;
  return make(op, out, std::move(src));
}

UOp UOp::where(UOp t, UOp f) const { return make(Ops::WHERE, t->dtype, {*this, t, f}); }
UOp UOp::cast(DType d) const { return d == n_->dtype ? *this : make(Ops::CAST, d, {*this}); }

UOp UOp::reduce(std::vector<UOp> ranges, Ops op) const {
  ranges.insert(ranges.begin(), *this);
  return make(Ops::REDUCE, n_->dtype, std::move(ranges), Arg(op));
}
UOp UOp::reduce_backward(std::vector<UOp> ranges, Ops op) const {
  ranges.insert(ranges.begin(), *this);
  return make(Ops::REDUCE_BACKWARD, n_->dtype, std::move(ranges), Arg(op));
}
UOp UOp::after(std::vector<UOp> deps) const {
  deps.insert(deps.begin(), *this);
  return make(Ops::AFTER, n_->dtype, std::move(deps));
}
UOp UOp::store(UOp value) const { return make(Ops::STORE, dtypes::void_, {*this, value}); }
UOp UOp::end(std::vector<UOp> ranges) const {
  ranges.insert(ranges.begin(), *this);
  return make(Ops::END, dtypes::void_, std::move(ranges));
}
UOp UOp::load() const { return make(Ops::LOAD, n_->dtype.base(), {*this}); }
UOp UOp::index(std::vector<UOp> idx) const {
  idx.insert(idx.begin(), *this);
  return make(Ops::INDEX, n_->dtype, std::move(idx));
}

int64_t UOp::vmin() const { return n_->lo; }
int64_t UOp::vmax() const { return n_->hi; }
bool UOp::is_const() const { return n_->op == Ops::CONST; }

double UOp::const_value() const {
  const Arg& a = n_->arg;
  if (const bool* b = a.get_if<bool>()) return *b ? 1.0 : 0.0;
  if (const int64_t* i = a.get_if<int64_t>()) return static_cast<double>(*i);
  if (const double* d = a.get_if<double>()) return *d;
  return std::numeric_limits<double>::quiet_NaN();  // a malformed CONST; the verifier rejects it
}

UOp operator+(UOp a, UOp b) { return a.alu(Ops::ADD, {b}); }
UOp operator-(UOp a, UOp b) { return a.alu(Ops::SUB, {b}); }
UOp operator*(UOp a, UOp b) { return a.alu(Ops::MUL, {b}); }
UOp operator+(UOp a, int64_t b) { return a + a.const_like(b); }
UOp operator-(UOp a, int64_t b) { return a - a.const_like(b); }
UOp operator*(UOp a, int64_t b) { return a * a.const_like(b); }
UOp operator+(int64_t a, UOp b) { return b.const_like(a) + b; }
UOp operator-(int64_t a, UOp b) { return b.const_like(a) - b; }
UOp operator*(int64_t a, UOp b) { return b.const_like(a) * b; }

namespace {

std::vector<UOp> postorder(const std::vector<UOp>& roots, bool after_deps_first) {
  std::vector<UOp> order;
  NodeSet seen;  // on the stack or emitted
  std::vector<std::pair<UOp, size_t>> stack;
  for (UOp r : roots) {
    if (!seen.insert(r.get())) continue;
    stack.emplace_back(r, 0);
    while (!stack.empty()) {
      auto& [u, next] = stack.back();
      if (next < u->src.size()) {
        size_t i = next++;
        if (after_deps_first && u->op == Ops::AFTER) i = (i + 1) % u->src.size();  // deps, then the value
        UOp c = u->src[i];
        if (seen.insert(c.get())) stack.emplace_back(c, 0);
        continue;
      }
      order.push_back(u);
      stack.pop_back();
    }
  }
  return order;
}

}  // namespace

std::vector<UOp> toposort(const std::vector<UOp>& roots) { return postorder(roots, false); }
std::vector<UOp> toposort(UOp root) { return postorder({root}, false); }
std::vector<UOp> execution_order(UOp root) { return postorder({root}, true); }

bool mentions(UOp root, UOp node) {
  for (UOp u : toposort(root))
    if (u == node) return true;
  return false;
}

std::string range_name(UOp r) {
  const ArgTuple* t = r->arg.tuple();
  if (!t || t->empty()) return "?";
  std::string s;
  for (size_t i = 0; i + 1 < t->size(); ++i) {
    const int64_t* id = (*t)[i].get_if<int64_t>();
    if (!id) return "?";
    if (i) s += '_';
    // -(INT64_MIN) overflows; spell its magnitude by hand.
    if (*id == std::numeric_limits<int64_t>::min()) s += "m9223372036854775808";
    else s += *id >= 0 ? std::to_string(*id) : "m" + std::to_string(-*id);
  }
  return s;
}

AxisType range_axis(UOp r) {
  const ArgTuple* t = r->arg.tuple();
  if (t && !t->empty())
    if (const AxisType* a = t->back().get_if<AxisType>()) return *a;
  return AxisType::LOOP;
}

size_t uop_table_size() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.nodes.size();
}

void reset_uop_table() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.nodes.clear();
}

}  // namespace ow
