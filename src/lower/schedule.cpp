// Pass `schedule`: the kernels, reachable through dependency edges (AFTER) and effect order
// (GROUP), are laid out as host steps, with a host loop END(GROUP(...), r) for every OUTER
// range. Dependency AFTERs are then dropped: order is now explicit. The program's outputs are
// AFTER(view, anchor), anchor running the steps once.
//
// Where a step goes (a frame: the top level or the body of a host loop):
//  - an effect kernel runs as often as the node that runs it (S5.4): in the innermost host loop
//    whose range that runner depends on, so a fold's initial store runs once, before the loop;
//  - a value kernel (it computes a realized value into its own temporary) runs for the kernel
//    that reads it and sees what that reader sees: in the reader's loop, or further out when it
//    depends neither on that loop's range nor on a buffer the loop writes; one placement serves
//    every reader that sees the same writes of its inputs;
//  - never before its dependencies.
// In which order, per frame: after its dependencies, GROUP in order, and a step that reads a
// buffer before every step that writes it unless it is ordered after that write (S5.5: an
// unordered read sees the contents from before the write).
#include <algorithm>
#include <map>
#include <set>

#include "lower/index_math.h"
#include "lower/lower.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/kernel_slots.h"
#include "uop/verify.h"

namespace ow::lower {

namespace {

// The pass is procedural, not a rule table: its steps are reported through the same firing hook
// (ow explain) under these names.
const Rule& step_rule(const char* name) {
  static std::map<std::string, Rule> rules;
  auto it = rules.find(name);
  if (it == rules.end()) it = rules.emplace(name, Rule{name, Pat::any(), {}}).first;
  return it->second;
}

struct Step {
  UOp node;  // a KERNEL (dependency AFTERs stripped) or a host loop END
  std::set<std::string> reads, writes;
  std::set<size_t> after;   // steps of the same frame it follows
  std::set<size_t> before;  // ... and everything those follow
};

struct Frame {
  size_t parent;                  // the frame the loop is a step of (the top level: itself)
  UOp end;                        // null: the top level
  std::set<std::string> written;  // buffers the loop's body writes
  std::vector<Step> steps;
  std::set<size_t> seq;           // steps every new step follows (earlier GROUP members)
  std::set<size_t> inner;         // steps the host loop being laid out inside follows
};

struct Ref {
  size_t frame, step;
};

// A placement of a value kernel: where, and the temporary it writes there (each placement of
// one kernel writes a temporary of its own, so a reader always reads its own placement's result).
struct Placed {
  Ref ref;
  UOp temp;
};
using Renames = std::vector<std::pair<UOp, UOp>>;  // a value's temporary -> the placement's

class Scheduler {
 public:
  explicit Scheduler(Context& ctx) : ctx_(ctx) {
    frames_.push_back(Frame{});
    path_.push_back(0);
  }

  void fired(const char* step, UOp before, UOp after) {
    if (ctx_.on_fire) ctx_.on_fire(step_rule(step), before, after);
  }

  // Lays out what u needs; `hint` is the frame of the node that runs it. Reached as a
  // dependency an effect runs once (per frame); as a step of a GROUP or a loop's body, every
  // time it is listed (S5.4).
  void visit(UOp u, size_t hint, std::vector<Ref>& done, bool step = false) {
    switch (u->op) {
      case Ops::KERNEL:
        if (is_value_kernel(u)) throw InternalError("lowering: a value kernel outside the AFTER of its temporary");
        done.push_back(effect(u, hint, step));
        return;
      case Ops::END: done.push_back(loop(u, hint, step)); return;
      case Ops::GROUP: {  // as a dependency, laid out once (per frame)
        std::vector<const void*> key{u.get(), frame_id(hint)};
        if (step) key.push_back(reinterpret_cast<const void*>(++steps_));
        auto it = groups_.find(key);
        if (it == groups_.end()) {
          std::vector<Ref> refs;
          group(u, hint, refs);
          it = groups_.emplace(key, refs).first;
        }
        done.insert(done.end(), it->second.begin(), it->second.end());
        return;
      }
      case Ops::AFTER: {  // it runs its dependencies once per binding of its free ranges
        size_t h = frame_of_ranges(u);
        for (size_t i = 1; i < u->src.size(); ++i)
          if (!is_value_kernel(u->src[i])) visit(u->src[i], h, done);
        visit(u->src[0], hint, done);
        return;
      }
      case Ops::STORE: throw InternalError("lowering: a STORE was left outside a kernel");
      default:
        for (UOp s : u->src) visit(s, hint, done);
    }
  }

