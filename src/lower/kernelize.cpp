// Pass `kernelize`: every BUFFERIZE becomes a temporary buffer written by a KERNEL, and every
// STORE of a BUFFERIZE becomes a KERNEL writing the target in place (LOWERING.md, kernel level).
// Inside a kernel, buffers are DEFINE_GLOBAL parameters, reads are LOAD(INDEX(param, linear)),
// OUTER ranges are DEFINE_VAR parameters bound by the KERNEL's BIND sources, and a buffer that
// must be written first is a source AFTER(buffer, kernel) — the schedule's dependency edge.
#include <algorithm>
#include <map>

#include "lower/index_math.h"
#include "lower/lower.h"
#include "lower/walk.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/symbolic.h"
#include "uop/verify.h"

namespace ow::lower {

namespace {

// The pass's own state: the lowering's Context, the realized temporaries, and a memo.
struct KernelizeState {
  Context& ctx;
  std::map<const UOpNode*, std::pair<UOp, UOp>> temps;  // BUFFERIZE -> (temp BUFFER, its KERNEL)
  WalkMemo indexed;  // what the INDEX nodes under a BUFFERIZE index (walk.h)
  std::map<const UOpNode*, std::string> temp_names;  // BUFFERIZE -> its temporary's name, fixed when first tried
  int nesting = 0;  // kernels of temporaries being built, each inside the one before
};

// Building a kernel builds the temporaries its value reads first, inside it. Past kMaxNesting
// such builds (a value that reads a realized value that reads one..., 1,000 nested REDUCEs) the
// innermost gives up with NeedsTemp; the loop of the build kMaxNesting levels up builds that
// temporary itself, then tries again (build_temps): the stack stays bounded at any depth, and
// below the bound nothing is tried twice. Not an ow::Error: nothing but that loop may catch it.
constexpr int kMaxNesting = 16;
struct NeedsTemp {
  UOp bufferize;
};

UOp temp_view(UOp b, KernelizeState& st);

// The effects a chain of AFTERs over a buffer is ordered after, kept with their frequency: each
// AFTER runs its dependencies once per binding of its own free ranges (S5.4), so the effect
// dependencies of one AFTER become one anchor, AFTER(0, deps..., its free ranges...), instead of
// joining a flat list whose ranges would make a run-once effect (a fold's initial store) run in
// every iteration. Range-only dependencies stay flat: they mark the read as one per iteration.
struct Chain {
  UOp buffer;
  std::vector<UOp> deps;     // anchors and ranges
  std::vector<UOp> effects;  // the effect dependencies, to compare versions
};

// Ranges, and the kernels of realized values (values: they run whenever their inputs changed).
bool is_flat_dep(UOp d) { return d->op == Ops::RANGE || is_value_kernel(d); }

Chain chain_of(UOp view) {
  Chain c;
  for (; view->op == Ops::AFTER; view = view->src[0]) {
    std::vector<UOp> effects, ranges;  // ranges: the flat ones
    for (size_t i = 1; i < view->src.size(); ++i) (is_flat_dep(view->src[i]) ? ranges : effects).push_back(view->src[i]);
    for (UOp r : ranges)
      if (std::find(c.deps.begin(), c.deps.end(), r) == c.deps.end()) c.deps.push_back(r);
    if (effects.empty()) continue;
    c.effects.insert(c.effects.end(), effects.begin(), effects.end());
    std::vector<UOp> anchor = effects;
    for (UOp r : sorted_ranges(free_ranges(view)))
      if (std::find(anchor.begin(), anchor.end(), r) == anchor.end()) anchor.push_back(r);
    c.deps.push_back(UOp::index(0).after(anchor));
  }
  c.buffer = view;
  return c;
}

// Does the effect (a tensor-level STORE/ASSIGN, or a KERNEL) write `buffer`?
bool writes(UOp effect, UOp buffer) {
  for (UOp u : toposort(effect)) {
    if (is_write(u->op) && !u->src[0]->dtype.ptr && base_buffer(u->src[0]) == buffer) return true;
    if (u->op != Ops::KERNEL) continue;
    for (UOp a : toposort(u->src[0]))
      if (a->op == Ops::STORE && a->src[0]->op == Ops::INDEX && a->src[0]->src[0]->op == Ops::DEFINE_GLOBAL) {
        size_t slot = 1 + static_cast<size_t>(a->src[0]->src[0]->arg.as<int64_t>());
        if (slot < u->src.size() && base_buffer(u->src[slot]) == buffer) return true;
      }
  }
  return false;
}

// The writes of its buffer a chain is ordered after (its effects and, transitively, what those
// were ordered after): what decides the version a read sees.
std::vector<UOp> version_of(const Chain& c) {
  std::vector<UOp> v;
  for (UOp e : c.effects)
    for (UOp u : toposort(e))
      if ((is_write(u->op) || u->op == Ops::KERNEL) && writes(u, c.buffer) &&
          std::find(v.begin(), v.end(), u) == v.end())
        v.push_back(u);
  std::sort(v.begin(), v.end(), [](UOp a, UOp b) { return a->serial < b->serial; });
  return v;
}

bool includes(const std::vector<UOp>& big, const std::vector<UOp>& small) {
  return std::all_of(small.begin(), small.end(), [&](UOp x) { return std::find(big.begin(), big.end(), x) != big.end(); });
}

class KernelBuilder {
 public:
  explicit KernelBuilder(KernelizeState& st) : st_(st), ctx_(st.ctx) {}

