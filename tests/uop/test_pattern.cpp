// Pattern matching (Pat), rule tables (PatternMatcher), graph_rewrite and substitute.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "uop/error.h"
#include "uop/pattern.h"
#include "uop/uop.h"

using namespace ow;

namespace {

using Bound = std::vector<std::pair<std::string, UOp>>;

UOp idx(int64_t v) { return UOp::index(v); }

UOp lookup(const Bound& b, const std::string& name) {
  for (auto& [n, u] : b)
    if (n == name) return u;
  return UOp();
}

// Rules used by several tests. Constants are index-typed.
UOp neg_const(const Match& m) { return idx(-static_cast<int64_t>(m["c"].const_value())); }

Rule rule_neg_const() { return {"neg const", Pat::op(Ops::NEG, {Pat::cvar("c")}), neg_const}; }

Rule rule_add_consts() {
  return {"add consts", Pat::op(Ops::ADD, {Pat::cvar("a"), Pat::cvar("b")}), [](const Match& m) {
            return idx(static_cast<int64_t>(m["a"].const_value() + m["b"].const_value()));
          }};
}

struct Trace {
  std::vector<std::string> rules;
  std::vector<std::pair<UOp, UOp>> steps;
};

RewriteOptions tracing(Trace& t, bool bottom_up = false) {
  RewriteOptions o;
  o.bottom_up = bottom_up;
  o.on_fire = [&t](const Rule& r, UOp before, UOp after) {
    t.rules.push_back(r.name);
    t.steps.emplace_back(before, after);
  };
  return o;
}

}  // namespace

// ---------------------------------------------------------------- Pat

TEST_CASE("Pat: named captures bind the matched nodes", "[pattern][pat]") {
  UOp a = UOp::range(7, 0);
  UOp e = a + 3;
  Pat p = Pat::op(Ops::ADD, {Pat::var("x"), Pat::cvar("c")}, "root");
  Bound b;
  REQUIRE(p.match(e, b));
  CHECK(b.size() == 3);
  CHECK(lookup(b, "root") == e);
  CHECK(lookup(b, "x") == a);
  CHECK(lookup(b, "c") == idx(3));
}

TEST_CASE("Pat: a failed match does not match a different op", "[pattern][pat]") {
  UOp a = UOp::range(7, 0);
  Pat p = Pat::op(Ops::ADD, {Pat::var("x"), Pat::cvar("c")});
  Bound b;
  CHECK_FALSE(p.match(a * 3, b));
  CHECK_FALSE(p.match(a + a, b));  // second source is not a CONST
}

TEST_CASE("Pat: a name used twice must match the same node", "[pattern][pat]") {
  UOp a = UOp::range(7, 0), c = UOp::range(5, 1);
  Pat p = Pat::op(Ops::ADD, {Pat::var("x"), Pat::var("x")});
  Bound b1;
  REQUIRE(p.match(a + a, b1));
  CHECK(b1.size() == 1);
  CHECK(lookup(b1, "x") == a);
  Bound b2;
  CHECK_FALSE(p.match(a + c, b2));
}

TEST_CASE("Pat: a name used twice across levels", "[pattern][pat]") {
  UOp a = UOp::range(7, 0), c = UOp::range(5, 1);
  // (x * y) + x
  Pat p = Pat::op(Ops::ADD, {Pat::op(Ops::MUL, {Pat::var("x"), Pat::var("y")}), Pat::var("x")});
  Bound b1;
  REQUIRE(p.match(a * c + a, b1));
  CHECK(lookup(b1, "x") == a);
  CHECK(lookup(b1, "y") == c);
  Bound b3;
  CHECK_FALSE(p.match(a * c + idx(1), b3));
}

// BUG (src/uop/pattern.cpp, Pat::match): a commutative inner op commits to the first source
// order that matches locally; a later conflict with a repeated name does not backtrack into the
// swapped order, so (x*y)+x misses a*c + c (x=c, y=a). tinygrad's UPat tries every combination.
TEST_CASE("Pat: repeated names backtrack into a nested commutative op", "[pattern][pat]") {
  UOp a = UOp::range(7, 0), c = UOp::range(5, 1);
  Pat p = Pat::op(Ops::ADD, {Pat::op(Ops::MUL, {Pat::var("x"), Pat::var("y")}), Pat::var("x")});
  Bound b2;
  REQUIRE(p.match(a * c + c, b2));  // MUL is commutative: x=c, y=a
  CHECK(lookup(b2, "x") == c);
  CHECK(lookup(b2, "y") == a);
}

