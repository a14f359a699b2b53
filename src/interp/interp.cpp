// The reference interpreter: setup, the memo and every value but the folds (evaluator.h says where the rest is).
#include "interp/interp.h"
#include "interp/inputs.h"

#include <pthread.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <utility>

#include "interp/budget.h"
#include "interp/dispatch.h"
#include "grad/gradient.h"
#include "interp/evaluator.h"
#include "uop/args.h"
#include "uop/shape.h"
#include "uop/verify.h"

namespace ow::interp {

namespace {
// Nodes whose sources run in a defined order (effects.cpp); the sources of every other node are
// unordered siblings (SEMANTICS S5.5).
bool sequences_sources(Ops op) {
  return op == Ops::AFTER || op == Ops::STORE || op == Ops::ASSIGN || op == Ops::END || op == Ops::GROUP || op == Ops::SINK ||
         op == Ops::KERNEL || op == Ops::REDUCE || op == Ops::BUFFERIZE;
}
}  // namespace

std::vector<int64_t> concrete_shape(const std::vector<Value>& vals) {
  for (const Value& v : vals)
    if (!v.unshaped) return v.shape();
  return {};
}

// ---------------- setup ----------------

Interpreter::Interpreter(UOp root, BufferMap& buffers, const Options& opts)
    : root_(root), opts_(opts), mem_([this](UOp u) { return describe(u); }) {
  printed_ = number_graph(root);
  bind_buffers(buffers);
  ctx_ = Clock(mem_, Clock::Kind::Live);
  analyse();
}

void Interpreter::bind_buffers(BufferMap& buffers) {
  std::set<std::string> written;
  for (UOp u : printed_.order) {
    if (is_write(u->op) && !u->src.empty())
      if (UOp b = base_buffer(u->src[0])) written.insert(buffer_name(b));
    if (u->op == Ops::KERNEL)  // a KERNEL may write every buffer bound to it
      for (size_t i = 1; i < u->src.size(); ++i)
        if (UOp b = base_buffer(u->src[i])) written.insert(buffer_name(b));
  }
  std::map<std::string, int> slots;
  for (UOp u : printed_.order) {
    if (u->op != Ops::BUFFER) continue;
    const std::string& name = buffer_name(u);
    int64_t size = buffer_size(u);
    auto it = buffers.find(name);
    bool given = it != buffers.end();
    if (!given) {  // never given data: uninitialized memory, tracked as poison
      BufferData d{u->dtype, std::make_shared<Storage>(u->dtype, size), std::make_shared<Storage>(dtypes::bool_, size)};
      std::fill(d.poison->as<uint8_t>(), d.poison->as<uint8_t>() + size, uint8_t{1});
      d.poison->set_nonzero(size);
      BufferMap& owner = is_temporary(name) ? temps_ : buffers;  // a temporary is this run's alone
      it = owner.try_emplace(name, d).first;
    }
    BufferData& d = it->second;
    if (d.dtype != u->dtype) throw Error("buffer '" + name + "' holds " + to_string(d.dtype) + " data but the graph declares it " + to_string(u->dtype) + " (at " + describe(u) + ")");
    if (d.data->size != size) throw Error("buffer '" + name + "' has " + std::to_string(d.data->size) + " elements but the graph declares " + std::to_string(size) + " (at " + describe(u) + ")");
    int slot = -1;
    if (written.count(name)) {  // BUFFER nodes of one name share one slot
      auto [s, fresh] = slots.emplace(name, static_cast<int>(mem_.size()));
      if (fresh) mem_.add(name, &d);
      slot = s->second;
    }
    buffers_[u.get()] = BufferState{name, &d, given, slot};
  }
}

void Interpreter::analyse() {
  for (UOp u : printed_.order) {
    NodeInfo& in = info_[u.get()];
    in.free = free_ranges(u);
    in.effect = is_effect_or_launch(u->op);
    std::set<size_t> mut;
    if (u->op == Ops::BUFFER && buffers_.at(u.get()).slot >= 0) mut.insert(static_cast<size_t>(buffers_.at(u.get()).slot));
    int touching = 0;  // sources that write, or read what something writes
    for (UOp s : u->src) {
      const NodeInfo& si = info_.at(s.get());
      in.effect = in.effect || si.effect;
      mut.insert(si.mut.begin(), si.mut.end());
      touching += si.effect || !si.mut.empty();
    }
    in.mut.assign(mut.begin(), mut.end());
    in.fork = !sequences_sources(u->op) && touching >= 2 &&
              std::any_of(u->src.begin(), u->src.end(), [&](UOp s) { return info_.at(s.get()).effect; });
    for (UOp s : u->src) ++info_.at(s.get()).wanted;
  }
  ++info_.at(root_.get()).wanted;
}

// ---------------- diagnostics ----------------

std::string Interpreter::describe(UOp u) const { return opts_.describe ? opts_.describe(u) : printed_.line(u); }

void Interpreter::locate(UOp u, Error& e) const { e.locate("\n  at " + describe(u) + "\n  with " + bindings_text(env_order_)); }

void Interpreter::check_clean(const std::string& name, UOp u, const Value& v) const {
  if (!any_poison(v)) return;
  std::set<std::string> uninit;  // in the graph's order
  std::string list;
  for (UOp n : printed_.order)
    if (n->op == Ops::BUFFER && !buffers_.at(n.get()).initialized_by_caller && uninit.insert(buffer_name(n)).second)
      list += (list.empty() ? "" : ", ") + buffer_name(n);
  raise(u, UninitializedRead(uninitialized_output(name, v, list)));
}

// ---------------- outputs ----------------

// The SINK's outputs are unordered (S5.5): each reads what it is ordered after, whichever comes
// first. Outputs that write nothing go first; every output that writes, but the last, runs in a
// fork of the starting clock, so the outputs after it still read the contents before its writes.
std::vector<Output> Interpreter::outputs() {
  std::vector<UOp> outs = root_->op == Ops::SINK ? root_->src : std::vector<UOp>{root_};
  std::vector<size_t> order;
  for (size_t i = 0; i < outs.size(); ++i)
    if (!info_.at(outs[i].get()).effect) order.push_back(i);
  size_t pure = order.size();
  for (size_t i = 0; i < outs.size(); ++i)
    if (info_.at(outs[i].get()).effect) order.push_back(i);
  std::vector<std::optional<Value>> values(outs.size());
  for (size_t k = 0; k < order.size(); ++k) {
    UOp o = outs[order[k]];
    std::optional<Clock> start;
    if (k >= pure && k + 1 < order.size()) start = ctx_;
    if (o->dtype.is_void()) exec(o);
    else values[order[k]] = contiguous(eval(o));  // a copy: later writes never change it
    if (start) ctx_ = *start;
  }
  std::vector<Output> result;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!values[i]) continue;
    std::string name = output_name(root_, i);
    check_clean(name, outs[i], *values[i]);
    result.push_back({name, *values[i]});
  }
  return result;
}

