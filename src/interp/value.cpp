// Storage, views and view operations (no arithmetic here; see elementwise.cpp, reductions.cpp, copies.cpp).
#include "interp/value.h"
#include "uop/shape.h"

#include <cstring>
#include <utility>

#include "interp/dispatch.h"

namespace ow::interp {

// Only views may be larger than 2^32 elements (SEMANTICS S2.4): a value that is stored is not.
static size_t checked_bytes(DType d, int64_t n) {
  if (n > kMaxElements)
    throw Error("a value of " + std::to_string(n) + " elements is over the limit of 2^32 stored elements (a larger view is evaluated without storing it only under a REDUCE_AXIS)");
  return static_cast<size_t>(n) * static_cast<size_t>(std::max(d.itemsize(), 1));
}

Storage::Storage(DType d, int64_t n) : dtype(d), size(n), bytes(checked_bytes(d, n)) {}

int64_t Storage::nonzero() const {
  int64_t n = nonzero_.load(std::memory_order_relaxed);
  if (n >= 0) return n;
  const uint8_t* p = bytes.data();
  n = 0;
  for (size_t i = 0; i < bytes.size(); ++i) n += p[i] != 0;
  nonzero_.store(n, std::memory_order_relaxed);
  return n;
}

View View::contiguous(const std::vector<int64_t>& shape) {
  View v;
  v.shape = shape;
  v.strides.assign(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) v.strides[i - 1] = v.strides[i] * std::max<int64_t>(shape[i], 1);
  return v;
}

int64_t View::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

bool View::is_contiguous() const {
  View c = contiguous(shape);
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1 && strides[i] != c.strides[i]) return false;
  return true;
}

int64_t View::offset_of(const std::vector<int64_t>& index) const {
  int64_t o = offset;
  for (size_t i = 0; i < index.size(); ++i) o += index[i] * strides[i];
  return o;
}

std::vector<int64_t> unflatten(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    idx[i] = shape[i] ? flat % shape[i] : 0;
    flat = shape[i] ? flat / shape[i] : 0;
  }
  return idx;
}

Value alloc(DType dtype, const std::vector<int64_t>& shape) {
  Value v;
  v.dtype = dtype;
  v.view = View::contiguous(shape);
  v.data = std::make_shared<Storage>(dtype, v.view.numel());
  return v;
}

namespace {
// From a double or (exactly, for integer dtypes) an int64, by dispatch.h's conversion rule.
template <class X> Value scalar_of(DType dtype, X x, bool unshaped) {
  Value v = alloc(dtype, {});
  v.unshaped = unshaped;
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    v.data->as<T>()[0] = convert<T>(x);
  });
  return v;
}
}  // namespace

Value scalar(DType dtype, double x, bool unshaped) { return scalar_of(dtype, x, unshaped); }
Value int_scalar(DType dtype, int64_t x) { return scalar_of(dtype, x, true); }

Value index_scalar(int64_t x) {
  Value v = alloc(dtypes::index, {});
  v.unshaped = true;
  v.data->as<int64_t>()[0] = x;
  return v;
}

double get_element(const Value& v, int64_t flat) {
  int64_t off = v.view.offset_of(unflatten(v.view.shape, flat));
  double out = 0;
  dispatch(v.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = static_cast<double>(std::as_const(*v.data).as<T>()[off]);
  });
  return out;
}

int64_t as_int(const Value& v) {
  if (v.numel() != 1) throw Error("expected a single integer, got a value with " + std::to_string(v.numel()) + " elements");
  int64_t off = v.view.offset_of(std::vector<int64_t>(v.view.shape.size(), 0));
  int64_t out = 0;
  dispatch(v.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = static_cast<int64_t>(std::as_const(*v.data).as<T>()[off]);
  });
  return out;
}

Value reshape_view(const Value& v, const std::vector<int64_t>& shape) {
  Value out = v.view.is_contiguous() ? v : contiguous(v);
  int64_t off = out.view.offset;
  out.view = View::contiguous(shape);
  out.view.offset = off;
  out.unshaped = false;
  return out;
}

Value permute_view(const Value& v, const std::vector<int64_t>& perm) {
  Value out = v;
  for (size_t i = 0; i < perm.size(); ++i) {
    out.view.shape[i] = v.view.shape[static_cast<size_t>(perm[i])];
    out.view.strides[i] = v.view.strides[static_cast<size_t>(perm[i])];
  }
  return out;
}

Value shrink_view(const Value& v, const std::vector<std::pair<int64_t, int64_t>>& bounds) {
  Value out = v;
  for (size_t i = 0; i < bounds.size(); ++i) {
    out.view.offset += bounds[i].first * v.view.strides[i];
    out.view.shape[i] = bounds[i].second - bounds[i].first;
  }
  return out;
}

Value flip_view(const Value& v, const std::vector<bool>& axes) {
  Value out = v;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (!axes[i] || v.view.shape[i] == 0) continue;
    out.view.offset += (v.view.shape[i] - 1) * v.view.strides[i];
    out.view.strides[i] = -v.view.strides[i];
  }
  return out;
}

Value expand_view(const Value& v, const std::vector<int64_t>& shape) {
  Value out = v;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (v.view.shape[i] == shape[i]) continue;
    out.view.shape[i] = shape[i];
    out.view.strides[i] = 0;
  }
  return out;
}

Value broadcast_to(const Value& v, const std::vector<int64_t>& shape) {
  if (!v.unshaped) return v;
  Value out = v;
  out.unshaped = false;
  out.view.shape = shape;
  out.view.strides.assign(shape.size(), 0);
  return out;
}

}  // namespace ow::interp
