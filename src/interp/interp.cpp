#include "interp/interp.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "interp/dispatch.h"
#include "interp/kernel_eval.h"
#include "uop/shape.h"
#include "uop/text.h"
#include "uop/verify.h"

namespace ow::interp {

std::string bindings_text(const std::vector<std::pair<UOp, int64_t>>& b) {
  std::string s;
  for (auto& [r, v] : b) s += (s.empty() ? "" : ", ") + range_name(r) + "=" + std::to_string(v);
  return s.empty() ? "no ranges bound" : s;
}

namespace {

// An error that already names its node; outer frames pass it through unchanged.
struct NodeError : Error {
  using Error::Error;
};

struct BufferState {
  std::string name;
  BufferData* data;
  std::vector<BufferData> snapshots;  // reads inside a parallel (non-OUTER) loop see the top one
  bool initialized_by_caller;
};

struct NodeInfo {
  std::vector<UOp> free;      // ranges the value depends on
  bool reads_mutable = false; // transitively reads a buffer the graph writes
  bool effect = false;        // evaluating it performs writes
};

struct Memo {
  bool valid = false;
  std::vector<int64_t> key;
  uint64_t epoch = 0;
  Value value;
};

bool is_effect_op(Ops op) { return op == Ops::STORE || op == Ops::END || op == Ops::ASSIGN || op == Ops::GROUP || op == Ops::KERNEL; }

// The BUFFER a STORE/ASSIGN target is a view of (through movement ops and AFTER), or null.
UOp base_buffer(UOp u) {
  while (true) {
    if (u->op == Ops::BUFFER) return u;
    if ((is_movement(u->op) || u->op == Ops::AFTER) && !u->src.empty()) {
      u = u->src[0];
      continue;
    }
    return UOp();
  }
}

const std::string& buffer_name(UOp b) { return b->arg.tuple()->at(0).as<std::string>(); }

class Interpreter {
 public:
  Interpreter(UOp root, BufferMap& buffers, const Options& opts) : root_(root), opts_(opts) {
    auto issues = verify(root);
    if (!issues.empty()) {
      Printed p = number_graph(root);
      throw Error("invalid graph: " + issues[0].rule + ": " + issues[0].message + " (at " + p.line(issues[0].node) + ")");
    }
    printed_ = number_graph(root);
    analyse();
    bind_buffers(buffers);
  }

  std::vector<Output> outputs() {
    std::vector<UOp> outs = root_->op == Ops::SINK ? root_->src : std::vector<UOp>{root_};
    const ArgTuple* names = root_->op == Ops::SINK ? root_->arg.tuple() : nullptr;
    std::vector<Output> result;
    for (size_t i = 0; i < outs.size(); ++i) {
      std::string name = names ? (*names)[i].as<std::string>() : outs.size() == 1 ? "out" : "out" + std::to_string(i);
      Value v = outs[i]->dtype.is_void() ? (exec(outs[i]), Value{}) : contiguous(eval(outs[i]));
      if (outs[i]->dtype.is_void()) continue;
      check_clean(name, outs[i], v);
      result.push_back({name, v});
    }
    return result;
  }

 private:
  // ---------- setup ----------
  void analyse() {
    std::set<std::string> written;
    for (UOp u : printed_.order)
      if ((u->op == Ops::STORE || u->op == Ops::ASSIGN) && !u->src.empty())
        if (UOp b = base_buffer(u->src[0])) written.insert(buffer_name(b));
    for (UOp u : printed_.order)  // a KERNEL may write every buffer bound to it
      if (u->op == Ops::KERNEL)
        for (size_t i = 1; i < u->src.size(); ++i)
          if (UOp b = base_buffer(u->src[i])) written.insert(buffer_name(b));
    for (UOp u : printed_.order) {
      NodeInfo& in = info_[u.get()];
      in.free = free_ranges(u);
      in.effect = is_effect_op(u->op);
      in.reads_mutable = u->op == Ops::BUFFER && written.count(buffer_name(u));
      for (UOp s : u->src) {
        in.reads_mutable = in.reads_mutable || info_[s.get()].reads_mutable;
        in.effect = in.effect || info_[s.get()].effect;
      }
    }
  }