// ---------------- range bindings ----------------

Interpreter::Bind::Bind(Interpreter& in, UOp range, int64_t v) : I(in), r(range) {
  I.iterations_.push_back(++I.iteration_count_);
  I.iteration_ranges_.push_back(range.get());
  auto it = I.env_.find(r.get());
  had = it != I.env_.end();
  old = had ? it->second : 0;
  I.env_[r.get()] = v;
  if (!had) I.env_order_.push_back({r, v});
  else for (auto& p : I.env_order_) if (p.first == r) p.second = v;
}

Interpreter::Bind::~Bind() {
  I.iterations_.pop_back();
  I.iteration_ranges_.pop_back();
  if (had) {
    I.env_[r.get()] = old;
    for (auto& p : I.env_order_) if (p.first == r) p.second = old;
  } else {
    I.env_.erase(r.get());
    I.env_order_.pop_back();
  }
}

int64_t Interpreter::range_end(UOp r) {
  int64_t n = as_int(eval(r->src[0]));
  if (opts_.max_loop && n > opts_.max_loop) fail(r, "range extent " + std::to_string(n) + " is over the limit of " + std::to_string(opts_.max_loop));
  return n;
}

std::vector<uint64_t> Interpreter::range_key(UOp u) {
  std::vector<uint64_t> key;
  for (UOp r : info_.at(u.get()).free) {
    auto it = env_.find(r.get());
    if (it == env_.end()) fail(u, "range " + range_name(r) + " is used outside its scope: nothing binds it here");
    key.push_back(static_cast<uint64_t>(it->second));
  }
  return key;
}

// ---------------- evaluation ----------------

// A memo entry is reused under the same bindings and versions, unless a write made in place
// since changed the storage its value views.
bool Interpreter::reusable(const Memo& m, const NodeInfo& in, const std::vector<uint64_t>& key) const {
  if (!m.valid || m.key != key) return false;
  size_t first = in.free.size();
  for (size_t i = 0; i < in.mut.size(); ++i)
    if (key[first + i] != mem_.latest(in.mut[i]) && mem_.aliases(in.mut[i], m.value)) return false;
  return true;
}