  std::vector<UOp> top() { return order(frames_[0]); }

  // An output: its steps laid out, its view read (by the host, after every step) from the
  // temporaries its value kernels' placements wrote.
  UOp output(UOp o) {
    std::vector<Ref> done;
    visit(o, 0, done);
    Renames renames;
    for (UOp u = o; is_movement(u->op) || u->op == Ops::AFTER; u = u->src[0])  // the view read
      for (size_t i = 1; u->op == Ops::AFTER && i < u->src.size(); ++i)
        if (is_value_kernel(u->src[i])) renames.push_back({temp_of(u->src[i]), value(u->src[i], 0, visible(0, done)).temp});
    return substitute(strip(o), renames);
  }

  // The same graph without dependency AFTERs (views of buffers stay).
  UOp strip(UOp u) {
    if (u->op == Ops::AFTER) return strip(u->src[0]);
    if (auto it = stripped_.find(u.get()); it != stripped_.end()) return it->second;
    std::vector<UOp> src;
    for (UOp s : u->src) src.push_back(strip(s));
    return stripped_[u.get()] = src == u->src ? u : u.replace_src(src);
  }

 private:
  Context& ctx_;
  std::vector<Frame> frames_;  // every frame; frames_[0] is the top level
  std::vector<size_t> path_;   // the frames being laid out, outermost first: each a step of the one before
  std::map<std::vector<const void*>, Ref> done_;  // a step's identity -> where it was placed
  std::map<std::vector<const void*>, Placed> values_;  // a value kernel's placements
  std::map<const UOpNode*, int> placements_;  // value kernel -> how many it has
  std::map<const UOpNode*, UOp> stripped_;
  uintptr_t steps_ = 0;  // numbers the steps listed in GROUPs and loop bodies
  std::map<std::vector<const void*>, std::vector<Ref>> groups_;  // a GROUP's identity -> its steps

  // A frame's identity in placement keys: its index, not its loop's END node. Interning makes
  // one END node of several loops laid out apart (the same inner loop in two outer host loops),
  // and each of them computes its own values into its own temporaries.
  static const void* frame_id(size_t f) { return reinterpret_cast<const void*>(f + 1); }

  // The innermost frame being laid out whose loop ranges u depends on.
  size_t frame_of_ranges(UOp u) {
    for (size_t p = path_.size(); p-- > 1;)
      for (size_t i = 1; i < frames_[path_[p]].end->src.size(); ++i)
        if (has_free_range(u, frames_[path_[p]].end->src[i])) return path_[p];
    return 0;
  }

  // Frames by depth on the path being laid out (a frame not on it is never asked).
  size_t depth(size_t f) const { return static_cast<size_t>(std::find(path_.begin(), path_.end(), f) - path_.begin()); }
  size_t deeper(size_t a, size_t b) const { return depth(a) >= depth(b) ? a : b; }
  bool laying_out_inside(size_t f) const { return depth(f) + 1 < path_.size(); }

  // What a step placed now in frame f follows, with its own dependencies `deps`: the frame's
  // sequencing context, those dependencies, and (outer frames) what the loop being laid out follows.
  std::set<size_t> visible(size_t f, const std::vector<Ref>& deps) {
    std::set<size_t> v = frames_[f].seq;
    if (laying_out_inside(f)) v.insert(frames_[f].inner.begin(), frames_[f].inner.end());
    for (const Ref& d : deps)
      if (d.frame == f) v.insert(d.step);
    std::set<size_t> all = v;
    for (size_t s : v) all.insert(frames_[f].steps[s].before.begin(), frames_[f].steps[s].before.end());
    return all;
  }