TEST_CASE("Pat: commutative ops match either source order", "[pattern][pat]") {
  UOp a = UOp::range(7, 0);
  Pat p = Pat::var("x") + Pat::cvar("c");
  Bound b;
  REQUIRE(p.match(3 + a, b));  // ADD(3, a)
  CHECK(lookup(b, "x") == a);
  CHECK(lookup(b, "c") == idx(3));
  CHECK(b.size() == 2);  // captures of the failed first order were undone
}

// Same root cause as above, seen from a rule: PatternMatcher::rewrite calls the rule only with
// the first binding; when the function declines it, the swapped binding is never offered.
TEST_CASE("PatternMatcher: a declined binding of a commutative op tries the swapped one", "[pattern][pm]") {
  UOp e = UOp::make(Ops::ADD, dtypes::index, {idx(2), idx(5)});  // first binding: x=2, c=5
  PatternMatcher pm({{"x + 2", Pat::var("x") + Pat::cvar("c"), [](const Match& m) {
                        return m["c"] == idx(2) ? m["x"] : UOp();
                      }}});
  auto r = pm.rewrite(e);
  REQUIRE(r);
  CHECK(r->result == idx(5));
}

TEST_CASE("Pat: non-commutative ops match only in order", "[pattern][pat]") {
  UOp a = UOp::range(7, 0);
  Pat p = Pat::var("x") - Pat::cvar("c");
  Bound b1;
  CHECK(p.match(a - 3, b1));
  Bound b2;
  CHECK_FALSE(p.match(3 - a, b2));
}

TEST_CASE("Pat: any_len matches a prefix of the sources", "[pattern][pat]") {
  UOp a = UOp::range(7, 0), c = UOp::range(5, 1), d = UOp::range(3, 2);
  UOp s = UOp::sink({a, c, d});
  Pat exact = Pat::op(Ops::SINK, {Pat::var("first")});
  Pat prefix = exact.any_len();
  Bound b;
  CHECK_FALSE(exact.match(s, b));
  Bound b2;
  REQUIRE(prefix.match(s, b2));
  CHECK(lookup(b2, "first") == a);
  Bound b3;
  CHECK_FALSE(prefix.match(UOp::sink({}), b3));  // fewer sources than the prefix
  Bound b4;
  CHECK(exact.match(UOp::sink({c}), b4));
}

TEST_CASE("Pat: cnst matches a CONST of that value in any dtype", "[pattern][pat]") {
  Pat zero = Pat::cnst(0);
  Bound b;
  CHECK(zero.match(idx(0), b));
  CHECK(zero.match(UOp::int_const(dtypes::int32, 0), b));
  CHECK(zero.match(UOp::cnst(dtypes::float32, 0.0), b));
  CHECK(zero.match(UOp::cnst(dtypes::bool_, 0), b));
  CHECK_FALSE(zero.match(idx(1), b));
  CHECK_FALSE(zero.match(UOp::range(1, 0), b));  // value 0 but not a CONST
  CHECK(Pat::cnst(1).match(UOp::cnst(dtypes::bool_, 1), b));
  CHECK(b.empty());  // unnamed patterns capture nothing
}

TEST_CASE("Pat: ops matches any of several ops with any sources", "[pattern][pat]") {
  UOp a = UOp::range(7, 0);
  Pat p = Pat::ops({Ops::ADD, Ops::MUL}, "n");
  Bound b1, b2, b3;
  CHECK(p.match(a + 1, b1));
  CHECK(lookup(b1, "n") == a + 1);
  CHECK(p.match(a * a, b2));
  CHECK_FALSE(p.match(a - 1, b3));
  std::vector<Ops> want{Ops::ADD, Ops::MUL};
  CHECK(p.root_ops() == want);
  CHECK(Pat::any().root_ops().empty());
}

