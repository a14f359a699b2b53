#include "tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "interp/dispatch.h"
#include "interp/npy.h"
#include "tensor/random.h"
#include "uop/error.h"
#include "uop/shape.h"
#include "uop/symbolic.h"
#include "tensor/state.h"

namespace ow {

using namespace tensor_detail;

namespace tensor_detail {
uint64_t& name_counter() {
  static uint64_t n = 0;
  return n;
}
std::string fresh_name() { return "t" + std::to_string(name_counter()++); }

UOp checked(UOp u) {
  if (u->shape.kind == ShapeInfo::Kind::Invalid) throw Error(std::string(op_name(u->op)) + ": " + u->shape.error);
  return u;
}

bool is_one(UOp d) { return d->op == Ops::CONST && d.const_value() == 1; }

std::vector<std::weak_ptr<Tensor::State>>& live() {
  static std::vector<std::weak_ptr<Tensor::State>> r;
  return r;
}

std::shared_ptr<Tensor::State> new_state(UOp u) {
  auto s = std::make_shared<Tensor::State>();
  s->uop = u;
  auto& l = live();
  if (l.size() > 1024 && (l.size() & (l.size() - 1)) == 0)  // now and then, forget the dead
    l.erase(std::remove_if(l.begin(), l.end(), [](const auto& w) { return w.expired(); }), l.end());
  l.push_back(s);
  return s;
}

std::vector<std::shared_ptr<Tensor::State>> live_tensors() {
  auto& l = live();
  l.erase(std::remove_if(l.begin(), l.end(), [](const auto& w) { return w.expired(); }), l.end());
  std::vector<std::shared_ptr<Tensor::State>> out;
  for (auto& w : l) out.push_back(w.lock());
  return out;
}
}  // namespace tensor_detail

namespace {
// The dtype two operands meet in: tinygrad's promotion lattice (promo_lattice and
// least_upper_dtype in tinygrad/dtype.py), the lowest dtype (in kValueDTypes' order, tinygrad's
// priorities) above both. One departure: uint64 with a signed integer meets in fp8e4m3 there,
// which loses almost every bit, so it is an error here.
std::vector<DType> parents(DType d) {
  switch (d.scalar) {
    case Scalar::Bool: return {dtypes::int8, dtypes::uint8};
    case Scalar::Int8: return {dtypes::int16};
    case Scalar::Int16: return {dtypes::int32};
    case Scalar::Int32: return {dtypes::int64};
    case Scalar::Int64: case Scalar::Uint64: return {dtypes::fp8e4m3, dtypes::fp8e5m2};
    case Scalar::Uint8: return {dtypes::int16, dtypes::uint16};
    case Scalar::Uint16: return {dtypes::int32, dtypes::uint32};
    case Scalar::Uint32: return {dtypes::int64, dtypes::uint64};
    case Scalar::Fp8e4m3: case Scalar::Fp8e5m2: return {dtypes::float16, dtypes::bfloat16};
    case Scalar::Float16: case Scalar::BFloat16: return {dtypes::float32};
    case Scalar::Float32: return {dtypes::float64};
    default: return {};
  }
}

bool above(DType upper, DType d) {  // upper is d or reached from it through the lattice
  if (upper == d) return true;
  for (DType p : parents(d))
    if (above(upper, p)) return true;  // depth at most 8: the lattice's height
  return false;
}

DType promote(DType a, DType b) {
  if (a == b) return a;
  if (a.is_index() || b.is_index()) {  // index is int64 for this, and keeps its name
    DType o = a.is_index() ? b : a;
    if (o.is_float()) return o;
    if (o == dtypes::uint64) throw Error("no common dtype for " + to_string(a) + " and " + to_string(b) + " (cast one of them)");
    return dtypes::index;
  }
  bool mixed64 = (a == dtypes::uint64 && b.is_signed_int()) || (b == dtypes::uint64 && a.is_signed_int());
  if (mixed64) throw Error("no common dtype for " + to_string(a) + " and " + to_string(b) + " (tinygrad's is fp8e4m3; cast one of them)");
  for (DType d : kValueDTypes)
    if (above(d, a) && above(d, b)) return d;
  throw Error("no common dtype for " + to_string(a) + " and " + to_string(b) + " (cast one of them)");
}
}  // namespace

interp::BufferMap& buffer_store() {
  static interp::BufferMap store;
  return store;
}

Tensor::Tensor(UOp u) : s_(new_state(checked(u))) {}

namespace tensor_detail {
UOp buffer_view(const std::string& name, DType dtype, const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  UOp buf = UOp::make(Ops::BUFFER, dtype, {}, Arg(ArgTuple{Arg(name), Arg(n)}));
  std::vector<UOp> src{buf};
  for (int64_t d : shape) src.push_back(UOp::index(d));
  return checked(UOp::make(Ops::RESHAPE, dtype, src));
}

UOp store_data(const std::string& name, DType dtype, const std::vector<int64_t>& shape, interp::StoragePtr data, interp::StoragePtr poison) {
  buffer_store()[name] = interp::BufferData{dtype, std::move(data), std::move(poison)};
  return buffer_view(name, dtype, shape);
}
}  // namespace tensor_detail

namespace {

std::vector<int64_t> check_shape(const std::vector<int64_t>& shape) {
  __int128 n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("negative dimension in shape");
    n *= d;
    if (n > kMaxElements) throw Error("shape has more than 2^32 elements");
  }
  return shape;
}
}  // namespace

