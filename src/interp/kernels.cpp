// Arithmetic on values: elementwise ALU ops, casts, pads, reductions and strided copies.
// Every fold runs in a fixed order (row-major over the reduced indices) in the value's dtype;
// this file is compiled with -ffp-contract=off so a*b+c is never fused into one rounding.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>

#include "interp/dispatch.h"
#include "interp/scalar_ops.h"
#include "interp/value.h"

namespace ow::interp {

namespace {

// Calls inner(offsets, last_strides, n) once per innermost row of `shape`, where offsets[k] is
// the element offset of operand k at the row's start. Operands are given by their strides.
// Size-1 axes are dropped and axes that are contiguous for every operand are merged, so rows
// are as long as the layouts allow.
template <size_t K, class Inner>
void walk(const std::vector<int64_t>& shape, const std::array<const std::vector<int64_t>*, K>& strides,
          std::array<int64_t, K> offs, Inner&& inner) {
  std::vector<int64_t> sh;
  std::vector<std::array<int64_t, K>> st;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return;
    if (shape[i] == 1) continue;
    std::array<int64_t, K> s;
    bool merge = !sh.empty();
    for (size_t k = 0; k < K; ++k) {
      s[k] = (*strides[k])[i];
      merge = merge && st.back()[k] == s[k] * shape[i];
    }
    if (merge) {
      sh.back() *= shape[i];
      st.back() = s;
    } else {
      sh.push_back(shape[i]);
      st.push_back(s);
    }
  }
  size_t nd = sh.size();
  if (nd == 0) {
    inner(offs, std::array<int64_t, K>{}, int64_t{1});
    return;
  }
  std::vector<int64_t> idx(nd, 0);
  while (true) {
    inner(offs, st[nd - 1], sh[nd - 1]);
    int d = static_cast<int>(nd) - 2;
    for (; d >= 0; --d) {
      size_t du = static_cast<size_t>(d);
      for (size_t k = 0; k < K; ++k) offs[k] += st[du][k];
      if (++idx[du] < sh[du]) break;
      for (size_t k = 0; k < K; ++k) offs[k] -= st[du][k] * sh[du];
      idx[du] = 0;
    }
    if (d < 0) return;
  }
}

using sop::DivByZero;
using sop::idiv_op;
using sop::max_op;
using sop::mod_op;
using sop::with_fold;
using sop::wrap_add;
using sop::wrap_mul;
using sop::wrap_sub;

// Applies f elementwise: out (contiguous) = f(in[0], in[1], ...), each input a strided view.
template <class R, class T, size_t N, class F>
void map_n(Value& out, const std::array<const Value*, N>& in, F f) {
  std::array<const std::vector<int64_t>*, N + 1> strides{&out.view.strides};
  std::array<int64_t, N + 1> offs{out.view.offset};
  for (size_t k = 0; k < N; ++k) {
    strides[k + 1] = &in[k]->view.strides;
    offs[k + 1] = in[k]->view.offset;
  }
  R* po = out.data->as<R>();
  std::array<const T*, N> pin;
  for (size_t k = 0; k < N; ++k) pin[k] = std::as_const(*in[k]->data).template as<T>();  // a read keeps counts (value.h)
  walk<N + 1>(out.view.shape, strides, offs, [&](const auto& o, const auto& s, int64_t n) {
    R* dst = po + o[0];
    bool unit = s[0] == 1;
    for (size_t k = 0; k < N; ++k) unit = unit && s[k + 1] == 1;
    if constexpr (N == 2) {
      const T* a = pin[0] + o[1];
      const T* b = pin[1] + o[2];
      if (unit) {
        for (int64_t i = 0; i < n; ++i) dst[i] = f(a[i], b[i]);
        return;
      }
      if (s[0] == 1 && s[1] == 1 && s[2] == 0) {
        T bv = *b;
        for (int64_t i = 0; i < n; ++i) dst[i] = f(a[i], bv);
        return;
      }
      if (s[0] == 1 && s[1] == 0 && s[2] == 1) {
        T av = *a;
        for (int64_t i = 0; i < n; ++i) dst[i] = f(av, b[i]);
        return;
      }
    }
    if constexpr (N == 1) {
      const T* a = pin[0] + o[1];
      if (unit) {
        for (int64_t i = 0; i < n; ++i) dst[i] = f(a[i]);
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      std::array<T, N> args;
      for (size_t k = 0; k < N; ++k) args[k] = pin[k][o[k + 1] + i * s[k + 1]];
      dst[i * s[0]] = std::apply(f, args);
    }
  });
}

template <class T> Value unary(Ops op, DType out_dt, const Value& a) {
  Value out = alloc(out_dt, a.shape());
  std::array<const Value*, 1> in{&a};
  switch (op) {
    case Ops::NEG: map_n<T, T, 1>(out, in, sop::neg_op<T>); break;
    case Ops::RECIPROCAL: map_n<T, T, 1>(out, in, sop::recip_op<T>); break;
    case Ops::SQRT: map_n<T, T, 1>(out, in, sop::sqrt_op<T>); break;
    case Ops::EXP2: map_n<T, T, 1>(out, in, sop::exp2_op<T>); break;
    case Ops::LOG2: map_n<T, T, 1>(out, in, sop::log2_op<T>); break;
    case Ops::SIN: map_n<T, T, 1>(out, in, sop::sin_op<T>); break;
    case Ops::TRUNC: map_n<T, T, 1>(out, in, sop::trunc_op<T>); break;
    default: throw Error(std::string("the interpreter has no unary op ") + std::string(op_name(op)));
  }
  return out;
}

template <class T> Value binary(Ops op, DType out_dt, const Value& a, const Value& b) {
  Value out = alloc(out_dt, a.shape());
  std::array<const Value*, 2> in{&a, &b};
  switch (op) {
    case Ops::ADD: map_n<T, T, 2>(out, in, wrap_add<T>); break;
    case Ops::SUB: map_n<T, T, 2>(out, in, wrap_sub<T>); break;
    case Ops::MUL: map_n<T, T, 2>(out, in, wrap_mul<T>); break;
    case Ops::MAX: map_n<T, T, 2>(out, in, max_op<T>); break;
    case Ops::FDIV: map_n<T, T, 2>(out, in, sop::fdiv_op<T>); break;
    case Ops::IDIV: map_n<T, T, 2>(out, in, idiv_op<T>); break;
    case Ops::MOD: map_n<T, T, 2>(out, in, mod_op<T>); break;
    case Ops::POW: map_n<T, T, 2>(out, in, sop::pow_op<T>); break;
    case Ops::CMPLT: map_n<uint8_t, T, 2>(out, in, sop::cmplt_op<T>); break;
    case Ops::CMPNE: map_n<uint8_t, T, 2>(out, in, sop::cmpne_op<T>); break;
    case Ops::CMPEQ: map_n<uint8_t, T, 2>(out, in, sop::cmpeq_op<T>); break;
    case Ops::AND: if constexpr (std::is_integral_v<T>) { map_n<T, T, 2>(out, in, sop::and_op<T>); break; } [[fallthrough]];
    case Ops::OR: if constexpr (std::is_integral_v<T>) { if (op == Ops::OR) { map_n<T, T, 2>(out, in, sop::or_op<T>); break; } } [[fallthrough]];
    case Ops::XOR: if constexpr (std::is_integral_v<T>) { if (op == Ops::XOR) { map_n<T, T, 2>(out, in, sop::xor_op<T>); break; } } [[fallthrough]];
    case Ops::SHL: if constexpr (sop::is_integer_v<T>) { if (op == Ops::SHL) { map_n<T, T, 2>(out, in, sop::shl_op<T>); break; } } [[fallthrough]];
    case Ops::SHR: if constexpr (sop::is_integer_v<T>) { if (op == Ops::SHR) { map_n<T, T, 2>(out, in, sop::shr_op<T>); break; } } [[fallthrough]];
    case Ops::THREEFRY: if constexpr (std::is_same_v<T, uint64_t>) { if (op == Ops::THREEFRY) { map_n<T, T, 2>(out, in, sop::threefry2x32_20); break; } } [[fallthrough]];
    default: throw Error(std::string("the interpreter has no ") + std::string(op_name(op)) + " for " + to_string(out_dt));
  }
  return out;
}

// A mask (poison or footprint storage) seen through v's view, as a bool value without masks.
}  // namespace

Value mask_view(const Value& v, const StoragePtr& mask) {
  Value m;
  m.dtype = dtypes::bool_;
  m.view = v.view;
  m.data = mask;
  m.unshaped = v.unshaped;
  return m;
}

namespace {

// Combines masks (poison or footprint) of the inputs into the output's mask.
enum class MaskRule { AnyPoison, Footprint };

StoragePtr combine(MaskRule rule, const std::vector<const Value*>& in, StoragePtr Value::*field, const std::vector<int64_t>& shape) {
  bool any = false, all_shaped_masked = true;
  for (const Value* v : in) {
    if (v->*field) any = true;
    else if (!v->unshaped) all_shaped_masked = false;
  }
  if (!any || (rule == MaskRule::Footprint && !all_shaped_masked)) return nullptr;
  Value acc = alloc(dtypes::bool_, shape);
  for (const Value* v : in) {
    if (!(v->*field)) continue;
    Value m = broadcast_to(mask_view(*v, v->*field), shape);
    Value prev = acc;
    map_n<uint8_t, uint8_t, 2>(acc, std::array<const Value*, 2>{&prev, &m}, [](uint8_t x, uint8_t y) -> uint8_t { return x | y; });
  }
  return acc.data;
}

// WHERE poison: the condition's poison, plus the poison of the branch it selects.
StoragePtr where_poison(const Value& c, const Value& t, const Value& f, const std::vector<int64_t>& shape) {
  if (!c.poison && !t.poison && !f.poison) return nullptr;
  auto mask_of = [&](const Value& v) { return v.poison ? mask_view(v, v.poison) : broadcast_to(scalar(dtypes::bool_, 0), shape); };
  Value cp = mask_of(c), tp = mask_of(t), fp = mask_of(f);
  Value out = alloc(dtypes::bool_, shape);
  Value sel = alloc(dtypes::bool_, shape);
  map_n<uint8_t, uint8_t, 2>(sel, std::array<const Value*, 2>{&c, &tp}, [](uint8_t x, uint8_t y) -> uint8_t { return x ? y : 0; });
  Value sel2 = alloc(dtypes::bool_, shape);
  map_n<uint8_t, uint8_t, 2>(sel2, std::array<const Value*, 2>{&c, &fp}, [](uint8_t x, uint8_t y) -> uint8_t { return x ? 0 : y; });
  Value both = alloc(dtypes::bool_, shape);
  map_n<uint8_t, uint8_t, 2>(both, std::array<const Value*, 2>{&sel, &sel2}, [](uint8_t x, uint8_t y) -> uint8_t { return x | y; });
  map_n<uint8_t, uint8_t, 2>(out, std::array<const Value*, 2>{&both, &cp}, [](uint8_t x, uint8_t y) -> uint8_t { return x | y; });
  return out.data;
}

template <class T> Value ternary(Ops op, DType out_dt, const Value& c, const Value& a, const Value& b) {
  Value out = alloc(out_dt, a.shape());
  if (op == Ops::WHERE) {
    // the condition is uint8 while the branches are T: walk all four views together
    std::array<const std::vector<int64_t>*, 4> strides{&out.view.strides, &c.view.strides, &a.view.strides, &b.view.strides};
    std::array<int64_t, 4> offs{out.view.offset, c.view.offset, a.view.offset, b.view.offset};
    T* po = out.data->as<T>();
    const uint8_t* pc = std::as_const(*c.data).as<uint8_t>();
    const T* pa = std::as_const(*a.data).as<T>();
    const T* pb = std::as_const(*b.data).as<T>();
    walk<4>(out.view.shape, strides, offs, [&](const auto& o, const auto& s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) po[o[0] + i * s[0]] = pc[o[1] + i * s[1]] ? pa[o[2] + i * s[2]] : pb[o[3] + i * s[3]];
    });
    return out;
  }
  if (op == Ops::MULACC) {
    map_n<T, T, 3>(out, std::array<const Value*, 3>{&c, &a, &b}, sop::mulacc_op<T>);
    return out;
  }
  throw Error(std::string("the interpreter has no ternary op ") + std::string(op_name(op)));
}

}  // namespace