  // The kernel storing `value` (over `loops`) at `address` (a tensor-level INDEX into a buffer).
  // A value kernel materializes a realized value into its own temporary (tag "value"): it is a
  // value, computed again whenever what it reads has changed, not an effect with a frequency.
  UOp build(UOp address, UOp value, const std::vector<UOp>& loops, bool is_value = false) {
    auto p = index_parts(address);
    if (!p || p->idx.size() != 1) throw InternalError("lowering: a store address did not reduce to one index into a buffer");
    plan_versions(address, value);
    UOp store = UOp::make(Ops::STORE, dtypes::void_, {pointer(*p), conv(value)});
    std::vector<UOp> ranges;
    for (UOp r : loops)
      if (UOp c = conv(r); c->op == Ops::RANGE) ranges.push_back(c);
    UOp body = ranges.empty() ? store : store.end(ranges);
    std::vector<UOp> src{UOp::sink({body})};
    for (size_t s = 0; s < buffers_.size(); ++s) {
      // A range dependency marks a read as one per iteration. Only an OUTER range is iterated by
      // the host (a host loop binds it); any other is iterated inside the kernel, or was folded
      // away there (extent 1), so at the host it is no dependency (it would be free there).
      std::vector<UOp> deps;
      for (UOp d : deps_[s])
        if (d->op != Ops::RANGE || (range_axis(d) == AxisType::OUTER && std::find(ranges.begin(), ranges.end(), d) == ranges.end())) deps.push_back(d);
      src.push_back(deps.empty() ? buffers_[s] : buffers_[s].after(deps));
    }
    for (auto& [var, range] : binds_) src.push_back(var.bind(range));
    std::string name = "k" + std::to_string(ctx_.next_kernel++);
    return UOp::make(Ops::KERNEL, dtypes::void_, src, Arg(ArgTuple{Arg(name)}), is_value ? value_kernel_tag() : Arg());
  }

 private:
  KernelizeState& st_;
  Context& ctx_;
  std::vector<UOp> buffers_;
  std::vector<std::vector<UOp>> deps_;
  std::vector<std::pair<UOp, UOp>> binds_;
  std::map<const UOpNode*, UOp> memo_;
  std::map<const UOpNode*, UOp> snapshot_;  // a chain read at an older version -> AFTER(copy, its kernel)

