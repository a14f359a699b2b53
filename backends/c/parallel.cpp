// cc's two-thread kernels (backends/README.md, "Two threads"). A big kernel whose outermost
// range r is provably parallel is rendered, under #ifndef __TINYC__, as two static functions,
// the kernel with r's iterations [0, n/2) and with [n/2, n) (each with a constant extent, so the
// loop shapes still apply), and an entry that runs the upper half on a pthread created for this
// launch (no pool: `ow fuzz` forks, and a pool's threads do not survive a fork) while the calling
// thread runs the lower half, then joins. tcc (#else) keeps the serial function.
//
// Results stay bit-identical when every element is computed by one thread in the same order as
// before: that holds when r's iterations write disjoint elements and none reads what another
// writes. Proven here (otherwise the kernel is serial): every statement is a STORE under an END
// whose outermost range is r; every STORE's index is c*r + f with f free of r and 0 <= f < c
// by its bounds, one c per buffer (iteration r owns elements [c*r, c*r + c)); a buffer stored to
// is loaded only at exactly a store's index into it (its own elements); the buffers are distinct
// slots; no range's extent depends on r; no op other than loads, stores and pure values. A kernel
// that may report an error (a rendered ow_fail) stays serial too: the serial loop stops at the
// first failing iteration, and the upper half would have written elements beyond it.
#include <algorithm>
#include <cstdlib>
#include <set>

#include "kernel_renderer.h"
#include "uop/pattern.h"
#include "uop/symbolic.h"