namespace {

// Bytes of this thread's stack left below the caller's frame. The interpreter recurses once per
// level of the graph, and how much a level takes depends on the nodes and the build (a nest of
// REDUCEs under ASan took 8 MB at 3,000 levels): it stops while there is room to report.
size_t stack_left() {
  thread_local const char* low = [] {
    pthread_attr_t a;
    void* addr = nullptr;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
      pthread_attr_getstack(&a, &addr, &size);
      pthread_attr_destroy(&a);
    }
    return static_cast<const char*>(addr);
  }();
  const char* here = static_cast<const char*>(__builtin_frame_address(0));
  return low && here > low ? static_cast<size_t>(here - low) : SIZE_MAX;
}
constexpr size_t kStackReserve = 512 * 1024;  // what reporting the error may still need

}  // namespace

Value Interpreter::eval(UOp u) {
  if (opts_.max_evals && ++evals_ > opts_.max_evals) raise(u, BudgetExceeded("step budget exceeded: " + std::to_string(opts_.max_evals) + " node evaluations (ow: --max-steps N raises it)"));
  if (++depth_ > opts_.max_depth) {
    depth_ = 0;
    fail(u, "graph is nested deeper than " + std::to_string(opts_.max_depth) + " levels; the interpreter refuses to recurse further");
  }
  if (stack_left() < kStackReserve) {
    size_t levels = depth_;
    depth_ = 0;
    fail(u, "graph is nested deeper than this thread's stack allows the interpreter (" + std::to_string(levels) + " levels); the interpreter refuses to recurse further");
  }
  struct Leave {
    size_t& d;
    ~Leave() { --d; }
  } leave{depth_};
  const NodeInfo& in = info_.at(u.get());
  std::vector<uint64_t> key = range_key(u);
  for (size_t s : in.mut) key.push_back(read_version(s));
  Memo& m = memo_[u.get()];
  if (reusable(m, in, key)) {
    ctx_.merge(m.after);
    return m.value;
  }
  m.after = Clock();  // a stale record would keep old versions alive while this one runs
  Clock start = in.effect ? ctx_.snapshot() : Clock();
  Value v;
  if (opts_.on_enter) opts_.on_enter(u);  // debugger hook (interp.h)
  if (in.fork) joins_.push_back(ctx_.snapshot());
  try {
    v = compute(u);
  } catch (Error& e) {
    locate(u, e);
    throw;
  }
  if (in.fork) {  // the node completes after all its forked sources
    ctx_.merge(joins_.back());
    joins_.pop_back();
  }
  // A mask with nothing set is no mask: later ops skip mask work (and take fast paths).
  if (v.poison && !mask_any(v, v.poison)) v.poison = nullptr;
  Memo& m2 = memo_[u.get()];
  m2 = Memo{true, std::move(key), v, in.effect ? ctx_.record_since(start) : Clock()};
  if (opts_.on_step) opts_.on_step(Step{u, env_order_, &m2.value});
  if (in.free.empty() && ((in.mut.empty() && !in.effect) || iterations_.empty())) retire(u);
  return v;
}

// A node with no free range, once memoized, asks its sources again only on a memo miss: never if
// it is pure (reads nothing written, runs no effect), and otherwise only if a buffer it reads is
// written again before it is asked again. A pure node retires as soon as it has its value; any
// other does too outside every loop (a realize's graph: tinygrad's Tensor.rand reads its counter
// buffer and assigns it in the same graph, so every value of the Threefry chain reads a written
// buffer, or runs the assign), where a later write at top level makes at most one more miss;
// inside a loop, where it would miss every iteration, it keeps its sources. A source whose
// consumers have all retired is dropped from the memo and retires in turn, and so on down (a
// Threefry chain over a 32000x4096 table then holds a few of its 500 MB intermediates at a time,
// not all thirty). Only memory and time change: a value asked for again is recomputed in the
// context that asks, as on any memo miss, and the effects it reaches do not run again (ASSIGN
// and AFTER keep their runs in runs_, STORE and END in effect_runs_); the effect nodes themselves
// keep their memo.
void Interpreter::retire(UOp u) {
  std::vector<UOp> work{u};
  while (!work.empty()) {
    UOp n = work.back();
    work.pop_back();
    NodeInfo& in = info_.at(n.get());
    if (in.retired) continue;
    in.retired = true;
    for (UOp s : n->src) {
      NodeInfo& si = info_.at(s.get());
      if (--si.wanted > 0) continue;  // a consumer that has not retired may still ask
      if (!is_effect_or_launch(s->op) && s->op != Ops::AFTER) memo_.erase(s.get());
      work.push_back(s);
    }
  }
}

