// Reductions on values: accumulate, reduce_axes and the fused multiply-add fold reduce_mul_add.
// Every fold runs in a fixed order (row-major over the reduced indices) in the value's dtype;
// this file is compiled with -ffp-contract=off so a*b+c is never fused into one rounding.

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

#include "interp/dispatch.h"
#include "interp/scalar_ops.h"
#include "interp/strided.h"
#include "interp/value.h"

namespace ow::interp {

using sop::with_fold;
using sop::wrap_add;
using sop::wrap_mul;

namespace {
// acc (contiguous, shape S) = op(acc, x) for a strided x of shape S.
template <class T> void accumulate_t(Ops op, Value& acc, const Value& x) {
  Value prev = acc;
  std::array<const Value*, 2> in{&prev, &x};
  with_fold<T>(op, [&](auto f) { map_n<T, T, 2>(acc, in, f); });
}

// Splits x's axes into reduced (outer loop, row-major) and kept ones.
struct Split {
  std::vector<int64_t> red_shape, red_strides, kept_shape;
};

Split split_axes(const View& v, const std::vector<int64_t>& axes) {
  Split s;
  for (size_t i = 0; i < v.shape.size(); ++i) {
    bool red = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
    if (red) {
      s.red_shape.push_back(v.shape[i]);
      s.red_strides.push_back(v.strides[i]);
      s.kept_shape.push_back(1);
    } else {
      s.kept_shape.push_back(v.shape[i]);
    }
  }
  return s;
}

// Runs body(delta_a, delta_b) for every reduced index in row-major order, where each delta is
// the offset of that index in operand a's (or b's) reduced axes.
template <class F> void for_each_reduced(const Split& sa, const Split& sb, F body) {
  int64_t total = 1;
  for (int64_t n : sa.red_shape) total *= n;
  std::vector<int64_t> idx(sa.red_shape.size(), 0);
  int64_t da = 0, db = 0;
  for (int64_t it = 0; it < total; ++it) {
    body(da, db);
    for (size_t d = sa.red_shape.size(); d-- > 0;) {
      da += sa.red_strides[d];
      db += sb.red_strides[d];
      if (++idx[d] < sa.red_shape[d]) break;
      da -= sa.red_strides[d] * sa.red_shape[d];
      db -= sb.red_strides[d] * sa.red_shape[d];
      idx[d] = 0;
    }
  }
}

// x restricted to one reduced index: kept axes keep their strides, reduced axes become size 1.
Value slice_at(const Value& x, const Split& s, int64_t delta) {
  Value v = x;
  v.view.offset += delta;
  v.view.shape = s.kept_shape;
  v.poison = nullptr;
  v.footprint = nullptr;
  return v;
}

StoragePtr reduce_poison(const Value& x, const std::vector<int64_t>& axes) {
  if (!x.poison) return nullptr;
  return reduce_axes(Ops::MAX, mask_view(x, x.poison), axes).data;
}
}  // namespace

void accumulate(Ops op, Value& acc, const Value& x_raw) {
  Value x = broadcast_to(x_raw, acc.shape());
  dispatch(acc.dtype, [&](auto tag) { accumulate_t<typename decltype(tag)::type>(op, acc, x); });
  if (x.poison) {
    std::vector<const Value*> in{&acc, &x};
    acc.poison = combine(MaskRule::AnyPoison, in, &Value::poison, acc.shape());
  }
}

namespace {
// The fold of reduce_axes when at most one kept axis is longer than 1 (a sum of rows, a row of
// sums): the same f(acc[i], x) in the same order as accumulate_t, straight on the storage, instead
// of a Value per reduced index (which cost ~30 ns an element on a 16M-element sum).
template <class T, class F> void fold_rows(const Value& x, const Split& s, size_t kept, Value& acc, F f) {
  T* pacc = acc.data->as<T>();
  const T* px = std::as_const(*x.data).as<T>() + x.view.offset;
  int64_t n = s.kept_shape.empty() ? 1 : s.kept_shape[kept], sx = s.kept_shape.empty() ? 0 : x.view.strides[kept];
  for_each_reduced(s, s, [&](int64_t delta, int64_t) {
    const T* row = px + delta;
    for (int64_t i = 0; i < n; ++i) pacc[i] = f(pacc[i], row[i * sx]);
  });
}

// The one kept axis longer than 1 (0 when there is none), or nullopt when there are several.
std::optional<size_t> single_kept_axis(const Split& s) {
  std::optional<size_t> k;
  for (size_t i = 0; i < s.kept_shape.size(); ++i)
    if (s.kept_shape[i] != 1) {
      if (k) return std::nullopt;
      k = i;
    }
  return k.value_or(0);
}
}  // namespace

Value reduce_axes(Ops op, const Value& x, const std::vector<int64_t>& axes) {
  Split s = split_axes(x.view, axes);
  Value acc = identity_like(op, x.dtype, s.kept_shape);
  dispatch(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (auto k = single_kept_axis(s)) return with_fold<T>(op, [&](auto f) { fold_rows<T>(x, s, *k, acc, f); });
    for_each_reduced(s, s, [&](int64_t delta, int64_t) { accumulate_t<T>(op, acc, slice_at(x, s, delta)); });
  });
  acc.poison = reduce_poison(x, axes);
  return acc;
}

