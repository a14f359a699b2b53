// The compiled launcher (launcher.h): a lowered program's kernels rendered into one C unit
// (render_program_unit) and compiled once, or each alone (compile mode "kernel"), then called.
#include <algorithm>
#include <map>

#include "backends/c/kernel_abi.h"
#include "backends/c/render.h"
#include "backends/launcher.h"
#include "backends/program.h"
#include "interp/kernel_eval.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/kernel_slots.h"

namespace ow::backend {

// "step budget exceeded: ..." for the launch of l with the host loops at b.
std::string budget_message(uint64_t max, const HostLaunch& l, const HostBindings& b) {
  return "step budget exceeded: " + std::to_string(max) + " kernel launches, at kernel " + kernel_name(l.kernel) + " with " + bindings_text(b) +
         " (ow: --max-steps N raises it)";
}

namespace {

// Compiled kernels: by default the whole program is one translation unit and one compile
// (render_program_unit), its host loops of launches compiled too (run_loop); compile mode
// "kernel" compiles each kernel alone, as before (for comparison: ow bench). Everything a launch
// needs is laid out here once, so a launch only fills two arrays.
class CompiledLauncher : public Launcher {
 public:
  CompiledLauncher(Backend compiler, bool bounds_check, const std::string& mode) : compiler_(make_compiler(std::string(backend_name(compiler)))), per_kernel_(mode == "kernel") {
    if (mode != "program" && mode != "kernel") throw Error("compile mode must be 'program' (one translation unit) or 'kernel' (one per kernel), got '" + mode + "'");
    opts_.target = target_of(compiler);
    opts_.bounds_check = bounds_check;
  }

  void prepare(const HostProgram& p) override {
    std::vector<UOp> ks;
    for (const HostLaunch& l : p.launches) ks.push_back(l.kernel);
    std::vector<RenderedKernel> rendered;
    std::vector<RenderedLoop> loops;
    if (per_kernel_) {
      rendered = render_unit(ks, opts_).kernels;  // layout compiles each one's source: kernels of one body share it
    } else if (!ks.empty()) {
      RenderedUnit u = render_program_unit(p, opts_);
      libs_.push_back(compiler_->compile(u.source));
      rendered = std::move(u.kernels);
      loops = std::move(u.loops);
    }
    for (const HostLaunch& l : p.launches) kernels_.push_back(layout(l, std::move(rendered[l.index])));
    for (const RenderedLoop& r : loops) loops_.emplace(r.step, loop_layout(p, r));
  }

  // A host loop compiled into the unit, with the loops nested in it, runs in one call; the
  // runner words its refusals as the walk does (budget_message, bind_error) and marks what the
  // kernels stored as data.
  bool run_loop(const HostStep& s, int64_t n, const HostBindings& outer, LoopHost& h) override {
    auto it = loops_.find(&s);
    if (it == loops_.end()) return false;
    Loop& lp = it->second;
    if (n <= 0) return true;
    for (const HostLaunch* l : lp.body) {
      Compiled& c = kernels_[l->index];
      interp::BufferData* const* slots = h.slots(*l);
      for (size_t b = 0; b < c.bufs.size(); ++b) c.bufs[b] = slots[b]->data->bytes.data();
    }
    if (outer.size() != lp.outer.size()) throw InternalError("a compiled host loop was rendered inside " + std::to_string(lp.outer.size()) + " loops but runs inside " + std::to_string(outer.size()));
    for (size_t j = 0; j < lp.outer.size(); ++j) lp.outer[j] = outer[j].second;
    std::fill(lp.err.begin(), lp.err.end(), 0);
    std::fill(lp.ran.begin(), lp.ran.end(), 0);
    long long launches = static_cast<long long>(h.launches());
    int rc = lp.fn(n, lp.outer.data(), lp.bufs.data(), &launches, static_cast<long long>(h.max_launches()), lp.err.data(), lp.ran.data());
    h.launches() = static_cast<uint64_t>(launches);
    stored_as_data(lp, h);
    if (rc) loop_failed(rc, outer, lp, h);
    return true;
  }

  CompileStats compile_stats() const override { return compiler_->stats(); }

  void launch(const HostLaunch& l, interp::BufferData* const* slots, const int64_t* values, const HostBindings&) override {
    Compiled& c = kernels_[l.index];
    for (size_t s = 0; s < c.bufs.size(); ++s) c.bufs[s] = slots[s]->data->bytes.data();
    for (size_t j = 0; j < c.vals.size(); ++j) {
      if (c.var_bind[j] < 0) throw Error("kernel " + c.label + ": variable " + c.vars[j] + " is not bound");
      c.vals[j] = values[c.var_bind[j]];
    }
    long long err[abi::kSlots] = {};
    if (c.fn(c.bufs.data(), c.vals.data(), err) != 0) throw KernelFailed("kernel " + c.label + " (" + compiler_->name() + "): " + abi::describe(err, c.fail_nodes));
    for (int64_t slot : c.stored)  // compiled kernels do not track poison: what they write is data
      if (slot < static_cast<int64_t>(c.bufs.size())) slots[slot]->poison = nullptr;
  }

