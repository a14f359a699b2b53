// Realizing tensors: one graph per realize, loops under a range closed there, and afterwards every
// tensor that names an effect the graph ran is the memory that effect wrote (as in tinygrad).
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "interp/inputs.h"
#include "interp/npy.h"
#include "tensor/state.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/pattern.h"
#include "uop/shape.h"
#include "uop/verify.h"

namespace ow {

using namespace tensor_detail;

namespace {

// A view of a buffer with its AFTERs dropped (the plain memory it names), or null.
UOp without_after(UOp v) {
  if (v->op == Ops::AFTER) return without_after(v->src[0]);
  if (v->op == Ops::BUFFER) return v;
  if (!is_movement(v->op) || v->op == Ops::EXPAND || v->op == Ops::PAD) return UOp();
  UOp base = without_after(v->src[0]);
  if (!base) return UOp();
  std::vector<UOp> src = v->src;
  src[0] = base;
  return v.replace_src(src);
}

Evaluator& evaluator() {
  static Evaluator e;
  return e;
}
// The store holds every tensor's memory; a run is given only its graph's buffers (a run refuses
// names it does not know, interp/inputs.h), sharing their storage, and what it creates or
// replaces goes back to the store.
std::vector<interp::Output> evaluate(UOp graph) {
  interp::BufferMap mine = interp::buffers_for(graph, buffer_store());
  std::vector<interp::Output> outs = evaluator() ? evaluator()(graph, mine) : interp::run(graph, mine);
  for (auto& [name, d] : mine) buffer_store()[name] = d;
  return outs;
}


// The memory a tensor names once the effects it stands for have run: an ASSIGN's target, an
// AFTER(view of a buffer, effects...)'s view (a setitem); null for anything else.
UOp memory_after_effects(UOp u) {
  if (u->op == Ops::ASSIGN) return without_after(u->src[0]);
  if (u->op == Ops::AFTER && std::any_of(u->src.begin() + 1, u->src.end(), [](UOp d) { return is_effect(d->op); })) return without_after(u);
  return UOp();
}

// A tensor that still mentions a range when it is realized: the effects it stands for (an
// ASSIGN's store, a ranged setitem's stores) run once per binding, in one loop the realize closes.
std::vector<UOp> effects_under_range(UOp u) {
  if (u->op == Ops::ASSIGN) return {u->src[0].store(u->src[1])};
  if (u->op == Ops::AFTER && memory_after_effects(u)) {
    std::vector<UOp> e;
    for (size_t i = 1; i < u->src.size(); ++i)
      if (is_effect(u->src[i]->op)) e.push_back(u->src[i]);
    return e;
  }
  std::string ranges;
  for (UOp r : free_ranges(u)) ranges += (ranges.empty() ? "" : ", ") + range_name(r);
  throw Error("realize: range(s) " + ranges + " would be used outside their scope: the value depends on them and nothing "
              "holds it once the loop ends; store it into a buffer under the range (setitem, e.g. losses.setitem({i}, loss)) "
              "or reduce it over the range");
}

bool reads(UOp effect, UOp buffer) {
  for (UOp u : toposort(effect->op == Ops::STORE ? effect->src[1] : effect))
    if (u == buffer) return true;
  return false;
}
UOp written(UOp effect) { return effect->op == Ops::STORE ? without_after(effect->src[0]) : UOp(); }
UOp base(UOp view) {
  while (view && view->op != Ops::BUFFER) view = view->src[0];
  return view;
}

// The loop's body runs them in an order where a store that reads a buffer comes before the
// stores that write it (they are unordered, S5.5: a read sees the contents from before).
std::vector<UOp> reads_first(std::vector<UOp> left) {
  std::vector<UOp> out;
  while (!left.empty()) {
    auto ready = std::find_if(left.begin(), left.end(), [&](UOp w) {
      UOp b = base(written(w));
      return !b || std::none_of(left.begin(), left.end(), [&](UOp r) { return r != w && reads(r, b); });
    });
    if (ready == left.end()) throw Error("realize: the effects under a range each read a buffer another one writes; order them with AFTER");
    out.push_back(*ready);
    left.erase(ready);
  }
  return out;
}

// After a realize, every effect the graph ran is done: in every live tensor's graph, each such
// assign (or AFTER over a view of memory) becomes the memory it wrote, so no later realize runs
// it again (tinygrad's becomes map).
void becomes(UOp graph) {
  std::vector<std::pair<UOp, UOp>> done;
  std::unordered_set<const UOpNode*> ran;
  for (UOp u : toposort(graph)) {
    ran.insert(u.get());
    if (UOp m = memory_after_effects(u); m && free_ranges(u).empty()) done.push_back({u, m});
  }
  if (done.empty()) return;
  for (auto& st : live_tensors()) {
    bool touched = false;
    for (UOp u : toposort(st->uop))
      if (ran.count(u.get()) && memory_after_effects(u)) touched = true;
    if (touched) st->uop = substitute(st->uop, done);  // (a .grad is a live tensor of its own)
  }
}

}  // namespace

void set_evaluator(Evaluator e) { evaluator() = std::move(e); }

Tensor& Tensor::realize() {
  realize_all({this});
  return *this;
}

Tensor& Tensor::realize(const std::vector<Tensor>& others) {
  std::vector<Tensor> copies = others;  // copies share state with the originals
  std::vector<Tensor*> all{this};
  for (Tensor& t : copies) all.push_back(&t);
  realize_all(all);
  return *this;
}

namespace {
// The graph a realize of these tensors runs. Tensors still under a range close it: their effects
// run in one loop over the range (OUTER: step after step; any other: every iteration from the
// state before the loop, S5.3), and their output is their memory after it. `outputs[i]` is what
// tensor i is in the graph (null: already memory).
UOp realize_graph(const std::vector<UOp>& uops, const std::vector<std::string>& names, std::vector<UOp>& outputs) {
  std::vector<UOp> src, loop_effects, ranges;
  ArgTuple kept;
  std::vector<size_t> looped;
  outputs.assign(uops.size(), UOp());
  for (size_t i = 0; i < uops.size(); ++i) {
    UOp u = uops[i];
    if (u->op == Ops::RESHAPE && u->src[0]->op == Ops::BUFFER) continue;  // already memory
    std::vector<UOp> free = free_ranges(u);
    if (free.empty()) {
      outputs[i] = u;
      continue;
    }
    if (!ranges.empty() && free != ranges) throw Error("realize: tensors under different ranges; a realize closes one loop");
    ranges = free;
    for (UOp e : effects_under_range(u)) loop_effects.push_back(e);
    looped.push_back(i);
  }
  if (!loop_effects.empty()) {
    std::sort(ranges.begin(), ranges.end(), [](UOp a, UOp b) { return a->serial < b->serial; });
    UOp loop = UOp::make(Ops::GROUP, dtypes::void_, reads_first(loop_effects)).end(ranges);
    for (size_t i : looped) outputs[i] = memory_after_effects(uops[i]).after({loop});
  }
  for (size_t i = 0; i < uops.size(); ++i)
    if (outputs[i]) {
      src.push_back(outputs[i]);
      kept.emplace_back(names[i]);
    }
  return src.empty() ? UOp() : UOp::sink(src, Arg(kept));
}
}  // namespace

UOp Tensor::graph(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<UOp> uops, outputs;
  std::vector<std::string> names;
  for (const auto& [n, t] : named) uops.push_back(t.uop()), names.push_back(n);
  return realize_graph(uops, names, outputs);
}

// One graph for all of them, like tinygrad's `a.realize(b, c)`: its outputs are unordered
// (SEMANTICS S5.5), so a tensor that reads a buffer another one assigns sees the contents from
// before the assign, whatever the order of the list.
void Tensor::realize_all(std::vector<Tensor*> ts) {
  std::vector<UOp> uops, outputs;
  std::vector<std::string> names;
  for (Tensor* t : ts) {
    uops.push_back(t->uop());
    names.push_back((t->uop()->dtype.is_void() ? "_effect" : "out") + std::to_string(names.size()));
  }
  UOp graph = realize_graph(uops, names, outputs);
  if (!graph) return;
  auto results = evaluate(graph);
  becomes(graph);
  size_t k = 0;  // results hold the valued outputs, in order
  for (size_t i = 0; i < ts.size(); ++i) {
    if (!outputs[i] || outputs[i]->dtype.is_void()) continue;
    const interp::Value& v = results.at(k++).value;
    Tensor* t = ts[i];
    if (UOp m = memory_after_effects(outputs[i])) t->s_->uop = m;
    else if (!(t->uop()->op == Ops::RESHAPE && t->uop()->src[0]->op == Ops::BUFFER)) t->s_->uop = store_data(fresh_name(), v.dtype, v.shape(), v.data, v.poison);
  }
}

Tensor Tensor::contiguous() const { return Tensor(checked(UOp::make(Ops::CONTIGUOUS, dtype(), {uop()}))); }
Tensor Tensor::detach() const { return Tensor(checked(UOp::make(Ops::DETACH, dtype(), {uop()}))); }

Tensor Tensor::assign(const Tensor& value) const {
  Tensor v = value.cast(dtype());
  if (v.uop()->shape.kind == ShapeInfo::Kind::Shaped && v.shape() != shape())
    throw Error("assign of shape " + render_shape(v.shape()) + " to a tensor of shape " + render_shape(shape()));
  // Assigning to an assign writes its memory after that assign (tinygrad chains them so).
  UOp target = uop()->op == Ops::ASSIGN ? uop()->src[0].after({uop()}) : uop();
  s_->uop = checked(UOp::make(Ops::ASSIGN, dtype(), {target, v.uop()}));
  return *this;
}

// tinygrad's `t[idx] = v`. Without ranges it runs now, as tinygrad's does: this tensor is
// realized, then the view written. Under a range (idx or v mention one) the store waits for the
// realize that closes the loop: this tensor becomes "this memory after the store".
void Tensor::setitem(const std::vector<Index>& idx, const Tensor& value) {
  Tensor view = at(idx);
  Tensor v = value.cast(dtype());
  if (v.uop()->shape.kind == ShapeInfo::Kind::Shaped && v.shape() != view.shape()) v = v.expand(Dims(view.shape().begin(), view.shape().end()));
  if (free_ranges(view.uop()).empty() && free_ranges(v.uop()).empty()) {
    realize();
    Tensor target = at(idx);
    target.assign(v);
    target.realize();
    return;
  }
  s_->uop = checked(uop().after({view.uop().store(v.uop())}));
}

// ---------------- results ----------------

namespace {
const interp::BufferData& memory_of(const Tensor& t) {
  UOp u = t.uop();
  if (u->op != Ops::RESHAPE || u->src[0]->op != Ops::BUFFER) throw InternalError("a realized tensor is not a whole buffer");
  return buffer_store().at(buffer_name(u->src[0]));
}

// A realized tensor that is its whole buffer (a view of part of one, after a setitem, is copied).
Tensor whole(Tensor t) {
  t.realize();
  UOp u = t.uop();
  if (u->op == Ops::RESHAPE && u->src[0]->op == Ops::BUFFER) return t;
  Tensor c = t.contiguous();
  c.realize();
  return c;
}
}  // namespace

xt::xarray<float> Tensor::numpy() {
  Tensor f = whole(whole(*this).cast(dtypes::float32));
  const interp::BufferData& d = memory_of(f);
  std::vector<size_t> shape;
  for (int64_t s : f.static_shape()) shape.push_back(static_cast<size_t>(s));
  xt::xarray<float> out = xt::zeros<float>(shape);
  std::copy(d.data->as<float>(), d.data->as<float>() + d.data->size, out.data());
  return out;
}

std::vector<float> Tensor::tolist() {
  xt::xarray<float> a = numpy();
  return std::vector<float>(a.begin(), a.end());
}

float Tensor::item() {
  std::vector<float> v = tolist();
  if (v.size() != 1) throw Error("item() of a tensor with " + std::to_string(v.size()) + " elements");
  return v[0];
}

bool Tensor::allclose(const Tensor& o, double rtol, double atol) const {
  Tensor a = *this, b = o;
  xt::xarray<float> x = a.numpy(), y = b.numpy();
  if (x.shape() != y.shape()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (!(std::fabs(x.data()[i] - y.data()[i]) <= atol + rtol * std::fabs(y.data()[i]))) return false;
  return true;
}

void Tensor::save_npy(const std::string& path) {
  Tensor w = whole(*this);
  const interp::BufferData& d = memory_of(w);
  interp::Value v;
  v.dtype = d.dtype;
  v.view = interp::View::contiguous(w.static_shape());
  v.data = d.data;
  interp::save_npy(path, v);
}

}  // namespace ow
