// A reduction over a value no one stores, a run at a time (virtual_fold.h, SEMANTICS S3.4).
#include "interp/virtual_fold.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "interp/dispatch.h"
#include "interp/scalar_ops.h"

namespace ow::interp {

namespace {

using Kind = VirtualNode::Kind;

int64_t elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t floordiv(int64_t a, int64_t m) {  // m > 0
  int64_t q = a / m;
  return (a % m != 0 && a < 0) ? q - 1 : q;
}
int64_t ceildiv(int64_t a, int64_t m) { return -floordiv(-a, m); }

// An index along a run: a + b*t for the run's t = 0, 1, ...
struct Affine {
  int64_t a = 0, b = 0;
};

// floor((a + b t) / m) for m > 0. With a = qa m + ra and b = qb m + rb (0 <= ra, rb < m) it is
// qa + qb t + floor((ra + rb t) / m): affine while ra + rb t < m. Shortens len to that.
Affine div_run(Affine f, int64_t m, int64_t& len) {
  if (m <= 0) return f;  // a zero-size axis: nothing is read through it
  if (m == 1) return f;
  // Most steps are 0 or 1 and most indices small: skip the divisions then (the hot path of a
  // window fold, which splits every run's index through two reshapes)
  int64_t qa = f.a >= 0 && f.a < m ? 0 : floordiv(f.a, m), qb = f.b >= 0 && f.b < m ? 0 : floordiv(f.b, m);
  int64_t ra = f.a - qa * m, rb = f.b - qb * m;
  if (rb > 0) len = std::min(len, ceildiv(m - ra, rb));
  return {qa, qb};
}
Affine mod_run(Affine f, int64_t m, int64_t& len) {
  if (m <= 0) return f;
  Affine q = div_run(f, m, len);
  return {f.a - q.a * m, f.b - q.b * m};
}

// The first t in (0, len) at which a + b t enters or leaves [0, d); len if it does not.
int64_t bounds_change(Affine c, int64_t d, int64_t len) {
  bool in = c.a >= 0 && c.a < d;
  int64_t t = len;
  if (c.b > 0) t = in ? ceildiv(d - c.a, c.b) : c.a < 0 ? ceildiv(-c.a, c.b) : len;
  if (c.b < 0) t = in ? c.a / -c.b + 1 : c.a >= d ? ceildiv(c.a - d + 1, -c.b) : len;
  return std::min(t, len);
}

// One run: each live node's index (an Affine per axis) and value. Allocated once per fold and
// reused run after run (a fold over tinygrad's arange window has two runs per output, 10^8 runs
// for a 32000x4096 table: per-run allocation was most of its time).
struct Walk {
  std::vector<std::vector<Affine>> index;  // per node, sized to its rank once
  std::vector<char> live;                  // a PAD's source outside its box is not read
  // The node's value along the run: one value (constant, unshaped) or len elements. `at` points
  // at the Value that holds it (its own `own`, or a kid's for views and live PADs).
  struct Val {
    const Value* at = nullptr;
    bool constant = true;
    uint64_t token = 0;           // names a constant's value: equal tokens, equal bits
    Value own;                    // a leaf's read, an ALU's result, a PAD's fill
    std::vector<uint64_t> key;    // an ALU over constants: its kids' tokens when `own` was made
    uint64_t own_token = 0;
  };
  std::vector<Val> val;
  uint64_t tokens = 0;

