#include "uop/scan_form.h"

#include <limits>

#include "uop/floats.h"
#include "uop/shape.h"
#include "uop/symbolic.h"

namespace ow {

UOp reduce_identity(Ops op, DType dt) {
  if (op == Ops::ADD) return UOp::cnst(dt, 0);
  if (op == Ops::MUL) return UOp::cnst(dt, 1);
  if (dt.is_narrow_float() && !fp::format_of(dt).has_inf) {  // fp8e4m3: its lowest finite value
    const fp::Format& f = fp::format_of(dt);
    return UOp::cnst(dt, -static_cast<double>(fp::to_float(f, f.max_finite_bits())));
  }
  if (dt.is_float()) return UOp::cnst(dt, -std::numeric_limits<double>::infinity());
  if (dt.is_bool() || dt.is_unsigned()) return UOp::cnst(dt, 0);  // the lowest value
  return UOp::int_const(dt, int_limits(dt).first);
}

namespace {
bool is_shaped(UOp u) { return u->shape.kind == ShapeInfo::Kind::Shaped; }
std::vector<UOp> dims_of(UOp u) { return is_shaped(u) ? u->shape.dims : std::vector<UOp>{}; }
UOp extent(UOp d) { return d->op == Ops::RANGE ? d->src[0] : d; }
UOp ones_like(UOp x) { return broadcast(UOp::cnst(dtypes::bool_, 1), dims_of(x)); }
UOp fold(Ops op, UOp acc, UOp x) { return UOp::make(op, acc->dtype, {acc, x}); }
UOp group(std::vector<UOp> steps) { return UOp::make(Ops::GROUP, dtypes::void_, std::move(steps)); }

UOp shrink(UOp x, const std::vector<std::pair<UOp, UOp>>& box) {
  std::vector<UOp> src{x};
  for (auto& [b, e] : box) src.insert(src.end(), {b, e});
  return UOp::make(Ops::SHRINK, x->dtype, src);
}
}  // namespace

std::vector<std::pair<UOp, UOp>> pad_box(UOp pad) {
  std::vector<UOp> inner = dims_of(pad->src[0]);
  std::vector<std::pair<UOp, UOp>> box;
  for (size_t i = 0; i < inner.size(); ++i) box.push_back({pad->src[1 + 2 * i], simplify(pad->src[1 + 2 * i] + extent(inner[i]))});
  return box;
}

UOp footprint(UOp x, std::map<const UOpNode*, UOp>& memo) {
  if (auto it = memo.find(x.get()); it != memo.end()) return it->second;
  UOp fp;
  if (x->op == Ops::PAD) {
    UOp inner = footprint(x->src[0], memo);
    std::vector<UOp> src = x->src;
    src[0] = inner ? inner : ones_like(x->src[0]);
    fp = UOp::make(Ops::PAD, dtypes::bool_, src);
  } else if (is_movement(x->op) || x->op == Ops::CAST || x->op == Ops::BITCAST || x->op == Ops::CONTIGUOUS || x->op == Ops::AFTER) {
    if (UOp inner = footprint(x->src[0], memo)) {
      std::vector<UOp> src = x->src;
      src[0] = inner;
      fp = is_movement(x->op) ? UOp::make(x->op, dtypes::bool_, src, x->arg) : inner;
    }
  } else if (is_alu(x->op)) {
    bool all = true;
    for (UOp s : x->src) {
      if (!is_shaped(s)) continue;
      UOp f = footprint(s, memo);
      if (!f) all = false;
      else fp = fp ? UOp::make(Ops::OR, dtypes::bool_, {fp, f}) : f;
    }
    if (!all) fp = UOp();
  }
  return memo[x.get()] = fp;
}

ScanForm assign_scan_form(UOp target, Ops op, UOp x, const std::function<UOp(const std::string&, DType)>& scratch) {
  UOp acc = scratch("acc", x->dtype);
  std::map<const UOpNode*, UOp> memo;
  UOp init = acc.store(reduce_identity(op, x->dtype));
  if (op == Ops::ADD && x->op == Ops::PAD && !footprint(x->src[0], memo)) {
    auto box = pad_box(x);
    UOp abox = shrink(acc, box);
    return {init, group({abox.store(fold(op, abox, x->src[0])), shrink(target, box).store(abox)}), target.store(acc)};
  }
  UOp written = scratch("w", dtypes::bool_);
  UOp fp = footprint(x, memo);
  UOp now = fp ? UOp::make(Ops::OR, dtypes::bool_, {written, fp}) : UOp::cnst(dtypes::bool_, 1);
  return {group({init, written.store(UOp::cnst(dtypes::bool_, 0))}),
          group({acc.store(fold(op, acc, x)), written.store(now), target.store(written.where(acc, target))}), target.store(acc)};
}

}  // namespace ow
