// Pass `scans`: a REDUCE over OUTER ranges (SEMANTICS S3, S6.1) becomes an explicit sequential
// loop that folds into a fresh accumulator buffer, one iteration at a time:
//
//   acc = identity;  for r: acc = acc OP x(r)            (REDUCE)
//   ... and for target.assign(REDUCE):                   (assign scan, S6.1)
//   acc = identity; written = false
//   for r: acc = acc OP x(r); written |= footprint(x(r)); target = written ? acc : target
//   target = acc
//
// With ADD and a contribution PAD(y) only the padded box changes: `acc[box] += y`, and the
// target's box is updated (the pad's zeros leave every other element as it was, S4.2).
// When each iteration's box is its own slot, the target's box gets `identity + y` in place and
// there is no acc (in_place_steps). Other ASSIGNs become `AFTER(target, STORE(target, value))`.
//
// Where a fold runs (on the host around its loop, before a parallel loop, as a kernel map) is
// decided by the rules in fold_placement.cpp; scans.h is what the two files share.
#include <algorithm>
#include <map>
#include <set>
#include "lower/scans.h"

#include "lower/index_math.h"
#include "lower/lower.h"
#include "uop/args.h"
#include "uop/pinned_reads.h"
#include "uop/scan_form.h"
#include "uop/error.h"
#include "uop/shape.h"
#include "uop/symbolic.h"
#include "uop/verify.h"

