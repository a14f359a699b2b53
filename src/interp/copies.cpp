// Copies between views (write_through, and scatter/gather through index maps) and questions
// about masks (poison and footprint): any, count, the first poison element of an output.

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "interp/dispatch.h"
#include "interp/strided.h"
#include "interp/value.h"

namespace ow::interp {

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
