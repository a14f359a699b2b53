// Pass `gradient`: every GRADIENT node becomes the graph that computes it (src/grad): plain
// reverse mode over values, and through effects a tape in the forward and a backward that runs
// every loop in reverse. First, so every later pass sees only ordinary ops.
#include "grad/gradient.h"
#include "lower/lower.h"

namespace ow::lower {

UOp gradient(UOp root, Context& ctx) {
  if (!grad::has_gradient(root)) return root;
  static const Rule expanded{"a GRADIENT becomes its reverse-mode graph", Pat::ops({Ops::GRADIENT}), {}};
  UOp out = grad::expand(root);
  ctx.take_names(out);  // its temporaries (_acc0, _g1, ...) are named outside ctx.fresh_buffer
  if (ctx.on_fire) ctx.on_fire(expanded, root, out);
  return out;
}

}  // namespace ow::lower
