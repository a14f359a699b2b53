// cc's two-thread kernels (backends/README.md, "Two threads"). The kernel-opt pass `threads`
// (src/opt/threads.cpp) decides on the graph which kernels run on two threads and splits them:
// KERNEL ("name", 2), the first half of its statements for one thread, the second for the other.
// Rendered here as two static functions and an entry that runs the upper half on a pthread
// created for this launch (no pool: `ow fuzz` forks, and a pool's threads do not survive a fork)
// while the calling thread runs the lower half, then joins.
#include "kernel_renderer.h"

namespace ow::backend::detail {

namespace {

// The entry: the upper half on a new thread, the lower half here; whichever of the two first
// claims the upper half runs it, so when the thread has not started by the time the lower half
// is done (its core is busy, or it could not be created), this thread runs it too instead of
// waiting. Either way each half runs once, on one thread, in its order. The lower half's error
// first, as the serial loop would report it.
std::string entry(const std::string& name) {
  std::string p = "ow_par_" + name, n = std::to_string(abi::kSlots);
  std::string claim = "__atomic_exchange_n(&job->claimed, 1, __ATOMIC_ACQ_REL) == 0";
  return "struct " + p + "_job { void** bufs; const long long* vars; long long err[" + n + "]; int rc; int claimed; };\n" +
         "static void* " + p + "_run(void* arg) {\n  struct " + p + "_job* job = (struct " + p + "_job*)arg;\n" +
         "  if (" + claim + ") job->rc = " + p + "_hi(job->bufs, job->vars, job->err);\n  return 0;\n}\n" +
         "int " + name + "(void** bufs, const long long* vars, long long* err) {\n" +
         "  struct " + p + "_job job_ = {bufs, vars, {0}, 0, 0}, *job = &job_;\n  ow_pthread_t thread;\n" +
         "  int spawned = pthread_create(&thread, 0, " + p + "_run, job) == 0;\n" +
         "  int rc = " + p + "_lo(bufs, vars, err);\n" +
         "  if ((!spawned || " + claim + ") && rc == 0) job->rc = " + p + "_hi(bufs, vars, job->err);\n" +
         "  if (spawned) pthread_join(thread, 0);\n" +
         "  if (rc != 0 || job->rc == 0) return rc;\n" +
         "  for (int q = 0; q < " + n + "; q++) err[q] = job->err[q];\n  return job->rc;\n}\n";
}

// The kernel with only the statements [from, to) of its SINK, named ("name",).
UOp part(UOp kernel, size_t from, size_t to) {
  const std::vector<UOp>& stmts = kernel->src[0]->src;
  std::vector<UOp> src = kernel->src;
  src[0] = UOp::sink(std::vector<UOp>(stmts.begin() + static_cast<long>(from), stmts.begin() + static_cast<long>(to)));
  return UOp::make(Ops::KERNEL, kernel->dtype, std::move(src), Arg(ArgTuple{Arg(kernel_name(kernel))}), kernel->tag);
}

}  // namespace

RenderedKernel render_threaded(UOp kernel, const RenderOptions& opts, const std::string& name) {
  size_t n = kernel->src.at(0)->src.size();
  if (n % 2) throw InternalError("a kernel for two threads has " + std::to_string(n) + " statements, not two equal halves (at kernel " + kernel_name(kernel) + ")");
  RenderedKernel out;
  out.name = out.own_name = name.empty() ? c_identifier(kernel_name(kernel)) : name;
  std::string p = "ow_par_" + out.name;
  RenderedKernel lo = KernelRenderer(part(kernel, 0, n / 2), opts, p + "_lo", "static ").run();
  RenderedKernel hi = KernelRenderer(part(kernel, n / 2, n), opts, p + "_hi", "static ").run();
  if (lo.vars != hi.vars || lo.params != hi.params)
    throw InternalError("the halves of two-thread kernel " + kernel_name(kernel) + " take other buffers or variables");
  out.function = lo.function + hi.function + entry(out.name);
  out.parts = lo.parts;
  out.parts |= hi.parts;
  out.source = prelude(opts.target, out.parts) + out.function;
  out.params = lo.params;
  out.vars = lo.vars;
  out.fail_nodes = lo.fail_nodes;
  out.fail_nodes.insert(hi.fail_nodes.begin(), hi.fail_nodes.end());
  return out;
}

}  // namespace ow::backend::detail
