// Reverse mode through effects (SEMANTICS S9.3): backpropagation through time over buffers.
//
// Forward, every store of the program also saves what it overwrites (its tape: one slot per
// iteration of the loops around it, so O(iterations x region) memory). Backward, on working
// copies of the written buffers (the graph's own buffers keep the forward's results), the
// program runs in reverse carrying the adjoint gB of every buffer's contents:
//   the loss: its reads add their adjoints into gB (through their views);
//   a store T = v, last first: gv = gB[T]; gB[T] = 0; T = its tape slot (the working copy is
//     back to just before the store); v's reads add their adjoints, from gv, into gB;
//   an OUTER loop: its body for the iterations last to first (a loop over j, r = n-1-j);
//   a parallel loop: every iteration read the state at its start, so all its stores are undone
//     first, and the reads' adjoints gather apart and join gB after the loop (snapshot rule).
// gB at the end is the adjoint of the contents before the program: a BUFFER target's gradient.
#include <algorithm>
#include <unordered_set>
#include <map>

#include "grad/build.h"
#include "grad/gradient.h"
#include "grad/program.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/pattern.h"
#include "uop/shape.h"
#include "uop/symbolic.h"
#include "uop/text.h"
#include "uop/verify.h"

namespace ow::grad {

namespace {

UOp group(std::vector<UOp> steps) { return UOp::make(Ops::GROUP, dtypes::void_, std::move(steps)); }


std::vector<UOp> static_dims(UOp x, const char* what) {
  auto d = shaped(x) ? ow::static_dims(dims_of(x)) : std::nullopt;
  if (!d) throw NotDifferentiable(NotDifferentiable::Reason::SymbolicShape, std::string(what) + " has a symbolic or no shape (at " + number_graph(x).line(x) + ")");
  std::vector<UOp> out;
  for (int64_t k : *d) out.push_back(UOp::index(k));
  return out;
}

int64_t numel(const std::vector<UOp>& dims) {
  int64_t n = 1;
  for (UOp d : dims) n *= static_cast<int64_t>(d.const_value());
  return n;
}

class Backward {
 public:
  Backward(UOp loss, const std::vector<UOp>& targets, Namer& names) : loss_(loss), targets_(targets), names_(names) {}

  // The gradients of the targets (the adjoint of their values), and what replaces what in the
  // forward graph so it saves its tapes.
  std::vector<UOp> run(Expansion& ex) {
    prog_ = program_of(loss_, targets_, names_);
    if (prog_.stmts.empty()) return pure();
    // An ASSIGN variable the program runs (another variable lies below it) is the contents it
    // leaves: its replacement AFTER(target, store), a read of that version.
    for (UOp& t : targets_)
      for (auto& [from, to] : prog_.replace)
        if (from == t) t = to;
    for (UOp t : targets_)
      for (UOp r : free_ranges(t))
        if (!has_free_range(loss_, r))
          throw NotDifferentiable(NotDifferentiable::Reason::PerBindingThroughEffects, "the variable depends on range " + range_name(r) + " but the loss does not, and effects lie between them: "
                      "a per-binding gradient through a loop is not supported (at " + number_graph(t).line(t) + ")");
    check_reads();
    prepare();
    ex.replace.insert(ex.replace.end(), prog_.replace.begin(), prog_.replace.end());
    for (auto& [store, tape] : tapes_) {
      Tape t = tape;
      ex.save[store] = [t](UOp s) { return slot(t.buffer, t.extents, t.ranges, t.dims).store(s->src[0]); };
    }
    seed();
    for (auto it = prog_.stmts.rbegin(); it != prog_.stmts.rend(); ++it) reverse_stmt(*it);
    return results();
  }

