// Division and modulo in index math: the rules that split, join and (under a gate) drop them.
// Every rewrite is checked against a brute-force evaluation with C semantics (truncation toward
// zero) over every binding of its variables, negative ones included: a rewrite that is not exact
// for some binding must not fire.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "uop/pattern.h"
#include "uop/symbolic.h"
#include "uop/uop.h"

using namespace ow;

namespace {

using Env = std::map<const UOpNode*, int64_t>;

// An evaluator written apart from the simplifier: C's operators on int64, int32 wrapped.
int64_t eval(UOp u, const Env& env) {
  if (auto it = env.find(u.get()); it != env.end()) return it->second;
  auto s = [&](size_t i) { return eval(u->src[i], env); };
  int64_t v = 0;
  switch (u->op) {
    case Ops::CONST: v = u->arg.is<bool>() ? u->arg.as<bool>() : u->arg.as<int64_t>(); break;
    case Ops::ADD: v = s(0) + s(1); break;
    case Ops::SUB: v = s(0) - s(1); break;
    case Ops::MUL: v = s(0) * s(1); break;
    case Ops::NEG: v = -s(0); break;
    case Ops::IDIV: v = s(0) / s(1); break;
    case Ops::MOD: v = s(0) % s(1); break;
    case Ops::MAX: v = std::max(s(0), s(1)); break;
    case Ops::CMPLT: v = s(0) < s(1); break;
    case Ops::CMPNE: v = s(0) != s(1); break;
    case Ops::AND: v = s(0) && s(1); break;
    case Ops::WHERE: v = s(0) ? s(1) : s(2); break;
    default: FAIL("eval: unexpected op " << op_name(u->op)); return 0;
  }
  return u->dtype == dtypes::int32 ? static_cast<int32_t>(v) : v;
}

// The leaves of e: ranges and variables, each with its values.
struct Leaf {
  UOp u;
  int64_t lo, hi;
};

std::vector<Leaf> leaves(std::vector<UOp> roots) {
  std::vector<Leaf> out;
  for (UOp r : roots)
    for (UOp u : toposort(r))
      if ((u->op == Ops::RANGE || u->op == Ops::DEFINE_VAR) && std::none_of(out.begin(), out.end(), [&](const Leaf& l) { return l.u == u; }))
        out.push_back({u, u.vmin(), u.vmax()});
  return out;
}

// Calls f with every binding of the leaves.
void each_binding(const std::vector<Leaf>& ls, const std::function<void(const Env&)>& f) {
  Env env;
  std::function<void(size_t)> go = [&](size_t i) {
    if (i == ls.size()) return f(env);
    for (int64_t v = ls[i].lo; v <= ls[i].hi; ++v) {
      env[ls[i].u.get()] = v;
      go(i + 1);
    }
  };
  go(0);
}

// Is `got` equal to `want` for every binding where `cond` holds (null: always)?
bool agrees(UOp want, UOp got, UOp cond = UOp()) {
  bool ok = true;
  std::vector<UOp> roots{want};
  if (cond) roots.push_back(cond);
  each_binding(leaves(roots), [&](const Env& env) {
    if (ok && (!cond || eval(cond, env)) && eval(want, env) != eval(got, env)) ok = false;
  });
  return ok;
}

std::vector<std::string> fired_by(UOp e) {
  std::vector<std::string> fired;
  RewriteOptions o;
  o.on_fire = [&](const Rule& r, UOp, UOp) { fired.push_back(r.name); };
  graph_rewrite(e, symbolic_rules(), o);
  return fired;
}

bool fires(UOp e, const std::string& rule) {
  auto f = fired_by(e);
  return std::find(f.begin(), f.end(), rule) != f.end();
}

}  // namespace

TEST_CASE("split by a common factor: (144p + 12k + 4l) // 1296 is p // 9", "[symbolic][divmod]") {
  // vmap_convs' k1: a 72-long reduction over 8 channels x 9 taps, 144 elements apart
  UOp p = UOp::range(72, 0), k = UOp::range(12, 1), l = UOp::range(3, 2);
  UOp x = p * 144 + k * 12 + l * 4;
  UOp d = x.idiv(1296), m = x.mod(1296);
  CHECK(simplify(d) == p.idiv(9));
  CHECK(simplify(m) == simplify(p.mod(9) * 144 + k * 12 + l * 4));
  CHECK(fires(d, "split a division by its multiples"));
  CHECK(agrees(d, simplify(d)));
  CHECK(agrees(m, simplify(m)));
}

TEST_CASE("split by a common factor does not fire where the remainder can carry or x can be negative", "[symbolic][divmod]") {
  UOp p = UOp::range(72, 0), k = UOp::range(13, 1);  // 12k reaches 144: carries into p
  UOp carry = (p * 144 + k * 12).idiv(1296);
  CHECK(simplify(carry) == simplify(p * 12 + k).idiv(108));  // only the common 12 is split off
  UOp v = UOp::variable("v", -5, 5);  // 144v + 12k < 0 for v < 0: truncation is not floor
  UOp neg = (v * 144 + k.mod(12) * 12).idiv(1296);
  CHECK(agrees(neg, simplify(neg)));
  CHECK_FALSE(fires(neg, "split a division by its multiples"));
  for (UOp e : {carry, neg, (v * 144 + k.mod(12) * 12).mod(1296)}) CHECK(agrees(e, simplify(e)));
}

