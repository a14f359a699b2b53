// A transpose8 GROUP (kernel-opt pass `transposes`, args.h): 64 STOREs that copy an 8x8 tile of
// 4-byte elements, written as one call of the prelude's ow_transpose8_u32, a transpose in
// registers. Store (a, b) of the group (a-major) writes dst + a*si + b and reads src + a + b*sj;
// the call is made only when all 64 indices say so (else the pass is wrong: an InternalError).
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
  // the constant c with index(k) == index(0) + c, if there is one
  auto offset = [&](UOp idx, UOp idx0) -> std::optional<int64_t> {
    UOp d = simplify(idx->src[1] - idx0->src[1]);
    return d->op == Ops::CONST && d->arg.is<int64_t>() ? std::optional<int64_t>(d->arg.as<int64_t>()) : std::nullopt;
  };
  auto refuse = [&](size_t k) {
    throw InternalError("a transpose8 GROUP is not an 8x8 transposing copy at its store " + std::to_string(k) + " (at " + printed_.line(group->src[k]) + ")");
  };
  for (size_t k = 0; k < 64; ++k)  // every store a plain copy first: src(k) is a LOAD's INDEX
    if (!plain_copy(k)) refuse(k);
  std::optional<int64_t> si = offset(dst(8), dst(0)), sj = offset(src(1), src(0));
  if (!si || !sj) throw InternalError("a transpose8 GROUP's strides are not constants (at " + printed_.line(group) + ")");
  for (size_t k = 0; k < 64; ++k) {
    int64_t a = static_cast<int64_t>(k / 8), b = static_cast<int64_t>(k % 8);
    if (offset(dst(k), dst(0)) != a * *si + b || offset(src(k), src(0)) != a + b * *sj) refuse(k);
  }
  auto base = [&](UOp idx) { return "b" + std::to_string(idx->src[0]->arg.as<int64_t>()) + " + " + val(simplified_at(idx->src[1], {}), depth()); };
  emit(depth(), "ow_transpose8_u32((const unsigned int*)(" + base(src(0)) + "), " + std::to_string(*sj) + "LL, (unsigned int*)(" + base(dst(0)) + "), " +
                    std::to_string(*si) + "LL);");
}

}  // namespace ow::backend::detail