Tensor::Tensor(const std::vector<float>& data, const std::vector<int64_t>& shape, const std::string& name) : s_(new_state(UOp())) {
  int64_t n = 1;
  for (int64_t d : check_shape(shape)) n *= d;
  if (n != static_cast<int64_t>(data.size())) throw Error("Tensor data has " + std::to_string(data.size()) + " values for a shape of " + std::to_string(n) + " elements");
  auto st = std::make_shared<interp::Storage>(dtypes::float32, n);
  std::copy(data.begin(), data.end(), st->as<float>());
  s_->uop = store_data(name.empty() ? fresh_name() : name, dtypes::float32, shape, st, nullptr);
}

Tensor Tensor::empty(const std::vector<int64_t>& shape, DType dtype, const std::string& name) {
  int64_t n = 1;
  for (int64_t d : check_shape(shape)) n *= d;
  auto poison = std::make_shared<interp::Storage>(dtypes::bool_, n);
  std::fill(poison->as<uint8_t>(), poison->as<uint8_t>() + n, uint8_t{1});
  return Tensor(store_data(name.empty() ? fresh_name() : name, dtype, shape, std::make_shared<interp::Storage>(dtype, n), poison));
}

Tensor Tensor::full(const Dims& shape, double value, DType dtype) {
  Tensor c(UOp::cnst(dtype, value));
  Dims ones(shape.size(), Dim(1));
  return c.reshape(ones).expand(shape);
}

Tensor Tensor::arange(int64_t n, DType dtype) {
  auto st = std::make_shared<interp::Storage>(dtype, n);
  interp::dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < n; ++i) st->as<T>()[i] = static_cast<T>(i);
  });
  return Tensor(store_data(fresh_name(), dtype, {n}, st, nullptr));
}

void Tensor::manual_seed(uint64_t seed) { random_generator().seed(seed); }

Tensor Tensor::uniform(const std::vector<int64_t>& shape, float lo, float hi, const std::string& name) {
  std::vector<float> v;
  int64_t n = 1;
  for (int64_t d : check_shape(shape)) n *= d;
  for (int64_t i = 0; i < n; ++i) v.push_back(lo + (hi - lo) * random_generator().uniform());
  return Tensor(v, shape, name);
}
Tensor Tensor::rand(const std::vector<int64_t>& shape, const std::string& name) { return uniform(shape, 0.f, 1.f, name); }
Tensor Tensor::randn(const std::vector<int64_t>& shape, const std::string& name) {
  std::vector<float> v;
  int64_t n = 1;
  for (int64_t d : check_shape(shape)) n *= d;
  for (int64_t i = 0; i < n; ++i) v.push_back(random_generator().normal());
  return Tensor(v, shape, name);
}

Tensor Tensor::from_npy(const std::string& path, const std::string& name) {
  interp::NpyArray a = interp::load_npy(path);
  return Tensor(store_data(name.empty() ? fresh_name() : name, a.dtype, a.shape, a.data, nullptr));
}

// ---------------- graph access ----------------

