// Kernel-opt pass `threads` (cc): a big kernel whose outermost range r is provably parallel
// becomes two halves, its statements over r's iterations [0, n/2) and then over [n/2, n) (each
// over a range of constant extent from 0, so every loop shape of the renderer still applies),
// for two threads: KERNEL arg ("name", 2) (args.h, kernel_threads). The renderer runs the upper
// half on a new thread while the caller runs the lower.
//
// Results stay bit-identical when every element is computed by one thread in the same order as
// before: that holds when r's iterations write disjoint elements and none reads what another
// writes. Proven here (otherwise the kernel stays as it is): every statement is a STORE under an
// END whose outermost range is r; every STORE's index is c*r + f with f free of r and 0 <= f < c
// by its bounds, one c per buffer (iteration r owns elements [c*r, c*r + c)); a buffer stored to
// is loaded only at exactly a store's index into it (its own elements); the buffers are distinct
// slots; no range's extent depends on r; no op other than loads, stores and pure values. A kernel
// that can report an error stays serial too: the serial loop stops at the first failing
// iteration, and the upper half would have written elements beyond it.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "opt/opt.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/may_fail.h"
#include "uop/symbolic.h"
#include "uop/verify.h"

namespace ow::opt {

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

// The STORE's index c*r + f, 0 <= f < c: records c for its buffer (false when not of that form
// or another store to the buffer has another c).
bool owns_row(UOp st, UOp r, std::map<int64_t, int64_t>& rows) {
  UOp idx = st->src.at(0);
  if (idx->op != Ops::INDEX || idx->src.size() < 2 || idx->src[0]->op != Ops::DEFINE_GLOBAL) return false;
  UOp lin = idx->src[1];
  std::optional<int64_t> c = coefficient(lin, r);
  if (!c || *c < 1) return false;
  UOp f = simplify(substitute(lin, {{r, UOp::index(0)}}));
  if (f.vmin() < 0 || f.vmax() >= *c) return false;
  return rows.emplace(slot_of(idx), *c).first->second == *c;
}

// Every load of a buffer the kernel stores to reads one of the stores' own indices.
bool loads_own_elements(const std::vector<UOp>& nodes, const std::map<int64_t, int64_t>& rows) {
  std::set<std::pair<int64_t, const UOpNode*>> stored;  // (slot, index) of every STORE
  for (UOp u : nodes)
    if (u->op == Ops::STORE) stored.insert({slot_of(u->src[0]), u->src[0]->src[1].get()});
  for (UOp u : nodes)
    if (u->op == Ops::LOAD) {
      UOp idx = u->src.at(0);
      if (idx->op != Ops::INDEX || idx->src.size() < 2 || idx->src[0]->op != Ops::DEFINE_GLOBAL) return false;
      if (rows.count(slot_of(idx)) && !stored.count({slot_of(idx), idx->src[1].get()})) return false;
    }
  return true;
}

// The range whose iterations may run on two threads, or none (the conditions above).
std::optional<UOp> parallel_range(UOp kernel, bool bounds_check) {
  UOp ast = kernel->src.at(0), r;
  for (UOp end : ast->src) {
    if (end->op != Ops::END || end->src.size() < 2 || end->src[0]->op != Ops::STORE || (r && end->src[1] != r)) return std::nullopt;
    r = end->src[1];
  }
  if (!r || r->op != Ops::RANGE || !r->src.at(0).is_const() || r->src[0].vmin() < 2) return std::nullopt;
  std::set<const UOpNode*> buffers;
  for (size_t s = 1; s < kernel->src.size(); ++s) buffers.insert(kernel->src[s].get());
  if (buffers.size() + 1 != kernel->src.size()) return std::nullopt;  // a buffer in two slots
  std::map<int64_t, int64_t> rows;  // buffer slot -> the elements an iteration of r owns
  std::vector<UOp> nodes = toposort(ast);
  for (UOp u : nodes) {
    if (!plain_op(u->op) || may_fail(u, bounds_check)) return std::nullopt;
    if (u->op == Ops::RANGE && u != r && has_free_range(u->src.at(0), r)) return std::nullopt;
    if (u->op == Ops::REDUCE && std::find(u->src.begin() + 1, u->src.end(), r) != u->src.end()) return std::nullopt;
    if (u->op == Ops::END && std::find(u->src.begin() + 2, u->src.end(), r) != u->src.end()) return std::nullopt;
    if (u->op == Ops::STORE && !owns_row(u, r, rows)) return std::nullopt;
  }
  if (!loads_own_elements(nodes, rows)) return std::nullopt;
  return r;
}

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

// The kernel's statements with r's iterations [lo, lo + n) as a range of extent n from 0.
std::vector<UOp> half(UOp ast, UOp r, int64_t lo, int64_t n) {
  UOp h = r.replace_src({UOp::index(n)});
  UOp at = lo ? h + lo : h;
  std::vector<UOp> ends;
  for (UOp end : ast->src) {
    std::vector<UOp> src = substitute(end, {{r, at}})->src;
    src[1] = h;
    ends.push_back(end.replace_src(std::move(src)));
  }
  return ends;
}

// KERNEL(SINK(END(store, r, ...)...)) -> KERNEL(SINK(the lower half's statements, the upper
// half's)) with arg ("name", 2).
UOp split_in_two(const Match& m) {
  const Options& o = m.context<Options>();
  UOp k = m.node;
  if (o.threads < 2 || kernel_threads(k) > 1 || steps(k->src[0]) < min_parallel_steps()) return UOp();
  std::optional<UOp> r = parallel_range(k, o.bounds_check);
  if (!r) return UOp();
  int64_t n = (*r)->src[0].vmin(), mid = n / 2;
  // OW_FAULT=threads: a deliberately wrong split (the upper half skips its first iteration), for
  // the test that ow check --passes names this pass.
  int64_t skip = std::getenv("OW_FAULT") && std::string(std::getenv("OW_FAULT")) == "threads" ? 1 : 0;
  std::vector<UOp> stmts = half(k->src[0], *r, 0, mid), hi = half(k->src[0], *r, mid + skip, n - mid - skip);
  stmts.insert(stmts.end(), hi.begin(), hi.end());
  std::vector<UOp> src = k->src;
  src[0] = UOp::sink(std::move(stmts));
  return UOp::make(Ops::KERNEL, k->dtype, std::move(src), Arg(ArgTuple{Arg(kernel_name(k)), Arg(int64_t{2})}), k->tag);
}

}  // namespace

int threads_setting() {
  const char* e = std::getenv("OW_THREADS");
  std::string v = e ? e : "";
  if (v.empty() || v == "2") return 2;
  if (v == "1") return 1;
  throw Error("OW_THREADS must be 1 (serial kernels) or 2 (cc runs big parallel kernels on two threads), got '" + v + "'");
}

const PatternMatcher& threads_rules() {
  static const PatternMatcher pm({{"a big kernel whose outer range is provably parallel runs its two halves on two threads", Pat::ops({Ops::KERNEL}), split_in_two}});
  return pm;
}

}  // namespace ow::opt
