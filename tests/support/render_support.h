// Kernels rendered as a compiled run renders them: the kernel-opt passes for the compiler first
// (src/opt: the reduce interchange, blocking, ...), then the renderer. Serial kernels (the
// threads pass would split only big ones; these tests want the same C on every machine).
#pragma once
#include "backends/c/render.h"
#include "opt/opt.h"

namespace ow::test {

// A kernel or lowered program after the kernel-opt passes for o's compiler.
inline UOp optimized(UOp kernels, const backend::RenderOptions& o = {}) {
  opt::Options passes = opt::options_for(o.target, o.bounds_check);
  passes.threads = 1;
  return opt::optimize(kernels, passes);
}

inline backend::RenderedKernel render_optimized(UOp kernel, const backend::RenderOptions& o = {}) { return backend::render_kernel(optimized(kernel, o), o); }

}  // namespace ow::test
