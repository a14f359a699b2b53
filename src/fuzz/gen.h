// The generator of ow fuzz as a class, declared for the files that define it: generate.cpp
// (the driver, random choices, leaves, expr's choice of op), values.cpp (elementwise ops,
// movement, reductions, matmul) and forms.cpp (the range forms: range reductions, vmaps,
// collects, folds, scans, assign scans, effects). Private to src/fuzz.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/generate.h"
#include "tensor/random.h"
#include "tensor/tensor.h"
#include "uop/symbolic.h"

namespace ow::fuzz::detail {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s);
Dims dims(const Shape& s);
bool same_shape(const Tensor& t, const Shape& s);

class Gen {
 public:
  Gen(uint64_t seed, const GenOptions& o, bool smooth);

  Generated run();

  Generated run_values();

  // One output of a form chosen by k in [0, 100).
  Tensor output(const Shape& s, DType d, int depth, uint64_t k);

  Generated finish(UOp root);

  // A loss of one or two outputs (their sums added), its gradients with respect to up to four of
  // the buffers it reads or writes, and sometimes the gradient of a gradient.
  Generated run_gradient();

  // Input and target buffers, at most four; a fresh input the loss does not read if there are
  // none (its gradient is zeros).
  std::vector<Tensor> grad_vars();

  // A multi-layer perceptron vmapped over a range (an OUTER one more often than not), as in
  // tinygrad's test_vmap_gemm_grad: row r of x through 1-3 layers h @ W.T with a smooth
  // activation, collected by pad + reduce into the rows of an (n, m) result.
  Tensor vmap_layers(const Shape& s0, int depth);

 private:
  struct Range {
    UOp r;
    int64_t n;
  };

  Random rng_;
  GenOptions o_;
  bool smooth_;  // gradient graphs: float64, differentiable ops only (no kinks for central differences)
  int budget_;
  int next_range_ = 1, next_buf_ = 0;
  std::vector<std::string> forms_;
  std::vector<Range> scope_;         // ranges open at this point (leaves may use them)
  std::vector<Tensor> special_;      // leaves of the current effect construct (acc, prev, target)
  std::vector<Tensor> inputs_;       // input buffers, reused by shape and dtype
  std::vector<Tensor> targets_;      // buffers the effects write

  uint64_t pick(uint64_t n);
  bool chance(double p);
  void form(const char* f);

  int64_t rand_dim();

  Shape rand_shape(int max_rank, int64_t limit);

  DType rand_dtype();

  double rand_value(DType d);

  // ---- leaves ----

  Tensor input(const Shape& s, DType d);

  static Tensor buffer_view(const std::string& name, const Shape& s, DType d);

  Tensor target(const Shape& s, DType d);

  Tensor constant(const Shape& s, DType d);

  // An index in [0, vmax] that depends on the range.
  UOp index_expr(const Range& R);

  Tensor leaf(const Shape& s, DType d, int depth = 0);

  // A leaf that depends on the range: x[e(r)], x sliced [e(r), e(r)+k) on an axis, or e(r) itself.
  Tensor range_leaf(const Shape& s, DType d, const Range& R, int depth);

  // ---- combining ----

  // a + -a, a - a or a ^ a: the simplifier cancels these to constants, which must not lose the
  // poison of an uninitialized a, such as a target read before it is written (fuzz seed 103805)
  Tensor self_cancel(const Tensor& a);

  Tensor combine(const Tensor& a0, const Tensor& b);

  Tensor ensure_dep(Tensor t, const Shape& s, DType d, const Range& R);

  Range new_range(int64_t n, bool outer_bias = false);

  int64_t range_extent();

  // ---- expressions ----

  Tensor expr(const Shape& s, DType d, int depth);

  Tensor choose(const Shape& s, DType d, int depth);

  Tensor unary(const Shape& s, DType d, int depth);

  // Differentiable everywhere: SQRT, LOG2 and RECIPROCAL of x*x + 1 > 0.
  Tensor smooth_unary(const Tensor& x);

  // The second operand: same shape, a broadcast shape, or an unshaped scalar.
  UOp operand(const Shape& s, DType d, int depth, bool nonzero);

  Tensor binary(const Shape& s, DType d, int depth);

  Tensor where(const Shape& s, DType d, int depth);

  // Another dtype of d's size (BITCAST's partner), or d itself when there is none.
  static DType same_size(DType d, bool second);

  Tensor cast(const Shape& s, DType d, int depth);

  // A movement op whose result has shape s, of an expression of the shape it needs.
  Tensor movement(const Shape& s, DType d, int depth);
  Tensor reshape_to(const Shape& s, DType d, int depth);
  Tensor permute_to(const Shape& s, DType d, int depth);
  Tensor expand_to(const Shape& s, DType d, int depth);
  Tensor pad_to(const Shape& s, DType d, int depth);
  Tensor shrink_to(const Shape& s, DType d, int depth);
  Tensor flip_of(const Shape& s, DType d, int depth);
  // An output that swaps the last two axes of a (n,) a x b tensor, a and b multiples of 8 up to 40:
  // the renderer's transposed copies (blocked rows; cc's 8x8 register tiles when it is a copy).
  Tensor wide_transpose(DType d, int depth);

  Ops rand_reduce_op(bool bias_add);