  void bind_buffers(BufferMap& buffers) {
    for (UOp u : printed_.order) {
      if (u->op != Ops::BUFFER) continue;
      const std::string& name = buffer_name(u);
      int64_t size = u->arg.tuple()->at(1).as<int64_t>();
      auto it = buffers.find(name);
      bool given = it != buffers.end();
      if (!given) {  // never given data: uninitialized memory, tracked as poison
        BufferData d{u->dtype, std::make_shared<Storage>(u->dtype, size), std::make_shared<Storage>(dtypes::bool_, size)};
        std::fill(d.poison->as<uint8_t>(), d.poison->as<uint8_t>() + size, uint8_t{1});
        it = buffers.emplace(name, d).first;
      }
      BufferData& d = it->second;
      if (d.dtype != u->dtype) throw Error("buffer '" + name + "' holds " + to_string(d.dtype) + " data but the graph declares it " + to_string(u->dtype) + " (at " + describe(u) + ")");
      if (d.data->size != size) throw Error("buffer '" + name + "' has " + std::to_string(d.data->size) + " elements but the graph declares " + std::to_string(size) + " (at " + describe(u) + ")");
      buffers_[u.get()] = BufferState{name, &d, {}, given};
    }
  }

  // ---------- diagnostics ----------
  std::string describe(UOp u) const { return opts_.describe ? opts_.describe(u) : printed_.line(u); }

  std::vector<std::pair<UOp, int64_t>> current_bindings() const { return env_order_; }

  [[noreturn]] void fail(UOp u, const std::string& msg) const {
    throw NodeError(msg + "\n  at " + describe(u) + "\n  with " + bindings_text(current_bindings()));
  }

  void check_clean(const std::string& name, UOp u, const Value& v) const {
    int64_t first = 0, count = 0;
    if (!any_poison(v, &first, &count)) return;
    std::string idx;
    for (int64_t i : unflatten(v.shape(), first)) idx += (idx.empty() ? "" : ", ") + std::to_string(i);
    std::string uninit;
    for (auto& [n, b] : buffers_)
      if (!b.initialized_by_caller) uninit += (uninit.empty() ? "" : ", ") + b.name;
    fail(u, "output '" + name + "' reads uninitialized memory: " + std::to_string(count) + " of " + std::to_string(v.numel()) +
                " elements are poison, first at [" + idx + "] (buffers never given data: " + (uninit.empty() ? "none" : uninit) + ")");
  }

  // ---------- range bindings ----------
  struct Bind {
    Interpreter& I;
    UOp r;
    bool had;
    int64_t old;
    Bind(Interpreter& in, UOp range, int64_t v) : I(in), r(range) {
      I.iterations_.push_back(++I.iteration_count_);
      auto it = I.env_.find(r.get());
      had = it != I.env_.end();
      old = had ? it->second : 0;
      I.env_[r.get()] = v;
      if (!had) I.env_order_.push_back({r, v});
      else for (auto& p : I.env_order_) if (p.first == r) p.second = v;
    }
    ~Bind() {
      I.iterations_.pop_back();
      if (had) {
        I.env_[r.get()] = old;
        for (auto& p : I.env_order_) if (p.first == r) p.second = old;
      } else {
        I.env_.erase(r.get());
        I.env_order_.pop_back();
      }
    }
  };

  int64_t range_end(UOp r) {
    int64_t n = as_int(eval(r->src[0]));
    if (opts_.max_loop && n > opts_.max_loop) fail(r, "range extent " + std::to_string(n) + " is over the limit of " + std::to_string(opts_.max_loop));
    return n;
  }

  // Calls body() for every binding of the ranges, row-major (the first range outermost).
  template <class F> void loop(const std::vector<UOp>& ranges, size_t i, F&& body) {
    if (i == ranges.size()) {
      body();
      return;
    }
    int64_t n = range_end(ranges[i]);
    for (int64_t k = 0; k < n; ++k) {
      Bind b(*this, ranges[i], k);
      loop(ranges, i + 1, body);
    }
  }