 private:
  UOp loss_;
  std::vector<UOp> targets_;
  Namer& names_;
  Program prog_;
  std::map<const UOpNode*, UOp, StableLess> adj_;   // buffer -> its adjoint buffer
  std::map<const UOpNode*, UOp, StableLess> work_;  // written buffer -> its working copy
  std::map<const UOpNode*, UOp, StableLess> gx_;    // intermediate target -> its adjoint buffer
  // A read variable of a version the program writes: its adjoint is gB as the backward passes that
  // point, copied just before the last statement it depends on is reversed.
  std::map<size_t, UOp> snap_;                          // target index -> the copy
  std::map<const Stmt*, std::vector<size_t>> snap_at_;  // statement -> the targets copied there
  struct Tape {
    UOp buffer;
    std::vector<UOp> extents, ranges, dims;  // the loops around the store, and the region's shape
  };
  std::map<const UOpNode*, Tape> tapes_;  // store -> what it overwrote
  std::vector<std::vector<UOp>> seq_{{}};                 // the backward steps being emitted
  std::vector<std::pair<UOp, UOp>> reversed_;             // forward range -> its index in the backward
  std::map<const UOpNode*, UOp> gather_;                  // inside a parallel loop: adjoint buffer -> where reads gather

  void emit(UOp step) { seq_.back().push_back(step); }

  // ---- no effects after the variable: plain reverse mode ----
  std::vector<UOp> pure() {
    std::vector<UOp> leaves;
    std::unordered_set<const UOpNode*> reads;  // the sweep stops at these; it goes on below value targets
    for (UOp t : targets_) {
      leaves.push_back(leaf_of(t));
      if (is_read_target(t)) reads.insert(leaf_of(t).get());
    }
    std::vector<UOp> g = reverse(loss_, ones_like(loss_), leaves, [&](UOp u) { return reads.count(u.get()) > 0; });
    std::vector<UOp> out;
    for (size_t i = 0; i < targets_.size(); ++i) {
      UOp t = targets_[i];
      out.push_back(g[i] ? cast(leaf_of(t) == t ? g[i] : substitute(t, {{leaf_of(t), g[i]}}), t->dtype) : zeros_like(t));
    }
    return out;
  }

  // A target that reads a buffer stands for the contents it reads: its gradient gathers every
  // read of them, so the leaf is the bottom of its view (the BUFFER, or the AFTER that names
  // the version). Any other target is a value of the graph, its own leaf.
  static UOp leaf_of(UOp t) {
    UOp v = t;
    while (v->op == Ops::RESHAPE || v->op == Ops::PERMUTE || v->op == Ops::SHRINK || v->op == Ops::FLIP) v = v->src[0];
    return v->op == Ops::BUFFER || (v->op == Ops::AFTER && is_read(v)) ? v : t;
  }

  static bool is_float_buffer(UOp b) { return b->dtype.is_float(); }
  static bool is_read_target(UOp t) { return leaf_of(t) != t || t->op == Ops::BUFFER || (t->op == Ops::AFTER && is_read(t)); }

  // ---- exactness: every value is read at the state reverse mode rebuilds for it ----
  // The backward rebuilds the state just before each store (the loss: after the whole program).
  // A read that is not ordered after an earlier write of its buffer sees the contents from before
  // it (S5.5), a state the backward never has: refused, naming the read. A read is ordered after
  // a write its view names (through AFTER), one its store's target names, or one in an earlier
  // step of a GROUP around it; steps inside one statement are in order by construction.
  using NodeSet = std::set<const UOpNode*>;

  void check_reads() {
    std::vector<const Stmt*> earlier;  // the stores of the statements checked so far
    NodeSet checked;                   // their effect nodes: reads inside them are done
    std::function<void(const Stmt&)> mark = [&](const Stmt& s) {
      checked.insert(s.node.get());
      if (s.kind == Stmt::Kind::Store) earlier.push_back(&s);
      for (const Stmt& b : s.body) mark(b);
    };
    for (const Stmt& s : prog_.stmts) {
      if (!earlier.empty()) check_stmt(s, earlier, checked, {});
      mark(s);
    }
    if (!earlier.empty()) check_reads_in(prog_.replace.empty() ? loss_ : substitute(loss_, prog_.replace), earlier, checked, {});
  }

  void check_stmt(const Stmt& s, const std::vector<const Stmt*>& earlier, const NodeSet& checked, NodeSet ordered) {
    auto add = [&](UOp x) {
      for (UOp u : toposort(x)) ordered.insert(u.get());
    };
    if (s.kind == Stmt::Kind::Store) {
      add(s.target);
      return check_reads_in(s.node, earlier, checked, ordered);
    }
    for (const Stmt& b : s.body) {
      check_stmt(b, earlier, checked, ordered);
      if (s.kind == Stmt::Kind::Seq) add(b.node);
    }
  }

