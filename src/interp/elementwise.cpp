// Elementwise arithmetic on values: ALU ops (with their poison), casts, bitcasts, pads and
// contiguous copies. Reductions are in reductions.cpp, copies through views in copies.cpp.
// This file is compiled with -ffp-contract=off so a*b+c is never fused into one rounding.
#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "interp/dispatch.h"
#include "interp/scalar_ops.h"
#include "interp/strided.h"
#include "interp/value.h"

namespace ow::interp {

namespace {

using sop::DivByZero;
using sop::idiv_op;
using sop::max_op;
using sop::mod_op;
using sop::wrap_add;
using sop::wrap_mul;
using sop::wrap_sub;

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
}  // namespace

Value mask_view(const Value& v, const StoragePtr& mask) {
  Value m;
  m.dtype = dtypes::bool_;
  m.view = v.view;
  m.data = mask;
  m.unshaped = v.unshaped;
  return m;
}

// How masks combine: strided.h.
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

namespace {

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

}  // namespace ow::interp