UOp Tensor::uop() const { return s_->uop; }

std::vector<UOp> Tensor::shape() const {
  const ShapeInfo& s = s_->uop->shape;
  if (s.kind == ShapeInfo::Kind::Invalid) throw Error(s.error);
  return s.dims;
}

std::vector<int64_t> Tensor::static_shape() const {
  auto d = static_dims(shape());
  if (!d) throw Error("shape " + render_shape(shape()) + " is not static");
  return *d;
}

int64_t Tensor::norm_axis(int64_t a) const {
  int64_t n = static_cast<int64_t>(ndim());
  if (a < -n || a >= n) throw Error("axis " + std::to_string(a) + " is out of range for " + std::to_string(n) + " dims");
  return a < 0 ? a + n : a;
}

// ---------------- movement ----------------

namespace {
UOp mop(Ops op, UOp x, const std::vector<UOp>& sizes, Arg arg = {}) {
  std::vector<UOp> src{x};
  src.insert(src.end(), sizes.begin(), sizes.end());
  return checked(UOp::make(op, x->dtype, src, std::move(arg)));
}
std::vector<UOp> uops(const Dims& d) {
  std::vector<UOp> out;
  for (const Dim& x : d) out.push_back(simplify(x.u));
  return out;
}
}  // namespace

Tensor Tensor::reshape(const Dims& shape) const { return Tensor(mop(Ops::RESHAPE, uop(), uops(shape))); }

Tensor Tensor::expand(const Dims& shape) const {
  Tensor x = *this;
  if (x.ndim() < shape.size()) {
    Dims padded(shape.size() - x.ndim(), Dim(1));
    for (UOp d : x.shape()) padded.push_back(d);
    x = x.reshape(padded);
  }
  std::vector<UOp> want = uops(shape);
  if (want == x.shape()) return x;
  return Tensor(mop(Ops::EXPAND, x.uop(), want));
}

Tensor Tensor::permute(const std::vector<int64_t>& order) const {
  ArgTuple a;
  for (int64_t o : order) a.emplace_back(norm_axis(o));
  return Tensor(mop(Ops::PERMUTE, uop(), {}, Arg(a)));
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  std::vector<int64_t> order(ndim());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::swap(order[static_cast<size_t>(norm_axis(a))], order[static_cast<size_t>(norm_axis(b))]);
  return permute(order);
}

Tensor Tensor::flip(const std::vector<int64_t>& axes) const {
  ArgTuple a(ndim(), Arg(false));
  for (int64_t x : axes) a[static_cast<size_t>(norm_axis(x))] = Arg(true);
  return Tensor(mop(Ops::FLIP, uop(), {}, Arg(a)));
}

Tensor Tensor::pad(const std::vector<std::optional<std::pair<Dim, Dim>>>& widths) const {
  if (widths.size() != ndim()) throw Error("pad needs one entry per dim (" + std::to_string(ndim()) + ")");
  std::vector<UOp> w;
  for (const auto& p : widths) {
    w.push_back(p ? simplify(p->first.u) : UOp::index(0));
    w.push_back(p ? simplify(p->second.u) : UOp::index(0));
  }
  return Tensor(mop(Ops::PAD, uop(), w));
}

Tensor Tensor::shrink(const std::vector<std::optional<std::pair<Dim, Dim>>>& bounds) const {
  if (bounds.size() != ndim()) throw Error("shrink needs one entry per dim (" + std::to_string(ndim()) + ")");
  std::vector<UOp> b;
  std::vector<UOp> s = shape();
  for (size_t i = 0; i < bounds.size(); ++i) {
    b.push_back(bounds[i] ? simplify(bounds[i]->first.u) : UOp::index(0));
    b.push_back(bounds[i] ? simplify(bounds[i]->second.u) : s[i]);
  }
  return Tensor(mop(Ops::SHRINK, uop(), b));
}

