// The pipeline: read it top to bottom (reference/LOWERING.md describes each stage's forms).
#include "lower/lower.h"

#include "uop/error.h"
#include "uop/shape.h"

namespace ow::lower {

UOp Context::fresh_range(UOp extent, AxisType axis) { return UOp::range(extent, next_range++, axis); }

const std::vector<Pass>& passes() {
  static const std::vector<Pass> list{
      {"cleanup", "drop forward identities (DETACH, REDUCE_BACKWARD, ...), fold reshape chains, simplify", cleanup},
      {"scans", "REDUCE over OUTER ranges and assign scans become sequential loops over buffers", scans},
      {"realize", "mark realize points with CONTIGUOUS: outputs, reductions, stores that read their target", realize},
      {"rangeify", "realize points become BUFFERIZE over fresh ranges; movement ops become index math", rangeify},
      {"kernelize", "every BUFFERIZE and STORE becomes a KERNEL over DEFINE_GLOBAL buffers", kernelize},
      {"schedule", "order kernels into host steps; OUTER ranges become host loops", schedule},
  };
  return list;
}

UOp rewrite(UOp root, const PatternMatcher& pm, Context& ctx, const std::string& name, bool parents_first) {
  RewriteOptions opts;
  opts.name = name;
  opts.ctx = &ctx;
  opts.bottom_up = parents_first;
  opts.on_fire = ctx.on_fire;
  return graph_rewrite(root, pm, opts);
}

namespace {
// What the compiled path does not handle yet is refused up front, with a clear message, rather
// than lowered wrongly: tensors with an empty (size 0) dimension.
void check_supported(UOp root) {
  for (UOp u : toposort(root))
    for (UOp d : u->shape.kind == ShapeInfo::Kind::Shaped ? u->shape.dims : std::vector<UOp>{})
      if (d->op == Ops::CONST && d.const_value() == 0)
        throw Error(unsupported(std::string(op_name(u->op)) + " of shape " + render_shape(u->shape.dims) + " has an empty dimension"));
}
}  // namespace

std::string unsupported(const std::string& what) { return "lowering: " + what + " (not supported by the compiled path yet)"; }

UOp lower(UOp root, Context& ctx, const std::function<void(const Pass&, UOp)>& after_each) {
  check_supported(root);
  for (const Pass& p : passes()) {
    root = p.run(root, ctx);
    if (after_each) after_each(p, root);
  }
  return root;
}

UOp lower(UOp root, const std::function<void(const Pass&, UOp)>& after_each) {
  Context ctx;
  return lower(root, ctx, after_each);
}

}  // namespace ow::lower