TEST_CASE("Pat: where_dtype restricts the dtype", "[pattern][pat]") {
  Pat p = Pat::cvar("c").where_dtype([](DType d) { return d.is_float(); });
  Bound b;
  CHECK(p.match(UOp::cnst(dtypes::float32, 1.0), b));
  Bound b2;
  CHECK_FALSE(p.match(idx(1), b2));
}

// ---------------------------------------------------------------- PatternMatcher

TEST_CASE("PatternMatcher: the first matching rule in table order fires", "[pattern][pm]") {
  UOp a = UOp::range(7, 0);
  UOp x = idx(100), y = idx(200);
  PatternMatcher first({{"to x", Pat::ops({Ops::ADD}), [x](const Match&) { return x; }}});
  PatternMatcher second({{"to y", Pat::ops({Ops::ADD}), [y](const Match&) { return y; }}});
  PatternMatcher both = first + second, reversed = second + first;  // Fired::rule points into these
  auto r1 = both.rewrite(a + 1);
  REQUIRE(r1);
  CHECK(r1->result == x);
  CHECK(r1->rule->name == "to x");
  auto r2 = reversed.rewrite(a + 1);
  REQUIRE(r2);
  CHECK(r2->result == y);
  CHECK(r2->rule->name == "to y");
  REQUIRE(both.rules().size() == 2);
  CHECK(both.rules()[0].name == "to x");
  CHECK(both.rules()[1].name == "to y");
}

TEST_CASE("PatternMatcher: a rule returning null or the same node does not fire", "[pattern][pm]") {
  UOp a = UOp::range(7, 0);
  UOp z = idx(42);
  PatternMatcher pm({
      {"declines", Pat::any(), [](const Match&) { return UOp(); }},
      {"identity", Pat::any(), [](const Match& m) { return m.node; }},
      {"fires", Pat::ops({Ops::ADD}), [z](const Match&) { return z; }},
  });
  auto r = pm.rewrite(a + 1);
  REQUIRE(r);
  CHECK(r->rule->name == "fires");
  CHECK(r->result == z);
  CHECK_FALSE(pm.rewrite(a * 2));  // only the declining rules match
}

TEST_CASE("PatternMatcher: rules see the rewrite context", "[pattern][pm]") {
  int calls = 0;
  PatternMatcher pm({{"count", Pat::ops({Ops::ADD}), [](const Match& m) {
                        ++m.context<int>();
                        return UOp();
                      }}});
  UOp a = UOp::range(7, 0);
  CHECK_FALSE(pm.rewrite(a + 1, &calls));
  CHECK(calls == 1);
}

// ---------------------------------------------------------------- graph_rewrite

TEST_CASE("graph_rewrite: sources are rewritten before their users by default", "[pattern][rewrite]") {
  // NEG(NEG(5)): by default the inner NEG folds first, then the outer one.
  UOp five = idx(5);
  UOp e = five.neg().neg();
  PatternMatcher pm({{"double neg", Pat::op(Ops::NEG, {Pat::op(Ops::NEG, {Pat::var("x")})}),
                      [](const Match&) { return idx(100); }},
                     rule_neg_const()});
  Trace t;
  UOp out = graph_rewrite(e, pm, tracing(t));
  CHECK(out == five);
  CHECK(t.rules == std::vector<std::string>{"neg const", "neg const"});
  REQUIRE(t.steps.size() == 2);
  CHECK(t.steps[0] == std::make_pair(five.neg(), idx(-5)));
  CHECK(t.steps[1] == std::make_pair(idx(-5).neg(), five));
}

TEST_CASE("graph_rewrite: bottom_up tries rules on a node before its sources", "[pattern][rewrite]") {
  // Same rules and graph as above; the outer NEG(NEG(x)) now matches first.
  UOp five = idx(5);
  UOp e = five.neg().neg();
  PatternMatcher pm({{"double neg", Pat::op(Ops::NEG, {Pat::op(Ops::NEG, {Pat::var("x")})}),
                      [](const Match&) { return idx(100); }},
                     rule_neg_const()});
  Trace t;
  UOp out = graph_rewrite(e, pm, tracing(t, true));
  CHECK(out == idx(100));
  CHECK(t.rules == std::vector<std::string>{"double neg"});
}