 private:
  using Fn = int (*)(void**, const long long*, long long*);
  struct Compiled {
    std::string label;  // the kernel's name in messages
    Fn fn = nullptr;
    std::map<long long, std::string> fail_nodes;
    std::vector<std::string> vars;  // the function's variables, in its order
    std::vector<int> var_bind;      // per variable: the launch's BIND giving it (-1: none)
    std::vector<int64_t> stored;    // DEFINE_GLOBAL slots the kernel writes
    std::vector<void*> bufs;        // scratch: the launch's buffer pointers
    std::vector<long long> vals;    // scratch: the variables' values
  };
  std::unique_ptr<Compiler> compiler_;
  bool per_kernel_;
  RenderOptions opts_;
  std::vector<std::shared_ptr<const Library>> libs_;  // held: the functions live in them
  std::vector<Compiled> kernels_;                      // by HostLaunch::index
  using LoopFn = int (*)(long long, const long long*, void***, long long*, long long, long long*, unsigned char*);
  struct Loop {
    LoopFn fn = nullptr;
    std::vector<NestLaunch> nest;         // the nest's launches, in the function's order
    std::vector<const HostLaunch*> body;  // per position: its launch
    std::vector<void**> bufs;             // per position: its kernel's buffer array (Compiled::bufs)
    std::vector<long long> outer;         // scratch: the enclosing loops' values
    std::vector<long long> err;           // scratch: abi::loop_slots(depth) entries
    std::vector<unsigned char> ran;       // scratch: per position, whether it completed once
  };
  std::map<const HostStep*, Loop> loops_;  // looked up once per loop run, not per launch

  Loop loop_layout(const HostProgram& p, const RenderedLoop& r) {
    Loop lp;
    lp.fn = reinterpret_cast<LoopFn>(libs_.back()->symbol(r.name));
    lp.nest = r.launches;
    for (const NestLaunch& l : r.launches) {
      lp.body.push_back(&p.launches[l.launch]);
      lp.bufs.push_back(kernels_[l.launch].bufs.data());
    }
    lp.outer.resize(r.outer.size());
    lp.err.resize(abi::loop_slots(r.depth));
    lp.ran.resize(r.launches.size());
    return lp;
  }

  // Compiled kernels do not track poison: what every launch that completed stored is data.
  void stored_as_data(const Loop& lp, LoopHost& h) {
    for (size_t i = 0; i < lp.body.size(); ++i) {
      if (!lp.ran[i]) continue;
      interp::BufferData* const* slots = h.slots(*lp.body[i]);
      const Compiled& c = kernels_[lp.body[i]->index];
      for (int64_t slot : c.stored)
        if (slot < static_cast<int64_t>(c.bufs.size())) slots[slot]->poison = nullptr;
    }
  }

  // The walk's bindings at the launch that stopped the nest: the loops around it, then the
  // nest's loops on the way to that launch, at the values err recorded.
  [[noreturn]] void loop_failed(int rc, const HostBindings& outer, const Loop& lp, LoopHost& h) {
    const long long* err = lp.err.data();
    size_t pos = static_cast<size_t>(err[abi::kLaunch]);
    const HostLaunch& l = *lp.body.at(pos);
    HostBindings b = outer;
    for (size_t d = 0; d < lp.nest[pos].loops.size(); ++d) b.push_back({lp.nest[pos].loops[d], err[abi::kIteration + d]});
    if (rc == abi::kBudgetExceeded) throw BudgetExceeded(budget_message(h.max_launches(), l, b));
    if (rc == abi::kBindRefused) {
      std::string why = bind_error(h.program(), l, b);
      if (why.empty()) throw InternalError("a compiled host loop refused a BIND the host walk accepts, at kernel " + l.name + " with " + bindings_text(b));
      throw Error(why);
    }
    const Compiled& c = kernels_[l.index];
    throw KernelFailed("kernel " + c.label + " (" + compiler_->name() + "): " + abi::describe(err, c.fail_nodes));
  }

  Compiled layout(const HostLaunch& l, RenderedKernel r) {
    Compiled c;
    c.label = c_identifier(l.name);
    if (per_kernel_) libs_.push_back(compiler_->compile(r.source));
    c.fn = reinterpret_cast<Fn>(libs_.back()->symbol(r.name));
    c.fail_nodes = std::move(r.fail_nodes);
    c.vars = std::move(r.vars);
    for (const std::string& v : c.vars) {
      int at = -1;
      for (size_t i = 0; i < l.binds.size(); ++i)
        if (var_name(l.binds[i].node->src[0]) == v) at = static_cast<int>(i);
      c.var_bind.push_back(at);
    }
    c.stored = slots_stored(l.kernel->src[0]);
    c.bufs.resize(l.buffers.size());
    c.vals.resize(c.vars.size());
    return c;
  }
};

}  // namespace

std::unique_ptr<Launcher> make_compiled_launcher(Backend compiler, bool bounds_check, const std::string& mode) {
  return std::make_unique<CompiledLauncher>(compiler, bounds_check, mode);
}

}  // namespace ow::backend
