// The scalar kernel evaluator (kernel_eval.h): running a compiled kernel (kernel_eval_impl.h
// describes the compiled form, kernel_eval_compile.cpp builds it). A run binds the buffers and
// variables, then runs the top-level statements; a loop recomputes only the nodes of the level
// whose range changed, and checks its invariant nodes against their cache.
#include "interp/kernel_eval.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "interp/dispatch.h"
#include "interp/kernel_eval_impl.h"
#include "uop/args.h"

namespace ow::interp {

using kernel_eval::get;

// ---------- diagnostics ----------
void Kernel::Impl::fail(UOp at, const std::string& msg) const {
  std::vector<std::pair<UOp, int64_t>> b;
  for (Node* r : active) b.push_back({r->u, r->v.i});
  throw Error(msg + "\n  at " + describe(at) + "\n  in kernel " + opts.name + "\n  with " + bindings_text(b));
}

std::string Kernel::Impl::slot_text(int slot) const {
  if (slot < 0) {
    UOp r = regs[static_cast<size_t>(-1 - slot)];
    return "register " + std::to_string(r->arg.as<int64_t>()) + " of " + std::to_string(r->dtype.size) + " elements";
  }
  const Slot& s = slots[static_cast<size_t>(slot)];
  return "buffer " + (s.name.empty() ? "" : "'" + s.name + "' ") + "(slot " + std::to_string(slot) + ") of " + std::to_string(s.size) + " elements";
}

// ---------- loops ----------
bool Kernel::Impl::fresh(const Node* n) const {
  if (n->stamp < base) return false;
  for (const Node* d : n->deps)
    if (d->changed_at > n->stamp) return false;
  return true;
}

void Kernel::Impl::ensure(const std::vector<Node*>& list) {
  for (Node* x : list)
    if (!fresh(x)) {
      x->fn(*this, *x);
      x->stamp = clock;
      ++ops;
    }
}

template <class Inner> void Kernel::Impl::nest(Loop& L, size_t j, Inner& inner) {
  Node* r = L.ranges[j];
  int64_t n = L.ext[j];
  std::vector<Node*>& lv = L.levels[j];
  bool last = j + 1 == L.ranges.size();
  active.push_back(r);
  for (int64_t k = 0; k < n; ++k) {
    r->v.i = k;
    r->changed_at = ++clock;
    for (Node* x : lv) {
      x->fn(*this, *x);
      x->stamp = clock;
    }
    ops += lv.size();
    if (last) inner();
    else nest(L, j + 1, inner);
  }
  active.pop_back();
}

template <class Inner> void Kernel::Impl::run_loop(Loop& L, Inner&& inner) {
  for (size_t j = 0; j < L.ranges.size(); ++j) {
    ensure(L.extent_lists[j]);
    Node* e = L.extent_nodes[j];
    int64_t n = e->v.i;
    if (opts.max_loop && n > opts.max_loop)
      fail(L.ranges[j]->u, "range extent " + std::to_string(n) + " is over the limit of " + std::to_string(opts.max_loop));
    L.ext[j] = n;
  }
  for (int64_t n : L.ext)
    if (n <= 0) return;
  ensure(L.invariant);
  if (L.ranges.empty()) inner();
  else nest(L, 0, inner);
}

// REDUCE's fold (kernel_eval_ops.h) goes through here, so the loop templates stay in this file.
void Kernel::Impl::run_loop_fn(Loop& L, const std::function<void()>& inner) { run_loop(L, inner); }

void Kernel::Impl::run_stmt(int k) {
  Stmt& s = stmts[static_cast<size_t>(k)];
  if (s.is_store) return s.store(*this, s);
  Loop& L = loops[static_cast<size_t>(s.loop)];
  if (L.stmts.size() == 1) {  // the common loop: one store, called directly
    Stmt& only = stmts[static_cast<size_t>(L.stmts[0])];
    if (only.is_store) {
      StoreFn f = only.store;
      run_loop(L, [&] { f(*this, only); });
      return;
    }
  }
  run_loop(L, [&] {
    for (int b : L.stmts) run_stmt(b);
  });
}

// ---------- a run ----------
void Kernel::Impl::bind_buffers(const KernelArgs& args) {
  size_t nslots = 0;
  for (auto& [i, g] : globals) nslots = std::max(nslots, static_cast<size_t>(g->arg.as<int64_t>()) + 1);
  slots.assign(nslots, Slot{});
  for (auto& [i, g] : globals) {
    size_t k = static_cast<size_t>(g->arg.as<int64_t>());
    if (k >= args.buffers.size() || !args.buffers[k])
      compile_fail(g, "DEFINE_GLOBAL slot " + std::to_string(k) + " has no buffer: the kernel is given " + std::to_string(args.buffers.size()));
    BufferData* bd = args.buffers[k];
    std::string name = k < args.names.size() ? args.names[k] : "";
    if (bd->dtype.ptr || bd->dtype.scalar != g->dtype.scalar || !bd->data || bd->data->dtype.scalar != g->dtype.scalar)
      compile_fail(g, "DEFINE_GLOBAL slot " + std::to_string(k) + " is " + to_string(g->dtype) + " but the buffer bound to it" +
                          (name.empty() ? "" : " ('" + name + "')") + " holds " + to_string(bd->dtype) + " data");
    if (bd->poison && bd->poison->size != bd->data->size)
      compile_fail(g, "the poison mask of the buffer bound to slot " + std::to_string(k) + " does not match its size");
    slots[k] = Slot{bd, bd->data->bytes.data(), bd->poison ? std::as_const(*bd->poison).as<uint8_t>() : nullptr, bd->data->size, name};
  }
}

// Loads see the buffers as they were at launch, also those the kernel stores to: the stores
// keep what they overwrite (launch_snapshot.h).
void Kernel::Impl::snapshot_written_loads() {
  for (int64_t w : stored) {
    BufferData* bd = slots[static_cast<size_t>(w)].bd;
    auto same = [&](const Slot& x) { return x.bd && x.bd->data == bd->data; };
    bool read = std::any_of(loaded.begin(), loaded.end(), [&](int64_t l) { return same(slots[static_cast<size_t>(l)]); });
    if (!read || slots[static_cast<size_t>(w)].snap) continue;
    snaps.push_back(std::make_unique<LaunchSnapshot>(*bd));
    for (Slot& x : slots)
      if (same(x)) x.snap = snaps.back().get();
  }
}

void Kernel::Impl::bind_vars(const KernelArgs& args) {
  for (size_t i : vars) {
    Node& n = nodes[i];
    const std::string& name = var_name(n.u);
    auto it = args.vars.find(name);
    if (it == args.vars.end()) compile_fail(n.u, "variable '" + name + "' is not bound: the launch gives it no value");
    int64_t x = it->second;
    dispatch(n.u->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      get<T>(n.v) = static_cast<T>(x);
    });
  }
}