  explicit Walk(const VirtualTree& t) : index(t.nodes.size()), live(t.nodes.size()), val(t.nodes.size()) {
    for (size_t i = 0; i < t.nodes.size(); ++i) {
      const VirtualNode& v = t.nodes[i];
      index[i].resize(v.unshaped ? 0 : v.shape.size());
      if (v.kind == Kind::Pad) val[i].own = scalar(v.dtype, 0), val[i].own_token = ++tokens;  // the fill
      if (v.kind == Kind::Leaf) val[i].own = v.leaf;
    }
  }
};

// A RESHAPE's index as its source's: the row-major position, split along the source's axes.
void reshape_index(const VirtualNode& v, const VirtualNode& kid, const std::vector<Affine>& in, std::vector<Affine>& out, int64_t& len) {
  Affine flat;
  int64_t stride = 1;
  for (size_t d = v.shape.size(); d-- > 0; stride *= v.shape[d]) flat.a += in[d].a * stride, flat.b += in[d].b * stride;
  stride = 1;
  for (size_t d = kid.shape.size(); d-- > 0; stride *= kid.shape[d]) out[d] = mod_run(div_run(flat, stride, len), kid.shape[d], len);
}

// Pushes the root's index (already in w.index[0]) down the tree (parents first), shortening len
// so that every index stays affine and every PAD wholly inside or outside its source.
int64_t index_run(const VirtualTree& t, int64_t len, Walk& w) {
  const size_t n = t.nodes.size();
  std::fill(w.live.begin(), w.live.end(), 0);
  w.live[0] = 1;
  for (size_t i = 0; i < n; ++i) {
    if (!w.live[i]) continue;
    const VirtualNode& v = t.nodes[i];
    if (v.kids.empty()) continue;
    const std::vector<Affine>& in = w.index[i];
    const size_t k0 = v.kids[0];
    const VirtualNode& kid = t.nodes[k0];
    std::vector<Affine>& out = w.index[k0];  // a tree: only this node writes its kid's index
    switch (v.kind) {
      case Kind::Leaf: break;
      case Kind::Same: case Kind::Alu: case Kind::Cast: case Kind::Bitcast:
        for (size_t k : v.kids) {
          w.live[k] = 1;
          if (!t.nodes[k].unshaped) w.index[k] = in;
        }
        break;
      case Kind::Reshape:
        w.live[k0] = 1;
        if (!kid.unshaped) reshape_index(v, kid, in, out, len);
        break;
      case Kind::Expand:
        w.live[k0] = 1;
        if (kid.unshaped) break;
        for (size_t d = 0; d < out.size(); ++d) out[d] = kid.shape[d] == v.shape[d] ? in[d] : Affine{};
        break;
      case Kind::Pad: {
        bool inside = true;
        for (size_t d = 0; d < out.size(); ++d) {
          out[d] = {in[d].a - v.lo[d], in[d].b};
          len = bounds_change(out[d], kid.shape[d], len);
          inside = inside && out[d].a >= 0 && out[d].a < kid.shape[d];
        }
        w.live[k0] = inside;
        break;
      }
      case Kind::Shrink:
        w.live[k0] = 1;
        for (size_t d = 0; d < out.size(); ++d) out[d] = {in[d].a + v.lo[d], in[d].b};
        break;
      case Kind::Permute:
        w.live[k0] = 1;
        for (size_t d = 0; d < in.size(); ++d) out[static_cast<size_t>(v.perm[d])] = in[d];
        break;
      case Kind::Flip:
        w.live[k0] = 1;
        for (size_t d = 0; d < out.size(); ++d) out[d] = v.flip[d] ? Affine{v.shape[d] - 1 - in[d].a, -in[d].b} : in[d];
        break;
    }
  }
  return len;
}

// A leaf's value along the run: one element (a constant, with a token that changes when the
// element does) or a strided view of len elements.
void leaf_run(const VirtualNode& v, const std::vector<Affine>& index, Walk& w, int64_t len, Walk::Val& r) {
  r.at = &r.own;
  if (v.unshaped) {
    r.constant = true, r.token = r.own_token ? r.own_token : (r.own_token = ++w.tokens);
    return;
  }
  Affine at{v.leaf.view.offset, 0};
  for (size_t d = 0; d < v.shape.size(); ++d) {
    at.a += index[d].a * v.leaf.view.strides[d];
    at.b += index[d].b * v.leaf.view.strides[d];
  }
  bool same = r.constant && at.b == 0 && r.own.unshaped && r.own.view.offset == at.a && r.own_token;
  r.constant = at.b == 0;
  r.own.unshaped = r.constant;
  r.own.view.offset = at.a;
  if (r.constant) {
    r.own.view.shape.clear(), r.own.view.strides.clear();
    r.token = r.own_token = same ? r.own_token : ++w.tokens;
  } else {
    r.own.view.shape.assign(1, len), r.own.view.strides.assign(1, at.b);
    r.own_token = 0;
  }
}

// An ALU, CAST or BITCAST along the run; over constants it has seen (the same tokens) it keeps
// its value instead of computing it again.
void op_run(const VirtualNode& v, Walk& w, int64_t len, Walk::Val& r) {
  bool constant = true;
  for (size_t k : v.kids) constant = constant && w.val[k].constant;
  r.at = &r.own, r.constant = constant;
  if (constant && r.own_token && r.key.size() == v.kids.size() &&
      std::equal(v.kids.begin(), v.kids.end(), r.key.begin(), [&](size_t k, uint64_t tok) { return w.val[k].token == tok; })) {
    r.token = r.own_token;
    return;
  }
  std::vector<const Value*> in;
  for (size_t k : v.kids) in.push_back(w.val[k].at);
  std::vector<int64_t> shape = constant ? std::vector<int64_t>{} : std::vector<int64_t>{len};
  if (v.kind == Kind::Alu) r.own = alu(v.op, v.dtype, in, shape);
  else r.own = v.kind == Kind::Cast ? cast(broadcast_to(*in[0], shape), v.dtype) : bitcast(broadcast_to(*in[0], shape), v.dtype);
  r.own.unshaped = constant;
  r.key.clear();
  if (constant)
    for (size_t k : v.kids) r.key.push_back(w.val[k].token);
  r.token = r.own_token = constant ? ++w.tokens : 0;
}

// Computes the live nodes' values along the run, kids first; the root's.
const Walk::Val& value_run(const VirtualTree& t, Walk& w, int64_t len) {
  for (size_t i = t.nodes.size(); i-- > 0;) {
    if (!w.live[i]) continue;
    const VirtualNode& v = t.nodes[i];
    Walk::Val& r = w.val[i];
    switch (v.kind) {
      case Kind::Leaf: leaf_run(v, w.index[i], w, len, r); break;
      case Kind::Pad:
        if (w.live[v.kids[0]]) {
          const Walk::Val& k = w.val[v.kids[0]];
          r.at = k.at, r.constant = k.constant, r.token = k.token;
        } else {
          r.at = &r.own, r.constant = true, r.token = r.own_token;  // the fill
        }
        break;
      case Kind::Alu: case Kind::Cast: case Kind::Bitcast: op_run(v, w, len, r); break;
      default: {  // views: the kid's value
        const Walk::Val& k = w.val[v.kids[0]];
        r.at = k.at, r.constant = k.constant, r.token = k.token;
      }
    }
  }
  return w.val[0];
}

template <class T> bool same_bits(T a, T b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }

// acc + c + c + ... (n terms, n >= 1) in T, when every partial sum is exactly representable:
// then each addition is exact and the fold is the exact acc + n c. Writing acc = A 2^q and
// c = C 2^q over the finer of their grids, the partial sums A + k C lie between A and A + n C,
// and are representable when those have fewer than `digits` significant bits (and are finite).
template <class T> std::optional<T> exact_repeated_sum(T acc, T c, int64_t n) {
  constexpr int p = std::numeric_limits<T>::digits;
  if (!std::isfinite(acc) || !std::isfinite(c) || c == 0) return std::nullopt;
  auto split = [](T x, int64_t& m, int& e) {  // x = m 2^e with m odd: e is x's last bit
    int ex = 0;
    m = static_cast<int64_t>(std::ldexp(std::frexp(x, &ex), p));
    e = ex - p;
    for (; m % 2 == 0; m /= 2) ++e;
  };
  int64_t ma = 0, mc = 0;
  int ea = 0, ec = 0;
  split(c, mc, ec);
  if (acc != 0) split(acc, ma, ea);
  else ea = ec;
  int q = std::min(ea, ec);
  if (ea - q > 60 || ec - q > 60) return std::nullopt;
  __int128 a = static_cast<__int128>(ma) << (ea - q), step = static_cast<__int128>(mc) << (ec - q);
  const __int128 limit = static_cast<__int128>(1) << p;
  if (a >= limit || -a >= limit || step >= 2 * limit || -step >= 2 * limit) return std::nullopt;
  __int128 end = a + static_cast<__int128>(n) * step;
  if (end >= limit || -end >= limit) return std::nullopt;
  T r = std::ldexp(static_cast<T>(static_cast<int64_t>(end)), q);
  if (!std::isfinite(r)) return std::nullopt;
  return r;  // +0 when the sum is 0, as round-to-nearest gives
}

uint64_t power(uint64_t x, int64_t n) {  // x^n modulo 2^64
  uint64_t r = 1;
  for (; n > 0; n >>= 1, x *= x)
    if (n & 1) r *= x;
  return r;
}

// f(...f(f(acc, c), c)..., c) with n terms of c.
template <class T, class F> T repeat(Ops op, F f, T acc, T c, int64_t n) {
  if (n <= 0) return acc;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, uint8_t>) {  // modulo 2^bits (bool is or/and: below)
    if (op == Ops::ADD) return static_cast<T>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(n) * static_cast<uint64_t>(c));
    if (op == Ops::MUL) return static_cast<T>(static_cast<uint64_t>(acc) * power(static_cast<uint64_t>(c), n));
  }
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
    if (op == Ops::ADD)
      if (auto s = exact_repeated_sum(acc, c, n)) return *s;
  T y = f(acc, c);
  for (int64_t k = 1; k < n; ++k) {  // term by term, until a fixed point (MAX at once; x + tiny)
    T z = f(y, c);
    if (same_bits(z, y)) break;
    y = z;
  }
  return y;
}