TEST_CASE("join a quotient and its remainder: (x // c)*c + x % c is x, negative x included", "[symbolic][divmod]") {
  UOp a = UOp::range(10, 0), v = UOp::variable("v", -9, 9);
  UOp x = a * 3 + v - 4;  // in [-13, 32]
  UOp e = x.idiv(4) * 4 + x.mod(4), scaled = x.idiv(4) * 12 + x.mod(4) * 3;
  CHECK(fires(e, "join a quotient and its remainder"));
  CHECK(simplify(e) == simplify(x));
  CHECK(simplify(scaled) == simplify(x * 3));
  CHECK(agrees(e, simplify(e)));
  CHECK(agrees(scaled, simplify(scaled)));
  // a wrong multiple is left alone
  UOp off = x.idiv(4) * 5 + x.mod(4);
  CHECK(simplify(off)->op == Ops::ADD);
  CHECK(agrees(off, simplify(off)));
}

TEST_CASE("join ((x // c) % d)*c + x % c into x % (c*d) only for x >= 0", "[symbolic][divmod]") {
  UOp a = UOp::range(50, 0);
  UOp e = a.idiv(4).mod(3) * 4 + a.mod(4);
  CHECK(simplify(e) == a.mod(12));
  CHECK(agrees(e, simplify(e)));
  UOp v = UOp::variable("v", -30, 30);
  UOp n = v.idiv(4).mod(3) * 4 + v.mod(4);
  CHECK(simplify(n)->op == Ops::ADD);
  CHECK(agrees(n, simplify(n)));
}

TEST_CASE("simplify_given: a PAD's gate drops the div/mod of the RESHAPE behind it", "[symbolic][divmod][gate]") {
  // vmap_convs' k0, tap 1: read only where 0 < p < 2, so p is 1 and the index is 14k + 2l
  UOp p = UOp::range(9, 0), k = UOp::range(14, 1), l = UOp::range(7, 2);
  UOp x = k * 14 + l * 2 + p * 196 - 196;
  UOp idx = x.idiv(196) * 256 + x.mod(14) + x.idiv(14).mod(14) * 16;
  UOp gate = UOp::make(Ops::AND, dtypes::bool_, {UOp::index(0).lt(p), p.lt(2)});
  UOp got = simplify_given(idx, gate);
  CHECK(got == simplify(k * 16 + l * 2));
  CHECK(agrees(idx, got, gate));
  CHECK_FALSE(agrees(idx, got));  // where the gate is false the value differs: only the gate makes it exact
}

TEST_CASE("simplify_given narrows compound nodes, variables and != at an end of the range", "[symbolic][divmod][gate]") {
  UOp p = UOp::range(72, 0), v = UOp::variable("v", -8, 8);
  UOp t = p.mod(9);
  UOp e = (t * 144 + p.idiv(9) * 144).idiv(1152);  // under t == 0: (p//9)*144 < 1152
  UOp g = t.lt(1);
  CHECK(simplify_given(e, g) == UOp::index(0));
  CHECK(agrees(e, simplify_given(e, g), g));
  UOp ev = (v + 8).idiv(8) + v.mod(8);  // under v != -8 and v < 0: (v+8)//8 is 0
  UOp gv = UOp::make(Ops::AND, dtypes::bool_, {v.ne(-8), v.lt(0)});
  UOp got = simplify_given(ev, gv);
  CHECK(agrees(ev, got, gv));
  std::vector<UOp> nodes = toposort(got);
  CHECK(std::none_of(nodes.begin(), nodes.end(), [](UOp u) { return u->op == Ops::IDIV; }));
  // a condition that is never true, or not index math, leaves the expression as simplify does
  UOp never = UOp::make(Ops::AND, dtypes::bool_, {v.lt(-2), UOp::index(2).lt(v)});
  CHECK(simplify_given(ev, never) == simplify(ev));
}

TEST_CASE("random affine div/mod expressions simplify exactly over every binding", "[symbolic][divmod][random]") {
  std::mt19937 rng(18);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  std::vector<UOp> atoms{UOp::range(6, 0), UOp::range(5, 1), UOp::variable("v", -7, 7), UOp::variable("w", -2, 9)};
  const int64_t divisors[] = {2, 3, 4, 6, 8, 9, 12, 16, 36, 196};
  std::function<UOp(int)> affine = [&](int depth) {
    UOp e = UOp::index(pick(-20, 20));
    for (int i = 0, n = static_cast<int>(pick(1, 3)); i < n; ++i) {
      UOp a = depth > 0 && pick(0, 2) == 0 ? affine(depth - 1) : atoms[pick(0, 3)];
      if (depth > 0 && pick(0, 1)) a = pick(0, 1) ? a.idiv(divisors[pick(0, 9)]) : a.mod(divisors[pick(0, 9)]);
      int64_t k = pick(0, 1) ? divisors[pick(0, 9)] * pick(-2, 2) : pick(-5, 5);
      e = e + a * k;
    }
    return e;
  };
  int checked = 0;
  for (int i = 0; i < 400; ++i) {
    UOp x = affine(2);
    int64_t c = divisors[pick(0, 9)];
    UOp e = pick(0, 3) == 0 ? x.idiv(c) * c + x.mod(c) : pick(0, 1) ? x.idiv(c) : x.mod(c);
    INFO("expression " << render_expr(e));
    CHECK(agrees(e, simplify(e)));
    UOp a = atoms[pick(0, 3)];
    UOp gate = UOp::make(Ops::AND, dtypes::bool_, {UOp::index(pick(-8, 3)).lt(a), a.lt(pick(-3, 9))});
    INFO("under " << render_expr(gate));
    CHECK(agrees(e, simplify_given(e, gate), gate));
    ++checked;
  }
  CHECK(checked == 400);
}