  // ---------- evaluation ----------
  Value eval(UOp u) {
    if (opts_.max_evals && ++evals_ > opts_.max_evals) fail(u, "evaluation budget of " + std::to_string(opts_.max_evals) + " node evaluations exceeded");
    if (++depth_ > opts_.max_depth) {
      depth_ = 0;
      fail(u, "graph is nested deeper than " + std::to_string(opts_.max_depth) + " levels; the interpreter refuses to recurse further");
    }
    struct Leave {
      size_t& d;
      ~Leave() { --d; }
    } leave{depth_};
    const NodeInfo& in = info_.at(u.get());
    std::vector<int64_t> key;
    for (UOp r : in.free) {
      auto it = env_.find(r.get());
      if (it == env_.end()) fail(u, "range " + range_name(r) + " is used outside its scope: nothing binds it here");
      key.push_back(it->second);
    }
    Memo& m = memo_[u.get()];
    if (m.valid && m.key == key && (in.effect || !in.reads_mutable || m.epoch == epoch_)) return m.value;
    Value v;
    if (opts_.on_enter) opts_.on_enter(u);  // debugger hook (interp.h)
    try {
      v = compute(u);
    } catch (const NodeError&) {
      throw;
    } catch (const Error& e) {
      fail(u, e.what());
    }
    // A mask with nothing set is no mask: later ops skip mask work (and take fast paths).
    if (v.poison && !mask_any(v, v.poison)) v.poison = nullptr;
    Memo& m2 = memo_[u.get()];
    m2 = Memo{true, std::move(key), epoch_, v};
    if (opts_.on_step) opts_.on_step(Step{u, current_bindings(), &m2.value});
    return v;
  }

  // Runs a node for its effects. A STORE or END runs at most once per iteration of the loops
  // around it (S5.4): two nodes that reach it in the same iteration run it once. (KERNELs of a
  // host schedule are exempt: equal launches are one node, and each listed launch runs.)
  void exec(UOp u) {
    if (u->op == Ops::STORE || u->op == Ops::END) {
      auto [it, first] = ran_in_.try_emplace(u.get(), iterations_);
      if (!first) {
        if (it->second == iterations_) return;
        it->second = iterations_;
      }
    }
    switch (u->op) {
      case Ops::END: run_end(u); return;
      case Ops::STORE: run_store(u); return;
      case Ops::KERNEL: run_kernel(u); return;
      case Ops::GROUP: case Ops::SINK:
        for (UOp s : u->src) exec(s);
        return;
      default:
        eval(u);
        return;
    }
  }

  std::vector<int64_t> concrete_shape(const std::vector<Value>& vals) {
    for (const Value& v : vals)
      if (!v.unshaped) return v.shape();
    return {};
  }

  Value compute(UOp u) {
    Ops op = u->op;
    if (is_elementwise(op) && op != Ops::CAST && op != Ops::BITCAST) return compute_alu(u);
    switch (op) {
      case Ops::CONST: return scalar(u->dtype, u.const_value());
      case Ops::RANGE: return index_scalar(env_.at(u.get()));  // scope was checked in eval
      case Ops::BIND: return eval(u->src[1]);
      case Ops::DEFINE_VAR: fail(u, "variable is not bound to a value (use BIND)");
      case Ops::BUFFER: return read_buffer(u);
      case Ops::CAST: return cast(eval(u->src[0]), u->dtype);
      case Ops::CONTIGUOUS: return contiguous(eval(u->src[0]));
      case Ops::CONTIGUOUS_BACKWARD: case Ops::DETACH: case Ops::REDUCE_BACKWARD: return eval(u->src[0]);
      case Ops::RESHAPE: case Ops::SHRINK: case Ops::PERMUTE: case Ops::FLIP: return movement(u, eval(u->src[0]));
      case Ops::EXPAND: return expand(u);
      case Ops::PAD: return pad(eval(u->src[0]), pairs(u));
      case Ops::REDUCE_AXIS: return reduce_axis(u);
      case Ops::REDUCE: return reduce(u);
      case Ops::AFTER:
        for (size_t i = 1; i < u->src.size(); ++i) exec(u->src[i]);
        return eval(u->src[0]);
      case Ops::ASSIGN: return assign(u);
      case Ops::INDEX: return tensor_index(u);
      case Ops::BUFFERIZE: return bufferize(u);
      default: fail(u, std::string("the interpreter does not evaluate ") + std::string(op_name(op)) + " nodes at tensor level");
    }
  }

  Value compute_alu(UOp u) {
    std::vector<Value> vals;
    for (UOp s : u->src) vals.push_back(eval(s));
    std::vector<int64_t> shape = concrete_shape(vals);
    for (size_t i = 0; i < vals.size(); ++i)
      if (!vals[i].unshaped && vals[i].shape() != shape)
        fail(u, "operands have different shapes at run time: " + shape_text(shape) + " vs " + shape_text(vals[i].shape()));
    std::vector<const Value*> ptrs;
    for (const Value& v : vals) ptrs.push_back(&v);
    return alu(u->op, u->dtype, ptrs, shape);
  }

