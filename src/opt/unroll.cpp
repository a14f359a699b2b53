// Kernel-opt pass `unroll` (tcc): tcc keeps every variable in memory, recomputes every address
// from scratch and never unrolls, so a short innermost loop of constant extent n >= 8 is unrolled
// by 8, the iterations left over in a loop of their own:
//   END(body, ..., r)
//   -> END(GROUP(END(GROUP(body[r := 8*r8 + u] for u < 8) "unrolled", r8),
//                END(body[r := 8*(n/8) + rt], rt)), ...)          (rt: the n % 8 left over)
// The iterations still run in their order, so results and errors are the loop's (nothing to
// prove). Short: a STORE or a GROUP of at most 8 STOREs (a blocked fold), not one that only fills
// registers with constants (nothing to save), whose body C would take at most 24 lines (its
// stores and the values it would name: those it uses twice), which keeps tcc's compile time and
// the source readable. The "unrolled" mark keeps the pass from unrolling the copies again.
#include <map>
#include <unordered_map>

#include "opt/loop_shapes.h"
#include "opt/opt.h"
#include "uop/args.h"
#include "uop/pattern.h"
#include "uop/verify.h"

namespace ow::opt {

namespace {

constexpr int kBy = 8;
constexpr int kMaxLines = 24;

// A register set to a constant (an interchange's identities).
bool fills_register(UOp st) { return st->src[0]->src[0]->op == Ops::DEFINE_REG && st->src[1]->op == Ops::CONST; }

// The lines of C the body of a loop over r would take: its stores and its values that depend on r
// and are used twice (named; the others are inlined into their users).
int lines(const std::vector<UOp>& stores, UOp r) {
  std::unordered_map<const UOpNode*, int> uses;
  std::vector<UOp> todo(stores.begin(), stores.end());
  int named = 0;
  while (!todo.empty()) {
    UOp u = todo.back();
    todo.pop_back();
    for (UOp s : u->src) {
      if (!has_free_range(s, r) || s->op == Ops::RANGE) continue;
      int n = ++uses[s.get()];
      if (n == 1) todo.push_back(s);
      if (n == 2 && s->op != Ops::INDEX) ++named;
    }
  }
  return static_cast<int>(stores.size()) + named;
}

// Is `end`'s innermost loop one to unroll?
bool short_loop(UOp end) {
  UOp body = end->src[0], r = end->src.back();
  const int64_t* n = const_extent(r);
  if (!n || *n < kBy) return false;
  std::vector<UOp> stores;
  if (body->op == Ops::STORE) stores = {body};
  else if (body->op == Ops::GROUP && body->arg.none() && body->src.size() <= 8) stores = body->src;
  if (stores.empty() || std::any_of(stores.begin(), stores.end(), [](UOp s) { return s->op != Ops::STORE; })) return false;
  if (std::all_of(stores.begin(), stores.end(), fills_register)) return false;
  return lines(stores, r) <= kMaxLines;
}

UOp unrolled(UOp end) {
  UOp body = end->src[0], r = end->src.back(), r8 = block_range(r, kBy);
  int64_t n = *const_extent(r), full = n / kBy * kBy;
  std::vector<UOp> copies;
  for (int u = 0; u < kBy; ++u) copies.push_back(substitute_range(body, r, u ? r8 * kBy + u : r8 * kBy));
  std::vector<UOp> parts{UOp::make(Ops::GROUP, dtypes::void_, std::move(copies), unrolled_arg()).end({r8})};
  if (full < n) {
    const ArgTuple& arg = *r->arg.tuple();
    std::vector<int64_t> sub;
    for (size_t k = 1; k + 1 < arg.size(); ++k) sub.push_back(arg[k].as<int64_t>());
    sub.push_back(-1);  // the iterations left over (a block size is at least 2)
    UOp rt = UOp::range(n - full, arg[0].as<int64_t>(), range_axis(r), sub);
    parts.push_back(substitute_range(body, r, rt + full).end({rt}));
  }
  UOp loop = parts.size() == 1 ? parts[0] : UOp::make(Ops::GROUP, dtypes::void_, std::move(parts));
  std::vector<UOp> outer(end->src.begin() + 1, end->src.end() - 1);
  return outer.empty() ? loop : loop.end(outer);
}

// Statement s with every short innermost loop in it unrolled; walked without recursion
// (statements nest ENDs and GROUPs; values are not walked).
UOp unroll_statement(UOp s) {
  std::unordered_map<const UOpNode*, UOp> done;
  std::vector<std::pair<UOp, bool>> todo{{s, false}};
  auto children = [](UOp u) { return u->op == Ops::END ? std::vector<UOp>{u->src[0]} : u->op == Ops::GROUP ? u->src : std::vector<UOp>{}; };
  while (!todo.empty()) {
    auto [u, ready] = todo.back();
    todo.pop_back();
    if (done.count(u.get())) continue;
    if (!ready) {
      todo.push_back({u, true});
      for (UOp c : children(u)) todo.push_back({c, false});
      continue;
    }
    UOp v = u;
    if (u->op == Ops::GROUP) {
      std::vector<UOp> src;
      for (UOp c : u->src) src.push_back(done.at(c.get()));
      v = u.replace_src(std::move(src));
    } else if (u->op == Ops::END) {
      std::vector<UOp> src = u->src;
      src[0] = done.at(u->src[0].get());
      v = u.replace_src(std::move(src));
      if (v->src[0] == u->src[0] && short_loop(v)) v = unrolled(v);
    }
    done[u.get()] = v;
  }
  return done.at(s.get());
}

UOp unroll_loops(const Match& m) { return with_statements(m.node, unroll_statement); }

}  // namespace

const PatternMatcher& unroll_rules() {
  static const PatternMatcher pm({{"a short innermost loop of 8 or more iterations is unrolled by 8 (tcc)", Pat::ops({Ops::KERNEL}), unroll_loops}});
  return pm;
}

}  // namespace ow::opt