  // A launch reads each buffer at one version (LOWERING.md). Chains over one buffer that are
  // ordered after different writes of it are read through copies: the older versions each get a
  // copy kernel ordered after exactly their writes (the scheduler runs it before the newer ones).
  void plan_versions(UOp address, UOp value) {
    std::map<const UOpNode*, std::vector<UOp>, StableLess> chains;  // buffer -> the chains reading or writing it
    auto indexed = [](UOp u) { return index_parts(u) ? std::vector<UOp>{index_parts(u)->x} : std::vector<UOp>{}; };
    auto note = [&](UOp x) {
      if ((x->op != Ops::AFTER && x->op != Ops::BUFFER) || !base_buffer(x)) return;
      auto& v = chains[base_buffer(x).get()];
      if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
    };
    for (UOp root : {address, value})  // toposort({address, value}), each subgraph walked once per lowering
      for (UOp x : walk_items(root, st_.indexed, indexed, [](UOp u) { return u->op == Ops::BUFFERIZE; })) note(x);
    for (auto& [buf, views] : chains) {
      if (views.size() < 2) continue;
      std::vector<std::vector<UOp>> versions;
      for (UOp v : views) versions.push_back(version_of(chain_of(v)));
      size_t newest = 0;
      for (size_t i = 1; i < views.size(); ++i)
        if (includes(versions[i], versions[newest])) newest = i;
      for (size_t i = 0; i < views.size(); ++i) {
        if (versions[i] == versions[newest]) continue;
        if (!includes(versions[newest], versions[i]) || views[i] == address || index_parts(address)->x == views[i])
          throw unsupported(Reason::MixedBufferVersions, "a kernel reads buffer '" + buffer_name(UOp(buf)) + "' after two different sets of its writes");
        snapshot_[views[i].get()] = copy_of(views[i]);
      }
    }
  }

  // A copy of the buffer as the chain `view` sees it, in a fresh temporary written by a value kernel.
  UOp copy_of(UOp view) {
    UOp buf = base_buffer(view);
    int64_t n = buffer_size(buf);
    UOp temp = UOp::make(Ops::BUFFER, buf->dtype, {}, Arg(ArgTuple{Arg(ctx_.fresh_buffer("v")), Arg(n)}));
    UOp r = ctx_.fresh_range(UOp::index(n), AxisType::LOOP);
    UOp kernel = KernelBuilder(st_).build(make_index(temp, {r}, UOp()), make_index(view, {r}, UOp()), {r}, true);
    return temp.after({kernel});
  }

  // The parameter slot of a buffer (seen through a chain of AFTERs: their dependencies).
  UOp global(UOp view) {
    if (auto it = snapshot_.find(view.get()); it != snapshot_.end()) view = it->second;
    Chain c = chain_of(view);
    UOp base = c.buffer;
    if (base->op != Ops::BUFFER) throw InternalError(std::string("lowering: a load reached ") + std::string(op_name(base->op)) + " instead of a buffer");
    size_t slot = std::find(buffers_.begin(), buffers_.end(), base) - buffers_.begin();
    if (slot == buffers_.size()) {
      buffers_.push_back(base);
      deps_.emplace_back();
    }
    for (UOp d : c.deps)
      if (std::find(deps_[slot].begin(), deps_[slot].end(), d) == deps_[slot].end()) deps_[slot].push_back(d);
    int64_t size = buffer_size(base);
    return UOp::make(Ops::DEFINE_GLOBAL, base->dtype.pointer(size), {}, Arg(static_cast<int64_t>(slot)));
  }

  UOp pointer(const IndexParts& p) {
    UOp base = p.x, lin = p.idx.empty() ? UOp::index(0) : p.idx[0];
    if (base->op == Ops::BUFFERIZE) {
      lin = linearize(p.idx, dims_of(base));
      base = temp_view(base, st_)->src[0];  // AFTER(temp, kernel)
    }
    UOp g = global(base);
    std::vector<UOp> src{g, conv(simplify_given(lin, p.gate))};  // read only where the gate holds
    if (p.gate) src.push_back(conv(p.gate));
    return UOp::make(Ops::INDEX, g->dtype, src);
  }

