// Pass `schedule`: the kernels, reachable through dependency edges (AFTER) and effect order
// (GROUP), are laid out as host steps: a GROUP in execution order, with a host loop
// END(GROUP(...), r) for every OUTER range. Dependency AFTERs are then dropped: order is now
// explicit. The program's outputs are AFTER(view, anchor), anchor running the steps once.
#include <algorithm>
#include <set>

#include "lower/lower.h"
#include "uop/error.h"
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

class Scheduler {
 public:
  explicit Scheduler(Context& ctx) : ctx_(ctx) {}

  void fired(const char* step, UOp before, UOp after) {
    if (ctx_.on_fire) ctx_.on_fire(step_rule(step), before, after);
  }

  // A step runs once where it is first reached, and once in every host loop that reaches it
  // when it depends on that loop's range: a temporary computed per iteration in one loop and
  // read in a later loop over the same range is recomputed there, not read stale (its value
  // from the first loop's last iteration).
  void visit(UOp u, std::vector<UOp>& steps) {
    if (!done_.insert({u.get(), scope_of(u)}).second) return;
    switch (u->op) {
      case Ops::KERNEL: {
        std::vector<UOp> src{u->src[0]};
        for (size_t i = 1; i < u->src.size(); ++i) {
          for (size_t d = 1; u->src[i]->op == Ops::AFTER && d < u->src[i]->src.size(); ++d) visit(u->src[i]->src[d], steps);
          src.push_back(strip(u->src[i]));
        }
        steps.push_back(u.replace_src(src));
        fired("kernel scheduled", u, steps.back());
        return;
      }
      case Ops::END: {
        for (size_t i = 1; i < u->src.size(); ++i)
          if (range_axis(u->src[i]) != AxisType::OUTER) throw Error("lowering: a loop over " + range_name(u->src[i]) + " was left outside its kernels");
        std::vector<UOp> body;
        loops_.push_back(u);
        visit(u->src[0], body);
        loops_.pop_back();
        std::vector<UOp> src{UOp::make(Ops::GROUP, dtypes::void_, body)};
        src.insert(src.end(), u->src.begin() + 1, u->src.end());
        steps.push_back(UOp::make(Ops::END, dtypes::void_, src));
        fired("host loop", u, steps.back());
        return;
      }
      case Ops::STORE: throw Error("lowering: a STORE was left outside a kernel");
      default:
        for (UOp s : u->src) visit(s, steps);
    }
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
  std::vector<UOp> loops_;  // the host loops (END) being laid out, outermost first
  std::set<std::pair<const UOpNode*, const UOpNode*>> done_;  // (step, scope_of(step))

  // The innermost host loop being laid out whose ranges `u` depends on (null: none).
  const UOpNode* scope_of(UOp u) {
    if (loops_.empty()) return nullptr;
    std::vector<UOp> free = free_ranges(u);
    for (auto it = loops_.rbegin(); it != loops_.rend(); ++it)
      for (size_t i = 1; i < (*it)->src.size(); ++i)
        if (std::find(free.begin(), free.end(), (*it)->src[i]) != free.end()) return it->get();
    return nullptr;
  }
  std::map<const UOpNode*, UOp> stripped_;
};

}  // namespace

UOp schedule(UOp root, Context& ctx) {
  Scheduler s(ctx);
  std::vector<UOp> steps;
  std::vector<UOp> outs = root->op == Ops::SINK ? root->src : std::vector<UOp>{root};
  for (UOp o : outs) s.visit(o, steps);
  UOp all = UOp::make(Ops::GROUP, dtypes::void_, steps);
  UOp anchor = UOp::index(0).after({all});
  bool any_value = false, ran = false;
  std::vector<UOp> src;
  for (UOp o : outs) {
    if (!o->dtype.is_void()) {
      src.push_back(s.strip(o).after({anchor}));
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
