// Pass `fuse`: a kernel that fills a temporary read only by the next launch of the same host
// step list (a value kernel and its reader) is computed inside that reader instead: the
// reader's LOAD of the temporary becomes the stored value itself, at the element it loads. A scan's step, "matvec into _t0, then store
// 0 + _t0 into out's slot", becomes one launch, "store 0 + matvec into out's slot".
//
// The fused kernel computes the same operations in the same order, so the results are the same
// bit for bit. It is made only where that provably holds:
//  - the producer stores every element of its temporary once (row-major over its store ranges,
//    constant extents) and reads none, nothing else in the program touches the temporary (so
//    the reader sees exactly what the producer just stored, and nobody later), and the reader loads
//    it at one ungated, in-bounds place outside every REDUCE, with no more iterations than the
//    producer has (no element is computed more often than before);
//  - nothing in the producer's value can fail (every load provably in bounds, no division or
//    shift that could trap): an error would otherwise come from another kernel, mid-way through
//    the reader's stores;
//  - every load the producer's value makes of a buffer the reader stores to reads elements no
//    iteration of the reader writes (the `out[m1-1]` a scan step reads is not the `out[m1]` it
//    writes): a C kernel runs its iterations in order, and must not see its own writes. Proved on
//    the index math, under the WHERE conditions a load is read under; otherwise no fusion.
#include <algorithm>
#include <map>
#include <set>

#include "lower/fuse_footprint.h"
#include "lower/index_math.h"
#include "lower/lower.h"
#include "uop/args.h"
#include "uop/symbolic.h"
#include "uop/kernel_slots.h"
#include "uop/verify.h"