namespace ow::backend {

int threads_setting() {
  const char* e = std::getenv("OW_THREADS");
  std::string v = e ? e : "";
  if (v.empty() || v == "2") return 2;
  if (v == "1") return 1;
  throw Error("OW_THREADS must be 1 (serial kernels) or 2 (cc runs big parallel kernels on two threads), got '" + v + "'");
}

namespace detail {

namespace {

// Ops a parallel kernel may hold: memory through LOAD/STORE only, everything else pure.
bool plain_op(Ops op) {
  switch (op) {
    case Ops::SINK: case Ops::END: case Ops::STORE: case Ops::LOAD: case Ops::INDEX: case Ops::DEFINE_GLOBAL:
    case Ops::DEFINE_VAR: case Ops::BIND: case Ops::RANGE: case Ops::REDUCE: case Ops::CONST: case Ops::CAST: case Ops::BITCAST:
      return true;
    default: return is_alu(op);
  }
}

int64_t slot_of(UOp idx) { return idx->src.at(0)->arg.as<int64_t>(); }

}  // namespace

// The STORE's index c*r + f, 0 <= f < c: records c for its buffer (false when not of that form
// or another store to the buffer has another c).
bool KernelRenderer::owns_row(UOp st, UOp r, std::map<int64_t, int64_t>& rows) const {
  UOp idx = st->src.at(0);
  if (idx->op != Ops::INDEX || idx->src.size() < 2 || idx->src[0]->op != Ops::DEFINE_GLOBAL) return false;
  UOp lin = idx->src[1];
  std::optional<int64_t> c = coefficient(lin, r);
  if (!c || *c < 1) return false;
  UOp f = simplify(substitute(lin, {{r, UOp::index(0)}}));
  if (f.vmin() < 0 || f.vmax() >= *c) return false;
  return rows.emplace(slot_of(idx), *c).first->second == *c;
}

// The range whose iterations may run on two threads, or none (the conditions above).
std::optional<UOp> KernelRenderer::parallel_range() {
  UOp ast = kernel_->src.at(0);
  printed_ = number_graph(kernel_);
  analyze(ast);
  UOp r;
  for (UOp end : ast->src) {
    if (end->op != Ops::END || end->src.size() < 2 || end->src[0]->op != Ops::STORE || (r && end->src[1] != r)) return std::nullopt;
    r = end->src[1];
  }
  if (!r || r->op != Ops::RANGE || !r->src.at(0).is_const() || r->src[0].vmin() < 2) return std::nullopt;
  std::set<const UOpNode*> buffers;
  for (size_t s = 1; s < kernel_->src.size(); ++s) buffers.insert(kernel_->src[s].get());
  if (buffers.size() + 1 != kernel_->src.size()) return std::nullopt;  // a buffer in two slots
  std::map<int64_t, int64_t> rows;  // buffer slot -> the elements an iteration of r owns
  std::set<std::pair<int64_t, const UOpNode*>> stored;  // (slot, index) of every STORE
  std::vector<UOp> nodes = toposort(ast);
  for (UOp u : nodes) {
    if (!plain_op(u->op)) return std::nullopt;
    if (u->op == Ops::RANGE && u != r && depends(u->src.at(0), r)) return std::nullopt;
    if (u->op == Ops::REDUCE && std::find(u->src.begin() + 1, u->src.end(), r) != u->src.end()) return std::nullopt;
    if (u->op == Ops::END && (u->src.size() < 2 || std::find(u->src.begin() + 2, u->src.end(), r) != u->src.end())) return std::nullopt;
    if (u->op != Ops::STORE) continue;
    if (!owns_row(u, r, rows)) return std::nullopt;
    stored.insert({slot_of(u->src[0]), u->src[0]->src[1].get()});
  }
  for (UOp u : nodes)
    if (u->op == Ops::LOAD) {
      UOp idx = u->src.at(0);
      if (idx->op != Ops::INDEX || idx->src.size() < 2 || idx->src[0]->op != Ops::DEFINE_GLOBAL) return std::nullopt;
      if (rows.count(slot_of(idx)) && !stored.count({slot_of(idx), idx->src[1].get()})) return std::nullopt;
    }
  return r;
}

namespace {

// A thread costs about 30-50 us to create and join; a kernel with 2^20 innermost steps takes
// about 0.3-1 ms even vectorized, so half of it on another core saves several times the cost.
// Smaller kernels (a scan's step, an MLP layer of a few thousand elements) stay serial.
// OW_PARALLEL_MIN_STEPS lowers it for tests: the fuzz-smoke-threads suite splits small kernels
// so that random graphs exercise the split and its safety analysis.
int64_t min_parallel_steps() {
  const char* e = std::getenv("OW_PARALLEL_MIN_STEPS");
  if (!e || !*e) return int64_t{1} << 20;
  char* end = nullptr;
  long long v = std::strtoll(e, &end, 10);
  if (*end || v < 1) throw Error(std::string("OW_PARALLEL_MIN_STEPS must be a positive number of innermost steps, got '") + e + "'");
  return v;
}

// The innermost steps of the kernel, at least: per store nest, the product of the smallest
// extents of the ranges it runs (saturating).
int64_t steps(UOp ast) {
  int64_t total = 0;
  for (UOp end : ast->src) {
    int64_t n = 1;
    for (UOp u : toposort(end))
      if (u->op == Ops::RANGE) n = __builtin_mul_overflow(n, std::max<int64_t>(u->src.at(0).vmin(), 0), &n) ? INT64_MAX : n;
    total = __builtin_add_overflow(total, n, &total) ? INT64_MAX : total;
  }
  return total;
}

// The kernel with r's iterations [lo, lo + n) as a range of extent n from 0.
UOp half(UOp kernel, UOp r, int64_t lo, int64_t n) {
  UOp h = r.replace_src({UOp::index(n)});
  UOp at = lo ? h + lo : h;
  std::vector<UOp> ends;
  for (UOp end : kernel->src[0]->src) {
    std::vector<UOp> src = substitute(end, {{r, at}})->src;
    src[1] = h;
    ends.push_back(end.replace_src(std::move(src)));
  }
  std::vector<UOp> ks = kernel->src;
  ks[0] = kernel->src[0].replace_src(std::move(ends));
  return kernel.replace_src(std::move(ks));
}

// `fn` (a kernel's function, as render.cpp writes it) renamed from `name` to the static `to`.
std::string as_static(std::string fn, const std::string& name, const std::string& to) {
  std::string sig = "int " + name + "(void** bufs,";
  size_t at = fn.find(sig);
  if (at == std::string::npos) throw InternalError("parallel: no signature of " + name + " in its function");
  return fn.replace(at, sig.size(), "static int " + to + "(void** bufs,");
}

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

}  // namespace

// The parallel function of `serial` when opts ask for threads and the kernel qualifies; else
// serial itself. The helpers are named ow_par_<name>_... (unit.cpp renames them with the kernel).
RenderedKernel parallelize(UOp kernel, RenderedKernel serial, const RenderOptions& opts) {
  RenderOptions one = opts;
  one.threads = 1;
  std::optional<UOp> r = opts.threads >= 2 && opts.target == Target::cc ? KernelRenderer(kernel, one).parallel_range() : std::nullopt;
  if (!r || steps(kernel->src[0]) < min_parallel_steps() || serial.function.find("ow_fail(") != std::string::npos) return serial;
  int64_t n = (*r)->src[0].vmin(), mid = n / 2;
  RenderedKernel lo = KernelRenderer(half(kernel, *r, 0, mid), one).run(), hi = KernelRenderer(half(kernel, *r, mid, n - mid), one).run();
  for (const RenderedKernel* k : {&lo, &hi})
    if (k->function.find("ow_fail(") != std::string::npos || k->vars != serial.vars || k->params != serial.params || k->name != serial.name) return serial;
  std::string p = "ow_par_" + serial.name;
  serial.function = as_static(lo.function, lo.name, p + "_lo") + as_static(hi.function, hi.name, p + "_hi") + entry(serial.name);
  serial.source = prelude(opts.target) + serial.function;
  return serial;
}

}  // namespace detail

}  // namespace ow::backend