  static std::string shape_text(const std::vector<int64_t>& s) {
    std::string t = "(";
    for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
    return t + (s.size() == 1 ? ",)" : ")");
  }

  Value read_buffer(UOp u) {
    BufferState& b = buffers_.at(u.get());
    const BufferData& d = b.snapshots.empty() ? *b.data : b.snapshots.back();
    Value v;
    v.dtype = d.dtype;
    v.view = View::contiguous({d.data->size});
    v.data = d.data;
    v.poison = d.poison;
    return v;
  }

  // A size operand: a bare RANGE as a dimension means the range's extent; anything else is
  // evaluated under the current bindings.
  int64_t dim(UOp d) { return d->op == Ops::RANGE ? range_end(d) : as_int(eval(d)); }

  std::vector<std::pair<int64_t, int64_t>> pairs(UOp u) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (size_t i = 1; i + 1 < u->src.size(); i += 2) out.push_back({as_int(eval(u->src[i])), as_int(eval(u->src[i + 1]))});
    return out;
  }

  Value movement(UOp u, const Value& src) {
    switch (u->op) {
      case Ops::RESHAPE: {
        std::vector<int64_t> shape;
        int64_t n = 1;
        for (size_t i = 1; i < u->src.size(); ++i) {
          shape.push_back(dim(u->src[i]));
          n *= shape.back();
        }
        if (src.unshaped) {
          if (n != 1) fail(u, "reshape of a scalar to " + shape_text(shape));
          return reshape_view(contiguous(broadcast_to(src, {})), shape);
        }
        if (n != src.numel()) fail(u, "reshape changes the element count at run time: " + shape_text(src.shape()) + " -> " + shape_text(shape));
        return reshape_view(src, shape);
      }
      case Ops::SHRINK: {
        auto b = pairs(u);
        for (size_t i = 0; i < b.size(); ++i)
          if (b[i].first < 0 || b[i].first > b[i].second || b[i].second > src.shape()[i])
            fail(u, "out-of-bounds index: SHRINK (" + std::to_string(b[i].first) + ", " + std::to_string(b[i].second) + ") on axis " +
                        std::to_string(i) + " of size " + std::to_string(src.shape()[i]));
        return shrink_view(src, b);
      }
      case Ops::PERMUTE: {
        std::vector<int64_t> perm;
        for (const Arg& a : *u->arg.tuple()) perm.push_back(a.as<int64_t>());
        return permute_view(src, perm);
      }
      default: {
        std::vector<bool> axes;
        for (const Arg& a : *u->arg.tuple()) axes.push_back(a.as<bool>());
        return flip_view(src, axes);
      }
    }
  }

  // EXPAND broadcasts size-1 axes; an axis whose new size is a RANGE the source depends on
  // instead collects the source's per-binding values along that axis (vmap's output).
  Value expand(UOp u) {
    UOp src = u->src[0];
    const std::vector<UOp>& free = info_.at(src.get()).free;
    std::vector<size_t> collect;
    std::vector<int64_t> shape;
    for (size_t i = 1; i < u->src.size(); ++i) {
      UOp d = u->src[i];
      shape.push_back(dim(d));
      if (d->op == Ops::RANGE && std::find(free.begin(), free.end(), d) != free.end()) collect.push_back(i - 1);
    }
    if (collect.empty()) return expand_checked(u, eval(src), shape);
    Value out = alloc(u->dtype, shape);
    std::vector<UOp> ranges;
    for (size_t a : collect) ranges.push_back(u->src[a + 1]);
    loop(ranges, 0, [&] {
      Value piece = eval(src);
      std::vector<std::pair<int64_t, int64_t>> at;
      std::vector<int64_t> piece_shape = shape;
      for (size_t a = 0; a < shape.size(); ++a) at.push_back({0, shape[a]});
      for (size_t k = 0; k < collect.size(); ++k) {
        int64_t v = env_.at(ranges[k].get());
        at[collect[k]] = {v, v + 1};
        piece_shape[collect[k]] = 1;
      }
      Value slot = shrink_view(out, at);
      write_through(slot, expand_checked(u, piece, piece_shape));
      if (slot.poison) out.poison = slot.poison;
    });
    return out;
  }