Value contiguous(const Value& v) {
  Value out = alloc(v.dtype, v.shape());
  dispatch(v.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_n<T, T, 1>(out, std::array<const Value*, 1>{&v}, [](T x) { return x; });
  });
  auto copy_mask = [&](StoragePtr Value::*field) {
    if (v.*field) out.*field = contiguous(mask_view(v, v.*field)).data;
  };
  copy_mask(&Value::poison);
  copy_mask(&Value::footprint);
  return out;
}

namespace {
// A fresh value of dtype `to`, element by element from v (per_types(out, from_tag, to_tag)
// fills it for the two element types), with v's masks: CAST and BITCAST.
template <class PerTypes> Value convert_elements(const Value& v, DType to, PerTypes per_types) {
  Value out = alloc(to, v.shape());
  out.unshaped = v.unshaped;
  dispatch(v.dtype, [&](auto from_tag) { dispatch(to, [&](auto to_tag) { per_types(out, from_tag, to_tag); }); });
  out.poison = combine(MaskRule::AnyPoison, {&v}, &Value::poison, v.shape());
  out.footprint = combine(MaskRule::Footprint, {&v}, &Value::footprint, v.shape());
  return out;
}
}  // namespace

Value cast(const Value& v, DType to) {
  return convert_elements(v, to, [&](Value& out, auto from_tag, auto to_tag) {
    using F = typename decltype(from_tag)::type;
    using T = typename decltype(to_tag)::type;
    map_n<T, F, 1>(out, std::array<const Value*, 1>{&v}, [](F x) { return convert<T>(x); });
  });
}