Value reduce_mul_add(const Value& a, const Value& b, const std::vector<int64_t>& axes) {
  Split s = split_axes(a.view, axes);
  Split sb = split_axes(b.view, axes);
  Value acc = identity_like(Ops::ADD, a.dtype, s.kept_shape);
  dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* pacc = acc.data->as<T>();
    const T* pa = std::as_const(*a.data).as<T>();
    const T* pb = std::as_const(*b.data).as<T>();
    // One pass per reduced index keeps each output's sum in index order; the inner loop runs
    // across independent outputs, so it vectorizes without reordering any single sum.
    auto row = [&](T* d, const T* x, const T* y, int64_t n, int64_t sx, int64_t sy) {
      if (sx == 1 && sy == 1) {
        for (int64_t i = 0; i < n; ++i) d[i] = wrap_add<T>(d[i], wrap_mul<T>(x[i], y[i]));
      } else if (sx == 0 && sy == 1) {
        T xv = *x;
        for (int64_t i = 0; i < n; ++i) d[i] = wrap_add<T>(d[i], wrap_mul<T>(xv, y[i]));
      } else if (sx == 1 && sy == 0) {
        T yv = *y;
        for (int64_t i = 0; i < n; ++i) d[i] = wrap_add<T>(d[i], wrap_mul<T>(x[i], yv));
      } else {
        for (int64_t i = 0; i < n; ++i) d[i] = wrap_add<T>(d[i], wrap_mul<T>(x[i * sx], y[i * sy]));
      }
    };
    if (auto k = single_kept_axis(s)) {  // the usual matmul/gemv case: one strided row per reduced index
      bool none = s.kept_shape.empty();
      int64_t n = none ? 1 : s.kept_shape[*k], sx = none ? 0 : a.view.strides[*k], sy = none ? 0 : b.view.strides[*k];
      for_each_reduced(s, sb, [&](int64_t da, int64_t db) { row(pacc, pa + a.view.offset + da, pb + b.view.offset + db, n, sx, sy); });
      return;
    }
    for_each_reduced(s, sb, [&](int64_t da, int64_t db) {
      Value va = slice_at(a, s, da), vb = slice_at(b, sb, db);
      std::array<const std::vector<int64_t>*, 3> strides{&acc.view.strides, &va.view.strides, &vb.view.strides};
      walk<3>(acc.view.shape, strides, {0, va.view.offset, vb.view.offset},
              [&](const auto& o, const auto& st, int64_t n) { row(pacc + o[0], pa + o[1], pb + o[2], n, st[1], st[2]); });
    });
  });
  StoragePtr pa = reduce_poison(a, axes), pb = reduce_poison(b, axes);
  if (pa || pb) {
    Value ma = acc, mb = acc;
    ma.poison = pa;
    mb.poison = pb;
    acc.poison = combine(MaskRule::AnyPoison, {&ma, &mb}, &Value::poison, acc.shape());
  }
  return acc;
}

}  // namespace ow::interp
