#include "uop/pattern.h"

#include <algorithm>
#include <unordered_map>

#include "uop/error.h"
#include "uop/verify.h"

namespace ow {

struct Pat::Data {
  std::vector<Ops> ops;                        // empty: any op
  std::string name;                            // capture name, "" for none
  std::optional<std::vector<Pat>> src;         // nullopt: any sources
  bool any_len = false;
  std::optional<double> const_value;           // for Pat::cnst
  std::function<bool(DType)> dtype_pred;
};

Pat Pat::any(std::string name) {
  auto d = std::make_shared<Data>();
  d->name = std::move(name);
  Pat p;
  p.d_ = d;
  return p;
}

Pat Pat::cvar(std::string name) { return ops({Ops::CONST}, std::move(name)); }

Pat Pat::cnst(double value) {
  auto d = std::make_shared<Data>();
  d->ops = {Ops::CONST};
  d->const_value = value;
  Pat p;
  p.d_ = d;
  return p;
}

Pat Pat::op(Ops op, std::vector<Pat> src, std::string name) {
  auto d = std::make_shared<Data>();
  d->ops = {op};
  d->src = std::move(src);
  d->name = std::move(name);
  Pat p;
  p.d_ = d;
  return p;
}

Pat Pat::ops(std::vector<Ops> ops, std::string name) {
  auto d = std::make_shared<Data>();
  d->ops = std::move(ops);
  d->name = std::move(name);
  Pat p;
  p.d_ = d;
  return p;
}

Pat Pat::named(std::string name) const {
  auto d = std::make_shared<Data>(*d_);
  d->name = std::move(name);
  Pat p;
  p.d_ = d;
  return p;
}

Pat Pat::where_dtype(std::function<bool(DType)> pred) const {
  auto d = std::make_shared<Data>(*d_);
  d->dtype_pred = std::move(pred);
  Pat p;
  p.d_ = d;
  return p;
}

Pat Pat::any_len() const {
  auto d = std::make_shared<Data>(*d_);
  d->any_len = true;
  Pat p;
  p.d_ = d;
  return p;
}

const std::vector<Ops>& Pat::root_ops() const { return d_->ops; }

namespace {
using Bound = std::vector<std::pair<std::string, UOp>>;
using Cont = std::function<bool(Bound&)>;

bool bind(Bound& bound, const std::string& name, UOp u) {
  for (auto& [n, v] : bound)
    if (n == name) return v == u;  // a name used twice must capture the same node
  bound.emplace_back(name, u);
  return true;
}
}  // namespace

// Matching is continuation-passing: every way the pattern can match (commutative operands in
// either order, at any depth) is offered to `k` in turn until `k` accepts one. Captures made
// for a rejected alternative are undone before the next is tried.
bool Pat::match_each(UOp u, Bound& bound, const Cont& k) const {
  const Data& d = *d_;
  if (!d.ops.empty() && std::find(d.ops.begin(), d.ops.end(), u->op) == d.ops.end()) return false;
  if (d.dtype_pred && !d.dtype_pred(u->dtype)) return false;
  if (d.const_value && !(u->op == Ops::CONST && u.const_value() == *d.const_value)) return false;
  size_t mark = bound.size();
  if (!d.name.empty() && !bind(bound, d.name, u)) return false;
  auto undo = [&] { bound.resize(mark); return false; };
  if (!d.src) return k(bound) || undo();
  const auto& pats = *d.src;
  if (d.any_len ? u->src.size() < pats.size() : u->src.size() != pats.size()) return undo();
  size_t orders = (pats.size() == 2 && u->src.size() == 2 && is_commutative(u->op)) ? 2 : 1;
  for (size_t swap = 0; swap < orders; ++swap) {
    // match source i, then the rest, then hand over to k
    std::function<bool(size_t, Bound&)> from = [&](size_t i, Bound& b) -> bool {
      if (i == pats.size()) return k(b);
      size_t j = (swap && i < 2) ? 1 - i : i;
      return pats[i].match_each(u->src[j], b, [&](Bound& b2) { return from(i + 1, b2); });
    };
    if (from(0, bound)) return true;
  }
  return undo();
}

bool Pat::match(UOp u, Bound& bound) const {
  return match_each(u, bound, [](Bound&) { return true; });
}

Pat operator+(Pat a, Pat b) { return Pat::op(Ops::ADD, {std::move(a), std::move(b)}); }
Pat operator*(Pat a, Pat b) { return Pat::op(Ops::MUL, {std::move(a), std::move(b)}); }
Pat operator-(Pat a, Pat b) { return Pat::op(Ops::SUB, {std::move(a), std::move(b)}); }

UOp Match::operator[](const std::string& name) const {
  for (auto& [n, v] : bound)
    if (n == name) return v;
  throw InternalError("pattern has no capture named " + name);
}

PatternMatcher::PatternMatcher(std::vector<Rule> rules) : rules_(std::move(rules)) { index(); }

PatternMatcher PatternMatcher::operator+(const PatternMatcher& o) const {
  std::vector<Rule> all = rules_;
  all.insert(all.end(), o.rules_.begin(), o.rules_.end());
  return PatternMatcher(std::move(all));
}

void PatternMatcher::index() {
  size_t n_ops = kNumOps;
  by_op_.assign(n_ops, {});
  for (size_t i = 0; i < rules_.size(); ++i) {
    const auto& ops = rules_[i].pat.root_ops();
    if (ops.empty()) {
      for (auto& v : by_op_) v.push_back(i);
    } else {
      for (Ops op : ops) by_op_[static_cast<size_t>(op)].push_back(i);
    }
  }
}

std::optional<PatternMatcher::Fired> PatternMatcher::rewrite(UOp u, void* ctx) const {
  for (size_t i : by_op_[static_cast<size_t>(u->op)]) {
    const Rule& r = rules_[i];
    Match m{u, {}, ctx};
    UOp out;
    bool fired = r.pat.match_each(u, m.bound, [&](std::vector<std::pair<std::string, UOp>>& b) {
      m.bound = b;
      out = r.fn(m);
      return out && out != u;
    });
    if (fired) return Fired{out, &r};
  }
  return std::nullopt;
}

namespace {

// Iterative rewrite engine (deep graphs must not overflow the C++ stack).
// Each frame walks a node through three stages:
//   0: (bottom-up: apply rules first) then schedule the sources,
//   1: rebuild with rewritten sources, then apply rules; a new node is scheduled in full,
//   2: link the original node to the final result of what it became.
class Rewriter {
 public:
  Rewriter(const PatternMatcher& pm, const RewriteOptions& o) : pm_(pm), o_(o) {}