namespace ow::lower {

namespace {

// A kernel's only store: END(STORE(INDEX(DEFINE_GLOBAL, lin), value), ranges...) with constant extents.
struct OneStore {
  UOp end, store, global, lin, value;
  std::vector<UOp> ranges;
  int64_t iterations = 1;
};

std::optional<OneStore> one_store(UOp kernel) {
  UOp ast = kernel->src[0];
  if (ast->op != Ops::SINK || ast->src.size() != 1 || ast->src[0]->op != Ops::END) return std::nullopt;
  OneStore s;
  s.end = ast->src[0];
  s.store = s.end->src[0];
  if (s.store->op != Ops::STORE || s.store->src.size() != 2) return std::nullopt;
  UOp ptr = s.store->src[0];
  if (ptr->op != Ops::INDEX || ptr->src.size() != 2 || ptr->src[0]->op != Ops::DEFINE_GLOBAL) return std::nullopt;
  s.global = ptr->src[0], s.lin = ptr->src[1], s.value = s.store->src[1];
  s.ranges.assign(s.end->src.begin() + 1, s.end->src.end());
  for (UOp r : s.ranges) {
    std::optional<int64_t> e = r->op == Ops::RANGE ? static_size(r->src[0]) : std::nullopt;
    if (!e || *e < 1 || __builtin_mul_overflow(s.iterations, *e, &s.iterations)) return std::nullopt;
  }
  return s;
}

// A KERNEL's sources after its ast: the buffers by slot, then the BINDs.
struct Sources {
  std::vector<UOp> buffers, binds;
};

std::optional<Sources> sources(UOp kernel) {
  Sources s;
  for (size_t i = 1; i < kernel->src.size(); ++i) {
    UOp u = kernel->src[i];
    if (u->op == Ops::BUFFER && s.binds.empty()) s.buffers.push_back(u);
    else if (u->op == Ops::BIND) s.binds.push_back(u);
    else return std::nullopt;
  }
  return s;
}

int64_t slot_of(UOp global) { return global->arg.as<int64_t>(); }

// The one LOAD of `slot` in `ast`, if it loads nothing else from it, ungated and outside REDUCEs.
UOp only_load(UOp ast, int64_t slot) {
  UOp found;
  for (UOp u : toposort(ast)) {
    if (u->op == Ops::REDUCE)
      for (UOp x : toposort(u->src[0]))
        if (x->op == Ops::DEFINE_GLOBAL && slot_of(x) == slot) return UOp();
    if (u->op != Ops::INDEX || u->src[0]->op != Ops::DEFINE_GLOBAL || slot_of(u->src[0]) != slot) continue;
    if (found || u->src.size() != 2) return UOp();
    found = u;
  }
  if (!found) return UOp();
  UOp load;
  for (UOp u : toposort(ast))
    if (std::find(u->src.begin(), u->src.end(), found) != u->src.end()) {
      if (u->op != Ops::LOAD || load) return UOp();
      load = u;
    }
  return load;
}

// The BINDs of both kernels, each variable once; none when one variable is bound two ways.
std::optional<std::vector<UOp>> merged_binds(const Sources& a, const Sources& b) {
  std::vector<UOp> out = b.binds;
  for (UOp x : a.binds) {
    auto same = std::find_if(out.begin(), out.end(), [&](UOp y) { return var_name(y->src[0]) == var_name(x->src[0]); });
    if (same == out.end()) out.push_back(x);
    else if (*same != x) return std::nullopt;
  }
  return out;
}

// DEFINE_GLOBAL slot -> its new slot in `to` (by buffer), for every buffer but `skip`.
std::vector<std::pair<UOp, UOp>> renumber(UOp ast, const std::vector<UOp>& bufs, const std::vector<UOp>& to, UOp skip) {
  std::vector<std::pair<UOp, UOp>> map;
  for (UOp g : toposort(ast)) {
    if (g->op != Ops::DEFINE_GLOBAL || bufs[static_cast<size_t>(slot_of(g))] == skip) continue;
    int64_t at = std::find(to.begin(), to.end(), bufs[static_cast<size_t>(slot_of(g))]) - to.begin();
    map.push_back({g, UOp::make(Ops::DEFINE_GLOBAL, g->dtype, {}, Arg(at))});
  }
  return map;
}

// a, then b, as one kernel, or null when the fusion is not proven safe (see the top).
UOp fuse_pair(UOp a, UOp b, const std::map<std::string, int>& users, Context& ctx) {
  if (a->op != Ops::KERNEL || b->op != Ops::KERNEL) return UOp();
  auto sa = one_store(a), sb = one_store(b);
  auto ba = sources(a), bb = sources(b);
  if (!sa || !sb || !ba || !bb) return UOp();
  UOp temp = ba->buffers.at(static_cast<size_t>(slot_of(sa->global)));
  std::string name = buffer_name(temp);
  if (!is_temporary(name) || users.at(name) != 2 || sb->iterations > sa->iterations) return UOp();
  auto tslot = std::find(bb->buffers.begin(), bb->buffers.end(), temp);
  if (tslot == bb->buffers.end() || std::count(bb->buffers.begin(), bb->buffers.end(), temp) != 1) return UOp();
  UOp load = only_load(b->src[0], tslot - bb->buffers.begin());
  std::vector<UOp> dims;
  for (UOp r : sa->ranges) dims.push_back(r->src[0]);
  if (!load || buffer_size(temp) != sa->iterations || simplify(linearize(sa->ranges, dims)) != simplify(sa->lin)) return UOp();
  UOp at = load->src[0]->src[1];
  if (at.vmin() < 0 || at.vmax() >= sa->iterations) return UOp();
  auto binds = merged_binds(*ba, *bb);
  if (!binds || !value_cannot_fail(sa->value) || loads_slot(sa->value, slot_of(sa->global))) return UOp();
  std::vector<UOp> bufs;  // b's buffers, then a's new ones: a buffer both read keeps one slot
  for (const std::vector<UOp>* list : {&bb->buffers, &ba->buffers})
    for (UOp x : *list)
      if (x != temp && std::find(bufs.begin(), bufs.end(), x) == bufs.end()) bufs.push_back(x);
  std::vector<UOp> idx = unlinearize(at, dims);
  std::vector<std::pair<UOp, UOp>> put;
  for (size_t i = 0; i < idx.size(); ++i) put.push_back({sa->ranges[i], simplify(idx[i])});
  UOp value = substitute(substitute(sa->value, renumber(sa->value, ba->buffers, bufs, temp)), put);
  std::vector<std::pair<UOp, UOp>> mb = renumber(b->src[0], bb->buffers, bufs, temp);
  mb.push_back({load, value});
  UOp ast = substitute(b->src[0], mb);
  if (!stores_miss_loads(ast, value, ctx)) return UOp();
  std::vector<UOp> src{ast};
  src.insert(src.end(), bufs.begin(), bufs.end());
  src.insert(src.end(), binds->begin(), binds->end());
  UOp fused = UOp::make(Ops::KERNEL, dtypes::void_, src, a->arg, b->tag);
  verify_kernel(fused);
  return fused;
}

// How many nodes hold each temporary as a source (a KERNEL binding it, or anything else).
std::map<std::string, int> temp_users(UOp root) {
  std::map<std::string, int> n;
  for (UOp u : toposort(root))
    for (UOp s : u->src)
      if (s->op == Ops::BUFFER && is_temporary(buffer_name(s))) ++n[buffer_name(s)];
  return n;
}

}  // namespace

// Inner step lists first (the rewrite rebuilds a GROUP's sources before trying it), each step
// fused into the one before it where that is proven safe; a chain of them folds left to right.
UOp fuse(UOp root, Context& ctx) {
  std::map<std::string, int> users = temp_users(root);
  PatternMatcher pm({{"a value kernel is computed inside its one reader, the next launch", Pat::ops({Ops::GROUP}), [&](const Match& m) {
                        std::vector<UOp> steps;
                        for (UOp s : m.node->src) {
                          UOp f = steps.empty() ? UOp() : fuse_pair(steps.back(), s, users, ctx);
                          if (f) steps.back() = f;
                          else steps.push_back(s);
                        }
                        return steps == m.node->src ? UOp() : m.node.replace_src(steps);
                      }}});
  return rewrite(root, pm, ctx, "fuse");
}

}  // namespace ow::lower