  // The kernel form of a tensor-level element value. Iterative (a chain of 100,000 fused nodes
  // is as deep): the sources of a node rebuilt from its sources are converted first.
  UOp conv(UOp u) {
    std::vector<std::pair<UOp, bool>> stack{{u, false}};  // (node, its sources pushed)
    while (!stack.empty()) {
      auto [n, pushed] = stack.back();
      if (memo_.count(n.get())) {
        stack.pop_back();
        continue;
      }
      if (!pushed && rebuilt_from_sources(n)) {
        stack.back().second = true;
        for (UOp s : n->src)
          if (!memo_.count(s.get())) stack.push_back({s, false});
        continue;
      }
      stack.pop_back();
      memo_[n.get()] = conv_one(n);
    }
    return memo_.at(u.get());
  }

  bool rebuilt_from_sources(UOp u) const {
    return !index_parts(u) && u->op != Ops::RANGE && u->shape.kind == ShapeInfo::Kind::Unshaped;
  }

  // One node, its sources converted already where it is rebuilt from them.
  UOp conv_one(UOp u) {
    UOp out;
    if (auto p = index_parts(u)) {
      if (p->x->op != Ops::BUFFERIZE && p->x->op != Ops::BUFFER && p->x->op != Ops::AFTER)
        throw InternalError(std::string("lowering: INDEX of ") + std::string(op_name(p->x->op)) + " was not pushed down to a buffer");
      out = pointer(*p).load();
    } else if (u->op == Ops::RANGE && u->src[0]->op == Ops::CONST && u->src[0].const_value() == 1) {
      out = UOp::index(0);  // a loop of one iteration is its index 0
    } else if (u->op == Ops::RANGE && range_axis(u) == AxisType::OUTER) {
      out = UOp::variable(range_name(u), 0, u.vmax());
      if (std::none_of(binds_.begin(), binds_.end(), [&](auto& b) { return b.second == u; })) binds_.push_back({out, u});
    } else if (u->shape.kind != ShapeInfo::Kind::Unshaped) {
      // rangeify pushes every INDEX down to a buffer or a realized value; a tensor-level node
      // left in an element's value has no C form (and a BUFFERIZE rebuilt here loses its ranges).
      throw InternalError("lowering: " + value_text(u) + " reached kernel k" + std::to_string(ctx_.next_kernel) + " without an index pushed through it");
    } else {
      std::vector<UOp> src;
      for (UOp s : u->src) src.push_back(conv(s));
      out = src == u->src ? u : u.replace_src(src);
      if (u->op == Ops::REDUCE) out = drop_single_ranges(out.with_tag(Arg()));  // a kernel's loops need no tag
    }
    return out;
  }