  // The reads of buffers in `x` (whole view chains), not looking inside statements already checked.
  static NodeSet reads_in(UOp x, const NodeSet& checked) {
    NodeSet seen, reads;
    std::vector<UOp> todo{x};
    while (!todo.empty()) {
      UOp u = todo.back();
      todo.pop_back();
      if (!seen.insert(u.get()).second || (u != x && checked.count(u.get()))) continue;
      for (UOp src : u->src) {
        if (is_read(src) && u->op != Ops::AFTER && !is_movement(u->op)) reads.insert(src.get());
        todo.push_back(src);
      }
    }
    return reads;
  }

  void check_reads_in(UOp x, const std::vector<const Stmt*>& earlier, const NodeSet& checked, const NodeSet& ordered) {
    for (const UOpNode* n : reads_in(x, checked)) {
      UOp r(n), b = base_buffer(r);
      NodeSet named;
      for (UOp u : toposort(r)) named.insert(u.get());
      for (const Stmt* w : earlier)
        if (base_buffer(w->target) == b && !named.count(w->node.get()) && !ordered.count(w->node.get()))
          throw NotDifferentiable(NotDifferentiable::Reason::UnorderedRead, "a read of buffer '" + buffer_name(b) +
                      "' is not ordered after a write of it that comes earlier in the program (it sees the contents from before, S5.5); "
                      "name the write with AFTER (at " + number_graph(r).line(r) + ")");
    }
  }

  // ---- setup: adjoints, working copies, tapes ----
  void prepare() {
    std::set<const UOpNode*> read;  // buffers some value of the program (or the loss) reads
    auto reads_in = [&](UOp x) {
      for (UOp u : toposort(x))
        if (u->op == Ops::BUFFER) read.insert(u.get());
    };
    reads_in(loss_);
    for_each_store(prog_.stmts, [&](const Stmt& s, const auto&) {
      if (!base_buffer(s.target)) throw NotDifferentiable(NotDifferentiable::Reason::StoreNotToBuffer, "a store whose target is not a view of a buffer (at " + number_graph(s.node).line(s.node) + ")");
      reads_in(s.value);
      for (UOp u = s.target; u->op != Ops::BUFFER; u = u->src[0])  // a target's own indices may read too
        for (size_t i = 1; i < u->src.size(); ++i) reads_in(u->src[i]);
    });
    for_each_store(prog_.stmts, [&](const Stmt& s, const std::vector<const Stmt*>& loops) {
      UOp b = base_buffer(s.target);
      if (!work_.count(b.get()) && read.count(b.get())) work_[b.get()] = names_.buffer("gw", b->dtype, buffer_size(b));
      if (!adj_.count(b.get()) && is_float_buffer(b)) adj_[b.get()] = names_.buffer("g", b->dtype, buffer_size(b));
      if (read.count(b.get())) add_tape(s, loops);
    });
    for (size_t i = 0; i < targets_.size(); ++i) {
      UOp t = targets_[i];
      if (!is_read_target(t)) {
        gx_[t.get()] = names_.buffer("gx", t->dtype, numel(static_dims(t, "a gradient's variable")));
        continue;
      }
      UOp b = base_buffer(t);
      if (!adj_.count(b.get())) adj_[b.get()] = names_.buffer("g", b->dtype, buffer_size(b));
      if (const Stmt* at = last_written_before(leaf_of(t))) {
        snap_[i] = names_.buffer("gx", t->dtype, numel(static_dims(t, "a gradient's variable")));
        snap_at_[at].push_back(i);
      }
    }
    for (auto& [b, g] : adj_) emit(view(g, {UOp::index(buffer_size(g))}).store(full({UOp::index(buffer_size(g))}, g->dtype, 0)));
    for (auto& [t, g] : gx_) emit(view(g, {UOp::index(buffer_size(g))}).store(full({UOp::index(buffer_size(g))}, g->dtype, 0)));
    std::vector<UOp> forward;
    for (const Stmt& s : prog_.stmts) forward.push_back(s.node);
    for (auto& [b, w] : work_) {
      UOp buf(b);
      UOp flat = UOp::index(buffer_size(w));
      emit(view(w, {flat}).store(view(buf, {flat}).after(forward)));
    }
  }