  Value expand_checked(UOp u, const Value& v, const std::vector<int64_t>& shape) {
    if (v.unshaped) return contiguous(broadcast_to(v, shape));
    if (v.shape().size() != shape.size()) fail(u, "expand of " + shape_text(v.shape()) + " to " + shape_text(shape));
    for (size_t i = 0; i < shape.size(); ++i)
      if (v.shape()[i] != shape[i] && v.shape()[i] != 1) fail(u, "expand of " + shape_text(v.shape()) + " to " + shape_text(shape) + ": axis " + std::to_string(i) + " is not 1");
    return expand_view(v, shape);
  }

  Value reduce_axis(UOp u) {
    const ArgTuple& t = *u->arg.tuple();
    Ops op = t[0].as<Ops>();
    std::vector<int64_t> axes;
    for (const Arg& a : *t[1].tuple()) axes.push_back(a.as<int64_t>());
    UOp x = u->src[0];
    // REDUCE_AXIS(ADD, MUL(a, b)): fold the products without materializing them.
    if (op == Ops::ADD && x->op == Ops::MUL && !info_.at(x.get()).effect) {
      Value a = eval(x->src[0]), b = eval(x->src[1]);
      std::vector<int64_t> shape = concrete_shape({a, b});
      if (!a.unshaped && !b.unshaped && a.shape() == b.shape() && !shape.empty())
        return reduce_mul_add(a, b, axes);
    }
    Value v = eval(x);
    if (v.unshaped) v = contiguous(broadcast_to(v, {}));
    return reduce_axes(op, v, axes);
  }

  // A contribution to a range fold. REDUCE(PAD(y), ..., ADD) with a clean y is kept as y plus
  // the box it lands in: adding the pad's zeros elsewhere would not change any element (the
  // running sum starts at +0.0 and, in round-to-nearest, never becomes -0.0), so only the box
  // is touched. This is an evaluation shortcut, not a different meaning.
  struct Contribution {
    Value full;                                   // when !boxed
    Value inner;                                  // when boxed: the PAD's source
    std::vector<std::pair<int64_t, int64_t>> box; // when boxed: where inner lands
    std::vector<int64_t> shape;
    bool boxed = false;
  };

  Contribution contribution(UOp x, Ops op) {
    Contribution c;
    if (op == Ops::ADD && x->op == Ops::PAD && !info_.at(x.get()).effect) {
      Value inner = eval(x->src[0]);
      if (!inner.unshaped && !inner.poison && !inner.footprint) {
        auto widths = pairs(x);
        c.shape = inner.shape();
        for (size_t i = 0; i < c.shape.size(); ++i) {
          c.box.push_back({widths[i].first, widths[i].first + c.shape[i]});
          c.shape[i] += widths[i].first + widths[i].second;
        }
        c.inner = inner;
        c.boxed = true;
        return c;
      }
    }
    c.full = eval(x);
    c.shape = c.full.unshaped ? std::vector<int64_t>{} : c.full.shape();
    return c;
  }

  void add_into(Ops op, Value& acc, const Contribution& c) {
    if (!c.boxed) return accumulate(op, acc, c.full);
    Value box = shrink_view(acc, c.box);
    accumulate(op, box, c.inner);
  }

  // REDUCE folds over every binding of its ranges, in order, starting from the identity.
  Value reduce(UOp u) {
    Ops op = u->arg.as<Ops>();
    std::vector<UOp> ranges(u->src.begin() + 1, u->src.end());
    Value acc;
    bool first = true;
    loop(ranges, 0, [&] {
      Contribution c = contribution(u->src[0], op);
      if (first) {
        acc = identity_like(op, u->dtype, c.shape);
        acc.unshaped = !c.boxed && c.full.unshaped;
        first = false;
      } else if (c.shape != acc.shape() && !(!c.boxed && c.full.unshaped)) {
        fail(u, "the reduced value's shape changes across the range: " + shape_text(acc.shape()) + " then " + shape_text(c.shape));
      }
      add_into(op, acc, c);
    });
    if (first) {  // an empty range: the identity, shaped like the node says when that is static
      auto dims = u->shape.kind == ShapeInfo::Kind::Shaped ? static_dims(u->shape.dims) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
      acc = identity_like(op, u->dtype, dims.value_or(std::vector<int64_t>{}));
    }
    return acc;
  }

  // ---------- tensor-level INDEX and BUFFERIZE (reference/LOWERING.md) ----------
  // An index or gate operand: a single clean integer (an access at a poisoned address is an error).
  int64_t access_operand(UOp u, UOp operand, const char* what) {
    Value v = eval(operand);
    if (v.numel() != 1) fail(u, std::string("the ") + what + " of an INDEX must be a single value, got " + std::to_string(v.numel()) + " elements");
    if (v.poison && mask_any(v, v.poison)) fail(u, std::string("the ") + what + " of an INDEX is poison (computed from uninitialized memory)");
    return as_int(v);
  }