Value Interpreter::compute(UOp u) {
  Ops op = u->op;
  if (is_elementwise(op) && op != Ops::CAST && op != Ops::BITCAST) return compute_alu(u);
  switch (op) {
    case Ops::CONST: return u->arg.is<int64_t>() ? int_scalar(u->dtype, u->arg.as<int64_t>()) : scalar(u->dtype, u.const_value());
    case Ops::RANGE: return index_scalar(env_.at(u.get()));  // scope was checked in eval
    case Ops::BIND: return operand(u, u->src[1]);
    case Ops::DEFINE_VAR: fail(u, "variable is not bound to a value (use BIND)");
    case Ops::BUFFER: return read_buffer(u);
    case Ops::CAST: return cast(eval(u->src[0]), u->dtype);
    case Ops::BITCAST: return bitcast(eval(u->src[0]), u->dtype);
    case Ops::CONTIGUOUS: return contiguous(eval(u->src[0]));
    case Ops::CONTIGUOUS_BACKWARD: case Ops::DETACH: case Ops::REDUCE_BACKWARD: return operand(u, u->src[0]);
    case Ops::RESHAPE: case Ops::SHRINK: case Ops::PERMUTE: case Ops::FLIP: return movement(u, operand(u, u->src[0]));
    case Ops::EXPAND: return expand(u);
    case Ops::PAD: {
      Value x = operand(u, u->src[0]);
      return pad(x, pairs(u));
    }
    case Ops::REDUCE_AXIS: return reduce_axis(u);
    case Ops::REDUCE: return reduce(u);
    case Ops::AFTER: return after(u);
    case Ops::ASSIGN: return assign(u);
    case Ops::INDEX: return tensor_index(u);
    case Ops::BUFFERIZE: return bufferize(u);
    default: fail(u, std::string("the interpreter does not evaluate ") + std::string(op_name(op)) + " nodes at tensor level");
  }
}

Value Interpreter::compute_alu(UOp u) {
  std::vector<Value> vals;
  for (UOp s : u->src) vals.push_back(operand(u, s));
  std::vector<int64_t> shape = concrete_shape(vals);
  for (size_t i = 0; i < vals.size(); ++i)
    if (!vals[i].unshaped && vals[i].shape() != shape)
      fail(u, "operands have different shapes at run time: " + shape_text(shape) + " vs " + shape_text(vals[i].shape()));
  std::vector<const Value*> ptrs;
  for (const Value& v : vals) ptrs.push_back(&v);
  return alu(u->op, u->dtype, ptrs, shape);
}

Value Interpreter::read_buffer(UOp u) {
  const BufferState& b = buffers_.at(u.get());
  const BufferData& d = b.slot < 0 ? *b.data : mem_.contents(static_cast<size_t>(b.slot), read_version(static_cast<size_t>(b.slot)));
  Value v;
  v.dtype = d.dtype;
  v.view = View::contiguous({d.data->size});
  v.data = d.data;
  v.poison = d.poison;
  return v;
}

// A size operand: a bare RANGE as a dimension means the range's extent; anything else is
// evaluated under the current bindings.
int64_t Interpreter::dim(UOp d) { return d->op == Ops::RANGE ? range_end(d) : as_int(eval(d)); }

std::vector<std::pair<int64_t, int64_t>> Interpreter::pairs(UOp u) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (size_t i = 1; i + 1 < u->src.size(); i += 2) out.push_back({as_int(eval(u->src[i])), as_int(eval(u->src[i + 1]))});
  return out;
}