  // The statement of the program a read's version comes after last (in execution order, a
  // statement after its parts), or none. One inside a loop has a version per iteration, which
  // one variable cannot name: refused.
  const Stmt* last_written_before(UOp read) {
    std::set<const UOpNode*> deps;
    for (UOp u : toposort(read)) deps.insert(u.get());
    const Stmt* last = nullptr;
    bool last_in_loop = false;
    std::function<void(const Stmt&, bool)> walk = [&](const Stmt& s, bool in_loop) {
      for (const Stmt& b : s.body) walk(b, in_loop || s.kind == Stmt::Kind::Loop);
      if (deps.count(s.node.get())) last = &s, last_in_loop = in_loop;
    };
    for (const Stmt& s : prog_.stmts) walk(s, false);
    if (last && last_in_loop)
      throw NotDifferentiable(NotDifferentiable::Reason::PerBindingThroughEffects, "the variable reads a version written inside a loop of the program, one per iteration (at " +
                                                                                       number_graph(read).line(read) + ")");
    return last;
  }

  void add_tape(const Stmt& s, const std::vector<const Stmt*>& loops) {
    // Interning merges equal stores, so one node can stand at two places of the program (a
    // second-order expansion zeroes one adjoint before and inside its loops); its tapes would
    // be one, so it is refused rather than mixed up.
    if (tapes_.count(s.node.get()))
      throw NotDifferentiable(NotDifferentiable::Reason::StoreRunsTwice, "one STORE node runs at two places of the program, so what each overwrites cannot be saved apart (at " +
                  number_graph(s.node).line(s.node) + ")");
    Tape t;
    for (const Stmt* l : loops)
      for (UOp r : l->ranges) {
        auto n = r->src[0]->op == Ops::CONST ? std::optional<int64_t>(static_cast<int64_t>(r->src[0].const_value())) : std::nullopt;
        if (!n) throw NotDifferentiable(NotDifferentiable::Reason::SymbolicShape, "a loop of symbolic length " + range_name(r) + " (the tape needs its size)");
        t.extents.push_back(UOp::index(*n));
        t.ranges.push_back(r);
      }
    t.dims = static_dims(s.target, "a store's target");
    t.buffer = names_.buffer("tape", s.target->dtype, numel(t.extents) * numel(t.dims));
    tapes_[s.node.get()] = t;
  }

  // ---- the backward form of a forward value ----
  // Reads drop their AFTERs (the backward steps are in order), written buffers read their working
  // copies, forward loop ranges their reversed index, and REDUCE_BACKWARD is the identity (the
  // reversed loop's iterations add up by themselves).
  UOp bw(UOp x) {
    std::map<const UOpNode*, UOp> m;
    for (auto& [r, e] : reversed_) m[r.get()] = e;
    for (auto& [b, w] : work_) m[b] = w;
    for (UOp u : toposort(x)) {
      if (m.count(u.get())) continue;
      std::vector<UOp> src;
      for (UOp s : u->src) src.push_back(m.at(s.get()));
      // an ASSIGN's value is its target after the write: here, the target as the backward has it
      if (u->op == Ops::AFTER || u->op == Ops::REDUCE_BACKWARD || u->op == Ops::ASSIGN) m[u.get()] = src[0];
      else m[u.get()] = src == u->src ? u : u.replace_src(src);
    }
    return m.at(x.get());
  }

  // The forward buffer a backward read is of (through its working copy).
  UOp forward_buffer(UOp b) {
    for (auto& [f, w] : work_)
      if (w == b) return UOp(f);
    return b;
  }

  UOp rebase(UOp read, UOp to) { return substitute(read, {{base_buffer(read), to}}); }

