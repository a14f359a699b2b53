// Runtime values of the reference interpreter: typed storage plus a strided view, with two
// optional per-element masks that make the semantics checkable:
//   poison    — 1 where the element came from uninitialized memory (Tensor::empty);
//   footprint — 1 where the element is real data rather than a PAD's fill (used by assign scans).
// Views (reshape of contiguous data, shrink, permute, flip, expand) share storage; everything
// else writes a fresh contiguous array.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "interp/bytes.h"
#include "uop/dtype.h"
#include "uop/error.h"
#include "uop/ops.h"

namespace ow::interp {

struct Storage {
  DType dtype;
  int64_t size = 0;  // elements
  Bytes bytes;  // zeroed at construction

  Storage(DType d, int64_t n);
  Storage(const Storage& o) : dtype(o.dtype), size(o.size), bytes(o.bytes), nonzero_(o.nonzero_.load(std::memory_order_relaxed)) {}
  Storage& operator=(const Storage&) = delete;
  // Writable access forgets the count of nonzero bytes below: a write may follow.
  template <class T> T* as() {
    nonzero_.store(-1, std::memory_order_relaxed);
    return reinterpret_cast<T*>(bytes.data());
  }
  template <class T> const T* as() const { return reinterpret_cast<const T*>(bytes.data()); }

  // A mask's number of nonzero bytes, so "is anything poison?" about a whole buffer is O(1) on
  // every read of it: counted on first use, then kept exact by write_through (and copies);
  // any other writable access (as<T>()) makes it unknown again. Writes through bytes.data()
  // must come before the first count (fresh storage only).
  int64_t nonzero() const;                       // counts when unknown
  int64_t nonzero_if_known() const { return nonzero_.load(std::memory_order_relaxed); }  // -1: unknown
  void set_nonzero(int64_t n) { nonzero_.store(n, std::memory_order_relaxed); }        // for writers that keep it
  void set_mask_element(int64_t i, bool on) {  // one byte of a mask, keeping a known count
    uint8_t& b = bytes.data()[i];
    int64_t n = nonzero_if_known();
    if (n >= 0) set_nonzero(n - (b != 0) + on);
    b = on;
  }

 private:
  mutable std::atomic<int64_t> nonzero_{-1};  // atomic: const readers may count concurrently
};
using StoragePtr = std::shared_ptr<Storage>;

struct View {
  std::vector<int64_t> shape, strides;  // strides in elements, may be 0 (broadcast) or negative (flip)
  int64_t offset = 0;

  static View contiguous(const std::vector<int64_t>& shape);
  int64_t numel() const;
  bool is_contiguous() const;
  int64_t offset_of(const std::vector<int64_t>& index) const;
};

struct Value {
  DType dtype;
  View view;
  StoragePtr data;
  StoragePtr poison;     // uint8 storage with data's layout, or null (all clean)
  StoragePtr footprint;  // uint8 storage with data's layout, or null (all real data)
  bool unshaped = false; // a scalar that broadcasts (index math, unshaped consts)

  const std::vector<int64_t>& shape() const { return view.shape; }
  int64_t numel() const { return view.numel(); }
};

// ---- construction ----
Value alloc(DType dtype, const std::vector<int64_t>& shape);  // contiguous, zero-filled
Value scalar(DType dtype, double v, bool unshaped = true);
Value index_scalar(int64_t v);
Value int_scalar(DType dtype, int64_t v);                      // exact (no detour through double), unshaped
double get_element(const Value& v, int64_t flat);              // row-major flat index into the view
int64_t as_int(const Value& v);                                // a 0-d (or 1-element) integer value

// ---- views (no copy) ----
Value reshape_view(const Value& v, const std::vector<int64_t>& shape);  // requires contiguous
Value permute_view(const Value& v, const std::vector<int64_t>& perm);
Value shrink_view(const Value& v, const std::vector<std::pair<int64_t, int64_t>>& bounds);
Value flip_view(const Value& v, const std::vector<bool>& axes);
Value expand_view(const Value& v, const std::vector<int64_t>& shape);   // size-1 axes broadcast
Value broadcast_to(const Value& v, const std::vector<int64_t>& shape);  // unshaped -> any shape

// ---- kernels (fresh contiguous results) ----
Value contiguous(const Value& v);                       // copy data and masks
Value pad(const Value& v, const std::vector<std::pair<int64_t, int64_t>>& widths);
Value cast(const Value& v, DType to);
Value bitcast(const Value& v, DType to);  // the same bits as another dtype of the same itemsize
// ALU op on operands already broadcast to `shape` (unshaped operands broadcast automatically).
Value alu(Ops op, DType out, const std::vector<const Value*>& in, const std::vector<int64_t>& shape);
Value identity_like(Ops reduce_op, DType dtype, const std::vector<int64_t>& shape);
// acc = op(acc, x) in place, elementwise; acc is contiguous and owned by the caller.
void accumulate(Ops reduce_op, Value& acc, const Value& x);
// Folds axes (kept as size 1) in row-major order of the reduced indices.
Value reduce_axes(Ops reduce_op, const Value& x, const std::vector<int64_t>& axes);
// REDUCE_AXIS(ADD, MUL(a, b)) without materializing the product (same order, same rounding).
Value reduce_mul_add(const Value& a, const Value& b, const std::vector<int64_t>& axes);
// Copies src (broadcast to dst's shape) into dst's storage through dst's view; masks follow.
void write_through(Value& dst, const Value& src);

// Index maps (a STORE target through a PAD, or a RESHAPE of a non-contiguous view; SEMANTICS
// S5.1): `index` is int64 and holds, per element, a flat element of the storage, or -1 (none).
// scatter writes src (of index's shape) element by element to data[index] and skips -1, the
// poison mask following (created when src has poison); gather reads all (a whole contiguous
// storage, as one flat value) at index, 0 and clean where it is -1.
void scatter(const StoragePtr& data, StoragePtr& poison, const Value& index, const Value& src);
Value gather(const Value& all, const Value& index);

// Masks helpers.
Value mask_view(const Value& v, const StoragePtr& mask);  // the mask through v's view, as bools
bool any_poison(const Value& v, int64_t* first_flat = nullptr, int64_t* count = nullptr);
bool mask_any(const Value& v, const StoragePtr& mask);  // is any element of v's view set in mask?
int64_t mask_count(const Value& v, const StoragePtr& mask);  // elements of v's view set in mask (v injective)
// "output 'out' reads uninitialized memory: ..." when output v holds poison, else "": the one
// wording every backend uses (never_given: the buffers given no data, or "" for none).
std::string uninitialized_output(const std::string& output, const Value& v, const std::string& never_given);
std::vector<int64_t> unflatten(const std::vector<int64_t>& shape, int64_t flat);

}  // namespace ow::interp