template <class T> T fold_run(Ops op, T acc, const Walk::Val& r, int64_t len) {
  const Value& v = *r.at;
  const T* p = std::as_const(*v.data).template as<T>() + v.view.offset;
  sop::with_fold<T>(op, [&](auto f) {
    if (r.constant) {
      acc = repeat<T>(op, f, acc, *p, len);
      return;
    }
    const int64_t s = v.view.strides[0];
    for (int64_t i = 0; i < len; ++i) acc = f(acc, p[i * s]);
  });
  return acc;
}

}  // namespace

bool VirtualTree::infer_shapes() {
  for (size_t i = nodes.size(); i-- > 0;) {
    VirtualNode& v = nodes[i];
    if (v.kind == Kind::Leaf) continue;
    const VirtualNode& kid = nodes[v.kids.at(0)];
    switch (v.kind) {
      case Kind::Same:
        v.shape = kid.shape, v.unshaped = kid.unshaped;
        break;
      case Kind::Reshape:  // shape set when built
        if (kid.unshaped ? elements(v.shape) != 1 : elements(kid.shape) != elements(v.shape)) return false;
        break;
      case Kind::Expand:
        if (kid.unshaped) break;
        if (kid.shape.size() != v.shape.size()) return false;
        for (size_t d = 0; d < v.shape.size(); ++d)
          if (kid.shape[d] != v.shape[d] && kid.shape[d] != 1) return false;
        break;
      case Kind::Pad: case Kind::Shrink: {
        if (kid.unshaped || kid.shape.size() != v.lo.size()) return false;
        v.shape.clear();
        for (size_t d = 0; d < v.lo.size(); ++d) {
          if (v.kind == Kind::Pad) {
            if (v.lo[d] < 0 || v.hi[d] < 0) return false;
            v.shape.push_back(kid.shape[d] + v.lo[d] + v.hi[d]);
          } else {
            if (v.lo[d] < 0 || v.lo[d] > v.hi[d] || v.hi[d] > kid.shape[d]) return false;
            v.shape.push_back(v.hi[d] - v.lo[d]);
          }
        }
        break;
      }
      case Kind::Permute: {
        if (kid.unshaped || v.perm.size() != kid.shape.size()) return false;
        std::vector<bool> seen(v.perm.size());
        v.shape.clear();
        for (int64_t p : v.perm) {
          if (p < 0 || p >= static_cast<int64_t>(seen.size()) || seen[static_cast<size_t>(p)]) return false;
          seen[static_cast<size_t>(p)] = true;
          v.shape.push_back(kid.shape[static_cast<size_t>(p)]);
        }
        break;
      }
      case Kind::Flip:
        if (kid.unshaped || v.flip.size() != kid.shape.size()) return false;
        v.shape = kid.shape;
        break;
      default: {  // Alu, Cast, Bitcast: shaped sources agree; unshaped ones broadcast
        v.unshaped = true;
        for (size_t k : v.kids) {
          const VirtualNode& s = nodes[k];
          if (s.unshaped) continue;
          if (!v.unshaped && s.shape != v.shape) return false;
          v.shape = s.shape, v.unshaped = false;
        }
      }
    }
  }
  return !nodes.empty() && !nodes[0].unshaped;
}