Value Interpreter::movement(UOp u, const Value& src) {
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
// The axes an EXPAND collects along: those whose new size is a RANGE its source depends on.
std::vector<size_t> Interpreter::collected_axes(UOp u) const {
  std::vector<size_t> collect;
  for (size_t i = 1; i < u->src.size(); ++i)
    if (u->src[i]->op == Ops::RANGE && has_free_range(u->src[0], u->src[i])) collect.push_back(i - 1);
  return collect;
}

Value Interpreter::expand(UOp u) {
  UOp src = u->src[0];
  std::vector<size_t> collect = collected_axes(u);
  std::vector<int64_t> shape;
  for (size_t i = 1; i < u->src.size(); ++i) shape.push_back(dim(u->src[i]));
  if (collect.empty()) return expand_checked(u, operand(u, src), shape);
  Value out = alloc(u->dtype, shape);
  std::vector<UOp> ranges;
  for (size_t a : collect) ranges.push_back(u->src[a + 1]);
  loop(ranges, 0, [&] {
    run_iteration_effects(src);
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

Value Interpreter::expand_checked(UOp u, const Value& v, const std::vector<int64_t>& shape) {
  if (v.unshaped) return contiguous(broadcast_to(v, shape));
  if (v.shape().size() != shape.size()) fail(u, "expand of " + shape_text(v.shape()) + " to " + shape_text(shape));
  for (size_t i = 0; i < shape.size(); ++i)
    if (v.shape()[i] != shape[i] && v.shape()[i] != 1) fail(u, "expand of " + shape_text(v.shape()) + " to " + shape_text(shape) + ": axis " + std::to_string(i) + " is not 1");
  return expand_view(v, shape);
}

// ---------------- tensor-level INDEX and BUFFERIZE (reference/LOWERING.md) ----------------

// An index or gate operand: a single clean integer (an access at a poisoned address is an error).
int64_t Interpreter::access_operand(UOp u, UOp operand, const char* what) {
  Value v = eval(operand);
  if (v.numel() != 1) fail(u, std::string("the ") + what + " of an INDEX must be a single value, got " + std::to_string(v.numel()) + " elements");
  if (v.poison && mask_any(v, v.poison)) fail(u, std::string("the ") + what + " of an INDEX is poison (computed from uninitialized memory)");
  return as_int(v);
}

// INDEX T (x, i0, ..., i{n-1}[, gate]): the element of x at (i0, ...), unshaped. A false gate
// gives 0 without reading (no bounds check). An unshaped x is itself.
Value Interpreter::tensor_index(UOp u) {
  if (u->dtype.ptr || u->src.empty()) fail(u, "a pointer INDEX is kernel-level: it is evaluated inside a KERNEL's ast only");
  size_t n = u->src.size() - 1;
  bool gated = n > 0 && u->src.back()->dtype.is_bool();
  if (gated) {
    --n;
    if (access_operand(u, u->src.back(), "gate") == 0) return scalar(u->dtype, 0);
  }
  Value x = operand(u, u->src[0]);
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
    out.data->as<T>()[0] = std::as_const(*x.data).as<T>()[off];
  });
  if (x.poison && std::as_const(*x.poison).as<uint8_t>()[off]) {
    out.poison = std::make_shared<Storage>(dtypes::bool_, 1);
    out.poison->as<uint8_t>()[0] = 1;
  }
  return out;
}

// BUFFERIZE T (e, r0, ..., r{n-1}): e under every binding of the ranges, row-major, collected
// into a fresh contiguous value of shape (extent(r0), ...). Poison carries per element.
Value Interpreter::bufferize(UOp u) {
  std::vector<UOp> ranges(u->src.begin() + 1, u->src.end());
  std::vector<int64_t> shape;
  for (UOp r : ranges) {
    if (r->op != Ops::RANGE) fail(u, "BUFFERIZE sources after the value must be RANGEs");
    shape.push_back(range_end(r));
  }
  Value out = alloc(u->dtype, shape);
  int64_t flat = 0;
  Unordered elements(*this, true);  // the elements of one value: unordered (S5.5)
  loop(ranges, 0, [&] {
    elements.next();
    Value e = eval(u->src[0]);
    if (e.numel() != 1) fail(u, "BUFFERIZE collects a single (unshaped) value per binding, got shape " + shape_text(e.shape()));
    int64_t off = e.view.offset_of(std::vector<int64_t>(e.shape().size(), 0));
    dispatch(u->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      out.data->as<T>()[flat] = std::as_const(*e.data).as<T>()[off];
    });
    if (e.poison && std::as_const(*e.poison).as<uint8_t>()[off]) {
      if (!out.poison) out.poison = std::make_shared<Storage>(dtypes::bool_, out.numel());
      out.poison->as<uint8_t>()[flat] = 1;
    }
    ++flat;
  });
  return out;
}

// ---------------- entry point ----------------

BufferData copy_buffer(const BufferData& d) {
  return BufferData{d.dtype, std::make_shared<Storage>(*d.data), d.poison ? std::make_shared<Storage>(*d.poison) : nullptr};
}

BufferMap copy_buffers(const BufferMap& b) {
  BufferMap out;
  for (auto& [name, d] : b) out[name] = copy_buffer(d);
  return out;
}

std::vector<Output> run(UOp root, BufferMap& buffers, const Options& opts) {
  require_valid(root);  // first: an invalid graph's inputs (or gradient) mean nothing
  check_inputs(graph_buffers(root), buffers);
  if (grad::has_gradient(root)) {
    root = grad::expand(root);  // a GRADIENT means the graph computing it (S9)
    require_valid(root);        // what the gradient pass built
  }
  Interpreter in(root, buffers, opts);
  return in.outputs();
}

}  // namespace ow::interp