Tensor Tensor::at(const std::vector<Index>& idx) const {
  std::vector<UOp> s = shape();
  if (idx.size() > s.size()) throw Error("too many indices (" + std::to_string(idx.size()) + ") for " + std::to_string(s.size()) + " dims");
  std::vector<std::optional<std::pair<Dim, Dim>>> bounds;
  Dims keep;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i >= idx.size() || std::holds_alternative<All>(idx[i])) {
      bounds.push_back(std::nullopt);
      keep.push_back(s[i]);
    } else if (const Dim* d = std::get_if<Dim>(&idx[i])) {
      UOp at = d->u;
      if (at->op == Ops::CONST && s[i]->op == Ops::CONST) {  // static: allow negative, check bounds
        int64_t v = static_cast<int64_t>(at.const_value()), n = static_cast<int64_t>(s[i].const_value());
        if (v >= n || v < -n) throw Error("index " + std::to_string(v) + " is out of bounds for a dim of size " + std::to_string(n));
        at = UOp::index(v < 0 ? v + n : v);
      }
      bounds.push_back(std::make_pair(Dim(at), Dim(at + 1)));
    } else {
      const Slice& sl = std::get<Slice>(idx[i]);
      Dim lo = sl.start ? *sl.start : Dim(0), hi = sl.stop ? *sl.stop : Dim(s[i]);
      bounds.push_back(std::make_pair(lo, hi));
      keep.push_back(simplify(hi.u - lo.u));
    }
  }
  return shrink(bounds).reshape(keep);
}

Tensor Tensor::unsqueeze(int64_t axis) const {
  int64_t n = static_cast<int64_t>(ndim()) + 1;
  if (axis < 0) axis += n;
  Dims d;
  std::vector<UOp> s = shape();
  for (int64_t i = 0; i < n; ++i) {
    if (i == axis) d.push_back(1);
    if (i < static_cast<int64_t>(s.size())) d.push_back(s[static_cast<size_t>(i)]);
  }
  return reshape(d);
}

// ---------------- math ----------------

Tensor Tensor::scalar_like(double v) const { return Tensor(UOp::cnst(dtype(), v)); }

std::pair<Tensor, Tensor> Tensor::broadcasted(const Tensor& o, bool promote_dtypes) const {
  Tensor a = *this, b = o;
  if (promote_dtypes) {
    DType d = promote(a.dtype(), b.dtype());
    a = a.cast(d);
    b = b.cast(d);
  }
  bool a_shaped = a.uop()->shape.kind == ShapeInfo::Kind::Shaped, b_shaped = b.uop()->shape.kind == ShapeInfo::Kind::Shaped;
  if (!a_shaped || !b_shaped) return {a, b};  // an unshaped scalar broadcasts by itself
  size_t n = std::max(a.ndim(), b.ndim());
  auto lift = [&](Tensor t) {
    Dims d(n - t.ndim(), Dim(1));
    for (UOp x : t.shape()) d.push_back(x);
    return t.ndim() == n ? t : t.reshape(d);
  };
  a = lift(a);
  b = lift(b);
  Dims out;
  std::vector<UOp> sa = a.shape(), sb = b.shape();
  for (size_t i = 0; i < n; ++i) {
    if (sa[i] == sb[i] || is_one(sb[i])) out.push_back(sa[i]);
    else if (is_one(sa[i])) out.push_back(sb[i]);
    else throw Error("shapes " + render_shape(sa) + " and " + render_shape(sb) + " cannot be broadcast together");
  }
  return {a.expand(out), b.expand(out)};
}

Tensor Tensor::binary(Ops op, const Tensor& o) const {
  auto [a, b] = broadcasted(o);
  return Tensor(checked(a.uop().alu(op, {b.uop()})));
}

Tensor Tensor::operator+(const Tensor& o) const { return binary(Ops::ADD, o); }
Tensor Tensor::operator-(const Tensor& o) const { return binary(Ops::SUB, o); }
Tensor Tensor::operator*(const Tensor& o) const { return binary(Ops::MUL, o); }
Tensor Tensor::operator/(const Tensor& o) const {
  if (!promote(dtype(), o.dtype()).is_float()) return binary(Ops::IDIV, o);
  return binary(Ops::FDIV, o);
}
Tensor Tensor::operator-() const { return Tensor(checked(uop().neg())); }
Tensor Tensor::maximum(const Tensor& o) const { return binary(Ops::MAX, o); }
Tensor Tensor::eq(const Tensor& o) const { return binary(Ops::CMPEQ, o); }
Tensor Tensor::ne(const Tensor& o) const { return binary(Ops::CMPNE, o); }
Tensor Tensor::lt(const Tensor& o) const { return binary(Ops::CMPLT, o); }