TEST_CASE("graph_rewrite: the on_fire trace order follows the traversal", "[pattern][rewrite]") {
  // (NEG(1) + NEG(2)): both NEGs fold (left first), then the ADD of two consts folds.
  UOp e = idx(1).neg() + idx(2).neg();
  PatternMatcher pm({rule_neg_const(), rule_add_consts()});
  Trace t;
  UOp out = graph_rewrite(e, pm, tracing(t));
  CHECK(out == idx(-3));
  REQUIRE(t.steps.size() == 3);
  CHECK(t.steps[0].first == idx(1).neg());
  CHECK(t.steps[1].first == idx(2).neg());
  CHECK(t.steps[2].first == idx(-1) + idx(-2));
  CHECK(t.rules == std::vector<std::string>{"neg const", "neg const", "add consts"});
}

TEST_CASE("graph_rewrite: a rule's output is rewritten again to a fixed point", "[pattern][rewrite]") {
  // "count down": a positive CONST becomes CONST-1, until 0.
  PatternMatcher pm({{"count down", Pat::cvar("c"), [](const Match& m) {
                        int64_t v = static_cast<int64_t>(m["c"].const_value());
                        return v > 0 ? idx(v - 1) : UOp();
                      }}});
  Trace t;
  UOp out = graph_rewrite(idx(5), pm, tracing(t));
  CHECK(out == idx(0));
  CHECK(t.rules.size() == 5);
  CHECK(t.steps.back() == std::make_pair(idx(1), idx(0)));
}

TEST_CASE("graph_rewrite: new nodes built by a rule are rewritten too", "[pattern][rewrite]") {
  // x + 0 -> x exposes NEG(CONST) that then folds.
  UOp e = (idx(4).neg() + 0) + 0;
  PatternMatcher pm({{"x+0", Pat::var("x") + Pat::cnst(0), [](const Match& m) { return m["x"]; }},
                     rule_neg_const()});
  CHECK(graph_rewrite(e, pm) == idx(-4));
}

TEST_CASE("graph_rewrite: a graph where nothing matches is returned unchanged", "[pattern][rewrite]") {
  UOp a = UOp::range(7, 0);
  UOp e = (a * 2).maximum(1);
  PatternMatcher pm({rule_neg_const()});
  Trace t;
  CHECK(graph_rewrite(e, pm, tracing(t)) == e);
  CHECK(t.rules.empty());
}

TEST_CASE("graph_rewrite: rules that loop hit the step limit with a useful error", "[pattern][rewrite]") {
  UOp a = UOp::range(7, 0);
  PatternMatcher pm({{"x+y -> y+x", Pat::op(Ops::ADD, {Pat::var("x"), Pat::var("y")}),
                      [](const Match& m) { return UOp::make(Ops::ADD, m.node->dtype, {m["y"], m["x"]}); }}});
  RewriteOptions o;
  o.name = "swap-test";
  o.max_steps = 50;
  int fired = 0;
  o.on_fire = [&fired](const Rule&, UOp, UOp) { ++fired; };
  CHECK_THROWS_AS(graph_rewrite(a + 0, pm, o), Error);
  CHECK_THROWS_WITH(graph_rewrite(a + 0, pm, o),
                    Catch::Contains("swap-test") && Catch::Contains("x+y -> y+x") && Catch::Contains("50") &&
                        Catch::Contains("the rules loop, or the graph (4 nodes) needs more firings than that"));  // a + 0: ADD, RANGE a, its extent 7, 0
  CHECK(fired == 100);  // 50 firings per attempt, two attempts
}

