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
#include <algorithm>
#include <map>
#include <set>

#include "lower/index_math.h"
#include "lower/lower.h"
#include "uop/args.h"
#include "uop/pinned_reads.h"
#include "uop/scan_form.h"
#include "uop/error.h"
#include "uop/shape.h"
#include "uop/symbolic.h"
#include "uop/verify.h"

namespace ow::lower {

namespace {

// Does u depend on some of `ranges` (does it change from one iteration of a loop over them to
// another)? On every one of them?
bool depends_on_any(UOp u, const std::vector<UOp>& ranges) {
  return std::any_of(ranges.begin(), ranges.end(), [&](UOp r) { return has_free_range(u, r); });
}
bool depends_on_all(UOp u, const std::vector<UOp>& ranges) {
  return std::all_of(ranges.begin(), ranges.end(), [&](UOp r) { return has_free_range(u, r); });
}

UOp fold(Ops op, UOp acc, UOp x) { return UOp::make(op, acc->dtype, {acc, x}); }

// The pass's own state: the lowering's Context, and the buffers the pass made for its folds
// (accumulators, copies), which are not the graph's: their reads must see their writes.
struct ScansState {
  Context& ctx;
  std::set<std::string> temps;
};

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
bool encloses_outer_fold(UOp body, const std::vector<UOp>& ranges);
bool effect_per_iteration(UOp body, const std::vector<UOp>& ranges);

// Is `red` a fold that this pass turns into host effects: an OUTER fold, or a REDUCE that runs
// on the host because it encloses one or runs an effect per iteration (the rules below)? The
// rules rewrite parents first, so a loop's body is named before its inner REDUCEs move.
bool folds_on_host(UOp red) {
  std::vector<UOp> own(red->src.begin() + 1, red->src.end());
  return has_outer(red) || encloses_outer_fold(red->src[0], own) || effect_per_iteration(red->src[0], own);
}

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

// The buffers the effects in `effects` write.
std::set<const UOpNode*> written_by(const std::vector<UOp>& effects) {
  std::set<const UOpNode*> out;
  for (UOp e : effects)
    for (UOp u : toposort(e))
      if (is_write(u->op))
        if (UOp b = base_buffer(u->src[0])) out.insert(b.get());
  return out;
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

// ---- loops around an OUTER fold or a per-iteration effect run on the host ----
//
// A REDUCE or END over non-OUTER ranges whose body holds an OUTER fold depending on one of
// them would need that fold once per binding, inside a kernel; one whose values run an effect
// per iteration would need that effect ordered with the iterations. Running the enclosing loop
// on the host instead (its ranges become OUTER twins) nests both in a host loop like any other:
//  - REDUCE: same result, a REDUCE folds in row-major order whatever its ranges' axes (S3);
//  - END: a non-OUTER END is a parallel map (S5.3), its iterations read the buffers it writes as
//    they were before the loop, so those are copied first and every read in the body reads
//    the copy.

// Does `body` hold a fold that runs on the host (an OUTER fold, or a REDUCE that itself encloses
// one and so becomes one) with one of `ranges` free in it?
bool encloses_outer_fold(UOp body, const std::vector<UOp>& ranges) {
  auto shares = [](UOp v, const std::vector<UOp>& rs) {
    for (UOp r : free_loop_ranges(v))
      if (std::find(rs.begin(), rs.end(), r) != rs.end()) return true;
    return false;
  };
  std::set<const UOpNode*> on_host;  // REDUCEs in body that run on the host, sources first
  std::vector<UOp> order = toposort(body);
  for (UOp u : order) {
    if (u->op != Ops::REDUCE) continue;
    std::vector<UOp> own(u->src.begin() + 1, u->src.end());
    bool host = has_outer(u);
    for (UOp v : toposort(u->src[0])) host = host || (on_host.count(v.get()) && shares(v, own));
    if (host) on_host.insert(u.get());
  }
  for (UOp u : order)
    if (on_host.count(u.get()) && shares(u, ranges)) return true;
  return false;
}

// `u` with its closed ranges (src[1..]) replaced by OUTER twins, also in `body`.
UOp on_host(UOp u, UOp body) {
  std::vector<std::pair<UOp, UOp>> twins;
  std::vector<UOp> src{UOp()};
  for (size_t i = 1; i < u->src.size(); ++i) {
    twins.push_back({u->src[i], outer_twin(u->src[i])});
    src.push_back(twins.back().second);
  }
  src[0] = substitute(body, twins);
  return UOp::make(u->op, u->dtype, src, u->arg);
}

// Does `body` run an effect whose runner depends on one of `ranges` (so once per iteration,
// S5.4)?
bool effect_per_iteration(UOp body, const std::vector<UOp>& ranges) {
  const auto effects = effects_and_runners(body);
  return std::any_of(effects.begin(), effects.end(), [&](const auto& e) { return depends_on_any(e.second, ranges); });
}

// A REDUCE folds in order whatever its ranges' axes (S3.1): one whose value runs an effect in
// every iteration is a sequential loop, as an OUTER fold is, and runs on the host.
UOp host_reduce_with_effects(const Match& m) {
  UOp red = m.node;
  if (has_outer(red) || !effect_per_iteration(red->src[0], {red->src.begin() + 1, red->src.end()})) return UOp();
  return on_host(red, red->src[0]);
}

UOp host_enclosing_reduce(const Match& m) {
  UOp red = m.node;
  if (has_outer(red) || !encloses_outer_fold(red->src[0], {red->src.begin() + 1, red->src.end()})) return UOp();
  return on_host(red, red->src[0]);
}

UOp group(std::vector<UOp> steps);
std::optional<SlotMap> outer_slot_map(UOp red);

// Does a value stored in `body` run an effect of its own in every iteration?
bool stores_run_effects(UOp body, const std::vector<UOp>& ranges) {
  for (UOp u : toposort(body))
    if (is_write(u->op) && effect_per_iteration(u->src[1], ranges)) return true;
  return false;
}

// `u` with every read of a buffer in `copies` reading the copy instead; writes (STORE and ASSIGN
// targets) still go to the buffer, as in the interpreter's snapshots of a parallel loop.
UOp read_copies(UOp u, const std::map<const UOpNode*, UOp>& copies, std::map<const UOpNode*, UOp>& memo) {
  if (auto it = memo.find(u.get()); it != memo.end()) return it->second;
  if (auto it = copies.find(u.get()); it != copies.end()) return memo[u.get()] = it->second;
  bool writes = is_write(u->op);
  std::vector<UOp> src;
  for (size_t i = 0; i < u->src.size(); ++i) src.push_back(writes && i == 0 ? u->src[0] : read_copies(u->src[i], copies, memo));
  return memo[u.get()] = src == u->src ? u : u.replace_src(src);
}

UOp host_enclosing_end(const Match& m) {
  UOp end = m.node;
  std::vector<UOp> ranges(end->src.begin() + 1, end->src.end());
  ScansState& st = m.context<ScansState>();
  if (has_outer(end)) return UOp();
  if (!encloses_outer_fold(end->src[0], ranges) && !stores_run_effects(end->src[0], ranges)) {
    // S5.3 (fuzz 820080): hoisted before the kernel loop, an inner effect's write would be seen by
    // a read the loop pins to its start. (Running such an END on the host with copies of what it
    // writes made fuzz 821355 wrong: refused until that is understood.) The buffers this pass
    // made for its folds are not the graph's: their reads must see their writes.
    if (reads_after_inner_write(end->src[0], st.temps))
      throw unsupported(Reason::ReadAfterLoopEffect, "END over " + range_name(ranges[0]) + ": a stored value reads a buffer after an effect inside the parallel loop writes it (S5.3 pins that read to the loop's start)");
    return UOp();
  }
  std::vector<UOp> steps;
  std::map<const UOpNode*, UOp> copies;  // written BUFFER -> its copy
  for (UOp u : toposort(end->src[0])) {
    UOp buf = is_write(u->op) ? base_buffer(u->src[0]) : UOp();
    if (!buf || copies.count(buf.get())) continue;
    int64_t n = buffer_size(buf);
    UOp copy = buffer(st, "pre", buf->dtype, n);
    UOp flat = UOp::index(n);
    steps.push_back(UOp::make(Ops::RESHAPE, buf->dtype, {copy, flat}).store(UOp::make(Ops::RESHAPE, buf->dtype, {buf, flat})));
    copies[buf.get()] = copy;
  }
  std::map<const UOpNode*, UOp> memo;
  steps.push_back(on_host(end, read_copies(end->src[0], copies, memo)));
  return group(steps);
}

UOp group(std::vector<UOp> steps) { return UOp::make(Ops::GROUP, dtypes::void_, std::move(steps)); }

// ---- a fold in a parallel loop that depends on none of its ranges runs before the loop ----
//
// A parallel END pins every read of a buffer written inside it to the loop's start (S5.3), so a
// fold lowered inside it, as an initialised accumulator and a sequential loop that reads it, would
// read the accumulator as it was before the loop: uninitialized. A host fold in the END's body
// that depends on none of the END's ranges (nor on a range bound inside the body) has one value
// for every iteration, computed from what the loop reads, which is the contents at its start: it
// is computed once before the loop into a fresh buffer `_h<n>` that the body reads instead (the
// GROUP orders the read after the store, S5.5; the loop writes no `_h<n>`, so nothing pins it).
// The schedule places the kernels of a run-once fold reached in a loop before the loop too, so
// this stage means what the generated code does.
//
// Moved before the loop, the fold's own effects land before it: that is the same only when
// nothing else in the loop uses the buffers they write and the fold reads none of them (inside
// the loop all those reads are pinned to its start); otherwise the END is refused. A loop whose
// extent is not a constant could run no iteration, where the fold is never evaluated: refused.

// The host folds in `end`'s body that can run before it: REDUCEs that this pass turns into host
// effects (not vmaps, which become kernel loops, nor an assign scan's value, which is an effect
// of its ASSIGN) whose every free range is free in the END itself. A fold inside another one
// found is not listed for that path: it runs before the loop as a part of the outer one.
std::vector<UOp> folds_before_loop(UOp end) {
  std::vector<UOp> around = free_ranges(end), out;
  std::set<const UOpNode*> assigned, seen;
  for (UOp u : toposort(end->src[0]))
    if (u->op == Ops::ASSIGN) assigned.insert(u->src[1].get());
  auto runs_before = [&](UOp u) {
    if (u->op != Ops::REDUCE || assigned.count(u.get()) || !folds_on_host(u) || outer_slot_map(u)) return false;
    for (UOp r : free_ranges(u))
      if (std::find(around.begin(), around.end(), r) == around.end()) return false;
    return true;
  };
  std::vector<UOp> stack{end->src[0]};
  while (!stack.empty()) {
    UOp u = stack.back();
    stack.pop_back();
    if (!seen.insert(u.get()).second) continue;
    if (runs_before(u)) {
      out.push_back(u);
      continue;
    }
    for (UOp s : u->src) stack.push_back(s);
  }
  return out;
}

UOp folds_before_parallel_end(const Match& m) {
  UOp end = m.node;
  if (has_outer(end)) return UOp();
  std::vector<UOp> folds = folds_before_loop(end);
  if (folds.empty()) return UOp();
  std::vector<UOp> ranges(end->src.begin() + 1, end->src.end());
  for (UOp r : ranges)
    if (!static_size(r)) throw unsupported(Reason::SymbolicShape, "a fold inside the parallel END over " + range_name(r) + ", whose extent is not a constant: run before the loop, it would be evaluated even when the loop runs no iteration");
  ScansState& st = m.context<ScansState>();
  std::vector<UOp> steps;
  std::vector<std::pair<UOp, UOp>> swap;
  for (UOp f : folds) {
    UOp h = scratch(st, "h", f->dtype, f);
    steps.push_back(h.store(f));
    swap.push_back({f, h});
  }
  std::vector<UOp> src = end->src;
  src[0] = substitute(end->src[0], swap);
  for (size_t i = 0; i < folds.size(); ++i) {
    if (!runs_effect(folds[i]->src[0])) continue;
    std::set<const UOpNode*> elsewhere = buffers_in(src[0]);
    for (size_t j = 0; j < folds.size(); ++j)
      if (j != i) elsewhere.merge(buffers_in(folds[j]));
    std::set<const UOpNode*> written = written_by({folds[i]});
    if (reads_after_inner_write(steps[i]) || std::any_of(written.begin(), written.end(), [&](const UOpNode* b) { return elsewhere.count(b) > 0; }))
      throw unsupported(Reason::ReadAfterLoopEffect, "END over " + range_name(ranges[0]) + ": a fold inside the parallel loop runs effects on a buffer that it or the loop also reads or writes (S5.3 pins the loop's reads to its start; run before the loop, the fold's writes would be seen)");
  }
  steps.push_back(UOp::make(Ops::END, end->dtype, src, end->arg));
  return group(steps);
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

// ---- an OUTER reduce that is a map runs as a kernel loop ----
//
// A vmap (see SlotMap) whose body runs no effect and no OUTER fold of its own reads nothing the
// loop writes: folding in order and computing every slot at once agree, so its range may run
// inside a kernel. rangeify then computes each slot directly, and the slots run as one batch
// instead of one host iteration each: a vmapped matvec becomes a matmul.
std::optional<SlotMap> outer_slot_map(UOp red) {
  auto map = slot_map(red);
  if (!map || range_axis(map->range) != AxisType::OUTER || has_effect_or_outer_fold(map->y)) return std::nullopt;
  return map;
}

UOp outer_map(const Match& m) {
  UOp red = m.node;
  auto map = outer_slot_map(red);
  if (!map) return UOp();
  UOp loop = twin(map->range, AxisType::LOOP);
  return UOp::make(Ops::REDUCE, red->dtype, {substitute(red->src[0], {{map->range, loop}}), loop}, red->arg);
}

// A collecting EXPAND (S4.1) is a map: slice k is its source with r = k. An effect or an
// OUTER fold in the source that depends on r runs once per slice, in order, each seeing the
// earlier slices' writes: that needs a host loop over the slices, which collects do not get
// (refused; one that does not depend on r runs once, before the collect). Otherwise no slice
// sees another's, and an OUTER r becomes a LOOP range: rangeify binds it to the slice index
// everywhere, also inside a value realized in the source, which is then stored for every
// binding; as an OUTER range it stayed a host variable there that no host loop binds.
UOp collect_as_map(const Match& m) {
  UOp ex = m.node, src = ex->src[0];
  for (UOp d : std::vector<UOp>(ex->src.begin() + 1, ex->src.end())) {
    if (d->op != Ops::RANGE || !has_free_range(src, d)) continue;
    for (UOp u : toposort(src))
      if (is_effect_or_outer_fold(u) && has_free_range(u, d))
        throw unsupported(Reason::DependentCollect, std::string(op_name(u->op)) + " inside a collecting EXPAND over the range " + range_name(d) + " that depends on it");
    if (range_axis(d) == AxisType::OUTER) return substitute(ex, {{d, twin(d, AxisType::LOOP)}});
  }
  return UOp();
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

UOp scans(UOp root, Context& ctx) {
  ScansState state{ctx, {}};
  return rewrite_with(root, scan_rules(), state, ctx, "scans", /*parents_first=*/true);
}

}  // namespace ow::lower