  UOp run(UOp root) {
    root_ = root;
    stack_.push_back({root, root, 0});
    while (!stack_.empty()) {
      Frame f = stack_.back();
      stack_.pop_back();
      if (done_.count(f.orig.get())) continue;
      if (f.stage == 0) begin(f);
      else if (f.stage == 1) rebuild(f);
      else done_[f.orig.get()] = done_.at(f.cur.get());
    }
    return done_.at(root.get());
  }

 private:
  struct Frame {
    UOp orig, cur;
    int stage;
  };
  UOp root_;  // (its size goes into the budget error)

  std::optional<UOp> fire(UOp u) {
    auto r = pm_.rewrite(u, o_.ctx);
    if (!r) return std::nullopt;
    if (++steps_ > o_.max_steps)  // a budget: looping rules, or a graph that needs more firings
      throw Error("graph_rewrite '" + o_.name + "' did not reach a fixed point after " + std::to_string(o_.max_steps) + " rule firings (last rule: '" +
                  r->rule->name + "' on a " + std::string(op_name(u->op)) + " node), its budget: the rules loop, or the graph (" +
                  std::to_string(toposort(root_).size()) + " nodes) needs more firings than that");
    if (o_.on_fire) o_.on_fire(*r->rule, u, r->result);
    return r->result;
  }