  Tensor reduce_axis(const Shape& s, DType d, int depth);

  // tinygrad's cumsum window (Tensor._cumalu: its arange, cumsum and Tensor.rand's counters): x
  // padded with n-1 zeros in front, n+1 copies laid end to end, re-cut into rows of 2n and
  // shrunk to n x n, so row i is x shifted by i; reduced over the rows' elements.
  Tensor cumsum_window(const Shape& s, DType d, int depth);

  // x @ w with x (..., k) and w (k, n) or, as in a Linear layer, the transpose of a (n, k) one:
  // the reductions the kernel-opt passes interchange (rows blocked, folds marked for tcc's
  // vector calls and cc's tiles) or block by columns.
  Tensor matmul(const Shape& s, DType d, int depth);

  // ---- range forms (pure) ----

  Tensor range_form(const Shape& s, DType d, int depth);
  Tensor nested_reduces(const Shape& s, DType d, int depth);
  Tensor assign_chain(const Shape& s, DType d, int depth);

  // collecting EXPAND: f(x[r]) gathered along axis ax, which has the range r itself as its
  // dimension (SEMANTICS S4.1)
  Tensor collect(const Shape& s, DType d, int depth, size_t ax);

  // A collect as an output, as the reference cases use one: no other tensor has its range as a
  // dimension, so only unshaped operands combine with it.
  Tensor collect_output(const Shape& s, DType d, int depth);

  // vmap by pad + reduce: REDUCE(PAD(f(r), (before + r, n - before - r - 1)), r) over m <= n
  // iterations, so the rows before + m .. n - 1 (and the first `before`) are the pad's zeros.
  // `body(s1, R)` builds f(r) of shape s1 with R open.
  template <class Body> Tensor vmap(const Shape& s, DType d, int /*depth*/, size_t ax, Body body, int64_t m = -1);

  // The gradient of a scan's read of row r-1 has this shape: a vmap of m < n iterations whose
  // slot r is f(src[r + k]), src a value of m + k rows built outside the vmap (often a vmap
  // itself, so a realized one, as in tests/fuzz/lower/fuzz-repro-old-grad-segv.uop).
  Tensor shifted_row_vmap(const Shape& s, DType d, int depth, size_t ax);

  // ---- effects (outputs only; each writes a fresh target buffer) ----

  DType effect_dtype();

  // acc.after(i).store(op(acc.after(i), f(x[i]))).end(i), then acc.after(that)
  Tensor fold(const Shape& s, DType, int depth);
  Tensor inner_fold(const Shape& s, DType d, int depth);  // a fold in a fold's value

  // REDUCE(g(side'), i) with side' = side.after(side.store(h(side, x[i]))): the side buffer is
  // written in every iteration before the contribution reads it, or once when h does not
  // depend on i (SEMANTICS S5.4); any axis, a REDUCE folds in order whatever its axis.
  Tensor effect_in_fold(const Shape& s, DType, int depth);

  // out[t(i)].store(f(i == 0 ? init : out[t(i-1)], x[i])).end(i), then out.after(that)
  struct Rows {
    Tensor target;
    Range range;
    int64_t n;
  };
  std::optional<Rows> rows_target(const Shape& s, DType d, const char* outer_form, const char* parallel_form);
  Tensor scan(const Shape& s, DType, int depth);

  // target.assign(value), with the value folded over a range (rows, overlapping windows, the
  // whole target) or not (a plain assign reading the old target).
  Tensor assign_form(const Shape& s, DType, int depth);
  Tensor assign_rows(const Shape& s, DType d, int depth);
  Tensor assign_overlap_window(const Shape& s, DType d, int depth);
  Tensor assign_overlap_whole(const Shape& s, DType d, int depth);
  Tensor assign_through_view(const Shape& s, DType d, int depth);

  static std::vector<std::optional<std::pair<Dim, Dim>>> window_bounds(size_t n, UOp r, int64_t w);

  // An effect whose result is then used inside a computation.
  Tensor effect_then_expr(const Shape& s, DType d, int depth);
};

// vmap by pad + reduce (a template: generate.cpp and forms.cpp both instantiate it).
template <class Body> Tensor Gen::vmap(const Shape& s, DType d, int /*depth*/, size_t ax, Body body, int64_t m) {
  int64_t n = s[ax], before = 0;
  if (m < 0) m = n >= 2 && chance(0.25) ? 1 + static_cast<int64_t>(pick(static_cast<uint64_t>(n - 1))) : n;
  if (m < n) {
    form("vmap-fewer-slots");
    before = static_cast<int64_t>(pick(static_cast<uint64_t>(n - m + 1)));
  }
  Range R = new_range(m, true);
  Shape s1 = s;
  s1[ax] = 1;
  scope_.push_back(R);
  Tensor inner = ensure_dep(body(s1, R), s1, d, R);
  scope_.pop_back();
  std::vector<std::optional<std::pair<Dim, Dim>>> w(s.size());
  w[ax] = std::make_pair(Dim(simplify(R.r + before)), Dim(simplify(UOp::index(n - 1 - before) - R.r)));
  Ops op = rand_reduce_op(true);
  form(op == Ops::ADD ? "vmap-pad-reduce" : "vmap-pad-reduce-maxmul");
  return inner.pad(w).reduce({R.r}, op);
}

}  // namespace ow::fuzz::detail
