// The kernel-opt stage: its passes in order, and how one runs over a program (opt.h).
#include "opt/opt.h"

#include <algorithm>

#include "uop/error.h"
#include "uop/verify.h"

namespace ow::opt {

std::string_view target_name(Target t) { return t == Target::tcc ? "tcc" : "cc"; }

Options options_for(Target t, bool bounds_check, std::set<std::string> skip) {
  Options o;
  o.target = t;
  o.threads = t == Target::cc ? threads_setting() : 1;
  o.bounds_check = bounds_check;
  o.skip = std::move(skip);
  return o;
}

const std::vector<Pass>& passes() {
  static const std::vector<Pass> list{
      {"threads", "a big kernel whose outermost range is provably parallel runs its halves on two threads", {Target::cc}, threads_rules},
      {"transposes", "a transposing copy is blocked: 16 rows per pass, or 8x8 tiles of 4-byte elements on cc", {Target::tcc, Target::cc}, transposes_rules},
      {"columns", "a store nest folding REDUCEs over its inner range folds 8 columns side by side in registers", {Target::tcc, Target::cc}, columns_rules},
  };
  return list;
}

UOp with_statements(UOp k, const std::function<UOp(UOp)>& f) {
  UOp ast = k->src[0];
  std::vector<UOp> stmts;
  for (UOp s : ast->src) stmts.push_back(f(s));
  if (stmts == ast->src) return UOp();
  std::vector<UOp> src = k->src;
  src[0] = ast.replace_src(std::move(stmts));
  return k.replace_src(std::move(src));
}

UOp run_pass(const Pass& p, UOp root, const Options& o, const std::function<void(const Rule&, UOp, UOp)>& on_fire) {
  RewriteOptions ro;
  ro.name = p.name;
  ro.ctx = const_cast<Options*>(&o);  // the rules only read it
  ro.on_fire = on_fire;
  UOp out = graph_rewrite(root, p.rules(), ro);
  if (out == root) return out;
  std::set<const UOpNode*> before;  // kernelize verified these; only the pass's own are new
  for (UOp u : toposort(root))
    if (u->op == Ops::KERNEL) before.insert(u.get());
  for (UOp u : toposort(out))
    if (u->op == Ops::KERNEL && !before.count(u.get())) verify_kernel(u);  // the grammar the renderer relies on
  return out;
}

UOp optimize(UOp root, const Options& o) {
  for (const Pass& p : passes())
    if (std::count(p.targets.begin(), p.targets.end(), o.target) && !o.skip.count(p.name)) root = run_pass(p, root, o);
  return root;
}

}  // namespace ow::opt