  // Backpropagates `seed` (the adjoint of value) into the adjoints of what value reads.
  void backprop(UOp value, UOp seed) {
    UOp v = bw(value);
    std::vector<UOp> reads, leaves;
    std::set<const UOpNode*> in_read;
    // A read under a range the value closes (x[a] inside a REDUCE over a) is not a place to add
    // into: the read below it, without the range, is (reverse mode sums over a on the way).
    auto bound_only = [&](UOp u) {
      for (UOp r : free_ranges(u))
        if (!has_free_range(v, r)) return false;
      return true;
    };
    for (UOp u : toposort(v))
      if (is_writable_read(u) && adj_.count(forward_buffer(base_buffer(u)).get()) && bound_only(u)) in_read.insert(u.get());
    for (UOp u : toposort(v))
      for (UOp s : u->src)
        if (in_read.count(s.get()) && !in_read.count(u.get()) && std::find(reads.begin(), reads.end(), s) == reads.end()) reads.push_back(s);
    if (in_read.count(v.get())) reads.push_back(v);
    leaves = reads;
    std::vector<UOp> inter;
    for (auto& [t, g] : gx_) {
      UOp tb = bw(UOp(t));
      leaves.push_back(tb);
      inter.push_back(UOp(t));
    }
    std::vector<UOp> g = reverse(v, seed, leaves, [&](UOp u) { return in_read.count(u.get()) > 0; });
    for (size_t i = 0; i < reads.size(); ++i)
      if (g[i]) scatter(reads[i], g[i]);
    for (size_t i = 0; i < inter.size(); ++i)
      if (UOp gi = g[reads.size() + i]) {
        UOp acc = view(gx_.at(inter[i].get()), static_dims(inter[i], "a gradient's variable"));
        emit(acc.store(add(acc, cast(gi, acc->dtype))));
      }
  }

  // adjoint[view] += g, through the read's own view of its buffer.
  void scatter(UOp read, UOp g) {
    UOp gb = adj_.at(forward_buffer(base_buffer(read)).get());
    if (auto it = gather_.find(gb.get()); it != gather_.end()) gb = it->second;
    UOp place = rebase(read, gb);
    emit(place.store(add(place, cast(g, place->dtype))));
  }

  // ---- the sweep ----
  void seed() { backprop(loss_, ones_like(loss_)); }

  void reverse_stmt(const Stmt& s) {
    if (auto it = snap_at_.find(&s); it != snap_at_.end())
      for (size_t i : it->second) {
        UOp t = targets_[i];
        emit(view(snap_.at(i), static_dims(t, "a gradient's variable")).store(rebase(bw(t), adj_.at(base_buffer(t).get()))));
      }
    switch (s.kind) {
      case Stmt::Kind::Store: return reverse_store(s);
      case Stmt::Kind::Seq:
        for (auto it = s.body.rbegin(); it != s.body.rend(); ++it) reverse_stmt(*it);
        return;
      case Stmt::Kind::Loop:
        if (s.sequential) return reverse_loop(s);
        return reverse_parallel(s);
    }
  }

  void reverse_store(const Stmt& s) {
    UOp b = base_buffer(s.target);
    UOp t = bw(s.target);
    UOp gv;
    if (adj_.count(b.get())) {
      std::vector<UOp> dims = static_dims(s.target, "a store's target");
      UOp tmp = view(names_.buffer("gt", b->dtype, numel(dims)), dims);
      UOp region = rebase(t, adj_.at(b.get()));
      emit(tmp.store(region));
      emit(region.store(zeros_like(region)));
      gv = tmp;
    }
    restore(s);
    if (gv) backprop(s.value, gv);
  }

  void restore(const Stmt& s) {
    auto tp = tapes_.find(s.node.get());
    if (tp == tapes_.end()) return;
    const Tape& t = tp->second;
    std::vector<UOp> at;
    for (UOp r : t.ranges) at.push_back(bw(r));
    emit(bw(s.target).store(slot(t.buffer, t.extents, at, t.dims)));
  }

  // The loop's iterations last to first: one fresh range per forward range, r = n - 1 - j.
  std::vector<UOp> open_reversed(const Stmt& loop) {
    std::vector<UOp> js;
    for (UOp r : loop.ranges) {
      UOp j = names_.range(r->src[0]);
      js.push_back(j);
      reversed_.push_back({r, simplify(r->src[0] - 1 - j)});
    }
    seq_.emplace_back();
    return js;
  }

  void close_reversed(const Stmt& loop, const std::vector<UOp>& js) {
    std::vector<UOp> body = std::move(seq_.back());
    seq_.pop_back();
    reversed_.resize(reversed_.size() - loop.ranges.size());
    if (!body.empty()) emit(group(body).end(js));
  }