  // INDEX T (x, i0, ..., i{n-1}[, gate]): the element of x at (i0, ...), unshaped. A false gate
  // gives 0 without reading (no bounds check). An unshaped x is itself.
  Value tensor_index(UOp u) {
    if (u->dtype.ptr || u->src.empty()) fail(u, "a pointer INDEX is kernel-level: it is evaluated inside a KERNEL's ast only");
    size_t n = u->src.size() - 1;
    bool gated = n > 0 && u->src.back()->dtype.is_bool();
    if (gated) {
      --n;
      if (access_operand(u, u->src.back(), "gate") == 0) return scalar(u->dtype, 0);
    }
    Value x = eval(u->src[0]);
    if (x.unshaped) return x;
    const std::vector<int64_t>& shape = x.shape();
    if (n != shape.size())
      fail(u, "INDEX of a value of shape " + shape_text(shape) + " takes " + std::to_string(shape.size()) + " indices (and an optional bool gate), got " + std::to_string(n));
    std::vector<int64_t> idx;
    bool oob = false;
    for (size_t i = 0; i < n; ++i) {
      idx.push_back(access_operand(u, u->src[1 + i], "index"));
      oob = oob || idx.back() < 0 || idx.back() >= shape[i];
    }
    if (oob) fail(u, "out-of-bounds index: INDEX " + shape_text(idx) + " into shape " + shape_text(shape));
    int64_t off = x.view.offset_of(idx);
    Value out = alloc(u->dtype, {});
    out.unshaped = true;
    dispatch(u->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      out.data->as<T>()[0] = x.data->as<T>()[off];
    });
    if (x.poison && x.poison->as<uint8_t>()[off]) {
      out.poison = std::make_shared<Storage>(dtypes::bool_, 1);
      out.poison->as<uint8_t>()[0] = 1;
    }
    return out;
  }

