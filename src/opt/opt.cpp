// The kernel-opt stage: its passes in order, and how one runs over a program (opt.h).
#include "opt/opt.h"

#include <algorithm>
#include <unordered_map>

#include "uop/args.h"
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
      {"transposes", "a transposing copy is blocked: 16 rows per pass, or 8x8 tiles of 4-byte elements", {Target::tcc, Target::cc}, transposes_rules},
      {"columns", "a store nest folding REDUCEs over its inner range folds 8 columns side by side in registers", {Target::tcc, Target::cc}, columns_rules},
      {"interchange", "a store nest folding REDUCEs over a contiguous inner range folds arrays of accumulators, rows blocked", {Target::tcc, Target::cc}, interchange_rules},
      {"unroll", "a short innermost loop of 8 or more steps is written unrolled by 8, its direct accesses through pointers", {Target::tcc}, unroll_rules},
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

namespace {

constexpr int kMaxFirings = 100;  // rewrites of one kernel by one pass: each pass needs one

// One pass over KERNEL k: its rules to a fixed point.
UOp run_on_kernel(const Pass& p, UOp k, const Options& o, const std::function<void(const Rule&, UOp, UOp)>& on_fire) {
  void* ctx = const_cast<Options*>(&o);  // the rules only read it
  UOp v = k;
  for (int step = 0; auto f = p.rules().rewrite(v, ctx); ++step) {
    if (step == kMaxFirings) throw InternalError("kernel-opt pass " + p.name + " does not reach a fixed point on kernel " + kernel_name(k));
    if (on_fire) on_fire(*f->rule, v, f->result);
    v = f->result;
  }
  return v;
}

// `root` with every KERNEL k replaced by f(k), its sources updated first. The rules match
// KERNELs only (each kernel is optimized by itself), so this replaces a rewrite of the whole
// program.
UOp map_kernels(UOp root, const std::function<UOp(UOp)>& f) {
  std::unordered_map<const UOpNode*, UOp> now;  // node -> its version after f, where changed
  for (UOp u : toposort(root)) {
    std::vector<UOp> src;
    src.reserve(u->src.size());
    for (UOp s : u->src) {
      auto it = now.find(s.get());
      src.push_back(it == now.end() ? s : it->second);
    }
    UOp v = u.replace_src(std::move(src));
    if (v->op == Ops::KERNEL) v = f(v);
    if (v != u) now[u.get()] = v;
  }
  auto it = now.find(root.get());
  return it == now.end() ? root : it->second;
}

}  // namespace

UOp run_pass(const Pass& p, UOp root, const Options& o, const std::function<void(const Rule&, UOp, UOp)>& on_fire) {
  return map_kernels(root, [&](UOp k) {
    UOp v = run_on_kernel(p, k, o, on_fire);
    if (v != k) verify_kernel(v);  // the grammar the renderer relies on
    return v;
  });
}

// Every pass in one walk of the program: each kernel goes through them all in turn and is
// verified once at the end (ow check --passes and ow lower, through run_pass, verify after each).
UOp optimize(UOp root, const Options& o) {
  std::vector<const Pass*> chosen;
  for (const Pass& p : passes())
    if (std::count(p.targets.begin(), p.targets.end(), o.target) && !o.skip.count(p.name)) chosen.push_back(&p);
  return map_kernels(root, [&](UOp k) {
    UOp before = k;
    for (const Pass* p : chosen) k = run_on_kernel(*p, k, o, {});
    if (k != before) verify_kernel(k);
    return k;
  });
}

}  // namespace ow::opt