// Each launch starts with its registers zero (and never poison: a store of poison marks them).
// Their memory is made by the first launch and cleared by the next ones.
void Kernel::Impl::bind_registers() {
  if (reg_data.size() == regs.size()) {
    for (BufferData& d : reg_data) {
      std::memset(d.data->bytes.data(), 0, d.data->bytes.size());
      std::memset(d.poison->bytes.data(), 0, d.poison->bytes.size());
      d.poison->set_nonzero(0);
    }
    return;
  }
  for (UOp r : regs) {
    BufferData d{r->dtype.base(), std::make_shared<Storage>(r->dtype.base(), r->dtype.size), std::make_shared<Storage>(dtypes::bool_, r->dtype.size)};
    d.poison->set_nonzero(0);
    reg_data.push_back(std::move(d));
  }
  for (BufferData& d : reg_data) reg_slots.push_back(Slot{&d, d.data->bytes.data(), d.poison->bytes.data(), d.data->size, "", nullptr});
}

void Kernel::Impl::run(const KernelArgs& args) {
  active.clear();
  snaps.clear();
  ops = 0;
  base = ++clock;
  bind_buffers(args);
  snapshot_written_loads();
  bind_vars(args);
  bind_registers();
  for (int k : top) run_stmt(k);
  snaps.clear();
}

// ---------- the public side ----------
Kernel::Kernel(UOp ast, KernelOptions opts) : impl_(std::make_unique<Impl>(ast, std::move(opts))) {}
Kernel::~Kernel() = default;
Kernel::Kernel(Kernel&&) noexcept = default;
Kernel& Kernel::operator=(Kernel&&) noexcept = default;

void Kernel::run(const KernelArgs& args) { impl_->run(args); }
uint64_t Kernel::ops() const { return impl_->ops; }

void run_kernel(UOp ast, const KernelArgs& args, const KernelOptions& opts) { Kernel(ast, opts).run(args); }

}  // namespace ow::interp
