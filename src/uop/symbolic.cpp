#include "uop/symbolic.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

#include "uop/shape.h"

namespace ow {

namespace {

using i128 = __int128;
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// The division rules below reason about values as integers that do not wrap, which unsigned
// arithmetic does all the time (x - 1 is x + 2^32 - 1): signed integers only.
// int8 and int16 wrap within the ranges of ordinary index arithmetic, so they are left out too.
bool divisible_int(DType d) { return d.is_signed_int() && d.itemsize() >= 4; }

std::pair<int64_t, int64_t> limits(DType d) { return d.ptr ? std::pair{kMin, kMax} : int_limits(d); }

// Bounds are computed in 128 bits; an interval the dtype cannot hold may wrap, so it is unknown.
std::pair<int64_t, int64_t> fit(DType d, i128 lo, i128 hi) {
  auto [dlo, dhi] = limits(d);
  if (lo < dlo || hi > dhi || lo > hi) return {dlo, dhi};
  return {static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
}

i128 cdiv(i128 a, i128 b) { return a / b; }  // C++ division truncates toward zero, like tinygrad's cdiv

std::pair<int64_t, int64_t> binary_bounds(const UOpNode& n) {
  i128 a0 = n.src[0]->lo, a1 = n.src[0]->hi, b0 = n.src[1]->lo, b1 = n.src[1]->hi;
  auto [dlo, dhi] = limits(n.dtype);
  switch (n.op) {
    case Ops::ADD: return fit(n.dtype, a0 + b0, a1 + b1);
    case Ops::SUB: return fit(n.dtype, a0 - b1, a1 - b0);
    case Ops::MUL: {
      // Each corner fits in 128 bits since the inputs are 64-bit.
      i128 c[4] = {a0 * b0, a0 * b1, a1 * b0, a1 * b1};
      return fit(n.dtype, *std::min_element(c, c + 4), *std::max_element(c, c + 4));
    }
    case Ops::MAX: return fit(n.dtype, std::max(a0, b0), std::max(a1, b1));
    case Ops::MOD:
      if (b0 > 0) return a0 >= 0 ? fit(n.dtype, 0, b1 - 1) : a1 <= 0 ? fit(n.dtype, -(b1 - 1), 0) : fit(n.dtype, -(b1 - 1), b1 - 1);
      if (b1 < 0) return a0 >= 0 ? fit(n.dtype, 0, -b0 - 1) : a1 <= 0 ? fit(n.dtype, -(-b0 - 1), 0) : fit(n.dtype, -(-b0 - 1), -b0 - 1);
      return {dlo, dhi};
    case Ops::IDIV:
      if ((b0 > 0 && b1 > 0) || (b0 < 0 && b1 < 0)) {
        i128 c[4] = {cdiv(a0, b0), cdiv(a0, b1), cdiv(a1, b0), cdiv(a1, b1)};
        return fit(n.dtype, *std::min_element(c, c + 4), *std::max_element(c, c + 4));
      }
      return {dlo, dhi};
    case Ops::CMPLT: return {a1 < b0, a0 < b1};
    case Ops::CMPNE: return {(a1 < b0) || (b1 < a0), !(a0 == a1 && a1 == b0 && b0 == b1)};
    case Ops::CMPEQ: return {a0 == a1 && a1 == b0 && b0 == b1, !((a1 < b0) || (b1 < a0))};
    case Ops::AND: if (n.dtype.is_bool()) return {a0 && b0, a1 && b1}; break;
    case Ops::OR: if (n.dtype.is_bool()) return {a0 || b0, a1 || b1}; break;
    default: break;
  }
  return {dlo, dhi};
}

}  // namespace

// An unsigned CONST's value is its arg modulo 2^bits (a uint32 arg may be written as -1).
int64_t canonical(DType d, int64_t v) { return d.is_unsigned() && d != dtypes::uint64 ? wrap_int(d, static_cast<uint64_t>(v)) : v; }

std::pair<int64_t, int64_t> compute_bounds(const UOpNode& n) {
  auto [dlo, dhi] = limits(n.dtype);
  if (!intlike(n.dtype)) return {dlo, dhi};
  auto src_int = [&](size_t k) { return n.src.size() == k && std::all_of(n.src.begin(), n.src.end(), [](UOp s) { return intlike(s->dtype); }); };
  switch (n.op) {
    case Ops::CONST:
      if (const int64_t* v = n.arg.get_if<int64_t>()) return {canonical(n.dtype, *v), canonical(n.dtype, *v)};
      if (const bool* b = n.arg.get_if<bool>()) return {*b, *b};
      return {dlo, dhi};
    case Ops::DEFINE_VAR:
      if (const ArgTuple* t = n.arg.tuple(); t && t->size() == 3 && (*t)[1].is<int64_t>() && (*t)[2].is<int64_t>())
        return fit(n.dtype, (*t)[1].as<int64_t>(), (*t)[2].as<int64_t>());
      return {dlo, dhi};
    case Ops::RANGE: case Ops::SPECIAL:
      if (!n.src.empty() && intlike(n.src[0]->dtype)) return fit(n.dtype, 0, std::max<i128>(static_cast<i128>(n.src[0]->hi) - 1, 0));
      return {dlo, dhi};
    case Ops::BIND:  // the value it binds, which the verifier keeps inside the variable's range
      if (n.src.size() == 2 && intlike(n.src[1]->dtype)) {
        int64_t lo = std::max(n.src[0]->lo, n.src[1]->lo), hi = std::min(n.src[0]->hi, n.src[1]->hi);
        if (lo <= hi) return {lo, hi};
      }
      if (!n.src.empty()) return {n.src[0]->lo, n.src[0]->hi};
      return {dlo, dhi};
    case Ops::NEG:
      if (src_int(1)) return fit(n.dtype, -static_cast<i128>(n.src[0]->hi), -static_cast<i128>(n.src[0]->lo));
      return {dlo, dhi};
    case Ops::WHERE:
      if (n.src.size() == 3 && intlike(n.src[1]->dtype) && intlike(n.src[2]->dtype))
        return fit(n.dtype, std::min(n.src[1]->lo, n.src[2]->lo), std::max(n.src[1]->hi, n.src[2]->hi));
      return {dlo, dhi};
    case Ops::CAST:
      if (src_int(1)) return fit(n.dtype, n.src[0]->lo, n.src[0]->hi);
      return {dlo, dhi};
    default:
      if (is_binary(n.op) && src_int(2)) return binary_bounds(n);
      return {dlo, dhi};
  }
}

bool fold_int_alu(Ops op, DType dtype, const int64_t* v, size_t n, int64_t& out) {
  using u64 = uint64_t;
  auto wrap = [&](u64 x) -> int64_t { return wrap_int(dtype, x); };
  if (n != static_cast<size_t>(alu_arity(op))) return false;  // malformed nodes never fold
  if (dtype == dtypes::uint64) return false;                  // its values do not all fit int64
  int bits = dtype.itemsize() * 8;
  u64 a = static_cast<u64>(v[0]), b = n > 1 ? static_cast<u64>(v[1]) : 0;
  switch (op) {
    case Ops::NEG: out = wrap(0 - a); return n == 1;
    case Ops::ADD: out = wrap(a + b); return n == 2;
    case Ops::SUB: out = wrap(a - b); return n == 2;
    case Ops::MUL: out = wrap(a * b); return n == 2;
    case Ops::MAX: out = std::max(v[0], v[1]); return n == 2;
    case Ops::IDIV: case Ops::MOD:
      if (n != 2 || v[1] == 0) return false;
      if (v[1] == -1) out = op == Ops::IDIV ? wrap(0 - a) : 0;  // INT64_MIN / -1 wraps
      else out = op == Ops::IDIV ? v[0] / v[1] : v[0] % v[1];
      out = wrap(static_cast<u64>(out));
      return true;
    case Ops::CMPLT: out = v[0] < v[1]; return n == 2;
    case Ops::CMPNE: out = v[0] != v[1]; return n == 2;
    case Ops::CMPEQ: out = v[0] == v[1]; return n == 2;
    case Ops::AND: out = wrap(a & b); return n == 2;
    case Ops::OR: out = wrap(a | b); return n == 2;
    case Ops::XOR: out = wrap(a ^ b); return n == 2;
    case Ops::SHL: if (n != 2 || v[1] < 0 || v[1] >= bits) return false; out = wrap(a << v[1]); return true;
    case Ops::SHR: if (n != 2 || v[1] < 0 || v[1] >= bits) return false; out = wrap(static_cast<u64>(v[0] >> v[1])); return true;
    case Ops::WHERE: out = v[0] ? v[1] : v[2]; return n == 3;
    default: return false;
  }
}

namespace {

UOp int_const_of(DType d, int64_t v) {
  return d.is_bool() ? UOp::make(Ops::CONST, d, {}, Arg(v != 0)) : UOp::int_const(d, v);
}

bool has_int_arg(UOp c) { return c->arg.is<bool>() || c->arg.is<int64_t>(); }
int64_t int_value(UOp c) { return c->arg.is<bool>() ? c->arg.as<bool>() : canonical(c->dtype, c->arg.as<int64_t>()); }

bool int_srcs(UOp u) {
  return std::all_of(u->src.begin(), u->src.end(), [](UOp s) { return intlike(s->dtype); });
}

// ---- linear form: sum of coef*atom plus a constant, arithmetic modulo 2^64 (a ring, so exact) ----
struct Linear {
  std::vector<std::pair<UOp, uint64_t>> terms;
  uint64_t c = 0;
};

bool is_int_const(UOp u) { return u->op == Ops::CONST && u->arg.is<int64_t>(); }

Linear collect(UOp root) {
  Linear L;
  std::vector<std::pair<UOp, uint64_t>> stack{{root, 1}};
  DType d = root->dtype;
  while (!stack.empty()) {
    UOp u = stack.back().first;
    uint64_t k = stack.back().second;
    stack.pop_back();
    bool same = u->dtype == d;
    if (same && is_int_const(u)) {
      L.c += k * static_cast<uint64_t>(u->arg.as<int64_t>());
    } else if (same && u->op == Ops::ADD && u->src.size() == 2) {
      stack.push_back({u->src[1], k});
      stack.push_back({u->src[0], k});
    } else if (same && u->op == Ops::SUB && u->src.size() == 2) {
      stack.push_back({u->src[1], 0 - k});
      stack.push_back({u->src[0], k});
    } else if (same && u->op == Ops::NEG && u->src.size() == 1) {
      stack.push_back({u->src[0], 0 - k});
    } else if (same && u->op == Ops::MUL && u->src.size() == 2 && is_int_const(u->src[1])) {
      stack.push_back({u->src[0], k * static_cast<uint64_t>(u->src[1]->arg.as<int64_t>())});
    } else if (same && u->op == Ops::MUL && u->src.size() == 2 && is_int_const(u->src[0])) {
      stack.push_back({u->src[1], k * static_cast<uint64_t>(u->src[0]->arg.as<int64_t>())});
    } else {
      auto it = std::find_if(L.terms.begin(), L.terms.end(), [&](auto& t) { return t.first == u; });
      if (it == L.terms.end()) L.terms.push_back({u, k});
      else it->second += k;
    }
  }
  return L;
}

// Rebuilds a linear form in canonical order: atoms sorted by structural hash (stable across
// runs), each as `atom` or `atom*coef`, left-folded with ADD, the constant last.
UOp rebuild(DType d, Linear L) {
  auto wrap = [&](uint64_t x) { int64_t r; fold_int_alu(Ops::ADD, d, std::array<int64_t, 2>{static_cast<int64_t>(x), 0}.data(), 2, r); return r; };
  std::sort(L.terms.begin(), L.terms.end(), [](auto& a, auto& b) { return StableLess()(a.first, b.first); });
  UOp acc;
  for (auto& [t, k] : L.terms) {
    int64_t coef = wrap(k);
    if (coef == 0) continue;
    UOp term = coef == 1 ? t : UOp::make(Ops::MUL, d, {t, UOp::int_const(d, coef)});
    acc = acc ? UOp::make(Ops::ADD, d, {acc, term}) : term;
  }
  int64_t c = wrap(L.c);
  if (!acc) return UOp::int_const(d, c);
  return c == 0 ? acc : UOp::make(Ops::ADD, d, {acc, UOp::int_const(d, c)});
}

UOp linear_form(const Match& m) {
  UOp u = m.node;
  if (!intlike(u->dtype) || u->dtype.is_bool() || !int_srcs(u)) return {};
  return rebuild(u->dtype, collect(u));
}

std::vector<Ops> alu_ops() {
  std::vector<Ops> ops;
  for (size_t i = 0; i < kNumOps; ++i)
    if (is_alu(static_cast<Ops>(i))) ops.push_back(static_cast<Ops>(i));
  return ops;
}

UOp fold_constants(const Match& m) {
  UOp u = m.node;
  if (!intlike(u->dtype) || !int_srcs(u)) return {};
  std::vector<int64_t> vals;
  for (UOp s : u->src) {
    if (s->op != Ops::CONST || !has_int_arg(s)) return {};
    vals.push_back(int_value(s));
  }
  int64_t out;
  if (!fold_int_alu(u->op, u->dtype, vals.data(), vals.size(), out)) return {};
  return int_const_of(u->dtype, out);
}

UOp point_bounds(const Match& m) {
  UOp u = m.node;
  if (!intlike(u->dtype) || !int_srcs(u) || u.vmin() != u.vmax()) return {};
  return int_const_of(u->dtype, u.vmin());
}

// BIND(var, value) is its value (SEMANTICS S2.2): where that is one number inside the variable's
// bounds, the number, so a size is the same whether it is the bare BIND or arithmetic on it
// (which 'bounds are a single value' already folds). A value outside the bounds stays, for the
// verifier to name (bind.bounds); a BIND to a range stays, one value per binding.
UOp bound_to_one_value(const Match& m) {
  UOp u = m.node;
  if (u->src.size() != 2 || !intlike(u->dtype) || !int_srcs(u)) return {};
  UOp var = u->src[0], value = u->src[1];
  if (value.vmin() != value.vmax() || value.vmin() < var.vmin() || value.vmin() > var.vmax()) return {};
  return int_const_of(u->dtype, value.vmin());
}

// x = g*q + r: q from the terms whose coefficients g divides (and the constant's quotient), r
// the other terms (and the constant's remainder, in [0, g)).
std::pair<Linear, Linear> split_by(const Linear& L, int64_t g) {
  Linear q, r;
  for (auto& t : L.terms) {
    int64_t k = static_cast<int64_t>(t.second);
    if (k % g == 0) q.terms.push_back({t.first, static_cast<uint64_t>(k / g)});
    else r.terms.push_back(t);
  }
  int64_t k0 = static_cast<int64_t>(L.c);
  q.c = static_cast<uint64_t>(k0 >= 0 ? k0 / g : -((-k0 + g - 1) / g));
  r.c = static_cast<uint64_t>(k0 - static_cast<int64_t>(q.c) * g);
  return {q, r};
}

// The factors g of c worth splitting x by: c itself, then gcd(c, coefficient) of each term,
// largest first (the largest g whose remainder fits leaves the least behind).
std::vector<int64_t> split_factors(const Linear& L, int64_t c) {
  std::vector<int64_t> gs{c};
  for (auto& t : L.terms) {
    int64_t k = static_cast<int64_t>(t.second), g = std::gcd(k == kMin ? c : (k < 0 ? -k : k), c);
    if (g > 1 && std::find(gs.begin(), gs.end(), g) == gs.end()) gs.push_back(g);
  }
  std::sort(gs.begin() + 1, gs.end(), std::greater<>());
  return gs;
}

// x = g*q + r with g dividing c, 0 <= r < g and x >= 0 (so q >= 0, and truncating division
// agrees with floor division): x // c is q // (c/g) and x % c is (q % (c/g))*g + r, because
// r/g < 1 cannot carry past a multiple of c/g. With g == c that is q and r: the index math of
// a RESHAPE (linearize, then split again) folds back to the original indices.
UOp split_div_mod(UOp x, UOp cu, bool div) {
  int64_t c = is_int_const(cu) ? int_value(cu) : 0;
  if (!divisible_int(x->dtype) || c <= 1 || x.vmin() < 0) return {};
  Linear L = collect(x);
  for (int64_t g : split_factors(L, c)) {
    auto [q, r] = split_by(L, g);
    if (q.terms.empty() && q.c == 0) continue;  // nothing to split off
    UOp rest = rebuild(x->dtype, r);
    if (rest.vmin() < 0 || rest.vmax() >= g) continue;
    UOp quot = rebuild(x->dtype, q);
    if (g == c) return div ? quot : rest;
    if (div) return quot.idiv(c / g);
    return rest.vmax() == 0 ? quot.mod(c / g) * g : quot.mod(c / g) * g + rest;
  }
  return {};
}

// (x // c)*(k*c) + (x % c)*k is x*k for any x and c > 0 (C's division: x == (x/c)*c + x%c), and
// ((x // c) % d)*(k*c) + (x % c)*k is (x % (c*d))*k when x >= 0: the index math that splits a
// linear index and joins it again. Returns the linear form with each such pair joined.
std::optional<Linear> join_div_mod(const Linear& L, DType d) {
  auto divisor = [&](UOp u, Ops op) { return u->op == op && u->dtype == d && is_int_const(u->src[1]) ? int_value(u->src[1]) : 0; };
  for (size_t i = 0; i < L.terms.size(); ++i) {
    UOp m = L.terms[i].first;
    int64_t c = divisor(m, Ops::MOD);
    if (c <= 1) continue;
    UOp x = m->src[0];
    for (size_t j = 0; j < L.terms.size(); ++j) {
      UOp h = L.terms[j].first;
      UOp joined;
      if (divisor(h, Ops::IDIV) == c && h->src[0] == x) joined = x;
      else if (int64_t e = divisor(h, Ops::MOD); e > 1 && x.vmin() >= 0 && divisor(h->src[0], Ops::IDIV) == c && h->src[0]->src[0] == x &&
                                                  e <= kMax / c)
        joined = x.mod(e * c);
      if (!joined || L.terms[j].second != L.terms[i].second * static_cast<uint64_t>(c)) continue;
      Linear out = L;
      out.terms[i] = {joined, L.terms[i].second};
      out.terms.erase(out.terms.begin() + static_cast<long>(j));
      return out;
    }
  }
  return std::nullopt;
}

// (c*q) // c is q when c divides every coefficient and the constant.
UOp exact_division(const Match& m) {
  UOp x = m["x"];
  int64_t c = is_int_const(m["c"]) ? int_value(m["c"]) : 0;
  if (!divisible_int(x->dtype) || c <= 0) return UOp();
  Linear L = collect(x);
  auto divides = [&](uint64_t k) { return static_cast<int64_t>(k) % c == 0; };
  if (!divides(L.c) || !std::all_of(L.terms.begin(), L.terms.end(), [&](auto& t) { return divides(t.second); })) return UOp();
  for (auto& t : L.terms) t.second = static_cast<uint64_t>(static_cast<int64_t>(t.second) / c);
  L.c = static_cast<uint64_t>(static_cast<int64_t>(L.c) / c);
  return rebuild(x->dtype, L);
}

UOp join_div_mod_rule(const Match& m) {
  UOp u = m.node;
  if (!divisible_int(u->dtype) || !int_srcs(u)) return {};
  auto L = join_div_mod(collect(u), u->dtype);
  return L ? rebuild(u->dtype, *L) : UOp();
}

}  // namespace

namespace {

// A rewrite must not change a tensor's shape: `where(false, t, f) -> f` with an unshaped f, or
// `x * 0 -> 0`, would turn a (2, 3) tensor into a scalar, and an output or a reduction over it
// would lose its size. An unshaped result is broadcast back to the node's shape; any other
// shape change is not made.
std::vector<Rule> shape_preserving(std::vector<Rule> rules) {
  for (Rule& r : rules)
    r.fn = [fn = r.fn](const Match& m) {
      UOp out = fn(m), u = m.node;
      if (!out || u->shape.kind != ShapeInfo::Kind::Shaped) return out;
      if (out->shape.kind == ShapeInfo::Kind::Shaped) return out->shape.dims == u->shape.dims ? out : UOp();
      return broadcast(out, u->shape.dims);
    };
  return rules;
}

// The values a node is computed from that may hold uninitialized memory: found through
// elementwise ops (of a WHERE on a constant condition, the selected branch: the interpreter's
// poison rule), stopping at anything else; constants, ranges and variables never are.
void poison_sources(UOp u, std::vector<UOp>& out) {
  std::vector<UOp> stack{u};
  while (!stack.empty()) {
    UOp n = stack.back();
    stack.pop_back();
    if (n->op == Ops::CONST || n->op == Ops::RANGE || n->op == Ops::DEFINE_VAR || n->op == Ops::SPECIAL) continue;
    if (n->op == Ops::WHERE && n->src.size() == 3 && n->src[0]->op == Ops::CONST) {  // only the selected branch counts (arity: a parsed graph is simplified before it is verified)
      stack.push_back(n->src[0].const_value() != 0 ? n->src[1] : n->src[2]);
    } else if (is_elementwise(n->op) || n->op == Ops::BIND) {  // a BIND's value is a constant or a range
      for (UOp s : n->src) stack.push_back(s);
    } else if (std::find(out.begin(), out.end(), n) == out.end()) {
      out.push_back(n);
    }
  }
}

// A value computed from uninitialized memory is poison, whatever the arithmetic (SEMANTICS:
// `x - x` of poison x is poison, not 0). A rewrite that drops an operand which may be poison
// would turn the interpreter's "reads uninitialized memory" into a number on the compiled path,
// so such a rewrite is not made: every source that may be poison must survive in the result.
std::vector<Rule> poison_preserving(std::vector<Rule> rules) {
  for (Rule& r : rules)
    r.fn = [fn = r.fn](const Match& m) {
      UOp out = fn(m);
      if (!out) return out;
      std::vector<UOp> before, after;
      poison_sources(m.node, before);
      if (before.empty()) return out;
      poison_sources(out, after);
      for (UOp s : before)
        if (std::find(after.begin(), after.end(), s) == after.end()) return UOp();
      return out;
    };
  return rules;
}

}  // namespace

const PatternMatcher& symbolic_rules() {
  static const PatternMatcher pm(poison_preserving(shape_preserving({
      {"fold constants", Pat::ops(alu_ops()), fold_constants},
      {"bounds are a single value", Pat::ops(alu_ops()), point_bounds},
      {"a variable bound to one value is that value", Pat::ops({Ops::BIND}), bound_to_one_value},
      {"collect linear terms", Pat::ops({Ops::ADD, Ops::SUB, Ops::NEG, Ops::MUL}), linear_form},
      // a*b and b*a must be one atom for the linear form (and for shape equality)
      {"order the factors of a product", Pat::op(Ops::MUL, {Pat::var("x"), Pat::var("y")}),
       [](const Match& m) {
         UOp u = m.node, x = u->src[0], y = u->src[1];
         if (!u->dtype.is_int() || x->op == Ops::CONST || y->op == Ops::CONST) return UOp();
         bool ordered = !StableLess()(y, x);
         return ordered ? UOp() : UOp::make(Ops::MUL, u->dtype, {y, x});
       }},
      {"max of ordered operands", Pat::op(Ops::MAX, {Pat::var("x"), Pat::var("y")}),
       [](const Match& m) {
         UOp x = m["x"], y = m["y"];
         if (!intlike(x->dtype)) return UOp();
         return x.vmin() >= y.vmax() ? x : y.vmin() >= x.vmax() ? y : UOp();
       }},
      {"where on a constant condition", Pat::op(Ops::WHERE, {Pat::cvar("c"), Pat::var("t"), Pat::var("f")}),
       [](const Match& m) { return m["c"].const_value() != 0 ? m["t"] : m["f"]; }},
      {"where with equal branches", Pat::op(Ops::WHERE, {Pat::var("c"), Pat::var("x"), Pat::var("x")}),
       [](const Match& m) { return m["x"]; }},
      {"mod below the divisor", Pat::op(Ops::MOD, {Pat::var("x"), Pat::cvar("c")}),
       [](const Match& m) {
         UOp x = m["x"];
         if (!intlike(x->dtype) || x->dtype.is_bool() || !is_int_const(m["c"])) return UOp();
         return x.vmin() >= 0 && x.vmax() < int_value(m["c"]) ? x : UOp();
       }},
      {"exact division", Pat::op(Ops::IDIV, {Pat::var("x"), Pat::cvar("c")}), exact_division},
      // (g*q + r) // c == q // (c/g) for g dividing c, 0 <= r < g and a sum >= 0 (split_div_mod)
      {"split a division by its multiples", Pat::op(Ops::IDIV, {Pat::var("x"), Pat::cvar("c")}),
       [](const Match& m) { return split_div_mod(m["x"], m["c"], true); }},
      {"split a modulo by its multiples", Pat::op(Ops::MOD, {Pat::var("x"), Pat::cvar("c")}),
       [](const Match& m) { return split_div_mod(m["x"], m["c"], false); }},
      {"join a quotient and its remainder", Pat::ops({Ops::ADD}), join_div_mod_rule},
      {"compare a value with itself", Pat::ops({Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ}),
       [](const Match& m) {
         UOp u = m.node;
         if (u->src.size() != 2 || u->src[0] != u->src[1] || !intlike(u->src[0]->dtype)) return UOp();
         return int_const_of(dtypes::bool_, u->op == Ops::CMPEQ);
       }},
      {"and/or with an identity", Pat::ops({Ops::AND, Ops::OR}),
       [](const Match& m) {
         UOp u = m.node;
         if (!u->dtype.is_bool() || u->src.size() != 2) return UOp();
         bool identity = u->op == Ops::AND;  // x & true == x, x | false == x
         for (int i = 0; i < 2; ++i)
           if (u->src[i]->op == Ops::CONST && (u->src[i].const_value() != 0) == identity) return u->src[1 - i];
         return UOp();
       }},
  })));
  return pm;
}

UOp simplify(UOp u) {
  RewriteOptions opts;
  opts.name = "symbolic";
  return graph_rewrite(u, symbolic_rules(), opts);
}

}  // namespace ow
