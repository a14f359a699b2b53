// The scans pass (scans.cpp): where a fold runs. An OUTER fold or a REDUCE with an effect per
// iteration nested in a parallel loop needs that loop on the host; a host fold inside a parallel
// loop that depends on none of its ranges runs once before it; an OUTER reduce that is a map (and
// a range collected as a dimension) runs inside a kernel instead of a host loop.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "lower/index_math.h"
#include "lower/lower.h"
#include "lower/scans.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/pinned_reads.h"
#include "uop/shape.h"
#include "uop/symbolic.h"
#include "uop/verify.h"

namespace ow::lower::scans_pass {

namespace {
bool encloses_outer_fold(UOp body, const std::vector<UOp>& ranges);
bool effect_per_iteration(UOp body, const std::vector<UOp>& ranges);
}  // namespace

// Is `red` a fold that this pass turns into host effects: an OUTER fold, or a REDUCE that runs
// on the host because it encloses one or runs an effect per iteration (the rules below)? The
// rules rewrite parents first, so a loop's body is named before its inner REDUCEs move.
bool folds_on_host(UOp red) {
  std::vector<UOp> own(red->src.begin() + 1, red->src.end());
  return has_outer(red) || encloses_outer_fold(red->src[0], own) || effect_per_iteration(red->src[0], own);
}

namespace {

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
    if (!host && !on_host.empty())  // (a walk per REDUCE only once a fold below runs on the host: n nested REDUCEs were n^3)
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
}  // namespace

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

namespace {

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
}  // namespace

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

namespace {

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
}  // namespace

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

}  // namespace ow::lower::scans_pass
