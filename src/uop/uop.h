// The UOp: five fields (op, dtype, src, arg, tag), immutable and hash-consed.
//
// `UOp` is a pointer-sized handle; `UOpNode` is the interned node it points to. Building a node
// that is structurally equal to an existing one returns the existing one, so handle equality is
// graph equality. Nodes live until `reset_uop_table()` (tests and fuzzers) or process exit.
//
// Thread safety: construction may be called from any thread (the intern table is guarded by a
// mutex); nodes are immutable after construction, so reading them needs no lock.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "uop/arg.h"
#include "uop/dtype.h"
#include "uop/ops.h"

namespace ow {

struct UOpNode;

class UOp {
 public:
  UOp() = default;
  explicit UOp(const UOpNode* n) : n_(n) {}

  const UOpNode* get() const { return n_; }
  const UOpNode* operator->() const { return n_; }
  const UOpNode& operator*() const { return *n_; }
  explicit operator bool() const { return n_ != nullptr; }
  friend bool operator==(UOp a, UOp b) { return a.n_ == b.n_; }
  friend bool operator!=(UOp a, UOp b) { return a.n_ != b.n_; }

  // ---- construction (interning) ----
  static UOp make(Ops op, DType dtype, std::vector<UOp> src = {}, Arg arg = {}, Arg tag = {});
  UOp replace_src(std::vector<UOp> src) const;
  UOp with_arg(Arg arg) const;
  UOp with_tag(Arg tag) const;

  // ---- constants, ranges, variables ----
  static UOp cnst(DType dtype, double value);  // value is converted to the dtype's kind
  static UOp index(int64_t value) { return int_const(dtypes::index, value); }
  static UOp int_const(DType dtype, int64_t value);
  static UOp range(UOp end, int64_t id, AxisType axis = AxisType::LOOP, std::vector<int64_t> sub_ids = {});
  static UOp range(int64_t end, int64_t id, AxisType axis = AxisType::LOOP, std::vector<int64_t> sub_ids = {});
  static UOp variable(const std::string& name, int64_t lo, int64_t hi, DType dtype = dtypes::index);
  static UOp sink(std::vector<UOp> srcs, Arg names = {});
  UOp const_like(double value) const;
  UOp const_like(int64_t value) const;  // exact for integer dtypes
  UOp bind(UOp value) const;

  // ---- ALU (an int64 operand becomes a const of this node's dtype) ----
  UOp alu(Ops op, std::vector<UOp> rest) const;
  UOp neg() const { return alu(Ops::NEG, {}); }
  // O is a UOp or an integer; an integer becomes a const of this node's dtype (operand()).
  template <class O> UOp maximum(O o) const { return alu(Ops::MAX, {operand(o)}); }
  template <class O> UOp idiv(O o) const { return alu(Ops::IDIV, {operand(o)}); }
  template <class O> UOp mod(O o) const { return alu(Ops::MOD, {operand(o)}); }
  template <class O> UOp lt(O o) const { return alu(Ops::CMPLT, {operand(o)}); }
  template <class O> UOp ne(O o) const { return alu(Ops::CMPNE, {operand(o)}); }
  template <class O> UOp eq(O o) const { return alu(Ops::CMPEQ, {operand(o)}); }
  UOp operand(UOp o) const { return o; }
  UOp operand(int64_t o) const { return const_like(o); }
  UOp where(UOp t, UOp f) const;
  UOp cast(DType d) const;

  // ---- structure and effects ----
  UOp reduce(std::vector<UOp> ranges, Ops op) const;
  UOp reduce_backward(std::vector<UOp> ranges, Ops op) const;
  UOp after(std::vector<UOp> deps) const;
  UOp store(UOp value) const;
  UOp end(std::vector<UOp> ranges) const;
  UOp load() const;
  UOp index(std::vector<UOp> idx) const;

  // ---- analyses (computed once, at construction) ----
  int64_t vmin() const;
  int64_t vmax() const;
  bool is_const() const;
  double const_value() const;  // CONST arg as a double (bool -> 0/1); NaN for a malformed CONST

 private:
  const UOpNode* n_ = nullptr;
};

UOp operator+(UOp a, UOp b);
UOp operator-(UOp a, UOp b);
UOp operator*(UOp a, UOp b);
UOp operator+(UOp a, int64_t b);
UOp operator-(UOp a, int64_t b);
UOp operator*(UOp a, int64_t b);
UOp operator+(int64_t a, UOp b);
UOp operator-(int64_t a, UOp b);
UOp operator*(int64_t a, UOp b);

struct UOpHash {
  size_t operator()(UOp u) const { return std::hash<const void*>()(u.get()); }
};

// What shape inference found for a node. Unshaped nodes (scalars such as ranges, index math,
// unshaped consts) broadcast against shaped ones; an invalid shape keeps its reason so the
// verifier (or the Tensor API) can report it.
struct ShapeInfo {
  enum class Kind : uint8_t { Unshaped, Shaped, Invalid };
  Kind kind = Kind::Unshaped;
  std::vector<UOp> dims;  // simplified index-typed UOps (CONSTs where static)
  std::string error;
};

struct UOpNode {
  Ops op;
  DType dtype;
  std::vector<UOp> src;
  Arg arg;
  Arg tag;
  size_t hash;        // structural: equal graphs hash equally in every process
  uint64_t serial;    // creation order in this process
  int64_t lo, hi;     // integer bounds (vmin/vmax); dtype limits when unknown
  ShapeInfo shape;
  std::vector<const UOpNode*> free;  // free_ranges (verify.h), kept so asking is O(result)
};

// An order of nodes that does not depend on where the allocator put them: structural hash, then
// creation order. Whatever shows in output (loops, statements, names) is ordered by it.
struct StableLess {
  bool operator()(const UOpNode* a, const UOpNode* b) const { return a->hash != b->hash ? a->hash < b->hash : a->serial < b->serial; }
  bool operator()(UOp a, UOp b) const { return (*this)(a.get(), b.get()); }
};

// Every node reachable from root, children before parents; iterative, so deep graphs are fine.
std::vector<UOp> toposort(UOp root);
std::vector<UOp> toposort(const std::vector<UOp>& roots);
// toposort in the order the interpreter first runs effects: an AFTER's dependencies before its
// value, every other node's sources in order (SEMANTICS S5.1).
std::vector<UOp> execution_order(UOp root);
bool mentions(UOp root, UOp node);  // is node reachable from root (root itself included)?

// A range's printed name: ids joined by '_', negatives as m<n>: (-1) -> m1, (3, 0) -> 3_0.
std::string range_name(UOp r);
AxisType range_axis(UOp r);

// Number of live interned nodes, and a reset that frees them all (no UOp may be used after).
size_t uop_table_size();
void reset_uop_table();

}  // namespace ow