namespace ow::lower::scans_pass {

// Does u depend on some of `ranges` (does it change from one iteration of a loop over them to
// another)? On every one of them?
bool depends_on_any(UOp u, const std::vector<UOp>& ranges) {
  return std::any_of(ranges.begin(), ranges.end(), [&](UOp r) { return has_free_range(u, r); });
}

UOp buffer(ScansState& st, const std::string& prefix, DType dt, int64_t n) {
  std::string name = st.ctx.fresh_buffer(prefix);
  st.temps.insert(name);
  return UOp::make(Ops::BUFFER, dt, {}, Arg(ArgTuple{Arg(name), Arg(n)}));
}

// A fresh buffer viewed with the static shape of `like`.
UOp scratch(ScansState& st, const std::string& prefix, DType dt, UOp like) {
  if (!is_shaped(like)) throw unsupported(Reason::UnshapedValue, "a scan or OUTER reduce of an unshaped value");
  std::vector<UOp> src{UOp()};
  int64_t n = 1;
  for (UOp d : dims_of(like)) {
    auto s = static_size(d);
    if (!s) throw unsupported(Reason::SymbolicShape, "a scan or OUTER reduce of symbolic shape " + render_shape(dims_of(like)));
    n *= *s;
    src.push_back(UOp::index(*s));
  }
  src[0] = buffer(st, prefix, dt, n);
  return UOp::make(Ops::RESHAPE, dt, src);
}

// The same range with another axis type.
UOp twin(UOp r, AxisType axis) {
  if (range_axis(r) == axis) return r;
  ArgTuple t = *r->arg.tuple();
  t.back() = Arg(axis);
  return r.with_arg(Arg(t));
}

// The same range, as an OUTER range: folding in order must be sequential.
UOp outer_twin(UOp r) { return twin(r, AxisType::OUTER); }

UOp group(std::vector<UOp> steps) { return UOp::make(Ops::GROUP, dtypes::void_, std::move(steps)); }

// The BUFFER nodes `u` reads or writes.
std::set<const UOpNode*> buffers_in(UOp u) {
  std::set<const UOpNode*> out;
  for (UOp v : toposort(u))
    if (v->op == Ops::BUFFER) out.insert(v.get());
  return out;
}

// The effects in `x`, each with the node that runs it: an AFTER runs its dependencies, an
// ASSIGN itself (S5.1), each time that node is evaluated, so once per binding of the runner's
// free ranges (S5.4). In the order the interpreter runs them.
std::vector<std::pair<UOp, UOp>> effects_and_runners(UOp x) {
  std::vector<std::pair<UOp, UOp>> out;
  for (UOp u : execution_order(x)) {
    if (u->op == Ops::ASSIGN) out.push_back({u, u});
    for (size_t i = 1; u->op == Ops::AFTER && i < u->src.size(); ++i)
      if (is_effect(u->src[i]->op)) out.push_back({u->src[i], u});
  }
  return out;
}

// The buffers the effects in `effects` write.
std::set<const UOpNode*> written_by(const std::vector<UOp>& effects) {
  std::set<const UOpNode*> out;
  for (UOp e : effects)
    for (UOp u : toposort(e))
      if (is_write(u->op))
        if (UOp b = base_buffer(u->src[0])) out.insert(b.get());
  return out;
}

namespace {

bool depends_on_all(UOp u, const std::vector<UOp>& ranges) {
  return std::all_of(ranges.begin(), ranges.end(), [&](UOp r) { return has_free_range(u, r); });
}

UOp fold(Ops op, UOp acc, UOp x) { return UOp::make(op, acc->dtype, {acc, x}); }

UOp shrink(UOp x, const std::vector<std::pair<UOp, UOp>>& box) {
  std::vector<UOp> src{x};
  for (auto& [b, e] : box) {
    src.push_back(b);
    src.push_back(e);
  }
  return UOp::make(Ops::SHRINK, x->dtype, src);
}

struct Fold {
  Ops op;
  std::vector<UOp> ranges;  // all OUTER
  UOp x;                    // the contribution, over those ranges
  bool boxed;               // ADD of a PAD: only the box changes
  std::vector<UOp> before;  // effects in x that do not depend on the ranges: run once, first
  std::vector<UOp> each;    // effects in x that do: run in every iteration, before its fold
};

// The interpreter reruns an effect when the binding of its runner's free ranges changes (the
// runner's memo key, S5.4). Bindings advance row-major (S1.4), so a key changes in every
// iteration exactly when it holds every range or the innermost range with more than one value;
// one that depends only on outer ranges would rerun in some iterations only (extents may be
// symbolic, so that is refused rather than guarded).
template <class Uses>
bool reruns_every_iteration(Uses uses, const std::vector<UOp>& ranges) {
  if (std::all_of(ranges.begin(), ranges.end(), uses)) return true;
  for (size_t i = ranges.size(); i-- > 0;) {
    std::optional<int64_t> n = static_size(ranges[i]);
    if (n && *n == 1) continue;  // one value: never changes
    return uses(ranges[i]) && (n || i == 0);  // a symbolic extent may be 1 at run time
  }
  return true;  // a single iteration
}

// Sorts the effects in `x` into those that run in every iteration (their runner depends on one
// of `ranges`) and those that run once (before the loop). An effect run once runs what it holds
// once; one per iteration may hold effects of either kind (through AFTERs in its values), and
// those are sorted in their own right.
void sort_effects(UOp x, const std::vector<UOp>& ranges, Fold& f) {
  std::vector<std::pair<UOp, UOp>> effects = effects_and_runners(x);
  std::set<const UOpNode*> once;  // nodes of the effects run before the loop
  std::set<const UOpNode*> sorted;
  for (auto it = effects.rbegin(); it != effects.rend(); ++it) {  // users before their sources
    UOp e = it->first;
    if (once.count(e.get()) || !sorted.insert(e.get()).second) continue;
    // Several runners run it once per iteration between them: it reruns when any of them does.
    std::vector<UOp> free;
    for (const auto& [effect, runner] : effects)
      if (effect == e) for (UOp r : free_ranges(runner)) free.push_back(r);
    auto uses = [&](UOp r) { return std::find(free.begin(), free.end(), r) != free.end(); };
    if (std::any_of(ranges.begin(), ranges.end(), uses)) {
      if (!reruns_every_iteration(uses, ranges))
        throw unsupported(Reason::EffectInOuterFold, std::string("an effect (") + std::string(op_name(e->op)) + ") inside an OUTER fold that depends on some of its ranges but not on the innermost one: it runs only in some iterations");
      f.each.insert(f.each.begin(), e);
    } else {
      f.before.insert(f.before.begin(), e);
      for (UOp v : toposort(e)) once.insert(v.get());
    }
  }
  // An effect run once moves ahead of the per-iteration effects the interpreter runs before it
  // in iteration 0: only safe when they touch different buffers.
  std::set<const UOpNode*> touched;  // by per-iteration effects run so far
  for (const auto& effect : effects) {
    UOp e = effect.first;
    if (std::find(f.each.begin(), f.each.end(), e) != f.each.end()) touched.merge(buffers_in(e));
    if (std::find(f.before.begin(), f.before.end(), e) == f.before.end()) continue;
    for (const UOpNode* b : buffers_in(e))
      if (touched.count(b)) throw unsupported(Reason::EffectInOuterFold, "an effect (" + std::string(op_name(e->op)) + ") inside an OUTER fold that runs once but after an effect of the first iteration on the same buffer");
  }
}

// A fold inside a sequential loop that reads a buffer the loop writes is folded again in every
// iteration: as a value, the interpreter recomputes it whenever what it reads changed (S5.5);
// lowered by this pass, it becomes effects, run once per binding of their runner's ranges (S5.4).
// So its reads of those buffers first name the loop's ranges: the same value, visibly one per
// iteration.

// The nodes of `body` evaluated in every iteration of a loop over `ranges`: all but those reached
// only inside an effect that runs once (its runner depends on none of the ranges, S5.4).
std::set<const UOpNode*> evaluated_per_iteration(UOp body, const std::vector<UOp>& ranges) {
  std::set<const UOpNode*> once, seen;
  for (const auto& [effect, runner] : effects_and_runners(body))
    if (!depends_on_any(runner, ranges)) once.insert(effect.get());
  std::vector<UOp> stack{body};
  while (!stack.empty()) {
    UOp u = stack.back();
    stack.pop_back();
    if (once.count(u.get()) || !seen.insert(u.get()).second) continue;
    for (UOp x : u->src) stack.push_back(x);
  }
  return seen;
}

UOp name_loop_ranges(UOp body, const std::vector<UOp>& ranges, const std::set<const UOpNode*>& written) {
  if (written.empty()) return body;
  std::vector<std::pair<UOp, UOp>> swap;
  std::set<const UOpNode*> each = evaluated_per_iteration(body, ranges);  // fuzz 833586: a fold in a run-once effect stays run once
  for (UOp n : toposort(body)) {
    if (n->op != Ops::REDUCE || !each.count(n.get()) || !folds_on_host(n) || depends_on_all(n, ranges)) continue;
    std::vector<std::pair<UOp, UOp>> named;
    for (UOp v : toposort(n->src[0]))
      if (v->op == Ops::BUFFER && written.count(v.get())) named.push_back({v, v.after(ranges)});
    if (named.empty()) continue;
    std::vector<UOp> src = n->src;
    src[0] = substitute(n->src[0], named);
    swap.push_back({n, n.replace_src(src)});
  }
  return swap.empty() ? body : substitute(body, swap);
}

// `x` with the effects in `ran` dropped from its AFTERs, and an ASSIGN among them read as its
// target: they become explicit steps before the loop or at the start of each iteration, and the
// step order (GROUP, END) now puts every read of the fold's value after them. Left in place, each
// AFTER (or the ASSIGN, which writes whenever its value is computed) would run them again from
// inside the loop, in contexts the interpreter counts as new iterations.
UOp drop_dependencies(UOp x, const std::vector<UOp>& ran) {
  if (ran.empty()) return x;
  std::vector<std::pair<UOp, UOp>> swap;
  for (UOp u : toposort(x)) {
    if (u->op == Ops::ASSIGN && std::find(ran.begin(), ran.end(), u) != ran.end()) swap.push_back({u, u->src[0]});
    if (u->op != Ops::AFTER) continue;
    std::vector<UOp> src{u->src[0]};
    for (size_t i = 1; i < u->src.size(); ++i)
      if (std::find(ran.begin(), ran.end(), u->src[i]) == ran.end()) src.push_back(u->src[i]);
    if (src.size() != u->src.size()) swap.push_back({u, src.size() == 1 ? u->src[0] : u.replace_src(src)});
  }
  return swap.empty() ? x : substitute(x, swap);
}

Fold fold_of(UOp reduce) {
  // A host loop runs once per program, not once per binding of a kernel's loop: an OUTER fold
  // whose value also depends on a non-OUTER range would need one accumulator per binding.
  std::vector<UOp> inner = free_loop_ranges(reduce);
  if (!inner.empty()) throw unsupported(Reason::OuterInsideLoop, "an OUTER loop inside the non-OUTER range " + range_name(inner[0]));
  // Effects inside a fold's value run as the interpreter's memo runs them: one that depends on
  // the fold's ranges once per iteration, before that iteration's contribution is read; one that
  // does not once in all, as a step before the loop (the scheduler runs a kernel where it is
  // first reached, and the explicit steps reach it first).
  Fold f{reduce->arg.as<Ops>(), {}, reduce->src[0], false, {}, {}};
  sort_effects(reduce->src[0], {reduce->src.begin() + 1, reduce->src.end()}, f);
  std::vector<std::pair<UOp, UOp>> twins;
  for (size_t i = 1; i < reduce->src.size(); ++i) {
    UOp t = outer_twin(reduce->src[i]);
    if (t != reduce->src[i]) twins.push_back({reduce->src[i], t});
    f.ranges.push_back(t);
  }
  if (!twins.empty()) {
    f.x = substitute(f.x, twins);
    for (UOp& e : f.each) e = substitute(e, twins);
  }
  f.x = drop_dependencies(f.x, f.before);
  f.x = drop_dependencies(f.x, f.each);
  f.x = name_loop_ranges(f.x, f.ranges, written_by(f.each));
  f.boxed = f.op == Ops::ADD && f.x->op == Ops::PAD;
  return f;
}

// init, the effects to run once, then the loop: each iteration runs its effects, then `body`.
std::vector<UOp> steps(UOp init, const Fold& f, UOp body) {
  std::vector<UOp> out{init};
  out.insert(out.end(), f.before.begin(), f.before.end());
  if (!f.each.empty()) {
    std::vector<UOp> iteration = f.each;
    iteration.push_back(body);
    body = group(iteration);
  }
  out.push_back(body.end(f.ranges));
  return out;
}

UOp outer_reduce(const Match& m) {
  UOp red = m.node;
  if (!has_outer(red)) return UOp();
  ScansState& st = m.context<ScansState>();
  Fold f = fold_of(red);
  UOp acc = scratch(st, "acc", red->dtype, red);
  UOp init = acc.store(reduce_identity(f.op, red->dtype));
  UOp body;
  if (f.boxed) {
    UOp box = shrink(acc, pad_box(f.x));
    body = box.store(fold(f.op, box, f.x->src[0]));
  } else {
    body = acc.store(fold(f.op, acc, f.x));
  }
  return acc.after({group(steps(init, f, body))});
}

// ---- an assign scan whose iterations each add into their own slot writes the target in place ----
//
// With ADD and a contribution PAD(y) that gives iteration r its own slot (a SlotMap: no two
// iterations' boxes overlap) and no effects in y, acc's box holds the identity until iteration
// r adds y(r) into it, and nothing changes it afterwards. So the target's box can get
// `identity + y(r)` directly, the value acc's box would have had and copied into it: the loop
// needs no acc. Everything the target holds during the loop is as before: earlier slots their
// results, the rest what they held before the loop. The final `target = acc` then only changes
// the elements outside every slot (to the identity): a store of where(in a slot, target,
// identity), made only when such elements exist.
std::vector<UOp> in_place_steps(UOp target, UOp red, const Fold& f) {
  auto map = slot_map(red);
  std::map<const UOpNode*, UOp> memo;
  if (f.op != Ops::ADD || !map || !f.before.empty() || !f.each.empty() || f.ranges.size() != 1 || f.x->op != Ops::PAD ||
      footprint(f.x->src[0], memo))
    return {};
  UOp y = f.x->src[0];
  UOp slot = shrink(target, pad_box(f.x));
  std::vector<UOp> out{slot.store(fold(Ops::ADD, broadcast(reduce_identity(Ops::ADD, red->dtype), dims_of(y)), y)).end(f.ranges)};
  // the union of the slots: along the map's axis [before, before + slots), elsewhere the box
  std::vector<UOp> pads{broadcast(UOp::cnst(dtypes::bool_, 1), {})};
  std::vector<UOp> dims = dims_of(target), inside;
  bool everything = true;
  for (size_t i = 0; i < dims.size(); ++i) {
    UOp b = i == map->axis ? UOp::index(map->before) : f.x->src[1 + 2 * i];
    UOp n = i == map->axis ? map->range->src[0] : dim_extent(dims_of(y)[i]);
    UOp e = simplify(dim_extent(dims[i]) - b - n);
    everything = everything && b->op == Ops::CONST && b.const_value() == 0 && e->op == Ops::CONST && e.const_value() == 0;
    inside.push_back(n);
    pads.insert(pads.end(), {b, e});
  }
  if (everything) return out;
  pads[0] = broadcast(UOp::cnst(dtypes::bool_, 1), inside);
  UOp in_slots = UOp::make(Ops::PAD, dtypes::bool_, pads);
  out.push_back(target.store(in_slots.where(target, reduce_identity(Ops::ADD, red->dtype))));
  return out;
}

UOp assign_scan_in_place(const Match& m) {
  UOp target = m.node->src[0], red = m.node->src[1];
  if (red->op != Ops::REDUCE || !has_outer(red) || m.context<ScansState>().ctx.skip.count("scan-in-place")) return UOp();
  Fold f = fold_of(red);
  f.x = name_loop_ranges(f.x, f.ranges, {base_buffer(target).get()});
  std::vector<UOp> steps = in_place_steps(target, red, f);
  return steps.empty() ? UOp() : target.after({group(steps)});
}

UOp assign_scan(const Match& m) {
  UOp target = m.node->src[0], red = m.node->src[1];
  if (red->op != Ops::REDUCE || !has_outer(red)) return UOp();
  ScansState& st = m.context<ScansState>();
  Fold f = fold_of(red);
  f.x = name_loop_ranges(f.x, f.ranges, {base_buffer(target).get()});
  ScanForm form = assign_scan_form(target, f.op, f.x, [&](const std::string& prefix, DType dt) { return scratch(st, prefix, dt, target); });
  std::vector<UOp> all = steps(form.init, f, form.body);
  all.push_back(form.finish);
  return target.after({group(all)});
}

UOp plain_assign(const Match& m) {
  UOp target = m.node->src[0], value = m.node->src[1];
  return target.after({target.store(value)});
}

// An END over OUTER ranges is already a sequential loop; folds in it that read what it writes
// are named per iteration like those of the loops this pass makes.
UOp name_end_ranges(const Match& m) {
  UOp end = m.node;
  if (!has_outer(end)) return UOp();
  std::vector<UOp> ranges(end->src.begin() + 1, end->src.end());
  UOp body = name_loop_ranges(end->src[0], ranges, written_by({end->src[0]}));
  return body == end->src[0] ? UOp() : UOp::make(Ops::END, end->dtype, [&] { std::vector<UOp> s = end->src; s[0] = body; return s; }(), end->arg);
}

const PatternMatcher& scan_rules() {
  static const PatternMatcher pm({
      {"a fold in a sequential loop that reads what the loop writes is folded in every iteration", Pat::ops({Ops::END}), name_end_ranges},
      {"an assign scan of one slot per step writes the target in place", Pat::ops({Ops::ASSIGN}), assign_scan_in_place},
      {"assign scan becomes a loop", Pat::ops({Ops::ASSIGN}), assign_scan},
      {"assign becomes a store", Pat::ops({Ops::ASSIGN}), plain_assign},
      {"a REDUCE with effects in every iteration runs on the host", Pat::ops({Ops::REDUCE}), host_reduce_with_effects},
      {"a REDUCE around an OUTER fold runs on the host", Pat::ops({Ops::REDUCE}), host_enclosing_reduce},
      {"an END around an OUTER fold runs on the host", Pat::ops({Ops::END}), host_enclosing_end},
      {"a fold in a parallel loop that depends on none of its ranges runs before the loop", Pat::ops({Ops::END}), folds_before_parallel_end},
      {"an OUTER reduce of one slot per iteration is a map", Pat::ops({Ops::REDUCE}), outer_map},
      {"a range collected as a dimension is a map: OUTER becomes LOOP", Pat::ops({Ops::EXPAND}), collect_as_map},
      {"OUTER reduce becomes a loop", Pat::ops({Ops::REDUCE}), outer_reduce},
  });
  return pm;
}

}  // namespace
}  // namespace ow::lower::scans_pass

namespace ow::lower {

UOp scans(UOp root, Context& ctx) {
  scans_pass::ScansState state{ctx, {}};
  return rewrite_with(root, scans_pass::scan_rules(), state, ctx, "scans", /*parents_first=*/true);
}

}  // namespace ow::lower