int64_t VirtualTree::materialized_elements(Ops reduce_op) const {
  int64_t most = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const VirtualNode& v = nodes[i];
    bool copies = v.kind == Kind::Alu || v.kind == Kind::Cast || v.kind == Kind::Bitcast || v.kind == Kind::Pad || v.kind == Kind::Reshape;
    // REDUCE_AXIS(ADD, MUL(a, b)) folds the products without materializing them (S3.2)
    bool product_fold = i == 0 && reduce_op == Ops::ADD && v.kind == Kind::Alu && v.op == Ops::MUL &&
                        std::all_of(v.kids.begin(), v.kids.end(), [&](size_t k) { return nodes[k].kind == Kind::Leaf; });
    if (copies && !product_fold && !v.unshaped) most = std::max(most, elements(v.shape));
  }
  return most;
}

namespace {

// The outputs of REDUCE_AXIS(op, tree, axes) and, for one of them, its runs in fold order.
struct Runs {
  const VirtualTree& t;
  std::vector<int64_t> kept, reduced_axes;  // the output's shape (reduced axes 1); those axes
  std::vector<bool> is_reduced;
  int64_t reduced = 1;                      // terms per output
  Walk w;

  Runs(const VirtualTree& tree, const std::vector<int64_t>& axes) : t(tree), kept(tree.nodes.at(0).shape), w(tree) {
    for (size_t d = 0; d < kept.size(); ++d) {
      bool r = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
      is_reduced.push_back(r);
      if (!r) continue;
      reduced_axes.push_back(static_cast<int64_t>(d));
      reduced *= kept[d];
      kept[d] = 1;
    }
  }
  // The run of output o starting at its term t0: sets every live node's index; its length.
  int64_t at(const std::vector<int64_t>& out_index, int64_t t0) {
    const std::vector<int64_t>& shape = t.nodes[0].shape;
    std::vector<Affine>& index = w.index[0];
    int64_t len = reduced - t0;
    int64_t stride = 1;  // the reduced indices t0 + t, row-major
    for (size_t k = reduced_axes.size(); k-- > 0;) {
      size_t d = static_cast<size_t>(reduced_axes[k]);
      index[d] = mod_run(div_run({t0, 1}, stride, len), shape[d], len);
      stride *= shape[d];
    }
    for (size_t d = 0; d < kept.size(); ++d)
      if (!is_reduced[d]) index[d] = {out_index[d], 0};
    return index_run(t, len, w);
  }
};

}  // namespace

