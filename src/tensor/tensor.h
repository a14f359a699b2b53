// Tensor: a C++ front-end mirroring tinygrad's Tensor, in which every outerworld test can be
// written line for line. A Tensor is a handle on a UOp graph; realize() evaluates it with the
// reference interpreter. Copies of a Tensor share state (requires_grad, grad), like Python refs.
#pragma once
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <xtensor/xarray.hpp>

#include "interp/interp.h"
#include "uop/uop.h"

namespace ow {

// A dimension, size or index bound: an integer or an index-typed UOp (a range expression).
struct Dim {
  UOp u;
  Dim(int v) : u(UOp::index(v)) {}          // NOLINT: dims are written like numbers
  Dim(int64_t v) : u(UOp::index(v)) {}      // NOLINT
  Dim(UOp x) : u(x) {}                      // NOLINT
};
using Dims = std::vector<Dim>;

// One index of operator[]: an integer or UOp (drops the axis), a slice, or all of an axis.
struct Slice {
  std::optional<Dim> start, stop;
};
struct All {};
using Index = std::variant<Dim, Slice, All>;

class Tensor {
 public:
  explicit Tensor(UOp u);
  Tensor(const std::vector<float>& data, const std::vector<int64_t>& shape, const std::string& name = "");

  // ---- creation ----
  static Tensor empty(const std::vector<int64_t>& shape, DType dtype = dtypes::float32, const std::string& name = "");
  static Tensor full(const Dims& shape, double value, DType dtype = dtypes::float32);
  static Tensor zeros(const Dims& shape, DType dtype = dtypes::float32) { return full(shape, 0.0, dtype); }
  static Tensor ones(const Dims& shape, DType dtype = dtypes::float32) { return full(shape, 1.0, dtype); }
  static Tensor arange(int64_t n, DType dtype = dtypes::float32);
  static Tensor rand(const std::vector<int64_t>& shape, const std::string& name = "");   // U[0, 1)
  static Tensor randn(const std::vector<int64_t>& shape, const std::string& name = "");  // N(0, 1)
  static Tensor uniform(const std::vector<int64_t>& shape, float lo, float hi, const std::string& name = "");
  static Tensor from_npy(const std::string& path, const std::string& name = "");
  static void manual_seed(uint64_t seed);

  // ---- the graph ----
  UOp uop() const;
  std::vector<UOp> shape() const;            // symbolic dims
  std::vector<int64_t> static_shape() const; // throws if a dim is symbolic
  size_t ndim() const { return shape().size(); }
  DType dtype() const { return uop()->dtype; }

  // ---- movement ----
  Tensor reshape(const Dims& shape) const;
  Tensor expand(const Dims& shape) const;
  Tensor permute(const std::vector<int64_t>& order) const;
  Tensor transpose(int64_t a = -2, int64_t b = -1) const;
  Tensor T() const { return transpose(); }
  Tensor flip(const std::vector<int64_t>& axes) const;
  Tensor pad(const std::vector<std::optional<std::pair<Dim, Dim>>>& widths) const;
  Tensor shrink(const std::vector<std::optional<std::pair<Dim, Dim>>>& bounds) const;
  Tensor operator[](const Index& i) const { return at({i}); }
  Tensor at(const std::vector<Index>& idx) const;
  Tensor unsqueeze(int64_t axis) const;