Value bitcast(const Value& v, DType to) {
  if (to.itemsize() != v.dtype.itemsize()) throw Error("BITCAST from " + to_string(v.dtype) + " to " + to_string(to) + " changes the size of an element");
  return convert_elements(v, to, [&](Value& out, auto from_tag, auto to_tag) {
    using F = typename decltype(from_tag)::type;
    using T = typename decltype(to_tag)::type;
    if constexpr (sizeof(T) == sizeof(F)) map_n<T, F, 1>(out, std::array<const Value*, 1>{&v}, sop::bitcast_op<T, F>);
  });
}

Value alu(Ops op, DType out_dt, const std::vector<const Value*>& in_raw, const std::vector<int64_t>& shape) {
  std::vector<Value> b;
  for (const Value* v : in_raw) b.push_back(broadcast_to(*v, shape));
  DType t = in_raw.size() == 3 && op == Ops::WHERE ? in_raw[1]->dtype : in_raw[0]->dtype;
  Value out;
  try {
    out = dispatch(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (b.size() == 1) return unary<T>(op, out_dt, b[0]);
      if (b.size() == 2) return binary<T>(op, out_dt, b[0], b[1]);
      return ternary<T>(op, out_dt, b[0], b[1], b[2]);
    });
  } catch (const DivByZero&) {
    throw Error("integer division by zero");
  } catch (const sop::BadShift& e) {
    throw Error(e.message());
  } catch (const sop::NegativeExponent& e) {
    throw Error(e.message());
  }
  out.unshaped = std::all_of(in_raw.begin(), in_raw.end(), [](const Value* v) { return v->unshaped; });
  out.poison = op == Ops::WHERE ? where_poison(b[0], b[1], b[2], shape) : combine(MaskRule::AnyPoison, in_raw, &Value::poison, shape);
  out.footprint = combine(MaskRule::Footprint, in_raw, &Value::footprint, shape);
  return out;
}