  // BUFFERIZE T (e, r0, ..., r{n-1}): e under every binding of the ranges, row-major, collected
  // into a fresh contiguous value of shape (extent(r0), ...). Poison carries per element.
  Value bufferize(UOp u) {
    std::vector<UOp> ranges(u->src.begin() + 1, u->src.end());
    std::vector<int64_t> shape;
    for (UOp r : ranges) {
      if (r->op != Ops::RANGE) fail(u, "BUFFERIZE sources after the value must be RANGEs");
      shape.push_back(range_end(r));
    }
    Value out = alloc(u->dtype, shape);
    int64_t flat = 0;
    loop(ranges, 0, [&] {
      Value e = eval(u->src[0]);
      if (e.numel() != 1) fail(u, "BUFFERIZE collects a single (unshaped) value per binding, got shape " + shape_text(e.shape()));
      int64_t off = e.view.offset_of(std::vector<int64_t>(e.shape().size(), 0));
      dispatch(u->dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        out.data->as<T>()[flat] = e.data->as<T>()[off];
      });
      if (e.poison && e.poison->as<uint8_t>()[off]) {
        if (!out.poison) out.poison = std::make_shared<Storage>(dtypes::bool_, out.numel());
        out.poison->as<uint8_t>()[flat] = 1;
      }
      ++flat;
    });
    return out;
  }

  // ---------- kernel-level programs (reference/LOWERING.md) ----------
  Kernel& kernel_for(UOp u) {
    auto it = kernels_.find(u.get());
    if (it != kernels_.end()) return *it->second;
    KernelOptions ko;
    const ArgTuple* t = u->arg.tuple();
    ko.name = t && !t->empty() && (*t)[0].is<std::string>() ? (*t)[0].as<std::string>() : u->arg.is<std::string>() ? u->arg.as<std::string>() : "kernel";
    ko.describe = [this](UOp n) { return describe(n); };
    ko.max_loop = opts_.max_loop;
    return *kernels_.emplace(u.get(), std::make_unique<Kernel>(u->src[0], std::move(ko))).first->second;
  }

  // KERNEL void (ast, buf..., BIND...): BUFFER sources bind DEFINE_GLOBAL slots 0, 1, ... in
  // order; BINDs give DEFINE_VARs their values (evaluated here, under the host loop's ranges).
  void run_kernel(UOp u) {
    if (u->src.empty() || u->src[0]->op != Ops::SINK) fail(u, "a KERNEL's first source is its ast (a SINK of stores)");
    if (opts_.on_enter) opts_.on_enter(u);  // debugger hook (interp.h)
    KernelArgs args;
    for (size_t i = 1; i < u->src.size(); ++i) {
      UOp s = u->src[i];
      if (s->op == Ops::AFTER && base_buffer(s) && base_buffer(s)->op == Ops::BUFFER) {
        // AFTER(BUFFER, steps...) (before `schedule`): run the steps once (memoized), then bind the buffer
        eval(s);
        s = base_buffer(s);
      }
      if (s->op == Ops::BUFFER) {
        BufferState& b = buffers_.at(s.get());
        args.buffers.push_back(b.data);
        args.names.push_back(b.name);
      } else if (s->op == Ops::BIND) {
        UOp var = s->src[0];
        const ArgTuple& vt = *var->arg.tuple();
        const std::string& name = vt[0].as<std::string>();
        Value v = eval(s->src[1]);
        if (v.numel() != 1 || (v.poison && mask_any(v, v.poison))) fail(s, "the value bound to variable '" + name + "' must be a single clean integer");
        int64_t x = as_int(v);
        if (x < vt[1].as<int64_t>() || x > vt[2].as<int64_t>())
          fail(s, "variable '" + name + "' bound to " + std::to_string(x) + ", outside its bounds [" + std::to_string(vt[1].as<int64_t>()) + ", " + std::to_string(vt[2].as<int64_t>()) + "]");
        auto [it, fresh] = args.vars.emplace(name, x);
        if (!fresh && it->second != x) fail(s, "variable '" + name + "' is bound twice with different values");
      } else {
        fail(u, "a KERNEL's sources after the ast are BUFFERs and BINDs, got " + std::string(op_name(s->op)));
      }
    }
    try {
      kernel_for(u).run(args);
    } catch (const NodeError&) {
      ++epoch_;
      throw;
    } catch (const Error& e) {
      ++epoch_;
      fail(u, e.what());
    }
    ++epoch_;  // memoized reads of the buffers it wrote are stale
    if (opts_.on_step) {
      Value none;
      none.view = View::contiguous({0});
      opts_.on_step(Step{u, current_bindings(), &none});
    }
  }

  // ---------- effects ----------
  // The view of live buffer memory a STORE/ASSIGN target denotes.
  Value place_of(UOp t) {
    if (t->op == Ops::BUFFER) {
      BufferState& b = buffers_.at(t.get());
      Value v;
      v.dtype = t->dtype;
      v.view = View::contiguous({b.data->data->size});
      v.data = b.data->data;
      v.poison = b.data->poison;
      return v;
    }
    if (t->op == Ops::AFTER) {
      for (size_t i = 1; i < t->src.size(); ++i) exec(t->src[i]);
      return place_of(t->src[0]);
    }
    if (t->op == Ops::EXPAND) fail(t, "cannot write through an EXPAND: several elements would share one memory slot");
    if (!is_movement(t->op) || t->op == Ops::PAD)
      fail(t, std::string("a STORE/ASSIGN target must be a buffer seen through RESHAPE/SHRINK/PERMUTE/FLIP/AFTER, not ") + std::string(op_name(t->op)));
    Value base = place_of(t->src[0]);
    if (t->op == Ops::RESHAPE && !base.view.is_contiguous()) fail(t, "cannot write through a RESHAPE of a non-contiguous view");
    return movement(t, base);
  }

  void write(UOp at, Value& place, const Value& v_raw) {
    if (!v_raw.unshaped && v_raw.shape() != place.shape())
      fail(at, "value of shape " + shape_text(v_raw.shape()) + " written to a target of shape " + shape_text(place.shape()));
    Value v = v_raw.data == place.data ? contiguous(v_raw) : v_raw;  // the value may alias its target
    write_through(place, v);
    UOp buf = base_buffer(at->src[0]);
    BufferState& b = buffers_.at(buf.get());
    if (place.poison && !b.data->poison) b.data->poison = place.poison;
    // A parallel loop's reads keep seeing the snapshot; elsewhere reads see this write.
    if (b.snapshots.empty()) ++epoch_;
  }

  void run_store(UOp u) {
    Value place = place_of(u->src[0]);
    Value v = eval(u->src[1]);
    write(u, place, v);
  }

  // END runs its body once per binding. OUTER ranges are sequential: each iteration sees the
  // previous one's writes. Every other range is a parallel map: all iterations read the
  // buffers as they were when the loop began.
  void run_end(UOp u) {
    std::vector<UOp> ranges(u->src.begin() + 1, u->src.end());
    bool parallel = std::any_of(ranges.begin(), ranges.end(), [](UOp r) { return range_axis(r) != AxisType::OUTER; });
    std::vector<BufferState*> snap;
    if (parallel) {
      for (UOp n : toposort(u->src[0]))
        if ((n->op == Ops::STORE || n->op == Ops::ASSIGN))
          if (UOp b = base_buffer(n->src[0])) snap.push_back(&buffers_.at(b.get()));
      for (BufferState* b : snap) {
        BufferData copy = *b->data;
        Value d = read_buffer_state(*b);
        copy.data = contiguous(d).data;
        b->snapshots.push_back(copy);
      }
      ++epoch_;
    }
    loop(ranges, 0, [&] { exec(u->src[0]); });
    for (BufferState* b : snap) b->snapshots.pop_back();
    ++epoch_;
  }

  Value read_buffer_state(const BufferState& b) {
    Value v;
    v.dtype = b.data->dtype;
    v.view = View::contiguous({b.data->data->size});
    v.data = b.data->data;
    return v;
  }

  // ASSIGN writes its value into the target. When the value is a REDUCE over an OUTER range it
  // is an assign scan: iterations run in order, and while they run, reads of the target see the
  // partial fold on every element some earlier iteration wrote (its footprint: the elements that
  // are not a PAD's fill) and the original contents elsewhere. The final content is the REDUCE.
  Value assign(UOp u) {
    UOp value = u->src[1];
    bool scan = value->op == Ops::REDUCE && std::any_of(value->src.begin() + 1, value->src.end(), [](UOp r) { return range_axis(r) == AxisType::OUTER; });
    Value place = place_of(u->src[0]);
    if (!scan) {
      write(u, place, eval(value));
      return contiguous(place);
    }
    Ops op = value->arg.as<Ops>();
    std::vector<UOp> ranges(value->src.begin() + 1, value->src.end());
    Value sum = identity_like(op, value->dtype, place.shape());
    Value written = alloc(dtypes::bool_, place.shape());
    loop(ranges, 0, [&] {
      Contribution c = contribution(value->src[0], op);
      if (!(!c.boxed && c.full.unshaped) && c.shape != place.shape())
        fail(value, "scan contribution of shape " + shape_text(c.shape) + " for a target of shape " + shape_text(place.shape()));
      add_into(op, sum, c);
      if (c.boxed) {  // only the box changed: it is now written, and visible as the partial sum
        Value w = shrink_view(written, c.box);
        write_through(w, scalar(dtypes::bool_, 1));
        Value target_box = shrink_view(place, c.box);
        write(u, target_box, shrink_view(sum, c.box));
        return;
      }
      Value fp = c.full.footprint ? mask_view(c.full, c.full.footprint) : broadcast_to(scalar(dtypes::bool_, 1), place.shape());
      Value prev = written;
      written = alu(Ops::OR, dtypes::bool_, {&prev, &fp}, place.shape());
      Value old = contiguous(place);
      Value visible = alu(Ops::WHERE, value->dtype, {&written, &sum, &old}, place.shape());
      write(u, place, visible);
    });
    write(u, place, sum);
    return contiguous(place);
  }

  UOp root_;
  const Options& opts_;
  Printed printed_;
  std::unordered_map<const UOpNode*, NodeInfo> info_;
  std::unordered_map<const UOpNode*, Memo> memo_;
  std::unordered_map<const UOpNode*, BufferState> buffers_;
  std::unordered_map<const UOpNode*, std::unique_ptr<Kernel>> kernels_;  // compiled once per KERNEL node
  std::unordered_map<const UOpNode*, int64_t> env_;
  std::vector<std::pair<UOp, int64_t>> env_order_;
  std::vector<uint64_t> iterations_;  // a fresh number for every binding made, innermost last
  uint64_t iteration_count_ = 0;
  std::unordered_map<const UOpNode*, std::vector<uint64_t>> ran_in_;  // effect -> iterations_ when it last ran
  uint64_t epoch_ = 1;
  uint64_t evals_ = 0;
  size_t depth_ = 0;
};

}  // namespace

std::vector<Output> run(UOp root, BufferMap& buffers, const Options& opts) {
  Interpreter in(root, buffers, opts);
  return in.outputs();
}

}  // namespace ow::interp