  // The dependencies of a kernel's buffers: effects and ranges visited, value kernels returned.
  std::vector<UOp> visit_slots(UOp k, std::vector<Ref>& deps) {
    std::vector<UOp> values;
    for (size_t i = 1; i < k->src.size(); ++i) {
      UOp slot = k->src[i];
      if (slot->op != Ops::AFTER) continue;
      for (size_t d = 1; d < slot->src.size(); ++d) {
        if (is_value_kernel(slot->src[d])) values.push_back(slot->src[d]);
        else visit(slot->src[d], frame_of_ranges(slot), deps);
      }
    }
    return values;
  }

  Step make_step(UOp k, const Renames& renames) {
    std::vector<UOp> src{k->src[0]};
    for (size_t i = 1; i < k->src.size(); ++i) src.push_back(substitute(strip(k->src[i]), renames));
    Step s;
    s.node = k.replace_src(src).with_tag(Arg());
    kernel_buffers(s.node, s.reads, s.writes);
    return s;
  }

  // The temporary a value kernel writes (its only stored slot).
  static UOp temp_of(UOp k) {
    std::set<std::string> r, w;
    kernel_buffers(k, r, w);
    for (size_t i = 1; i < k->src.size(); ++i)
      if (UOp b = base_buffer(k->src[i]); b && w.count(buffer_name(b))) return b;
    throw InternalError("lowering: a value kernel that writes no temporary");
  }

  // An effect kernel, in the frame of its runner (or of its dependencies, if deeper).
  Ref effect(UOp k, size_t hint, bool step) {
    std::vector<Ref> deps;
    std::vector<UOp> values = visit_slots(k, deps);
    size_t f = hint;
    for (const Ref& d : deps) f = deeper(f, d.frame);
    std::set<size_t> context = visible(f, {});  // what the kernel's place follows, not its own reads
    Renames renames = place_values(values, f, context, deps);
    std::vector<const void*> key{k.get(), frame_id(f)};
    if (step) key.push_back(reinterpret_cast<const void*>(++steps_));  // every listed step runs
    if (auto it = done_.find(key); it != done_.end()) return it->second;
    Step s = make_step(k, renames);
    check_hoist(k, f, s);
    return place(key, f, std::move(s), deps);
  }

  // The value kernels a kernel placed in frame f reads, each placed for it (after `context`):
  // their places join deps, and the kernel's temporaries are renamed to theirs.
  Renames place_values(const std::vector<UOp>& values, size_t f, const std::set<size_t>& context, std::vector<Ref>& deps) {
    Renames renames;
    for (UOp v : values) {
      Placed p = value(v, f, context);
      deps.push_back(p.ref);
      renames.push_back({temp_of(v), p.temp});
    }
    return renames;
  }

  // A value kernel read by a kernel in frame `reader` placed after `context` there: it sees that
  // context and its own dependencies (the reader's other reads are the reader's).
  Placed value(UOp k, size_t reader, const std::set<size_t>& context) {
    std::vector<Ref> deps;
    std::vector<UOp> values = visit_slots(k, deps);
    std::set<std::string> reads, writes;
    kernel_buffers(k, reads, writes);
    size_t f = reader;
    while (f != 0 && !depends_on_frame(k, reads, f)) f = frames_[f].parent;
    for (const Ref& d : deps) f = deeper(f, d.frame);
    std::set<size_t> outer = f == reader ? context : visible(f, {}), mine = outer;
    for (const Ref& d : deps)
      if (d.frame == f) mine.insert(d.step), mine.insert(frames_[f].steps[d.step].before.begin(), frames_[f].steps[d.step].before.end());
    Renames renames = place_values(values, f, outer, deps);
    // One placement per set of writes of its inputs it sees (the steps of its frame it follows
    // that write them), and per temporaries of its own inputs.
    std::vector<const void*> key{k.get(), frame_id(f)};
    for (size_t w : mine)
      if (std::any_of(reads.begin(), reads.end(), [&](const std::string& b) { return frames_[f].steps[w].writes.count(b) > 0; })) {
        key.push_back(reinterpret_cast<const void*>(w + 1));
        deps.push_back(Ref{f, w});
      }
    for (auto& [from, to] : renames) key.push_back(to.get());
    if (auto it = values_.find(key); it != values_.end()) return it->second;
    UOp temp = temp_of(k);
    if (placements_[k.get()]++ > 0) {  // another placement: a temporary of its own
      UOp fresh = UOp::make(Ops::BUFFER, temp->dtype, {}, Arg(ArgTuple{Arg(ctx_.fresh_buffer("t")), temp->arg.tuple()->at(1)}));
      renames.push_back({temp, fresh});
      temp = fresh;
    }
    Ref r = place({}, f, make_step(k, renames), deps);
    return values_[key] = Placed{r, temp};
  }