Value pad(const Value& v, const std::vector<std::pair<int64_t, int64_t>>& widths) {
  std::vector<int64_t> shape = v.shape();
  std::vector<std::pair<int64_t, int64_t>> inner;
  for (size_t i = 0; i < shape.size(); ++i) {
    inner.push_back({widths[i].first, widths[i].first + shape[i]});
    shape[i] += widths[i].first + widths[i].second;
  }
  Value out = alloc(v.dtype, shape);
  Value region = shrink_view(out, inner);
  write_through(region, v);
  if (v.poison) {  // write_through put the poison mask in out.poison already
    out.poison = region.poison;
  }
  Value fp = alloc(dtypes::bool_, shape);
  Value fp_region = shrink_view(fp, inner);
  Value inner_fp = v.footprint ? mask_view(v, v.footprint) : broadcast_to(scalar(dtypes::bool_, 1), v.shape());
  write_through(fp_region, inner_fp);
  out.footprint = fp.data;
  return out;
}

Value identity_like(Ops reduce_op, DType dtype, const std::vector<int64_t>& shape) {
  Value out = alloc(dtype, shape);
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T init = sop::identity<T>(reduce_op);
    std::fill(out.data->as<T>(), out.data->as<T>() + out.numel(), init);
  });
  return out;
}

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