  void begin(const Frame& f) {
    UOp cur = f.cur;
    if (o_.bottom_up) {
      while (auto r = fire(cur)) cur = *r;
    }
    stack_.push_back({f.orig, cur, 1});
    for (auto it = cur->src.rbegin(); it != cur->src.rend(); ++it)
      if (!done_.count(it->get())) stack_.push_back({*it, *it, 0});
  }

  void rebuild(const Frame& f) {
    std::vector<UOp> src;
    src.reserve(f.cur->src.size());
    for (UOp s : f.cur->src) {
      auto it = done_.find(s.get());
      if (it == done_.end()) {  // a source that was scheduled after us: do it first
        stack_.push_back(f);
        stack_.push_back({s, s, 0});
        return;
      }
      src.push_back(it->second);
    }
    UOp rebuilt = f.cur.replace_src(std::move(src));
    if (rebuilt == f.cur) {
      std::optional<UOp> r = o_.bottom_up ? std::nullopt : fire(rebuilt);
      if (!r) {
        done_[f.orig.get()] = rebuilt;
        if (f.orig != rebuilt) done_[rebuilt.get()] = rebuilt;
        return;
      }
      rebuilt = *r;
    }
    stack_.push_back({f.orig, rebuilt, 2});
    if (!done_.count(rebuilt.get())) stack_.push_back({rebuilt, rebuilt, 0});
  }

  const PatternMatcher& pm_;
  const RewriteOptions& o_;
  std::vector<Frame> stack_;
  std::unordered_map<const UOpNode*, UOp> done_;
  size_t steps_ = 0;
};

}  // namespace

UOp graph_rewrite(UOp root, const PatternMatcher& pm, const RewriteOptions& opts) {
  return Rewriter(pm, opts).run(root);
}

// Only the nodes above a replaced one are rebuilt (the others stay themselves: a node made again
// from the same sources is the same interned node, so skipping them changes nothing).
UOp substitute(UOp root, const std::vector<std::pair<UOp, UOp>>& map) {
  std::unordered_map<const UOpNode*, UOp> repl;  // replaced and rebuilt nodes only
  for (auto& [k, v] : map) repl[k.get()] = v;
  if (repl.empty()) return root;
  for (UOp u : toposort(root)) {
    if (repl.count(u.get())) continue;  // an explicit replacement
    bool above = std::any_of(u->src.begin(), u->src.end(), [&](const UOp& s) { return repl.count(s.get()) > 0; });
    if (!above) continue;
    std::vector<UOp> src;
    src.reserve(u->src.size());
    for (UOp s : u->src) {
      auto it = repl.find(s.get());
      src.push_back(it == repl.end() ? s : it->second);
    }
    repl[u.get()] = u.replace_src(std::move(src));
  }
  auto it = repl.find(root.get());
  return it == repl.end() ? root : it->second;
}

UOp substitute_range(UOp root, UOp r, UOp v, const std::vector<std::pair<UOp, UOp>>& also) {
  if (!has_free_range(root, r)) return root;
  std::unordered_map<const UOpNode*, UOp> copy{{r.get(), v}};
  for (auto& [k, x] : also) copy[k.get()] = x;
  if (auto it = copy.find(root.get()); it != copy.end()) return it->second;
  std::vector<std::pair<UOp, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [u, next] = stack.back();
    if (next < u->src.size()) {
      UOp s = u->src[next++];
      if (has_free_range(s, r) && !copy.count(s.get())) stack.emplace_back(s, 0);
      continue;
    }
    std::vector<UOp> src;
    src.reserve(u->src.size());
    for (UOp s : u->src) {
      auto it = copy.find(s.get());
      src.push_back(it == copy.end() ? s : it->second);
    }
    copy[u.get()] = u.replace_src(std::move(src));
    stack.pop_back();
  }
  return copy.at(root.get());
}

}  // namespace ow