  // Must a value kernel run inside frame f's loop: does it depend on the loop's range, or read a
  // buffer its body writes?
  bool depends_on_frame(UOp k, const std::set<std::string>& reads, size_t f) {
    for (size_t i = 1; i < frames_[f].end->src.size(); ++i)
      if (has_free_range(k, frames_[f].end->src[i])) return true;
    return std::any_of(reads.begin(), reads.end(), [&](const std::string& b) { return frames_[f].written.count(b) > 0; });
  }

  // An effect that runs once, reached inside a loop, runs before the loop: only exact when no step
  // of the loop's first iteration laid out before it touches what it writes.
  void check_hoist(UOp k, size_t f, const Step& s) {
    for (size_t p = depth(f) + 1; p < path_.size(); ++p)
      for (const Step& t : frames_[path_[p]].steps)
        for (const std::string& b : s.writes)
          if (t.reads.count(b) || t.writes.count(b))
            throw unsupported(Reason::RunOnceInLoop, "kernel " + kernel_name(k) + " runs once but is reached inside a host loop after a step that uses buffer '" + b + "'");
  }

  Ref place(const std::vector<const void*>& key, size_t f, Step s, const std::vector<Ref>& deps) {
    Frame& fr = frames_[f];
    s.after = fr.seq;
    if (laying_out_inside(f)) s.after.insert(fr.inner.begin(), fr.inner.end());
    for (const Ref& d : deps) {
      if (d.frame == f) s.after.insert(d.step);
      // A dependency in an outer frame (placed earlier, for another reader) must precede the
      // loop being laid out there, as if it had been placed now.
      else if (laying_out_inside(d.frame)) frames_[d.frame].inner.insert(d.step);
    }
    for (size_t a : s.after) {
      s.before.insert(a);
      s.before.insert(fr.steps[a].before.begin(), fr.steps[a].before.end());
    }
    fired(s.node->op == Ops::END ? "host loop" : "kernel scheduled", s.node, s.node);
    fr.steps.push_back(std::move(s));
    Ref r{f, fr.steps.size() - 1};
    // A step placed in an outer frame while a loop body is laid out comes before that loop.
    if (laying_out_inside(f)) fr.inner.insert(r.step);
    if (!key.empty()) done_[key] = r;
    return r;
  }

  // A host loop, a step of the frame `hint` of the node that runs it.
  Ref loop(UOp u, size_t hint, bool step) {
    std::vector<const void*> key{u.get()};
    if (step) key.push_back(reinterpret_cast<const void*>(++steps_));
    if (auto it = done_.find(key); it != done_.end()) return it->second;
    for (size_t i = 1; i < u->src.size(); ++i)
      if (range_axis(u->src[i]) != AxisType::OUTER) throw InternalError("lowering: a loop over " + range_name(u->src[i]) + " was left outside its kernels");
    std::vector<size_t> saved_path = path_;
    path_.resize(depth(hint) + 1);
    std::set<size_t> saved_inner = frames_[hint].inner;
    frames_[hint].inner.clear();
    Frame body{hint, u, {}, {}, {}, {}};
    for (UOp n : toposort(u->src[0]))
      if (n->op == Ops::KERNEL) {
        std::set<std::string> r;
        kernel_buffers(n, r, body.written);
      }
    frames_.push_back(std::move(body));
    size_t me = frames_.size() - 1;
    path_.push_back(me);
    std::vector<Ref> inner;
    visit(u->src[0], me, inner, true);
    path_.pop_back();
    Step s;
    for (const Step& t : frames_[me].steps) {
      s.reads.insert(t.reads.begin(), t.reads.end());
      s.writes.insert(t.writes.begin(), t.writes.end());
    }
    std::vector<UOp> src{UOp::make(Ops::GROUP, dtypes::void_, order(frames_[me]))};
    src.insert(src.end(), u->src.begin() + 1, u->src.end());
    s.node = UOp::make(Ops::END, dtypes::void_, src);
    std::vector<Ref> deps;  // what the body needed from the loop's frame comes first
    for (size_t i : frames_[hint].inner) deps.push_back(Ref{hint, i});
    frames_[hint].inner = saved_inner;
    path_ = saved_path;
    return place(key, hint, std::move(s), deps);
  }