Tensor Tensor::where(const Tensor& t, const Tensor& f) const {
  auto [tt, ff] = t.broadcasted(f);
  auto [c, tt2] = cast(dtypes::bool_).broadcasted(tt, false);
  auto [c2, ff2] = c.broadcasted(ff, false);
  return Tensor(checked(UOp::make(Ops::WHERE, tt2.dtype(), {c2.uop(), tt2.uop(), ff2.uop()})));
}

Tensor operator+(double v, const Tensor& t) { return t + v; }
Tensor operator-(double v, const Tensor& t) { return -t + v; }
Tensor operator*(double v, const Tensor& t) { return t * v; }

Tensor Tensor::relu() const { return gt(scalar_like(0)).where(*this, scalar_like(0)); }
Tensor Tensor::exp() const { return Tensor(checked((*this * (1.0 / std::log(2.0))).uop().alu(Ops::EXP2, {}))); }
Tensor Tensor::log() const { return Tensor(checked(uop().alu(Ops::LOG2, {}))) * std::log(2.0); }
Tensor Tensor::sqrt() const { return Tensor(checked(uop().alu(Ops::SQRT, {}))); }
Tensor Tensor::reciprocal() const { return Tensor(checked(uop().alu(Ops::RECIPROCAL, {}))); }
Tensor Tensor::cast(DType d) const { return d == dtype() ? *this : Tensor(checked(uop().cast(d))); }
Tensor Tensor::bitcast(DType d) const { return d == dtype() ? *this : Tensor(checked(UOp::make(Ops::BITCAST, d, {uop()}))); }

Tensor Tensor::reduce_axis(Ops op, std::optional<std::vector<int64_t>> axes, bool keepdim) const {
  if (uop()->shape.kind != ShapeInfo::Kind::Shaped) return *this;
  std::vector<int64_t> ax;
  if (axes) for (int64_t a : *axes) ax.push_back(norm_axis(a));
  else for (size_t i = 0; i < ndim(); ++i) ax.push_back(static_cast<int64_t>(i));
  ArgTuple at;
  for (int64_t a : ax) at.emplace_back(a);
  Tensor r(checked(UOp::make(Ops::REDUCE_AXIS, dtype(), {uop()}, Arg(ArgTuple{Arg(op), Arg(at)}))));
  if (keepdim) return r;
  Dims kept;
  std::vector<UOp> s = shape();
  for (size_t i = 0; i < s.size(); ++i)
    if (std::find(ax.begin(), ax.end(), static_cast<int64_t>(i)) == ax.end()) kept.push_back(s[i]);
  return r.reshape(kept);
}

Tensor Tensor::sum(std::optional<std::vector<int64_t>> axes, bool keepdim) const { return reduce_axis(Ops::ADD, axes, keepdim); }
Tensor Tensor::max(std::optional<std::vector<int64_t>> axes, bool keepdim) const { return reduce_axis(Ops::MAX, axes, keepdim); }

Tensor Tensor::mean(std::optional<std::vector<int64_t>> axes, bool keepdim) const {
  std::vector<UOp> s = shape();
  UOp count = UOp::index(1);
  for (size_t i = 0; i < s.size(); ++i)
    if (!axes || std::find_if(axes->begin(), axes->end(), [&](int64_t a) { return norm_axis(a) == static_cast<int64_t>(i); }) != axes->end()) count = count * s[i];
  count = simplify(count);
  if (count->op != Ops::CONST) throw Error("mean over a symbolic number of elements");
  return sum(axes, keepdim) * (1.0 / count.const_value());
}