  // ---- math ----
  Tensor operator+(const Tensor& o) const;
  Tensor operator-(const Tensor& o) const;
  Tensor operator*(const Tensor& o) const;
  Tensor operator/(const Tensor& o) const;
  Tensor operator+(double v) const { return *this + scalar_like(v); }
  Tensor operator-(double v) const { return *this - scalar_like(v); }
  Tensor operator*(double v) const { return *this * scalar_like(v); }
  Tensor operator/(double v) const { return *this / scalar_like(v); }
  Tensor operator-() const;
  Tensor maximum(const Tensor& o) const;
  Tensor where(const Tensor& t, const Tensor& f) const;
  Tensor eq(const Tensor& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor lt(const Tensor& o) const;
  Tensor gt(const Tensor& o) const { return o.lt(*this); }
  Tensor relu() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor square() const { return *this * *this; }
  Tensor reciprocal() const;
  Tensor cast(DType d) const;
  Tensor bitcast(DType d) const;  // the same bits as a dtype of the same size
  Tensor sum(std::optional<std::vector<int64_t>> axes = std::nullopt, bool keepdim = false) const;
  Tensor mean(std::optional<std::vector<int64_t>> axes = std::nullopt, bool keepdim = false) const;
  Tensor max(std::optional<std::vector<int64_t>> axes = std::nullopt, bool keepdim = false) const;
  Tensor matmul(const Tensor& w) const;
  Tensor dot(const Tensor& w) const { return matmul(w); }
  Tensor linear(const Tensor& w, const std::optional<Tensor>& b = std::nullopt) const;
  Tensor conv2d(const Tensor& w, const std::optional<Tensor>& b = std::nullopt) const;
  Tensor sequential(const std::vector<std::function<Tensor(const Tensor&)>>& layers) const;
  static Tensor stack(const std::vector<Tensor>& ts, int64_t axis = 0);
  static Tensor cat(const std::vector<Tensor>& ts, int64_t axis = 0);
  bool allclose(const Tensor& o, double rtol = 1e-5, double atol = 1e-8) const;

  // ---- ranges and effects (the seed's UOp builders, at tensor level) ----
  Tensor reduce(const std::vector<UOp>& ranges, Ops op = Ops::ADD) const;
  Tensor reduce_backward(const std::vector<UOp>& ranges, Ops op = Ops::ADD) const;
  Tensor after(const std::vector<UOp>& deps) const;
  Tensor store(const Tensor& value) const;  // void-typed effect
  Tensor end(const std::vector<UOp>& ranges) const;

  // ---- realization and autograd ----
  Tensor& realize();
  Tensor& realize(const std::vector<Tensor>& others);  // tinygrad's a.realize(b, c): one graph
  static void realize_all(std::vector<Tensor*> ts);
  // The graph realizing these tensors would run, its outputs named (loops under a range closed).
  static UOp graph(const std::vector<std::pair<std::string, Tensor>>& named);
  Tensor contiguous() const;
  // Writes value into this tensor's memory and, as in tinygrad, this tensor (and every copy of
  // it) becomes the assign: later graphs built from it read the assigned contents. Realized, it
  // is the memory it wrote again.
  Tensor assign(const Tensor& value) const;
  void setitem(const std::vector<Index>& idx, const Tensor& value);  // tinygrad's t[idx] = value
  Tensor detach() const;
  Tensor& requires_grad(bool on = true);
  bool requires_grad_enabled() const;
  void backward();
  // d(sum of this tensor's elements)/d each target, like tinygrad's Tensor.gradient: GRADIENT
  // nodes of the targets' shapes (zeros where this tensor does not depend on a target).
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets) const;
  std::optional<Tensor> grad() const;
  void set_grad(std::optional<Tensor> g);

  // ---- results ----
  xt::xarray<float> numpy();
  std::vector<float> tolist();
  float item();
  void save_npy(const std::string& path);

  struct State;  // shared by the copies of a Tensor (internal: tensor/state.h)

 private:
  std::shared_ptr<State> s_;
  Tensor scalar_like(double v) const;
  Tensor binary(Ops op, const Tensor& o) const;
  std::pair<Tensor, Tensor> broadcasted(const Tensor& o, bool promote_dtypes = true) const;
  Tensor reduce_axis(Ops op, std::optional<std::vector<int64_t>> axes, bool keepdim) const;
  int64_t norm_axis(int64_t a) const;
};

Tensor operator+(double v, const Tensor& t);
Tensor operator-(double v, const Tensor& t);
Tensor operator*(double v, const Tensor& t);

// The global store of named buffers the Tensor API realizes into (like tinygrad's Buffers).
interp::BufferMap& buffer_store();

// How realize() evaluates a graph: the reference interpreter unless replaced. The compiled
// tiers live above this layer (backends/program.h: run_graph); tests run the same Tensor code
// on every backend by installing one here. A null evaluator restores the interpreter.
using Evaluator = std::function<std::vector<interp::Output>(UOp graph, interp::BufferMap& buffers)>;
void set_evaluator(Evaluator e);


}  // namespace ow

#include "tensor/nn.h"  // NOLINT: nn::Linear and friends come with the Tensor, as in tinygrad
