// Kernel-opt pass `columns` (tcc and cc): column blocking. A store nest whose stored value folds
// REDUCEs over its innermost range j (x @ W.T, a matvec: where the reduce interchange would walk
// W with a stride, loop_shapes.h) stores B columns j = B*jb + u per iteration of jb (B = 8, or
// the largest power of 2 below it that divides j's extent); the B accumulators of each REDUCE are
// one register (DEFINE_REG) folded in one pass over the REDUCE's ranges:
//   END(STORE(out[j], f(REDUCE(x(j, k), k))), ..., j)
//   -> END(GROUP(STORE(acc[u], id) for u,
//                END(GROUP(STORE(acc[u], acc[u] OP x(B*jb + u, k)) for u), k),
//                STORE(out[B*jb + u], f(acc[u])) for u), ..., jb)
// The loads that do not depend on j are shared by the B columns, and their B chains of folds run
// side by side instead of one after another (about 2x for a matvec on cc). Each accumulator folds
// the same terms in the same order from the same identity, and block_size's conditions make the
// order of the stores free: results are bit-identical.
#include <algorithm>

#include "opt/loop_shapes.h"
#include "opt/opt.h"
#include "uop/scan_form.h"
#include "uop/symbolic.h"

namespace ow::opt {

namespace {

constexpr int kColumns = 8;

// The REDUCEs over j of `end` this pass folds in registers and the number of columns B, or none
// when it does not apply.
std::pair<std::vector<UOp>, int> column_reduces(UOp ast, UOp end, const Options& o) {
  if (!store_nest(end)) return {};
  std::vector<UOp> reds = reduces_over(end->src[0]->src[1], end->src.back());
  if (interchangeable(end, reds, o.bounds_check)) return {};  // the pass interchange takes it
  for (UOp r : reds) {
    if (!r->arg.get_if<Ops>() || r->src.size() < 2 || r->dtype.ptr || r->dtype.is_bool()) return {};
    for (UOp u : toposort(r->src[0]))
      if (u->op == Ops::REDUCE) return {};
  }
  int block = reds.empty() ? 1 : block_size(ast, end, end->src.size() - 1, reds, kColumns, true, o.bounds_check);
  if (block == 1) return {};
  return {reds, block};
}

// The next register number free in the kernel ast.
int64_t next_register(UOp ast) {
  int64_t next = 0;
  for (UOp u : toposort(ast))
    if (u->op == Ops::DEFINE_REG) next = std::max(next, u->arg.as<int64_t>() + 1);
  return next;
}

UOp group(std::vector<UOp> stmts) { return UOp::make(Ops::GROUP, dtypes::void_, std::move(stmts)); }

// `end` blocked by `block` columns (the REDUCEs `reds` in registers numbered from `reg`).
UOp blocked(UOp end, const std::vector<UOp>& reds, int block, int64_t& reg) {
  UOp j = end->src.back(), jb = block_range(j, block), st = end->src[0];
  auto column = [&](int u) { return u ? jb * block + u : jb * block; };
  std::vector<UOp> body;
  // Per column u: each REDUCE -> its register element for u (and j -> B*jb + u).
  std::vector<std::vector<std::pair<UOp, UOp>>> at_column(static_cast<size_t>(block));
  for (UOp r : reds) {
    std::vector<UOp> copies, element;  // the distinct copies; each column's index into them
    for (int u = 0; u < block; ++u) {
      UOp c = substitute_range(r, j, column(u));
      size_t e = static_cast<size_t>(std::find(copies.begin(), copies.end(), c) - copies.begin());
      if (e == copies.size()) copies.push_back(c);
      element.push_back(UOp::index(static_cast<int64_t>(e)));
    }
    UOp acc = UOp::make(Ops::DEFINE_REG, DType(r->dtype.scalar, true, static_cast<int64_t>(copies.size())), {}, Arg(reg++));
    Ops op = *r->arg.get_if<Ops>();
    std::vector<UOp> folds;
    for (size_t e = 0; e < copies.size(); ++e) {
      UOp at = acc.index({UOp::index(static_cast<int64_t>(e))});
      body.push_back(at.store(reduce_identity(op, r->dtype)));
      folds.push_back(at.store(UOp::make(op, r->dtype, {at.load(), copies[e]->src[0]})));
    }
    for (int u = 0; u < block; ++u) at_column[static_cast<size_t>(u)].push_back({r, acc.index({element[static_cast<size_t>(u)]}).load()});
    std::vector<UOp> loop{group(std::move(folds))};
    loop.insert(loop.end(), r->src.begin() + 1, r->src.end());
    body.push_back(UOp::make(Ops::END, dtypes::void_, std::move(loop)));
  }
  for (int u = 0; u < block; ++u) body.push_back(substitute_range(st, j, column(u), at_column[static_cast<size_t>(u)]));
  std::vector<UOp> src(end->src.begin(), end->src.end() - 1);
  src[0] = group(std::move(body));
  src.push_back(jb);
  return UOp::make(Ops::END, end->dtype, std::move(src), end->arg);
}

UOp block_columns(const Match& m) {
  const Options& o = m.context<Options>();
  UOp ast = m.node->src[0];
  int64_t reg = -1;  // the next register number, found when a first nest is blocked
  return with_statements(m.node, [&](UOp s) {
    auto [reds, block] = column_reduces(ast, s, o);
    if (reds.empty()) return s;
    if (reg < 0) reg = next_register(ast);
    return blocked(s, reds, block, reg);
  });
}

}  // namespace

const PatternMatcher& columns_rules() {
  static const PatternMatcher pm({{"a store nest folding REDUCEs over its inner range folds 8 columns side by side in registers", Pat::ops({Ops::KERNEL}), block_columns}});
  return pm;
}

}  // namespace ow::opt