int64_t VirtualTree::estimate_runs(const std::vector<int64_t>& axes) const {
  Runs r(*this, axes);
  const int64_t outputs = elements(r.kept);
  if (outputs == 0 || r.reduced == 0) return 0;
  // up to 16 outputs spread over the output, each followed for at most 256 runs: their runs per
  // term, times all the terms (exact for the windows tinygrad builds, whose runs are alike)
  const int64_t samples = std::min<int64_t>(outputs, 16);
  double runs = 0, terms = 0;
  for (int64_t k = 0; k < samples; ++k) {
    std::vector<int64_t> o = unflatten(r.kept, k * (outputs / samples));
    int64_t t0 = 0;
    for (int n = 0; n < 256 && t0 < r.reduced; ++n, runs += 1) t0 += r.at(o, t0);
    terms += static_cast<double>(t0);
  }
  double total = runs / terms * static_cast<double>(r.reduced) * static_cast<double>(outputs);
  return total >= 9e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(total);
}

Value fold_virtual(Ops op, const VirtualTree& t, const std::vector<int64_t>& axes) {
  Runs r(t, axes);
  Value out = identity_like(op, t.nodes.at(0).dtype, r.kept);
  const int64_t outputs = out.numel();
  if (r.reduced == 0 || outputs == 0) return out;
  dispatch(t.nodes[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* acc = out.data->as<T>();
    for (int64_t o = 0; o < outputs; ++o) {
      std::vector<int64_t> at = unflatten(r.kept, o);
      for (int64_t t0 = 0; t0 < r.reduced;) {
        int64_t len = r.at(at, t0);
        acc[o] = fold_run<T>(op, acc[o], value_run(t, r.w, len), len);
        t0 += len;
      }
    }
  });
  return out;
}

}  // namespace ow::interp
