// Kernel-opt pass `unroll` (tcc): tcc keeps every variable in memory, recomputes every address
// from scratch and never unrolls. An innermost loop END(body, ..., r) with a constant extent of
// at least kUnroll (8) and a short body of a few stores is marked (args.h) to be written as
// blocks of 8 copies of its body, r = 8*rb + u, then a remainder loop:
//  - "unroll-pointers" when the body uses r only as the index of global accesses b[r] (not under
//    bounds checks, whose tests name r): each copy reads b_at[u] through a pointer b + 8*rb set
//    once per block, about 1.5x faster elementwise loops under tcc;
//  - "unroll" otherwise: each copy sets r = 8*rb + u and runs the body.
// The mark changes no node: the iterations run in their order in every form, so the interpreter
// evaluates the marked kernel as it did before and results are bit-identical.
#include <algorithm>
#include <unordered_map>

#include "opt/loop_shapes.h"
#include "opt/opt.h"
#include "uop/args.h"
#include "uop/verify.h"

namespace ow::opt {

namespace {

// What tcc compiles grows with the body: at most this many of its nodes depend on r (a column
// block of a matvec has about 45, a fused convolution's body 90: every reference case's short
// loops are unrolled).
constexpr size_t kMaxUnrolledValues = 128;
// With bounds checks every access of a copy adds a test and an error exit: a third as many, which
// unrolls the same loops of the reference cases as before this pass (their checked C kept its
// size; counting 128 doubled vmap_gemm_grad's, 57 -> 120 KB).
constexpr size_t kMaxCheckedValues = kMaxUnrolledValues / 3;

// A STORE, or an unmarked GROUP of at most 8 STOREs (a blocked nest): a body worth copying; not
// one that only fills registers with constants (an interchange's identities: nothing to save).
bool few_stores(UOp s) {
  auto fills_register = [](UOp st) { return st->src.at(0)->src.at(0)->op == Ops::DEFINE_REG && st->src.at(1)->op == Ops::CONST; };
  if (s->op == Ops::STORE) return !fills_register(s);
  return s->op == Ops::GROUP && s->arg.none() && s->src.size() <= 8 &&
         std::all_of(s->src.begin(), s->src.end(), [](UOp x) { return x->op == Ops::STORE; }) &&
         !std::all_of(s->src.begin(), s->src.end(), fills_register);
}

// How `end` is to be written, or none when it is not worth unrolling.
std::optional<LoopForm> form_of(UOp end, bool bounds_check) {
  if (end->op != Ops::END || !end->arg.none() || end->src.size() < 2 || !few_stores(end->src[0])) return std::nullopt;
  UOp r = end->src.back();
  const int64_t* n = const_extent(r);
  if (!n || *n < kUnroll) return std::nullopt;
  size_t values = 0;
  bool direct = !bounds_check;  // every use of r is the index of a global access
  for (UOp u : toposort(end->src[0])) {
    if (u->op == Ops::CONST || u->op == Ops::RANGE || !has_free_range(u, r)) continue;
    if (++values > (bounds_check ? kMaxCheckedValues : kMaxUnrolledValues)) return std::nullopt;
    for (size_t i = 0; i < u->src.size(); ++i)
      if (u->src[i] == r && !(u->op == Ops::INDEX && i == 1 && u->src[0]->op == Ops::DEFINE_GLOBAL)) direct = false;
  }
  return direct ? LoopForm::unroll_pointers : LoopForm::unroll;
}

// Statement s (verify_kernel's grammar: STORE, END, GROUP) with each END that form_of marks
// marked, rebuilt from the bottom up through statements only (their values are left alone).
// Walked with a stack; `done` holds every statement already rebuilt (the ast may share them).
UOp marked(UOp top, bool bounds_check) {
  std::unordered_map<const UOpNode*, UOp> done;
  std::vector<std::pair<UOp, bool>> todo{{top, false}};  // (statement, its parts are done)
  while (!todo.empty()) {
    auto [s, parts_done] = todo.back();
    todo.pop_back();
    if (done.count(s.get())) continue;
    size_t parts = s->op == Ops::GROUP ? s->src.size() : s->op == Ops::END ? 1 : 0;
    if (!parts_done) {
      todo.push_back({s, true});
      for (size_t i = 0; i < parts; ++i) todo.push_back({s->src[i], false});
      continue;
    }
    std::vector<UOp> src = s->src;
    for (size_t i = 0; i < parts; ++i) src[i] = done.at(s->src[i].get());
    UOp v = s.replace_src(std::move(src));
    if (std::optional<LoopForm> f = form_of(v, bounds_check)) v = UOp::make(Ops::END, v->dtype, v->src, loop_arg(*f));
    done[s.get()] = v;
  }
  return done.at(top.get());
}

UOp mark_loops(const Match& m) {
  const Options& o = m.context<Options>();
  return with_statements(m.node, [&](UOp s) { return marked(s, o.bounds_check); });
}

}  // namespace

const PatternMatcher& unroll_rules() {
  static const PatternMatcher pm({{"a short innermost loop of 8 or more steps is written unrolled by 8 (tcc)", Pat::ops({Ops::KERNEL}), mark_loops}});
  return pm;
}

}  // namespace ow::opt
