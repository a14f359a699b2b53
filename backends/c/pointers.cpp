// tcc's accesses through a shared base (the copies of an unrolled loop body, kernel-opt pass
// `unroll`, read b[x], b[x + 1], ..., b[x + 7]): TCC keeps every variable in memory and computes
// every address from scratch, so where two or more accesses of one buffer index it at x + c (c a
// constant), x is named once and the buffer is read and written through a pointer set at x's
// loop level: `float* b1_p5 = b1 + v5; ... b1_p5[3]` (about 1.5x on tcc's elementwise loops).
// The same elements in the same order: results do not change. Only without bounds checks (a
// check needs the index) and for ungated accesses; cc's compiler does this itself.
#include "kernel_renderer.h"

namespace ow::backend::detail {

std::optional<std::pair<UOp, int64_t>> KernelRenderer::base_of(UOp idx) {
  if (idx->op != Ops::INDEX || idx->src.size() != 2 || idx->src[0]->op != Ops::DEFINE_GLOBAL) return std::nullopt;
  UOp lin = idx->src[1], x = lin;
  int64_t c = 0;
  if (lin->op == Ops::ADD && lin->src[1].is_const() && lin->src[1]->dtype.is_int()) x = lin->src[0], c = lin->src[1]->arg.as<int64_t>();
  if (x.is_const()) return std::nullopt;
  return std::make_pair(x, c);
}

std::optional<std::string> KernelRenderer::based_access(UOp idx, int lv) {
  std::optional<std::pair<UOp, int64_t>> b = base_of(idx);
  if (!b || opts_.target != Target::tcc || opts_.bounds_check || reads_reg_.count(b->first.get())) return std::nullopt;
  std::pair<const UOpNode*, const UOpNode*> key{idx->src[0].get(), b->first.get()};
  if (auto n = bases_.find(key); n == bases_.end() || n->second < 2) return std::nullopt;
  auto it = pointers_.find(key);
  if (it == pointers_.end() || scope_level(it->second.second) < 0) {
    UOp x = b->first;
    std::string xv = val(x, lv, true);
    auto named = named_.find(x.get());
    int at = named != named_.end() ? scope_level(named->second.second) : level(x);
    std::string slot = std::to_string(idx->src[0]->arg.as<int64_t>()), name = "b" + slot + "_p" + num(x);
    emit(at, ctype(idx->src[0]->dtype.base(), idx) + "* " + name + " = b" + slot + " + " + xv + ";");
    it = pointers_.insert_or_assign(key, std::make_pair(name, stack_[static_cast<size_t>(at)].id)).first;
  }
  return it->second.first + "[" + std::to_string(b->second) + "]";
}

}  // namespace ow::backend::detail
