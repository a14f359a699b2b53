#include "lower/index_math.h"
#include "lower/lower.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "uop/error.h"
#include "uop/symbolic.h"
#include "uop/shape.h"
#include "uop/verify.h"

namespace ow::lower {

UOp dim_extent(UOp d) { return d->op == Ops::RANGE ? d->src[0] : d; }

bool is_shaped(UOp u) { return u->shape.kind == ShapeInfo::Kind::Shaped; }

std::vector<UOp> dims_of(UOp u) { return is_shaped(u) ? u->shape.dims : std::vector<UOp>{}; }

std::optional<int64_t> static_size(UOp d) {
  UOp e = dim_extent(d);
  if (e->op == Ops::CONST) return static_cast<int64_t>(e.const_value());
  return std::nullopt;
}

UOp linearize(const std::vector<UOp>& idx, const std::vector<UOp>& dims) {
  UOp lin = UOp::index(0), stride = UOp::index(1);
  for (size_t i = dims.size(); i-- > 0;) {
    lin = lin + idx[i] * stride;
    stride = stride * dim_extent(dims[i]);
  }
  return simplify(lin);
}

std::vector<UOp> unlinearize(UOp lin, const std::vector<UOp>& dims) {
  std::vector<UOp> out(dims.size());
  UOp stride = UOp::index(1);
  for (size_t i = dims.size(); i-- > 0;) {
    UOp e = dim_extent(dims[i]);
    if (e->op != Ops::CONST) e = e.maximum(1);  // a size that may be 0: never a division by zero
    UOp q = i == dims.size() - 1 ? lin : lin.idiv(stride);
    out[i] = simplify(i == 0 ? q : q.mod(e));
    stride = simplify(stride * e);
  }
  return out;
}

UOp gate_and(UOp a, UOp b) {
  if (!a) return b;
  if (!b) return a;
  return simplify(UOp::make(Ops::AND, dtypes::bool_, {a, b}));
}

UOp in_range(UOp i, UOp lo, UOp hi) {
  UOp ge = (lo - 1).lt(i);  // lo <= i  as  lo-1 < i (integers)
  return gate_and(simplify(ge), simplify(i.lt(hi)));
}

std::optional<IndexParts> index_parts(UOp u) {
  if (u->op != Ops::INDEX || u->dtype.ptr || u->src.empty()) return std::nullopt;
  UOp x = u->src[0];
  size_t rank = dims_of(x).size();
  if (u->src.size() == 1 + rank) return IndexParts{x, {u->src.begin() + 1, u->src.end()}, UOp()};
  if (u->src.size() == 2 + rank) return IndexParts{x, {u->src.begin() + 1, u->src.end() - 1}, u->src.back()};
  throw Error("lowering: INDEX with " + std::to_string(u->src.size() - 1) + " indices into a value of rank " + std::to_string(rank));
}

std::string value_text(UOp u) {
  std::string s = std::string(op_name(u->op)) + " " + to_string(u->dtype);
  if (u->shape.kind == ShapeInfo::Kind::Shaped) return s + " of shape " + render_shape(u->shape.dims);
  if (u->shape.kind == ShapeInfo::Kind::Unshaped) return s;
  for (UOp v : toposort(u)) {  // name the node whose own shape is wrong, not one that inherits it
    if (v->shape.kind != ShapeInfo::Kind::Invalid) continue;
    if (v != u) s += " over " + std::string(op_name(v->op)) + " " + to_string(v->dtype);
    return s + " (" + v->shape.error + ")";
  }
  return s;
}

UOp make_index(UOp x, std::vector<UOp> idx, UOp gate) {
  // A value without a valid shape is not a scalar: indexing it as one would leave a tensor op
  // in a kernel (a BUFFERIZE there crashed kernelize), so it is a refusal naming the node. (A
  // slice of a collected range dimension, which gradients take, gets here once the range is bound.)
  if (x->shape.kind == ShapeInfo::Kind::Invalid) throw unsupported(Reason::InvalidShape, "an index into " + value_text(x) + ", whose shape is invalid once its ranges are bound");
  UOp zero = UOp::cnst(x->dtype, 0);
  if (gate) gate = simplify(gate);
  if (gate && gate->op == Ops::CONST) {
    if (gate.const_value() == 0) return zero;
    gate = UOp();
  }
  if (!is_shaped(x)) return gate ? gate.where(x, zero) : x;
  std::vector<UOp> src{x};
  for (UOp i : idx) src.push_back(simplify(i));
  if (gate) src.push_back(gate);
  return UOp::make(Ops::INDEX, x->dtype, std::move(src));
}

bool is_store_value(UOp u) { return u->op == Ops::BUFFERIZE && u->tag.is<std::string>() && u->tag.as<std::string>() == "store"; }

std::vector<UOp> sorted_ranges(std::vector<UOp> rs) {
  std::sort(rs.begin(), rs.end(), StableLess());
  return rs;
}

std::vector<UOp> free_loop_ranges(UOp u) {
  std::vector<UOp> out;
  for (UOp r : free_ranges(u))
    if (range_axis(r) != AxisType::OUTER) out.push_back(r);
  return sorted_ranges(out);
}

std::vector<UOp> free_outer_ranges(UOp u) {
  std::vector<UOp> out;
  for (UOp r : free_ranges(u))
    if (range_axis(r) == AxisType::OUTER) out.push_back(r);
  return sorted_ranges(out);
}

namespace {
// `v` limited to the values of range `r`. A value a range is bound to comes from an index that
// may leave r's domain where its gate is false (the rows of a vmap's result no iteration
// writes); nothing is read there, but the nodes built with it must still have a shape for every
// binding: a SHRINK at r+1 has to fit its source also for the rows past the last slot.
UOp within_range(UOp v, UOp r) {
  int64_t hi = r.vmax();
  if (hi < 0) return v;  // a range without values binds nothing
  if (v.vmax() > hi) v = v.neg().maximum(-hi).neg();  // min(v, hi)
  if (v.vmin() < 0) v = v.maximum(0);
  return simplify(v);
}
}  // namespace

UOp bind_ranges(UOp root, const std::vector<std::pair<UOp, UOp>>& map) {
  std::unordered_map<const UOpNode*, UOp> repl;
  for (auto& [k, v] : map) repl[k.get()] = within_range(v, k);
  auto closes_one = [&](UOp u) {
    if (u->op != Ops::BUFFERIZE && u->op != Ops::REDUCE && u->op != Ops::END) return false;
    return std::any_of(u->src.begin() + 1, u->src.end(), [&](UOp r) { return std::any_of(map.begin(), map.end(), [&](auto& m) { return m.first == r; }); });
  };
  for (UOp u : toposort(root)) {
    if (repl.count(u.get())) continue;
    if (closes_one(u)) {
      repl[u.get()] = u;
      continue;
    }
    std::vector<UOp> src;
    for (UOp s : u->src) src.push_back(repl.at(s.get()));
    repl[u.get()] = u.replace_src(std::move(src));
  }
  return repl.at(root.get());
}

bool has_outer(UOp reduce) {
  return std::any_of(reduce->src.begin() + 1, reduce->src.end(), [](UOp r) { return range_axis(r) == AxisType::OUTER; });
}


bool runs_effect(UOp u) {
  for (UOp v : toposort(u))
    if (is_effect(v->op)) return true;
  return false;
}

bool is_effect_or_outer_fold(UOp u) { return is_effect(u->op) || (u->op == Ops::REDUCE && has_outer(u)); }

bool has_effect_or_outer_fold(UOp body) {
  for (UOp u : toposort(body))
    if (is_effect_or_outer_fold(u)) return true;
  return false;
}

namespace {
// The constant k with `e == sign * r + k`, if e has that form.
std::optional<int64_t> offset_from(UOp e, UOp r, int64_t sign) {
  UOp k = simplify(e - r * sign);
  if (k->op != Ops::CONST || !k->dtype.is_int()) return std::nullopt;
  return static_cast<int64_t>(k.const_value());
}
}  // namespace

std::optional<SlotMap> slot_map(UOp reduce) {
  if (reduce->op != Ops::REDUCE || reduce->src.size() != 2 || reduce->arg.as<Ops>() != Ops::ADD) return std::nullopt;
  UOp pad = reduce->src[0], r = reduce->src[1];
  auto slots = static_size(r->src[0]);
  if (pad->op != Ops::PAD || !is_shaped(pad->src[0]) || !slots) return std::nullopt;
  SlotMap map{pad->src[0], r, 0, 0};
  std::vector<UOp> dims = dims_of(map.y);
  bool found = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    UOp b = pad->src[1 + 2 * i], e = pad->src[2 + 2 * i];
    if (mentions(dims[i], r)) return std::nullopt;
    if (!mentions(b, r) && !mentions(e, r)) continue;
    // slot r is [before + r, before + r + 1) and the last slot still fits: after_0 + 1 >= slots
    auto before = offset_from(b, r, 1), after = offset_from(e, r, -1);
    if (found || static_size(dims[i]) != 1 || !before || !after || *before < 0 || *after + 1 < *slots) return std::nullopt;
    found = true;
    map.axis = i;
    map.before = *before;
  }
  if (!found) return std::nullopt;  // every iteration adds into the same place: a real fold
  return map;
}

}  // namespace ow::lower
