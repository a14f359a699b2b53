// Reading index expressions without rewriting them: their infix text for messages (render_expr)
// and the coefficient of one range in them (coefficient). The rewriting is symbolic.cpp.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "uop/symbolic.h"

namespace ow {

namespace {

// An expression as text: appends to one string and stops once it is longer than max_chars (a
// shared subexpression is spelled out at every use, so the text of a deep DAG can be
// exponentially long) or deeper than max_depth.
class ExprText {
 public:
  explicit ExprText(size_t max_chars) : max_(max_chars) {}

  std::string text(UOp u) {
    go(u, 0);
    if (out_.size() > max_) out_ = out_.substr(0, max_ > 3 ? max_ - 3 : 0) + "...";
    return out_;
  }

 private:
  static constexpr int max_depth = 24;
  std::string out_;
  size_t max_;

  void go(UOp u, int depth) {
    if (out_.size() > max_) return;
    if (depth > max_depth) {
      out_ += "...";
      return;
    }
    if (leaf(u)) return;
    size_t n = u->src.size();
    if (u->op == Ops::BIND && n >= 1) return go(u->src[0], depth + 1);
    if (u->op == Ops::NEG && n == 1) {
      out_ += '-';
      return go(u->src[0], depth + 1);
    }
    if (n == 2)
      if (const char* op = infix_text(u->op)) return infix(u, op, depth);
    if (u->op == Ops::WHERE && n == 3) return where(u, depth);
    call(u, depth);
  }

  // CONST, RANGE and DEFINE_VAR by their value or name; false for any other op.
  bool leaf(UOp u) {
    switch (u->op) {
      case Ops::CONST: out_ += to_string(u->arg); return true;
      case Ops::RANGE: out_ += "r" + range_name(u); return true;
      case Ops::DEFINE_VAR: {
        const ArgTuple* t = u->arg.tuple();
        out_ += t && !t->empty() && (*t)[0].is<std::string>() ? (*t)[0].as<std::string>() : "var";
        return true;
      }
      default: return false;
    }
  }

  static const char* infix_text(Ops op) {
    for (auto [o, text] : {std::pair{Ops::ADD, "+"}, {Ops::SUB, "-"}, {Ops::MUL, "*"}, {Ops::IDIV, "//"}, {Ops::MOD, "%"},
                           {Ops::CMPLT, "<"}, {Ops::CMPNE, "!="}, {Ops::CMPEQ, "=="}})
      if (o == op) return text;
    return nullptr;
  }

  void infix(UOp u, const char* op, int depth) {
    out_ += '(';
    go(u->src[0], depth + 1);
    out_ += op;
    go(u->src[1], depth + 1);
    out_ += ')';
  }

  void where(UOp u, int depth) {
    out_ += '(';
    go(u->src[0], depth + 1);
    out_ += " ? ";
    go(u->src[1], depth + 1);
    out_ += " : ";
    go(u->src[2], depth + 1);
    out_ += ')';
  }

  // Any other op as a call: max(a, b), SQRT(a).
  void call(UOp u, int depth) {
    out_ += u->op == Ops::MAX ? "max" : op_name(u->op);
    out_ += '(';
    for (size_t i = 0; i < u->src.size(); ++i) {
      if (i) out_ += ", ";
      go(u->src[i], depth + 1);
    }
    out_ += ')';
  }
};

}  // namespace

std::string render_expr(UOp u, size_t max_chars) { return ExprText(max_chars).text(u); }

// ---- the coefficient of a range ----

std::optional<int64_t> coefficient(UOp u, UOp r) {
  auto depends = [&](UOp x) { return std::find(x->free.begin(), x->free.end(), r.get()) != x->free.end(); };
  std::map<const UOpNode*, std::optional<int64_t>> c;  // of the nodes below u that depend on r
  auto of = [&](UOp x) -> std::optional<int64_t> { return depends(x) ? c.at(x.get()) : std::optional<int64_t>(0); };
  std::vector<std::pair<UOp, bool>> todo{{u, false}};  // (node, its sources are done)
  while (!todo.empty()) {
    auto [x, ready] = todo.back();
    todo.pop_back();
    if (!depends(x) || c.count(x.get())) continue;
    bool linear = x == r || x->op == Ops::ADD || x->op == Ops::SUB || x->op == Ops::NEG || x->op == Ops::MUL;
    if (!ready && linear && x != r) {
      todo.push_back({x, true});
      for (UOp s : x->src) todo.push_back({s, false});
      continue;
    }
    std::optional<int64_t> out;
    int64_t v;
    if (x == r) {
      out = 1;
    } else if (x->op == Ops::ADD || x->op == Ops::SUB) {
      auto a = of(x->src[0]), b = of(x->src[1]);
      if (a && b && !(x->op == Ops::ADD ? __builtin_add_overflow(*a, *b, &v) : __builtin_sub_overflow(*a, *b, &v))) out = v;
    } else if (x->op == Ops::NEG) {
      if (auto a = of(x->src[0]); a && *a != INT64_MIN) out = -*a;
    } else if (x->op == Ops::MUL) {
      for (int s = 0; s < 2 && !out; ++s) {
        UOp k = x->src[static_cast<size_t>(s)], y = x->src[static_cast<size_t>(1 - s)];
        if (!k.is_const() || !k->arg.get_if<int64_t>() || depends(k)) continue;
        if (auto a = of(y); a && !__builtin_mul_overflow(*a, *k->arg.get_if<int64_t>(), &v)) out = v;
      }
    }
    c[x.get()] = out;
  }
  return of(u);
}


}  // namespace ow