namespace {

// Each element of v's storage is visited at most once: sorted by |stride|, every axis steps
// past the whole span of the smaller ones (always so for views made by movement ops but EXPAND).
bool injective(const View& v) {
  std::vector<std::pair<int64_t, int64_t>> axes;  // |stride|, extent
  for (size_t i = 0; i < v.shape.size(); ++i)
    if (v.shape[i] > 1) axes.push_back({std::abs(v.strides[i]), v.shape[i]});
  std::sort(axes.begin(), axes.end());
  int64_t span = 0;  // largest distance reachable with the axes so far
  for (auto [stride, n] : axes) {
    if (stride <= span) return false;
    span += stride * (n - 1);
  }
  return true;
}

// v's view visits every element of a storage of `size` exactly once.
bool covers(const View& v, int64_t size) {
  if (v.numel() != size || !injective(v)) return false;
  int64_t lo = v.offset, hi = v.offset;
  for (size_t i = 0; i < v.shape.size(); ++i) (v.strides[i] < 0 ? lo : hi) += v.strides[i] * (v.shape[i] - 1);
  return lo >= 0 && hi < size;
}

// Copies src into dst's view; a bool storage whose nonzero count is known keeps it exact at the
// cost of counting the region before and after (O(region), not O(storage)).
template <class T> void copy_into(Value& dst, const Value& src) {
  Storage& st = *dst.data;
  int64_t known = std::is_same_v<T, uint8_t> ? st.nonzero_if_known() : -1;
  bool keep = known >= 0 && injective(dst.view);
  int64_t before = keep ? mask_count(dst, dst.data) : 0;
  map_n<T, T, 1>(dst, std::array<const Value*, 1>{&src}, [](T x) { return x; });
  if (keep) st.set_nonzero(known - before + mask_count(dst, dst.data));
}

}  // namespace

void write_through(Value& dst, const Value& src_raw) {
  Value src = broadcast_to(src_raw, dst.shape());
  dispatch(dst.dtype, [&](auto tag) { copy_into<typename decltype(tag)::type>(dst, src); });
  if (src.poison || dst.poison) {
    if (!dst.poison) {
      dst.poison = std::make_shared<Storage>(dtypes::bool_, dst.data->size);
      dst.poison->set_nonzero(0);  // fresh storage is zeroed
    }
    Value pd = mask_view(dst, dst.poison);
    Value ps = src.poison ? mask_view(src, src.poison) : broadcast_to(scalar(dtypes::bool_, 0), dst.shape());
    copy_into<uint8_t>(pd, ps);
  }
}

void scatter(const StoragePtr& data, StoragePtr& poison, const Value& index_raw, const Value& src_raw) {
  Value index = contiguous(index_raw), src = contiguous(broadcast_to(src_raw, index.shape()));
  const int64_t* at = std::as_const(*index.data).as<int64_t>();
  const int64_t n = index.numel();
  const size_t size = static_cast<size_t>(src.dtype.itemsize());
  const uint8_t* from = std::as_const(*src.data).as<uint8_t>();
  uint8_t* to = data->as<uint8_t>();
  for (int64_t i = 0; i < n; ++i)
    if (at[i] >= 0) std::memcpy(to + static_cast<size_t>(at[i]) * size, from + static_cast<size_t>(i) * size, size);
  if (!src.poison && !poison) return;
  if (!poison) {
    poison = std::make_shared<Storage>(dtypes::bool_, data->size);
    poison->set_nonzero(0);  // fresh storage is zeroed
  }
  const uint8_t* bad = src.poison ? std::as_const(*src.poison).as<uint8_t>() : nullptr;
  for (int64_t i = 0; i < n; ++i)
    if (at[i] >= 0) poison->set_mask_element(at[i], bad && bad[i]);
}