  // GROUP runs its members in order: each one's steps follow the earlier ones' (frame by frame).
  void group(UOp g, size_t hint, std::vector<Ref>& done) {
    std::vector<std::set<size_t>> saved;
    for (Frame& f : frames_) saved.push_back(f.seq);
    for (UOp s : g->src) {
      std::vector<Ref> mine;
      visit(s, hint, mine, true);
      for (const Ref& m : mine) frames_[m.frame].seq.insert(m.step);
      done.insert(done.end(), mine.begin(), mine.end());
    }
    for (size_t f = 0; f < saved.size(); ++f) frames_[f].seq = saved[f];
  }

  static std::string step_name(const Step& s) {
    if (s.node->op == Ops::KERNEL) return "kernel " + kernel_name(s.node);
    return "a host loop over " + range_name(s.node->src[1]);
  }

  // The frame's steps in an order that respects every constraint, earliest laid out first.
  std::vector<UOp> order(Frame& fr) {
    std::vector<Step>& st = fr.steps;
    size_t n = st.size();
    std::vector<std::set<size_t>> edges(n);
    for (size_t i = 0; i < n; ++i) edges[i] = st[i].after;
    for (size_t r = 0; r < n; ++r)
      for (size_t w = 0; w < n; ++w) {
        if (r == w || st[r].before.count(w) || st[w].before.count(r)) continue;
        for (const std::string& b : st[w].writes) {
          if (st[r].writes.count(b) && r < w)
            throw unsupported(Reason::UnorderedWrites, "two steps write buffer '" + b + "' without an order between them (" + step_name(st[r]) + " and " + step_name(st[w]) + ": a race, SEMANTICS S5.5)");
          if (st[r].reads.count(b)) edges[w].insert(r);  // the unordered read sees the contents before the write
        }
      }
    std::vector<UOp> out;
    std::vector<bool> placed(n, false);
    for (size_t k = 0; k < n; ++k) {
      size_t pick = n;
      for (size_t i = 0; i < n && pick == n; ++i)
        if (!placed[i] && std::all_of(edges[i].begin(), edges[i].end(), [&](size_t j) { return placed[j]; })) pick = i;
      if (pick == n) throw unsupported(Reason::ReadWriteCycle, "steps that each read a buffer the other writes, with no order between them (the reads would need copies)");
      placed[pick] = true;
      out.push_back(st[pick].node);
    }
    return out;
  }
};

}  // namespace

UOp schedule(UOp root, Context& ctx) {
  Scheduler s(ctx);
  std::vector<UOp> outs = root->op == Ops::SINK ? root->src : std::vector<UOp>{root};
  std::vector<UOp> views;
  for (UOp o : outs) views.push_back(s.output(o));
  UOp all = UOp::make(Ops::GROUP, dtypes::void_, s.top());
  UOp anchor = UOp::index(0).after({all});
  bool any_value = false, ran = false;
  std::vector<UOp> src;
  for (size_t i = 0; i < outs.size(); ++i) {
    UOp o = outs[i];
    if (!o->dtype.is_void()) {
      src.push_back(views[i].after({anchor}));
      s.fired("output anchored", o, src.back());
      any_value = true;
    } else {
      src.push_back(UOp::make(Ops::GROUP, dtypes::void_, {}));
    }
  }
  if (!any_value)
    for (UOp& x : src)
      if (!ran) x = all, ran = true;
  return root->op == Ops::SINK ? UOp::sink(src, root->arg) : src[0];
}

}  // namespace ow::lower