  // A REDUCE whose ranges of one iteration became index 0: fold over the remaining ranges, or,
  // with none left, the one step `identity OP x` (exactly what a one-iteration fold computes).
  static UOp drop_single_ranges(UOp r) {
    std::vector<UOp> src{r->src[0]};
    for (size_t i = 1; i < r->src.size(); ++i)
      if (r->src[i]->op == Ops::RANGE) src.push_back(r->src[i]);
    if (src.size() == r->src.size()) return r;
    Ops op = r->arg.as<Ops>();
    if (src.size() > 1) return r.replace_src(src);
    return UOp::make(op, r->dtype, {reduce_identity(op, r->dtype), r->src[0]});
  }
};

std::vector<UOp> extents(UOp b) {
  std::vector<UOp> e;
  for (size_t i = 1; i < b->src.size(); ++i) e.push_back(b->src[i]->src[0]);
  return e;
}

// The temporary of a BUFFERIZE and the kernel writing it (which may throw NeedsTemp).
std::pair<UOp, UOp> make_temp(UOp b, KernelizeState& st) {
  std::vector<UOp> loops(b->src.begin() + 1, b->src.end());
  if (!free_loop_ranges(b).empty()) throw InternalError("lowering: a realized value still depends on a loop range it does not store");
  int64_t n = 1;
  for (UOp e : extents(b)) n *= static_cast<int64_t>(e.const_value());
  auto name = st.temp_names.find(b.get());
  if (name == st.temp_names.end()) name = st.temp_names.emplace(b.get(), st.ctx.fresh_buffer("t")).first;
  UOp temp = UOp::make(Ops::BUFFER, b->dtype, {}, Arg(ArgTuple{Arg(name->second), Arg(n)}));
  UOp address = make_index(temp, {linearize(loops, extents(b))}, UOp());
  return {temp, KernelBuilder(st).build(address, b->src[0], loops, /*is_value=*/true)};
}

// Builds the temporary of `b`, and first those it needs that lie kMaxNesting builds deeper.
void build_temps(UOp b, KernelizeState& st) {
  if (st.nesting >= kMaxNesting) throw NeedsTemp{b};
  std::vector<UOp> todo{b};
  while (!todo.empty()) {
    UOp t = todo.back();
    if (st.temps.count(t.get())) {
      todo.pop_back();
      continue;
    }
    ++st.nesting;
    try {
      std::pair<UOp, UOp> made = make_temp(t, st);
      --st.nesting;
      st.temps.emplace(t.get(), std::move(made));
      todo.pop_back();
    } catch (const NeedsTemp& need) {
      --st.nesting;
      if (std::find(todo.begin(), todo.end(), need.bufferize) != todo.end()) throw InternalError("lowering: a realized value reads itself");
      todo.push_back(need.bufferize);
    } catch (...) {
      --st.nesting;
      throw;
    }
  }
}

// A BUFFERIZE read by others: its temporary, seen through AFTER(temp, kernel) with its shape.
UOp temp_view(UOp b, KernelizeState& st) {
  auto it = st.temps.find(b.get());
  if (it == st.temps.end()) {
    build_temps(b, st);
    it = st.temps.find(b.get());
  }
  std::vector<UOp> src{it->second.first.after({it->second.second})};
  for (UOp e : extents(b)) src.push_back(e);
  return UOp::make(Ops::RESHAPE, b->dtype, src);
}

void check_writable(UOp target) {
  if (std::optional<std::string> why = unwritable_target(target)) throw Error("lowering: " + *why);
}

UOp store_kernel(const Match& m) {
  UOp target = m.node->src[0], b = m.node->src[1];
  if (!is_store_value(b) || !is_shaped(target)) return UOp();
  KernelizeState& st = m.context<KernelizeState>();
  check_writable(target);
  std::vector<UOp> rs(b->src.begin() + 1, b->src.end());
  UOp address = rewrite(make_index(target, rs, UOp()), index_rules(), st.ctx, "store address");
  // Every element in padding (its gate folded to false, leaving make_index's zero): the store
  // writes nothing (S5.1: a PAD's fill is written nowhere), so there is no kernel; an effect inside the value still has to run.
  if (address->op == Ops::CONST && !runs_effect(b->src[0])) return UOp::make(Ops::GROUP, dtypes::void_, {});
  std::vector<UOp> loops = free_loop_ranges(m.node);
  loops.insert(loops.end(), rs.begin(), rs.end());
  return KernelBuilder(st).build(address, b->src[0], loops);
}

const PatternMatcher& kernelize_rules() {
  static const PatternMatcher pm({
      {"a parallel END is inside its kernels", Pat::ops({Ops::END}),
       [](const Match& m) {
         UOp body = m.node->src[0];
         if (body->op == Ops::STORE && body->src[0]->dtype.ptr) return UOp();  // a kernel's own loop
         for (size_t i = 1; i < m.node->src.size(); ++i)
           if (range_axis(m.node->src[i]) == AxisType::OUTER) return UOp();
         return m.node->src[0];
       }},
      {"a store of a BUFFERIZE becomes a kernel", Pat::op(Ops::STORE, {Pat::any(), Pat::ops({Ops::BUFFERIZE})}), store_kernel},
      {"a BUFFERIZE becomes a temporary and its kernel", Pat::ops({Ops::BUFFERIZE}),
       [](const Match& m) { return temp_view(m.node, m.context<KernelizeState>()); }},
  });
  return pm;
}

}  // namespace

UOp kernelize(UOp root, Context& ctx) {
  KernelizeState state{ctx, {}, {}, {}, 0};
  UOp out = rewrite_with(root, kernelize_rules(), state, ctx, "kernelize", /*parents_first=*/true);
  verify_kernels(out);  // the kernel grammar, checked once: schedule and every backend rely on it
  return out;
}

}  // namespace ow::lower