Value gather(const Value& all, const Value& index_raw) {
  Value index = contiguous(index_raw);
  Value out = alloc(all.dtype, index.shape());
  const int64_t* at = std::as_const(*index.data).as<int64_t>();
  const size_t size = static_cast<size_t>(all.dtype.itemsize());
  const uint8_t* from = std::as_const(*all.data).as<uint8_t>();
  uint8_t* to = out.data->as<uint8_t>();
  const uint8_t* bad = all.poison ? std::as_const(*all.poison).as<uint8_t>() : nullptr;
  uint8_t* out_bad = nullptr;
  if (bad) out.poison = std::make_shared<Storage>(dtypes::bool_, out.numel()), out_bad = out.poison->as<uint8_t>();
  for (int64_t i = 0; i < index.numel(); ++i) {
    if (at[i] < 0) continue;  // alloc zeroed it
    std::memcpy(to + static_cast<size_t>(i) * size, from + static_cast<size_t>(at[i]) * size, size);
    if (bad) out_bad[i] = bad[at[i]];
  }
  return out;
}

// A whole-storage view is answered from the storage's count (O(1) once counted); any other
// view is scanned, which costs what producing it did.
bool mask_any(const Value& v, const StoragePtr& mask) {
  if (!mask || v.numel() == 0 || mask->nonzero_if_known() == 0) return false;
  if (covers(v.view, mask->size)) return mask->nonzero() > 0;
  const uint8_t* p = std::as_const(*mask).as<uint8_t>();
  bool any = false;
  std::array<const std::vector<int64_t>*, 1> strides{&v.view.strides};
  walk<1>(v.view.shape, strides, {v.view.offset}, [&](const auto& o, const auto& s, int64_t n) {
    for (int64_t i = 0; i < n && !any; ++i) any = p[o[0] + i * s[0]] != 0;
  });
  return any;
}

int64_t mask_count(const Value& v, const StoragePtr& mask) {
  if (!mask) return 0;
  const uint8_t* p = std::as_const(*mask).as<uint8_t>();
  int64_t n_set = 0;
  std::array<const std::vector<int64_t>*, 1> strides{&v.view.strides};
  walk<1>(v.view.shape, strides, {v.view.offset}, [&](const auto& o, const auto& s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) n_set += p[o[0] + i * s[0]] != 0;
  });
  return n_set;
}

bool any_poison(const Value& v, int64_t* first_flat, int64_t* count) {
  if (!v.poison || !mask_any(v, v.poison)) {
    if (v.poison && first_flat) *first_flat = -1;
    if (v.poison && count) *count = 0;
    return false;
  }
  int64_t n = v.numel(), found = 0, first = -1;
  const uint8_t* p = std::as_const(*v.poison).as<uint8_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (p[v.view.offset_of(unflatten(v.shape(), i))]) {
      if (first < 0) first = i;
      ++found;
    }
  }
  if (first_flat) *first_flat = first;
  if (count) *count = found;
  return found > 0;
}

std::string uninitialized_output(const std::string& output, const Value& v, const std::string& never_given) {
  int64_t first = 0, count = 0;
  if (!any_poison(v, &first, &count)) return "";
  std::string idx;
  for (int64_t i : unflatten(v.shape(), first)) idx += (idx.empty() ? "" : ", ") + std::to_string(i);
  return "output '" + output + "' reads uninitialized memory: " + std::to_string(count) + " of " + std::to_string(v.numel()) + " elements are poison, first at [" + idx +
         "] (buffers never given data: " + (never_given.empty() ? "none" : never_given) + ")";
}

}  // namespace ow::interp
