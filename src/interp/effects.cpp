// The reference interpreter: effects and their order (SEMANTICS S5, S6). Sequencing nodes run
// their parts in a defined order on one clock (AFTER: dependencies, then the value; STORE and
// ASSIGN: target dependencies, value, write; GROUP: in order; END: iterations); the sources of
// every other node are unordered, so a source that writes runs in a fork of the clock and its
// siblings never see its writes. What a read sees follows from its clock (memory.h).
#include <algorithm>

#include "interp/evaluator.h"
#include "uop/args.h"
#include "uop/host_program.h"
#include "uop/kernel_slots.h"
#include "uop/verify.h"

namespace ow::interp {

Version Interpreter::read_version(size_t slot) const {
  for (auto it = pins_.rbegin(); it != pins_.rend(); ++it)
    if (std::find(it->first.begin(), it->first.end(), slot) != it->first.end()) return it->second.at(slot);
  return ctx_.at(slot);
}

// A source among unordered siblings that writes: evaluated in a fork, so the siblings keep reading
// what the node itself is ordered after. The node completes after all of them (eval merges the
// forks' clocks). A value that views storage the fork advanced is copied: nothing protects that
// version once the fork's clock is gone, and a later write could change it in place.
Value Interpreter::operand(UOp u, UOp s) {
  if (!info_.at(u.get()).fork || !info_.at(s.get()).effect) return eval(s);
  Clock parent = ctx_;
  Value v = eval(s);
  for (size_t b = 0; b < mem_.size(); ++b)
    if (ctx_.at(b) != parent.at(b) && mem_.aliases(b, v)) {
      v = contiguous(v);
      break;
    }
  joins_.back().merge(ctx_);
  ctx_ = parent;
  return v;
}

// ---------------- effects inside folds ----------------

// At the start of every iteration of a fold (REDUCE, an assign scan, a collecting EXPAND), the
// effects its value runs run first, in execution order: each runner (an AFTER with effects among
// its dependencies, an ASSIGN) triggers them if its binding changed (S5.4), so in the first
// iteration all of them, later those that depend on the fold's ranges. The iteration's value is
// ordered after them (S5.5), whichever of its nodes names them. Runners that depend on ranges an
// inner fold binds are left to that fold.
void Interpreter::run_iteration_effects(UOp value) {
  if (!info_.at(value.get()).effect) return;
  auto it = runners_.find(value.get());
  if (it == runners_.end()) {
    std::vector<UOp> rs;
    for (UOp n : execution_order(value)) {
      bool runs = n->op == Ops::ASSIGN ||
                  (n->op == Ops::AFTER && std::any_of(n->src.begin() + 1, n->src.end(), [&](UOp d) { return info_.at(d.get()).effect; }));
      if (runs) rs.push_back(n);
    }
    it = runners_.emplace(value.get(), std::move(rs)).first;
  }
  for (UOp r : it->second) {
    const std::vector<UOp>& free = info_.at(r.get()).free;
    if (!std::all_of(free.begin(), free.end(), [&](UOp x) { return env_.count(x.get()) > 0; })) continue;
    if (r->op == Ops::AFTER) run_after_deps(r);
    else eval(r);
  }
}

// ---------------- AFTER ----------------

Value Interpreter::after(UOp u) {
  run_after_deps(u);
  return eval(u->src[0]);
}

// An AFTER runs its dependencies once per binding of its free ranges (S5.4), however often its
// value is recomputed because what it reads changed; a reuse orders the reader after them again.
// (A value KERNEL among them is a realized value, not an effect: it is asked every time, and
// runs again when what it reads changed.)
void Interpreter::run_after_deps(UOp u) {
  std::vector<uint64_t> key = range_key(u);
  Run& r = runs_[u.get()];
  if (r.valid && r.key == key) {
    ctx_.merge(r.done);
    for (size_t i = 1; i < u->src.size(); ++i)
      if (is_value_kernel(u->src[i])) exec(u->src[i]);
    return;
  }
  r = Run{};  // release the old record before running again
  Clock start = ctx_.snapshot();
  const std::vector<UOp>& free = info_.at(u.get()).free;
  size_t depth = iterations_.size();  // the bindings up to the innermost of its free ranges
  while (depth > 0 && std::none_of(free.begin(), free.end(), [&](UOp f) { return f.get() == iteration_ranges_[depth - 1]; })) --depth;
  for (size_t i = 1; i < u->src.size(); ++i) exec(u->src[i], false, depth);
  runs_[u.get()] = Run{true, std::move(key), ctx_.record_since(start)};
}

// ---------------- effects ----------------

// Runs a node for its effects. Reached as a dependency (of an AFTER, or as an output), a STORE,
// END, GROUP or KERNEL runs at most once per iteration of the loops its runner depends on (S5.4;
// the first `depth` bindings): a run made in the current iteration of those loops serves every
// runner, and two nodes that reach it in the same iteration run it once. A run is therefore kept
// under two keys while they last: the bindings where it ran (for runners that depend on all of
// them) and the bindings its runner depends on (for runners reaching it later, further out or in
// a later iteration of a loop it does not depend on). A step of a GROUP (or a loop's body) runs
// every time its GROUP does: a sequence may list one effect twice, and a host schedule lists each
// launch it runs.
void Interpreter::exec(UOp u, bool step, size_t depth) {
  // An ASSIGN runs each time it is evaluated (S5.1), a value kernel when its inputs change (below).
  bool once = is_effect_or_launch(u->op) && u->op != Ops::ASSIGN && !is_value_kernel(u);
  if (once && !step) {
    const std::vector<uint64_t>& here = iterations_;
    depth = std::min(depth, here.size());
    std::vector<Run>& runs = effect_runs_[u.get()];
    auto under_way = [&](const Run& r) { return r.key.size() <= here.size() && std::equal(r.key.begin(), r.key.end(), here.begin()); };
    runs.erase(std::remove_if(runs.begin(), runs.end(), [&](const Run& r) { return !under_way(r); }), runs.end());  // ended iterations never come back
    for (const Run& r : runs)
      if (r.key.size() >= depth) return ctx_.merge(r.done);
    Clock start = ctx_.snapshot();
    exec(u, true);
    Run run{true, here, ctx_.record_since(start)};
    std::vector<Run>& after = effect_runs_[u.get()];
    if (depth < here.size()) after.push_back(Run{true, std::vector<uint64_t>(here.begin(), here.begin() + static_cast<std::ptrdiff_t>(depth)), run.done});
    after.push_back(std::move(run));
    return;
  }
  if (u->op == Ops::END) return run_end(u);
  if (u->op == Ops::STORE) return run_store(u);
  if (is_value_kernel(u)) {  // a value: it runs again only when its bindings or inputs changed
    std::vector<uint64_t> key = range_key(u);
    for (size_t s : info_.at(u.get()).mut) key.push_back(read_version(s));
    Run& r = runs_[u.get()];
    if (r.valid && r.key == key) {
      ctx_.merge(r.done);
      return;
    }
    r = Run{};
    Clock start = ctx_.snapshot();
    run_kernel(u);
    runs_[u.get()] = Run{true, std::move(key), ctx_.record_since(start)};
    return;
  }
  switch (u->op) {
    case Ops::KERNEL: run_kernel(u); return;
    case Ops::GROUP: case Ops::SINK:
      for (UOp s : u->src) exec(s, true);
      return;
    default:
      eval(u);
      return;
  }
}

// The target's AFTER dependencies, outermost first: they come before the value (S5.5).
void Interpreter::run_target_deps(UOp t) {
  for (; is_movement(t->op) || t->op == Ops::AFTER; t = t->src[0])
    if (t->op == Ops::AFTER) run_after_deps(t);
}

// A STORE/ASSIGN target (S5.1) denotes buffer elements: a BUFFER seen through RESHAPE, SHRINK,
// PERMUTE, FLIP, PAD and AFTER. Each element of the target is one element of the buffer, or, in a
// PAD's fill, none (a write there lands nowhere); a RESHAPE renumbers the elements of its source
// row-major, whether or not they are contiguous in memory. An EXPAND (several elements on one
// slot) is refused. Most targets are a strided view of the buffer's memory (strided_place); the
// others (a PAD, a RESHAPE of a non-contiguous view) are written through their index map
// (place_index). Both walks run after the target's dependencies.

// The strided view of live buffer memory the target denotes, or nothing when no strided view can
// hold it.
std::optional<Value> Interpreter::strided_place(UOp t) {
  if (t->op == Ops::BUFFER) {
    BufferData& d = *buffers_.at(t.get()).data;
    Value v;
    v.dtype = t->dtype;
    v.view = View::contiguous({d.data->size});
    v.data = d.data;
    v.poison = d.poison;
    return v;
  }
  if (t->op == Ops::AFTER) return strided_place(t->src[0]);
  if (t->op == Ops::EXPAND) fail(t, "cannot write through an EXPAND: several elements would share one memory slot");
  if (!is_movement(t->op))
    fail(t, std::string("a STORE/ASSIGN target must be a buffer seen through RESHAPE/SHRINK/PERMUTE/FLIP/PAD/AFTER, not ") + std::string(op_name(t->op)));
  std::optional<Value> base = strided_place(t->src[0]);
  if (!base || t->op == Ops::PAD || (t->op == Ops::RESHAPE && !base->view.is_contiguous())) return std::nullopt;
  return movement(t, *base);
}

// The target's index map: an int64 value of the target's shape holding, per element, the flat
// index of the buffer element it denotes, or -1 in a PAD's fill. The movement ops act on it as on
// any value (a PAD's fill is made -1 by padding the map plus one).
Value Interpreter::place_index(UOp t) {
  if (t->op == Ops::BUFFER) {
    Value iota = alloc(dtypes::int64, {buffers_.at(t.get()).data->data->size});
    int64_t* p = iota.data->as<int64_t>();
    for (int64_t i = 0; i < iota.numel(); ++i) p[i] = i;
    return iota;
  }
  if (t->op == Ops::AFTER) return place_index(t->src[0]);
  if (t->op == Ops::EXPAND || !is_movement(t->op)) strided_place(t);  // fails, naming the node
  Value base = place_index(t->src[0]);
  if (t->op == Ops::PAD) {
    Value one = int_scalar(dtypes::int64, 1);
    Value shifted = alu(Ops::ADD, dtypes::int64, {&base, &one}, base.shape());
    Value padded = pad(shifted, pairs(t));
    return alu(Ops::SUB, dtypes::int64, {&padded, &one}, padded.shape());
  }
  return movement(t, t->op == Ops::RESHAPE ? contiguous(base) : base);
}

// The target's current contents, as a fresh value (0 in a PAD's fill).
Value Interpreter::place_contents(UOp t) {
  if (std::optional<Value> v = strided_place(t)) return contiguous(*v);
  BufferData& d = *buffers_.at(base_buffer(t).get()).data;
  Value all;
  all.dtype = d.dtype;
  all.view = View::contiguous({d.data->size});
  all.data = d.data;
  all.poison = d.poison;
  return gather(all, place_index(t));
}

// Writes v into the target (or into the box of it), as a new version of its buffer.
void Interpreter::write(UOp at, UOp target, const Value& v_raw, const std::vector<std::pair<int64_t, int64_t>>* box) {
  std::optional<Value> strided = strided_place(target);
  Value place = strided ? *strided : place_index(target);
  if (box) place = shrink_view(place, *box);
  if (!v_raw.unshaped && v_raw.shape() != place.shape())
    fail(at, "value of shape " + shape_text(v_raw.shape()) + " written to a target of shape " + shape_text(place.shape()));
  const BufferState& b = buffers_.at(base_buffer(target).get());
  if (b.slot < 0) throw InternalError("interpreter: buffer '" + b.name + "' is written but was not given a memory slot");
  if (!strided) {  // through the index map: the region written is the whole buffer's
    Value v = contiguous(broadcast_to(v_raw, place.shape()));  // a copy: the value may alias its target
    BufferData& live = mem_.begin_write(static_cast<size_t>(b.slot), ctx_, View::contiguous({b.data->data->size}), at);
    scatter(live.data, live.poison, place, v);
    return;
  }
  BufferData& live = mem_.begin_write(static_cast<size_t>(b.slot), ctx_, place.view, at);
  place.data = live.data;  // a copy on write moved the live storage
  place.poison = live.poison;
  Value v = v_raw.data == place.data ? contiguous(v_raw) : v_raw;  // the value may alias its target
  write_through(place, v);
  if (place.poison && !live.poison) live.poison = place.poison;
}

void Interpreter::run_store(UOp u) {
  run_target_deps(u->src[0]);
  Value v = eval(u->src[1]);
  write(u, u->src[0], v);
}

std::vector<size_t> Interpreter::slots_written_in(UOp body) {
  auto it = written_in_.find(body.get());
  if (it != written_in_.end()) return it->second;
  std::vector<size_t> out;
  auto add = [&](UOp view) {
    if (UOp b = base_buffer(view); b && buffers_.at(b.get()).slot >= 0) out.push_back(static_cast<size_t>(buffers_.at(b.get()).slot));
  };
  for (UOp n : toposort(body)) {
    if (is_write(n->op)) add(n->src[0]);
    if (n->op == Ops::KERNEL)
      for (size_t i = 1; i < n->src.size(); ++i) add(n->src[i]);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return written_in_[body.get()] = out;
}

// END runs its body once per binding. OUTER ranges are sequential: each iteration is ordered
// after the previous one and sees its writes. Every other range is a parallel map: the reads of
// every iteration see the buffers the loop writes as they were when it began (the pinned
// clock); the writes still land, in iteration order (S5.3).
void Interpreter::run_end(UOp u) {
  std::vector<UOp> ranges(u->src.begin() + 1, u->src.end());
  bool parallel = std::any_of(ranges.begin(), ranges.end(), [](UOp r) { return range_axis(r) != AxisType::OUTER; });
  if (parallel) pins_.push_back({slots_written_in(u->src[0]), ctx_});
  loop(ranges, 0, [&] { exec(u->src[0], true); });
  if (parallel) pins_.pop_back();
}

// ---------------- ASSIGN ----------------

// ASSIGN writes its value into the target (once per binding of its free ranges, like an AFTER's
// dependencies) and denotes the target's contents after the write.
Value Interpreter::assign(UOp u) {
  std::vector<uint64_t> key = range_key(u);
  Run& r = runs_[u.get()];
  if (r.valid && r.key == key) {
    ctx_.merge(r.done);
  } else {
    r = Run{};
    Clock start = ctx_.snapshot();
    run_target_deps(u->src[0]);
    UOp value = u->src[1];
    bool scan = value->op == Ops::REDUCE && std::any_of(value->src.begin() + 1, value->src.end(), [](UOp x) { return range_axis(x) == AxisType::OUTER; });
    if (scan) assign_scan(u, value);
    else write(u, u->src[0], eval(value));
    runs_[u.get()] = Run{true, std::move(key), ctx_.record_since(start)};
  }
  // Its value is the target right after its write, even where later writes are ordered before
  // the reader (a chain of assigns to one buffer, S5.5): read at the assign's own completion.
  Clock here = ctx_;
  ctx_ = runs_.at(u.get()).done.as(Clock::Kind::Live);
  Value v = contiguous(eval(u->src[0]));
  ctx_ = here;
  ctx_.merge(runs_.at(u.get()).done);
  return v;
}

// An assign scan (S6.1): iterations run in order, and while they run, reads of the target see
// the partial fold on every element some earlier iteration wrote (its footprint: the elements
// that are not a PAD's fill) and the original contents elsewhere. The final content is the REDUCE.
void Interpreter::assign_scan(UOp u, UOp value) {
  UOp target = u->src[0];
  Ops op = value->arg.as<Ops>();
  std::vector<UOp> ranges(value->src.begin() + 1, value->src.end());
  std::vector<int64_t> shape = place_index(target).shape();
  Value sum = identity_like(op, value->dtype, shape);
  Value written = alloc(dtypes::bool_, shape);
  loop(ranges, 0, [&] {
    run_iteration_effects(value->src[0]);
    Contribution c = contribution(value->src[0], op);
    if (!(!c.boxed && c.full.unshaped) && c.shape != shape)
      fail(value, "scan contribution of shape " + shape_text(c.shape) + " for a target of shape " + shape_text(shape));
    add_into(op, sum, c);
    if (c.boxed) {  // only the box changed: it is now written, and visible as the partial sum
      Value w = shrink_view(written, c.box);
      write_through(w, scalar(dtypes::bool_, 1));
      write(u, target, shrink_view(sum, c.box), &c.box);
      return;
    }
    Value fp = c.full.footprint ? mask_view(c.full, c.full.footprint) : broadcast_to(scalar(dtypes::bool_, 1), shape);
    Value prev = written;
    written = alu(Ops::OR, dtypes::bool_, {&prev, &fp}, shape);
    Value old = place_contents(target);
    Value visible = alu(Ops::WHERE, value->dtype, {&written, &sum, &old}, shape);
    write(u, target, visible);
  });
  write(u, target, sum);
}

// ---------------- kernel-level programs (reference/LOWERING.md) ----------------

Kernel& Interpreter::kernel_for(UOp u) {
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
// A launch writes the buffers its ast stores to; it reads the others at the launch's clock.
void Interpreter::run_kernel(UOp u) {
  if (u->src.empty() || u->src[0]->op != Ops::SINK) fail(u, "a KERNEL's first source is its ast (a SINK of stores)");
  if (opts_.on_enter) opts_.on_enter(u);  // debugger hook (interp.h)
  Kernel& kernel = kernel_for(u);
  for (size_t i = 1; i < u->src.size(); ++i)  // AFTER(BUFFER, steps...) (before `schedule`): the steps first
    if (u->src[i]->op == Ops::AFTER && base_buffer(u->src[i])) run_after_deps(u->src[i]);
  std::vector<int64_t> stored = slots_stored(u->src[0]);
  KernelArgs args;
  for (size_t i = 1; i < u->src.size(); ++i) {
    UOp s = u->src[i];
    if (s->op == Ops::AFTER && base_buffer(s)) s = base_buffer(s);
    if (s->op == Ops::BUFFER) {
      const BufferState& b = buffers_.at(s.get());
      BufferData* d = b.data;
      int64_t slot = static_cast<int64_t>(args.buffers.size());
      if (b.slot >= 0 && std::binary_search(stored.begin(), stored.end(), slot))
        d = &mem_.begin_write(static_cast<size_t>(b.slot), ctx_, View::contiguous({b.data->data->size}), u, is_value_kernel(u));
      else if (b.slot >= 0)
        d = const_cast<BufferData*>(&mem_.contents(static_cast<size_t>(b.slot), read_version(static_cast<size_t>(b.slot))));
      args.buffers.push_back(d);
      args.names.push_back(b.name);
    } else if (s->op == Ops::BIND) {
      const std::string& name = var_name(s->src[0]);
      Value v = eval(s->src[1]);
      if (v.numel() != 1 || (v.poison && mask_any(v, v.poison))) fail(s, "the value bound to variable '" + name + "' must be a single clean integer");
      int64_t x = as_int(v);
      if (std::string why = bind_refusal(s, x, args.vars); !why.empty()) fail(s, why);  // as the host walk checks it
      args.vars.emplace(name, x);
    } else {
      fail(u, "a KERNEL's sources after the ast are BUFFERs and BINDs, got " + std::string(op_name(s->op)));
    }
  }
  try {
    kernel.run(args);
  } catch (Error& e) {
    locate(u, e);
    throw;
  }
  if (opts_.on_step) {
    Value none;
    none.view = View::contiguous({0});
    opts_.on_step(Step{u, env_order_, &none});
  }
}

}  // namespace ow::interp