Tensor Tensor::matmul(const Tensor& w) const {
  size_t n1 = ndim(), n2 = w.ndim();
  if (n1 == 0 || n2 == 0) throw Error("matmul needs at least 1-d operands");
  std::vector<UOp> s1 = shape(), s2 = w.shape();
  size_t k = std::min({n1 - 1, n2 - 1, size_t{1}});
  Dims xs(s1.begin(), s1.end() - 1);
  for (size_t i = 0; i < k; ++i) xs.push_back(1);
  xs.push_back(s1.back());
  Dims ws(s2.begin(), s2.end() - std::min<size_t>(n2, 2));
  for (size_t i = 0; i < k; ++i) ws.push_back(1);
  for (size_t i = n2 - std::min<size_t>(n2, 2); i < n2; ++i) ws.push_back(s2[i]);
  if (simplify(s1.back()) != simplify(s2[n2 - std::min<size_t>(n2, 2)]))
    throw Error("matmul shapes " + render_shape(s1) + " and " + render_shape(s2) + " do not align");
  Tensor x = reshape(xs), wt = w.reshape(ws).transpose(-1, -static_cast<int64_t>(std::min<size_t>(n2, 2)));
  return (x * wt).sum(std::vector<int64_t>{-1});
}

Tensor Tensor::linear(const Tensor& w, const std::optional<Tensor>& b) const {
  Tensor y = matmul(w);
  return b ? y + *b : y;
}

Tensor Tensor::conv2d(const Tensor& w, const std::optional<Tensor>& b) const {
  // Valid cross-correlation, stride 1: gather the kh*kw shifted windows, then contract
  // (channel, window) against the weights. x (N, C, H, W), w (O, C, kh, kw).
  std::vector<int64_t> xs = static_shape(), ws = w.static_shape();
  if (xs.size() != 4 || ws.size() != 4 || xs[1] != ws[1]) throw Error("conv2d needs x (N, C, H, W) and w (O, C, kh, kw) with matching C");
  int64_t kh = ws[2], kw = ws[3], ho = xs[2] - kh + 1, wo = xs[3] - kw + 1;
  std::vector<Tensor> windows;
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) windows.push_back(shrink({std::nullopt, std::nullopt, std::make_pair(Dim(i), Dim(i + ho)), std::make_pair(Dim(j), Dim(j + wo))}));
  Tensor cols = stack(windows, 2).reshape({xs[0], 1, xs[1] * kh * kw, ho, wo});
  Tensor wk = w.reshape({1, ws[0], ws[1] * kh * kw, 1, 1});
  Tensor y = (cols * wk).sum(std::vector<int64_t>{2});
  return b ? y + b->reshape({1, ws[0], 1, 1}) : y;
}

Tensor Tensor::sequential(const std::vector<std::function<Tensor(const Tensor&)>>& layers) const {
  Tensor x = *this;
  for (const auto& f : layers) x = f(x);
  return x;
}

Tensor Tensor::cat(const std::vector<Tensor>& ts, int64_t axis) {
  if (ts.empty()) throw Error("cat of no tensors");
  int64_t ax = ts[0].norm_axis(axis);
  UOp total = UOp::index(0);
  for (const Tensor& t : ts) total = total + t.shape()[static_cast<size_t>(ax)];
  total = simplify(total);
  std::optional<Tensor> out;
  UOp before = UOp::index(0);
  for (const Tensor& t : ts) {
    std::vector<std::optional<std::pair<Dim, Dim>>> w(t.ndim());
    UOp size = t.shape()[static_cast<size_t>(ax)];
    w[static_cast<size_t>(ax)] = std::make_pair(Dim(before), Dim(simplify(total - before - size)));
    Tensor p = t.pad(w);
    out = out ? *out + p : p;
    before = simplify(before + size);
  }
  return *out;
}

Tensor Tensor::stack(const std::vector<Tensor>& ts, int64_t axis) {
  std::vector<Tensor> u;
  for (const Tensor& t : ts) u.push_back(t.unsqueeze(axis));
  return cat(u, axis);
}

// ---------------- ranges and effects ----------------

Tensor Tensor::reduce(const std::vector<UOp>& ranges, Ops op) const { return Tensor(checked(uop().reduce(ranges, op))); }
Tensor Tensor::reduce_backward(const std::vector<UOp>& ranges, Ops op) const { return Tensor(checked(uop().reduce_backward(ranges, op))); }
Tensor Tensor::after(const std::vector<UOp>& deps) const { return Tensor(checked(uop().after(deps))); }
Tensor Tensor::store(const Tensor& value) const { return Tensor(checked(uop().store(value.cast(dtype()).uop()))); }
Tensor Tensor::end(const std::vector<UOp>& ranges) const { return Tensor(checked(uop().end(ranges))); }

}  // namespace ow
