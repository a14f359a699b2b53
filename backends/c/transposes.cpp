// An END marked transpose8 (kernel-opt pass `transposes`, args.h): END(STORE, ..., a, b), whose
// loops a, b < 8 copy an 8x8 tile of 4-byte elements, written as one call of ow_transpose8_u32, a
// transpose in registers (cc's from its prelude, tcc's from backends/tcc/vector_loops.h). The
// store writes dst[base_d + a*sa + b] from src[base_s + a + b*sb]; the call is made only when its
// indices say so (else the pass is wrong: an InternalError). The loops outside a, b are open.
#include "kernel_renderer.h"
#include "opt/loop_shapes.h"
#include "uop/symbolic.h"

namespace ow::backend::detail {

void KernelRenderer::transpose8(UOp end) {
  size_t n = end->src.size();
  UOp st = end->src[0], a = end->src[n - 2], b = end->src[n - 1];
  auto refuse = [&](const std::string& why) { throw InternalError("an END marked transpose8 " + why + " (at " + printed_.line(end) + ")"); };
  UOp dst = st->src.at(0), v = st->src.at(1), src = v->src.empty() ? UOp() : v->src[0];
  if (v->op != Ops::LOAD || v->src.size() != 1 || dst->src.size() != 2 || src->op != Ops::INDEX || src->src.size() != 2 || src->src[0]->op != Ops::DEFINE_GLOBAL ||
      dst->src[0]->op != Ops::DEFINE_GLOBAL || v->dtype != dst->dtype.base() || v->dtype.itemsize() != 4)
    refuse("is not a plain copy of 4-byte elements between global buffers");
  for (UOp r : {a, b})
    if (const int64_t* e = opt::const_extent(r); !e || *e != 8) refuse("has tile loops of other than 8 steps");
  // dst moves 1 per b and sa per a, src 1 per a and sb per b (coefficient: affine in the range).
  std::optional<int64_t> sa = coefficient(dst->src[1], a), sb = coefficient(src->src[1], b);
  if (!sa || !sb || coefficient(dst->src[1], b) != 1 || coefficient(src->src[1], a) != 1) refuse("has indices that are not a transpose's, with constant strides");
  auto base = [&](UOp idx) {
    return "b" + std::to_string(idx->src[0]->arg.as<int64_t>()) + " + " + val(simplified_at(idx->src[1], {{a, UOp::index(0)}, {b, UOp::index(0)}}), depth());
  };
  emit(depth(), "ow_transpose8_u32((const unsigned int*)(" + base(src) + "), " + std::to_string(*sb) + "LL, (unsigned int*)(" + base(dst) + "), " +
                    std::to_string(*sa) + "LL);");
}

}  // namespace ow::backend::detail