TEST_CASE("graph_rewrite: the step limit also applies bottom-up", "[pattern][rewrite]") {
  UOp a = UOp::range(7, 0);
  PatternMatcher pm({{"flip", Pat::op(Ops::ADD, {Pat::var("x"), Pat::var("y")}),
                      [](const Match& m) { return UOp::make(Ops::ADD, m.node->dtype, {m["y"], m["x"]}); }}});
  RewriteOptions o;
  o.name = "bu-loop";
  o.bottom_up = true;
  o.max_steps = 10;
  CHECK_THROWS_WITH(graph_rewrite(a + 0, pm, o), Catch::Contains("bu-loop") && Catch::Contains("flip"));
}

TEST_CASE("graph_rewrite: a 100000-node chain is rewritten without stack overflow", "[pattern][rewrite]") {
  const int n = 100000;
  UOp x = idx(0);
  for (int i = 0; i < n; ++i) x = UOp::make(Ops::ADD, dtypes::index, {x, idx(1)});
  PatternMatcher pm({rule_add_consts()});
  CHECK(graph_rewrite(x, pm) == idx(n));
  RewriteOptions bu;
  bu.bottom_up = true;
  CHECK(graph_rewrite(x, pm, bu) == idx(n));
}

// ---------------------------------------------------------------- substitute

TEST_CASE("substitute replaces every occurrence of a node", "[pattern][substitute]") {
  UOp a = UOp::range(7, 0), b = UOp::range(5, 1), c = UOp::variable("c", 0, 3);
  UOp e = (a + b) * a;
  CHECK(substitute(e, {{a, c}}) == (c + b) * c);
  CHECK(substitute(e, {{a, c}, {b, idx(2)}}) == (c + 2) * c);
}

TEST_CASE("substitute replaces an inner subexpression and the root", "[pattern][substitute]") {
  UOp a = UOp::range(7, 0), b = UOp::range(5, 1);
  UOp e = (a + b) * a;
  CHECK(substitute(e, {{a + b, idx(3)}}) == idx(3) * a);
  CHECK(substitute(e, {{e, b}}) == b);
}

TEST_CASE("substitute with no matching key returns the same node", "[pattern][substitute]") {
  UOp a = UOp::range(7, 0), b = UOp::range(5, 1);
  UOp e = (a + b) * a;
  CHECK(substitute(e, {{idx(99), b}}) == e);
  CHECK(substitute(e, {}) == e);
}

TEST_CASE("substitute does not rewrite inside a replacement", "[pattern][substitute]") {
  UOp a = UOp::range(7, 0), b = UOp::range(5, 1);
  // a -> a+b must not recurse into the new a
  CHECK(substitute(a * 2, {{a, a + b}}) == (a + b) * 2);
}

// substitute_range (the copies of a loop body per value of its range, opt::columns): only where
// the range is free; a REDUCE that binds it keeps it; the range itself becomes the value.
TEST_CASE("substitute_range replaces a range where it is free, not where a REDUCE binds it", "[pattern][substitute]") {
  UOp j = UOp::range(8, 1), k = UOp::range(4, 2, AxisType::REDUCE), i = UOp::range(3, 0);
  UOp v = i * 8 + 3;
  UOp sum_over_j = (j * 2).reduce({j}, Ops::ADD);  // j bound: unchanged
  UOp e = (j * 5 + k).reduce({k}, Ops::ADD) + sum_over_j + i;
  CHECK(substitute_range(e, j, v) == (v * 5 + k).reduce({k}, Ops::ADD) + sum_over_j + i);
  CHECK(substitute_range(j, j, v) == v);
  CHECK(substitute_range(i * 2, j, v) == i * 2);  // j not free: the same node
  // Equal to substitute where every occurrence of j is free.
  UOp f = (j + i) * (j * 7);
  CHECK(substitute_range(f, j, v) == substitute(f, {{j, v}}));
}

TEST_CASE("substitute_range also replaces nodes that depend on the range, without visiting below them", "[pattern][substitute]") {
  UOp j = UOp::range(8, 1), k = UOp::range(4, 2, AxisType::REDUCE), c = UOp::variable("c", 0, 9);
  UOp red = (j * 5 + k).reduce({k}, Ops::ADD), e = red * 2 + j;
  CHECK(substitute_range(e, j, c * 3, {{red, c}}) == c * 2 + c * 3);
  CHECK(substitute_range(red, j, c, {{red, k}}) == k);
}
