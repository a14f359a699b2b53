// A transpose8 GROUP (kernel-opt pass `transposes`, args.h): 64 STOREs that copy an 8x8 tile of
// 4-byte elements, written as one call of ow_transpose8_u32, a transpose in registers (cc's from
// its prelude, tcc's from backends/tcc/vector_loops.h). Store (a, b) of the group (a-major) writes dst + a*si + b and reads src + a + b*sj;
// the call is made only when all 64 stores say so (else the pass is wrong: an InternalError).
#include "kernel_renderer.h"
#include "uop/symbolic.h"

namespace ow::backend::detail {

void KernelRenderer::transpose8(UOp group) {
  auto dst = [&](size_t k) { return group->src[k]->src[0]; };
  auto src = [&](size_t k) { return group->src[k]->src[1]->src.at(0); };
  auto plain_copy = [&](size_t k) {
    UOp st = group->src[k], v = st->src[1];
    return v->op == Ops::LOAD && v->src.size() == 1 && dst(k)->src.size() == 2 && src(k)->op == Ops::INDEX && src(k)->src.size() == 2 &&
           dst(k)->src[0] == dst(0)->src[0] && src(k)->src[0] == src(0)->src[0] && v->dtype == dst(k)->dtype.base() && v->dtype.itemsize() == 4;
  };
  auto refuse = [&](size_t k) {
    throw InternalError("a transpose8 GROUP is not an 8x8 transposing copy at its store " + std::to_string(k) + " (at " + printed_.line(group->src[k]) + ")");
  };
  for (size_t k = 0; k < 64; ++k)  // every store a plain copy first: src(k) is a LOAD's INDEX
    if (!plain_copy(k)) refuse(k);
  // The group's loops END(GROUP, ..., ib, jb) are the two innermost open ones. Store (a, b)'s
  // indices must be store 0's with ib*8 and jb*8 moved on by a and b, and store 0's indices
  // affine in ib and jb with the strides of a transpose.
  if (stack_.size() < 3) refuse(0);
  UOp ib = stack_[stack_.size() - 2].range, jb = stack_.back().range, i0 = ib * 8, j0 = jb * 8;
  // Is x the index y with i0 -> i0 + a and j0 -> j0 + b (as the pass built it: ADD(r0, a), or
  // r0 itself for 0)? Compared node by node, nothing built (a walk with a stack).
  auto shifted = [&](UOp x, UOp y, int64_t a, int64_t b) {
    std::vector<std::pair<UOp, UOp>> todo{{x, y}};
    while (!todo.empty()) {
      auto [p, q] = todo.back();
      todo.pop_back();
      if (q == i0 || q == j0) {
        int64_t by = q == i0 ? a : b;
        bool ok = by == 0 ? p == q : p->op == Ops::ADD && p->src.size() == 2 && p->src[0] == q && p->src[1].is_const() && p->src[1]->arg == Arg(by);
        if (!ok) return false;
        continue;
      }
      if (p == q) continue;
      if (p->op != q->op || p->dtype != q->dtype || !(p->arg == q->arg) || p->src.size() != q->src.size()) return false;
      for (size_t s = 0; s < p->src.size(); ++s) todo.push_back({p->src[s], q->src[s]});
    }
    return true;
  };
  for (size_t k = 1; k < 64; ++k) {  // (plain copies: their indices say it all)
    int64_t a = static_cast<int64_t>(k / 8), b = static_cast<int64_t>(k % 8);
    if (!shifted(dst(k)->src[1], dst(0)->src[1], a, b) || !shifted(src(k)->src[1], src(0)->src[1], a, b)) refuse(k);
  }
  // The stride of r*8 (r0) in the index: its coefficient of r over 8, when r appears only as r0.
  auto stride = [&](UOp idx, UOp r) {
    UOp r0 = r == ib ? i0 : j0;
    std::optional<int64_t> c = coefficient(idx->src[1], r);
    bool only_r0 = !has_free_range(substitute(idx->src[1], {{r0, UOp::index(0)}}), r);
    return c && *c % 8 == 0 && only_r0 ? std::optional<int64_t>(*c / 8) : std::nullopt;
  };
  std::optional<int64_t> si = stride(dst(0), ib), sj = stride(src(0), jb);
  if (!si || !sj || stride(dst(0), jb) != 1 || stride(src(0), ib) != 1)
    throw InternalError("a transpose8 GROUP's indices are not a transpose's, with constant strides (at " + printed_.line(group) + ")");
  auto base = [&](UOp idx) { return "b" + std::to_string(idx->src[0]->arg.as<int64_t>()) + " + " + val(simplified_at(idx->src[1], {}), depth()); };
  emit(depth(), "ow_transpose8_u32((const unsigned int*)(" + base(src(0)) + "), " + std::to_string(*sj) + "LL, (unsigned int*)(" + base(dst(0)) + "), " +
                    std::to_string(*si) + "LL);");
}

}  // namespace ow::backend::detail