  void reverse_loop(const Stmt& loop) {
    std::vector<UOp> js = open_reversed(loop);
    for (const Stmt& b : loop.body) reverse_stmt(b);
    close_reversed(loop, js);
  }

  // A parallel loop (S5.3): every iteration read the state at the loop's start. Undo all its
  // stores first, then run the adjoints with the reads gathering apart, and join them after.
  void reverse_parallel(const Stmt& loop) {
    std::vector<const Stmt*> stores;
    for_each_store(loop.body, [&](const Stmt& s, const auto&) { stores.push_back(&s); });
    std::vector<UOp> js = open_reversed(loop);
    for (auto it = stores.rbegin(); it != stores.rend(); ++it) restore(**it);
    close_reversed(loop, js);
    std::vector<std::pair<UOp, UOp>> joins;
    for (const Stmt* s : stores) {
      UOp b = base_buffer(s->target);
      if (!adj_.count(b.get()) || gather_.count(adj_.at(b.get()).get())) continue;
      UOp gb = adj_.at(b.get()), gs = names_.buffer("gs", gb->dtype, buffer_size(gb));
      UOp flat = UOp::index(buffer_size(gb));
      emit(view(gs, {flat}).store(full({flat}, gb->dtype, 0)));
      gather_[gb.get()] = gs;
      joins.push_back({gb, gs});
    }
    js = open_reversed(loop);
    for (auto it = stores.rbegin(); it != stores.rend(); ++it) {
      const Stmt& s = **it;
      UOp b = base_buffer(s.target);
      if (!adj_.count(b.get())) continue;
      std::vector<UOp> dims = static_dims(s.target, "a store's target");
      UOp tmp = view(names_.buffer("gt", b->dtype, numel(dims)), dims);
      UOp region = rebase(bw(s.target), adj_.at(b.get()));
      emit(tmp.store(region));
      emit(region.store(zeros_like(region)));
      backprop(s.value, tmp);
    }
    close_reversed(loop, js);
    for (auto& [gb, gs] : joins) {
      gather_.erase(gb.get());
      UOp flat = UOp::index(buffer_size(gb));
      emit(view(gb, {flat}).store(add(view(gb, {flat}), view(gs, {flat}))));
    }
  }

  // ---- the gradients, read after the whole backward ----
  std::vector<UOp> results() {
    UOp steps = group(seq_.back());
    std::vector<UOp> out;
    for (size_t i = 0; i < targets_.size(); ++i) {
      UOp t = targets_[i], g;
      if (auto it = gx_.find(t.get()); it != gx_.end()) g = view(it->second, static_dims(t, "a gradient's variable"));
      else if (auto sn = snap_.find(i); sn != snap_.end()) g = view(sn->second, static_dims(t, "a gradient's variable"));
      else g = rebase(bw(t), adj_.at(base_buffer(t).get()));
      out.push_back(cast(g.after({steps}), t->dtype));
    }
    return out;
  }
};

}  // namespace

std::vector<UOp> gradients_of(UOp loss, const std::vector<UOp>& targets, Namer& names, Expansion& ex) {
  return Backward(loss, targets, names).run(ex);
}

// One memoized rebuild: a replaced node is its replacement (rebuilt in turn), a store with a save
// is GROUP(save, store), both as rebuilt; everything else keeps its op over rebuilt sources.
UOp Expansion::apply(UOp root) const {
  std::map<const UOpNode*, UOp> repl, done;
  for (auto& [from, to] : replace) repl[from.get()] = to;
  std::function<UOp(UOp)> get = [&](UOp u) -> UOp {
    if (auto it = done.find(u.get()); it != done.end()) return it->second;
    UOp out;
    if (auto r = repl.find(u.get()); r != repl.end()) {
      out = get(r->second);
    } else {
      std::vector<UOp> src;
      for (UOp s : u->src) src.push_back(get(s));
      out = src == u->src ? u : u.replace_src(src);
      if (auto sv = save.find(u.get()); sv != save.end()) out = group({sv->second(out), out});
    }
    return done[u.get()] = out;
  };
  return get(root);
}

}  // namespace ow::grad
