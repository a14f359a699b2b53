#include "backends/program.h"

#include "backends/launcher.h"

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "backends/compiler.h"
#include "backends/tiered.h"
#include "opt/opt.h"
#include "interp/compare.h"
#include "interp/inputs.h"
#include "interp/kernel_eval.h"
#include "interp/poison_flow.h"
#include "lower/lower.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/kernel_slots.h"
#include "uop/text.h"
#include "uop/verify.h"

namespace ow::backend {

namespace {
class InterpLauncher : public Launcher {
 public:
  void prepare(const HostProgram& p) override {
    for (const HostLaunch& l : p.launches) prepared(l);
  }
  bool tracks_poison() const override { return true; }

  void launch(const HostLaunch& l, interp::BufferData* const* slots, const int64_t* values, const HostBindings&) override {
    interp::KernelArgs a;
    a.buffers.assign(slots, slots + l.buffers.size());
    a.vars = host_vars(l, values);
    prepared(l).run(a);
  }

 private:
  std::vector<std::unique_ptr<interp::Kernel>> kernels_;  // by HostLaunch::index

  interp::Kernel& prepared(const HostLaunch& l) {
    if (kernels_.size() <= l.index) kernels_.resize(l.index + 1);
    std::unique_ptr<interp::Kernel>& k = kernels_[l.index];
    if (!k) {
      interp::KernelOptions o;
      o.name = kernel_name(l.kernel);
      k = std::make_unique<interp::Kernel>(l.kernel->src[0], o);
    }
    return *k;
  }
};
// The runner's part of the walk (uop/host_program.h): buffers by name, the launch budget, each
// launch handed to the launcher, then the caller's hooks.
class Host : public HostHooks, public LoopHost {
 public:
  // poison_fresh: buffers the caller did not give start uninitialized (all poison), as in the
  // interpreter; for a run whose launcher tracks poison (InterpLauncher). quiet: the caller's
  // hooks (on_launch, observer) are not told (a run of the runner's own).
  Host(interp::BufferMap& buffers, interp::BufferMap& temps, Launcher& launcher, const RunOptions& opts, bool poison_fresh = false, bool quiet = false)
      : buffers_(buffers), temps_(temps), launcher_(launcher), opts_(opts), poison_fresh_(poison_fresh), observer_(quiet ? nullptr : opts.observer),
        on_launch_(quiet ? nullptr : &opts.on_launch) {}

  void run(const HostProgram& p) {
    program_ = &p;
    slots_.assign(p.launches.size(), {});
    walk_host(p, *this);
  }

  interp::BufferData* const* slots(const HostLaunch& l) override {
    std::vector<interp::BufferData*>& slots = slots_[l.index];
    if (slots.size() != l.buffers.size())
      for (UOp s : l.buffers) slots.push_back(&buffer(s));
    return slots.data();
  }
  uint64_t& launches() override { return launches_; }
  uint64_t max_launches() const override { return opts_.max_launches; }
  const HostProgram& program() const override { return *program_; }

  // A named buffer: the caller's, or (names starting with '_') a temporary of this run only.
  interp::BufferData& buffer(UOp b) {
    const std::string& name = buffer_name(b);
    int64_t size = buffer_size(b);
    interp::BufferMap& owner = is_temporary(name) ? temps_ : buffers_;
    auto it = owner.find(name);
    if (it == owner.end()) {
      interp::BufferData d{b->dtype, nullptr, nullptr};
      try {
        d.data = std::make_shared<interp::Storage>(b->dtype, size);
        if (poison_fresh_) {
          d.poison = std::make_shared<interp::Storage>(dtypes::bool_, size);
          std::memset(d.poison->bytes.data(), 1, d.poison->bytes.size());
        }
      } catch (Error& e) {  // a budget: say which buffer asked
        e.locate("\n  for buffer '" + name + "' (" + std::to_string(size) + " " + to_string(b->dtype) + " elements)");
        throw;
      }
      it = owner.emplace(name, d).first;
    }
    if (it->second.dtype != b->dtype || it->second.data->size != size)
      throw Error("buffer '" + name + "' holds " + std::to_string(it->second.data->size) + " " + to_string(it->second.dtype) + " elements but the program declares " +
                  std::to_string(size) + " " + to_string(b->dtype));
    return it->second;
  }

 private:
  interp::BufferMap& buffers_;
  interp::BufferMap& temps_;
  Launcher& launcher_;
  const RunOptions& opts_;
  uint64_t launches_ = 0;
  bool poison_fresh_;
  HostHooks* observer_;
  const std::function<void(UOp, const std::vector<std::pair<std::string, int64_t>>&)>* on_launch_;
  // Per launch, its buffers, found by name at its first launch in this run: a buffer keeps its
  // place in the map for the whole run, so later launches look nothing up.
  std::vector<std::vector<interp::BufferData*>> slots_;
  const HostProgram* program_ = nullptr;

  void begin_run() override {
    launcher_.begin_run(buffers_);
    if (observer_) observer_->begin_run();
  }
  void end_run() override {
    if (observer_) observer_->end_run();
  }
  void loop_begin(const HostStep& s, const HostBindings& b) override {
    if (observer_) observer_->loop_begin(s, b);
  }
  void loop_end(const HostStep& s, const HostBindings& b) override {
    if (observer_) observer_->loop_end(s, b);
  }

  void before_launch(const HostLaunch& l, const HostBindings& b) override {
    if (opts_.max_launches && ++launches_ > opts_.max_launches) throw BudgetExceeded(budget_message(opts_.max_launches, l, b));
    if (observer_) observer_->before_launch(l, b);
  }

  void launch(const HostLaunch& l, const int64_t* values, const HostBindings& b) override { launcher_.launch(l, slots(l), values, b); }

  // A loop the launcher compiled runs in one call, unless a hook watches every launch.
  bool run_loop(const HostStep& s, int64_t n, const HostBindings& outer) override {
    if (observer_ || (on_launch_ && *on_launch_)) return false;
    return launcher_.run_loop(s, n, outer, *this);
  }

  void after_launch(const HostLaunch& l, const HostBindings& b) override {
    if (on_launch_ && *on_launch_) {
      std::vector<std::pair<std::string, int64_t>> names;
      for (auto& [r, v] : b) names.push_back({range_name(r), v});
      (*on_launch_)(l.kernel, names);
    }
    if (observer_) observer_->after_launch(l, b);
  }
};

// check: the interpreter and a compiled tier run every launch on their own copies of the
// buffers; after each launch the buffers the kernel stored to must agree bit for bit. The
// tolerance is zero on purpose: the renderer keeps the interpreter's operation order (no
// reassociation, no FMA contraction: -ffp-contract=off) and both call the same libm, so any
// difference is a bug. Elements the interpreter knows are uninitialized (poison) are skipped.
class CheckLauncher : public Launcher {
 public:
  explicit CheckLauncher(const RunOptions& opts) : compiled_(make_compiled_launcher(opts.compiler, opts.bounds_check, opts.compile_mode)), compiler_(opts.compiler) {}
  bool tracks_poison() const override { return true; }

  // A run starts from a copy of the caller's buffers as they were, and fresh (poisoned) temporaries.
  void begin_run(const interp::BufferMap& caller) override {
    ref_ = interp::copy_buffers(caller);
    ref_temps_.clear();
  }

  void prepare(const HostProgram& p) override {
    reference_.prepare(p);
    compiled_->prepare(p);
  }
  CompileStats compile_stats() const override { return compiled_->compile_stats(); }

  void launch(const HostLaunch& l, interp::BufferData* const* slots, const int64_t* values, const HostBindings& loops) override {
    std::vector<interp::BufferData*> ref_slots;
    for (UOp b : l.buffers) ref_slots.push_back(&ref_buffer(b));
    reference_.launch(l, ref_slots.data(), values, loops);
    compiled_->launch(l, slots, values, loops);
    for (size_t s = 0; s < l.buffers.size(); ++s) compare(l.kernel, loops, l.buffers[s], *ref_slots[s], *slots[s]);
  }

 private:
  interp::BufferMap ref_;  // the interpreter's own buffers
  interp::BufferMap ref_temps_;
  InterpLauncher reference_;
  std::unique_ptr<Launcher> compiled_;
  Backend compiler_;

  interp::BufferData& ref_buffer(UOp b) {
    const std::string& name = buffer_name(b);
    interp::BufferMap& owner = is_temporary(name) ? ref_temps_ : ref_;
    auto it = owner.find(name);
    if (it == owner.end()) {  // never given data: uninitialized, tracked as poison
      int64_t n = buffer_size(b);
      interp::BufferData d{b->dtype, std::make_shared<interp::Storage>(b->dtype, n), std::make_shared<interp::Storage>(dtypes::bool_, n)};
      std::memset(d.poison->bytes.data(), 1, d.poison->bytes.size());
      it = owner.emplace(name, d).first;
    }
    return it->second;
  }

  void compare(UOp kernel, const HostBindings& loops, UOp b, const interp::BufferData& want, const interp::BufferData& got) {
    interp::Value w, g;
    w.dtype = g.dtype = b->dtype;
    w.view = g.view = interp::View::contiguous({want.data->size});
    w.data = want.data;
    g.data = got.data;
    w.poison = want.poison;
    if (std::optional<interp::Difference> d = interp::first_difference(w, g, /*skip_poison_of_a=*/true)) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "buffer '%s' element %lld: interp %.9g, %s %.9g", buffer_name(b).c_str(), static_cast<long long>(d->index), d->a, std::string(backend_name(compiler_)).c_str(), d->b);
      throw CheckMismatch(CheckMismatch::Where::Kernel, "check: kernel " + kernel_name(kernel) + " diverges (" + bindings_text(loops) + "): " + buf +
                  "\n  tolerance: 0 (bit for bit: same operation order, no FMA contraction, same libm)\n" + print_graph(kernel));
    }
  }
};

std::unique_ptr<Launcher> make_launcher(const RunOptions& opts) {
  if (opts.backend == Backend::Interp) return std::make_unique<InterpLauncher>();
  if (opts.backend == Backend::Check) return std::make_unique<CheckLauncher>(opts);
  return make_compiled_launcher(opts.backend, opts.bounds_check, opts.compile_mode);
}

}  // namespace

struct Program::Impl {
  HostProgram host;
  RunOptions opts;
  std::unique_ptr<Launcher> launcher;
  std::unique_ptr<CcUpgrade> upgrade;  // backend auto: the same program on cc, compiled in the background
  int runs = 0;
  std::set<std::string> declared;  // the names of the buffers the program declares
  std::vector<interp::BufferSpec> specs;  // what run() accepts (interp/inputs.h)
  std::set<std::string> loaded;           // buffers some kernel reads
  std::unique_ptr<InterpLauncher> poison_runner;  // made when first needed (check_uninitialized)

  // Compiled kernels do not track uninitialized memory per element. When the caller left out a
  // named buffer that the program writes and also reads (an accumulator, a scan's rows), the
  // kernel-level interpreter runs first, on a copy, tracking it as the interpreter does, and an
  // output that reads it is the interpreter's error; without such a buffer nothing extra runs.
  // When no kernel's poison flow depends on data (interp/poison_flow.h), the verdict depends only
  // on which buffers were left out, and is kept per set: a scan run many times without its rows
  // given pays for the interpreter once, not at every run.
  bool poison_static = false;
  std::map<std::string, std::string> verdicts;  // buffers left out -> the error ("" if none)

  void check_uninitialized(const interp::BufferMap& buffers) {
    std::string missing;
    for (const interp::BufferSpec& s : specs)
      if (!s.input && !buffers.count(s.name)) missing += (missing.empty() ? "" : ", ") + s.name;
    bool read = std::any_of(specs.begin(), specs.end(), [&](const interp::BufferSpec& s) { return !s.input && !buffers.count(s.name) && loaded.count(s.name); });
    if (!read || launcher->tracks_poison()) return;
    bool given_poison = std::any_of(buffers.begin(), buffers.end(), [](auto& b) { return b.second.poison != nullptr; });
    bool keep = poison_static && !given_poison;
    if (auto it = verdicts.find(missing); keep && it != verdicts.end()) {
      if (!it->second.empty()) throw UninitializedRead(it->second);
      return;
    }
    std::string verdict = poison_verdict(buffers, missing);
    if (keep) verdicts[missing] = verdict;
    if (!verdict.empty()) throw UninitializedRead(verdict);
  }

  // The kernel-level interpreter's run on a copy: the first output that reads poison, or "".
  std::string poison_verdict(const interp::BufferMap& buffers, const std::string& missing) {
    if (!poison_runner) poison_runner = std::make_unique<InterpLauncher>();
    interp::BufferMap copy = interp::copy_buffers(buffers), scratch;
    Host pre(copy, scratch, *poison_runner, opts, /*poison_fresh=*/true, /*quiet=*/true);
    pre.run(host);
    for (const HostOutput& o : host.outputs) {
      const interp::BufferData& d = pre.buffer(o.buffer);
      interp::Value v;
      v.dtype = d.dtype;
      v.view = interp::View::contiguous(o.shape);
      v.data = d.data;
      v.poison = d.poison;
      if (std::string msg = interp::uninitialized_output(o.name, v, missing); !msg.empty()) return msg;
    }
    return "";
  }
  interp::BufferMap temps;         // kept between runs, except the outputs (handed over)

  // out=: the caller's buffer of an output's name becomes the temporary the output is computed in.
  void bind_outputs(interp::BufferMap& buffers) {
    for (const HostOutput& o : host.outputs) {
      const std::string& temp = buffer_name(o.buffer);
      auto it = buffers.find(o.name);
      if (!is_temporary(temp) || it == buffers.end() || declared.count(o.name)) continue;
      int64_t size = buffer_size(o.buffer);
      if (it->second.dtype != o.buffer->dtype || it->second.data->size != size)
        throw Error("output '" + o.name + "': the buffer given for it holds " + std::to_string(it->second.data->size) + " " + to_string(it->second.dtype) +
                    " elements, the output is " + std::to_string(size) + " " + to_string(o.buffer->dtype) + " (an output is written in place only into its own dtype and size)");
      temps[temp] = it->second;
    }
  }

  // A value, not a view of memory the caller keeps using: a caller's buffer is copied; an
  // output temporary is handed over (and forgotten, so the next run does not overwrite it).
  std::vector<interp::Output> collect(Host& run) {
    std::vector<interp::Output> values;
    for (const HostOutput& o : host.outputs) {
      interp::Value v;
      v.dtype = o.buffer->dtype;
      v.view = interp::View::contiguous(o.shape);
      const interp::StoragePtr& live = run.buffer(o.buffer).data;
      v.data = is_temporary(buffer_name(o.buffer)) ? live : std::make_shared<interp::Storage>(*live);
      values.push_back({o.name, v});
    }
    return values;
  }

  void forget_outputs() {
    for (const HostOutput& o : host.outputs) temps.erase(buffer_name(o.buffer));
  }
};

namespace {

// The kernel-opt stage (src/opt) for the compiler that runs the kernels; none for the interpreter.
UOp optimized_for(UOp lowered, const RunOptions& o) {
  Backend b = o.backend == Backend::Check ? o.compiler : o.backend;
  if (b != Backend::Tcc && b != Backend::Cc) return lowered;
  return opt::optimize(lowered, opt::options_for(target_of(b), o.bounds_check, o.skip_passes));
}

}  // namespace

Program::Program(UOp lowered, RunOptions opts) : impl_(std::make_unique<Impl>()) {
  impl_->opts = std::move(opts);
  RunOptions first = impl_->opts;
  if (first.backend == Backend::Auto) {  // tcc now, cc once it has compiled (tiered.h)
    first.backend = Backend::Tcc;
    impl_->upgrade = std::make_unique<CcUpgrade>(lowered, impl_->opts);
  }
  impl_->host = host_program(optimized_for(lowered, first));
  impl_->launcher = make_launcher(first);
  impl_->specs = interp::graph_buffers(lowered);
  for (const HostLaunch& l : impl_->host.launches)
    for (int64_t s : slots_loaded(l.kernel->src[0]))
      if (s >= 0 && static_cast<size_t>(s) < l.buffers.size()) impl_->loaded.insert(buffer_name(l.buffers[static_cast<size_t>(s)]));
  for (UOp u : toposort(lowered))
    if (u->op == Ops::BUFFER) impl_->declared.insert(buffer_name(u));
  impl_->poison_static = std::none_of(impl_->host.launches.begin(), impl_->host.launches.end(), [](const HostLaunch& l) { return interp::poison_follows_data(l.kernel->src[0]); });
  impl_->launcher->prepare(impl_->host);
}

const HostProgram& Program::host() const { return impl_->host; }

Backend Program::tier() const {
  if (!impl_->upgrade) return impl_->opts.backend;
  return impl_->upgrade->ready() ? Backend::Cc : Backend::Tcc;
}

std::string Program::tier_error() const { return impl_->upgrade ? impl_->upgrade->error() : ""; }

CompileStats Program::compile_stats() const { return impl_->launcher->compile_stats(); }

void Program::graph_writes(const std::vector<interp::BufferSpec>& graph_specs) {
  if (impl_->upgrade) impl_->upgrade->graph_writes(graph_specs);
  for (interp::BufferSpec& s : impl_->specs)
    for (const interp::BufferSpec& g : graph_specs)
      if (g.name == s.name && !g.input && s.input) {
        s.input = false;
        impl_->loaded.insert(s.name);  // nothing writes it, so whatever reads it (an output, say) sees poison
      }
}

Program::~Program() = default;
Program::Program(Program&&) noexcept = default;
Program& Program::operator=(Program&&) noexcept = default;

std::vector<interp::Output> Program::run(interp::BufferMap& buffers) {
  Impl& p = *impl_;
  std::vector<std::string> out_names;  // out=: a caller's buffer may be named after an output
  for (const HostOutput& o : p.host.outputs) out_names.push_back(o.name);
  interp::check_inputs(p.specs, buffers, out_names);
  return run_checked(buffers);
}

std::vector<interp::Output> Program::run_checked(interp::BufferMap& buffers) {
  Impl& p = *impl_;
  if (p.upgrade) {
    if (Program* cc = p.upgrade->ready()) return cc->run_checked(buffers);
    if (++p.runs == 2) p.upgrade->start();  // run twice: worth compiling on cc
  }
  p.check_uninitialized(buffers);
  Host run(buffers, p.temps, *p.launcher, p.opts);
  std::vector<interp::Output> values;
  try {
    p.bind_outputs(buffers);
    run.run(p.host);
    values = p.collect(run);
  } catch (...) {
    p.forget_outputs();
    throw;
  }
  p.forget_outputs();
  return values;
}

std::vector<interp::Output> run_program(UOp program, interp::BufferMap& buffers, const RunOptions& opts) { return Program(program, opts).run(buffers); }

CompiledGraph::CompiledGraph(UOp graph, RunOptions opts) : graph_(graph), opts_(std::move(opts)) {
  if (!opts_.graph_checked) require_valid(graph);  // first, as the interpreter does: an invalid graph's inputs mean nothing
  specs_ = interp::graph_buffers(graph);
}

void CompiledGraph::prepare() {
  if (program_) return;
  lower::Context ctx;
  ctx.skip = opts_.skip_passes;
  UOp program = lower::lower_verified(graph_, ctx);  // verified by the constructor or the caller
  program_ = std::make_unique<Program>(program, opts_);
  program_->graph_writes(specs_);
  std::set<std::string> keep;
  for (UOp u : toposort(program))
    if (u->op == Ops::BUFFER) keep.insert(buffer_name(u));
  for (const HostOutput& o : program_->host().outputs) keep.insert(o.name);
  declared_.assign(keep.begin(), keep.end());
}

// Runs the lowered graph on the caller's buffers the program still declares (lowering may drop
// a buffer, e.g. a WHERE's discarded branch), after checking them against the graph itself: the
// inputs a graph needs do not depend on how it was lowered.
std::vector<interp::Output> CompiledGraph::run_lowered(interp::BufferMap& buffers) {
  if (!opts_.graph_checked) interp::check_inputs(specs_, buffers);  // before lowering, which could fail for another reason
  prepare();
  interp::BufferMap mine;
  for (const std::string& name : declared_)
    if (auto it = buffers.find(name); it != buffers.end()) mine.emplace(name, it->second);
  std::vector<interp::Output> outs = program_->run_checked(mine);
  for (auto& [name, d] : mine) buffers[name] = d;
  return outs;
}

std::vector<interp::Output> CompiledGraph::run(interp::BufferMap& buffers) {
  if (opts_.backend == Backend::Interp) return interp::run(graph_, buffers);
  if (opts_.backend != Backend::Check) return run_lowered(buffers);
  // check: the lowered program kernel by kernel (CheckLauncher), and its outputs against the
  // tensor-level interpreter on the original graph, which defines them.
  interp::BufferMap ref = interp::copy_buffers(buffers);
  std::vector<interp::Output> want = interp::run(graph_, ref);
  std::vector<interp::Output> got = run_lowered(buffers);
  for (size_t i = 0; i < want.size(); ++i) {
    interp::Value w = want[i].value, g = i < got.size() ? got[i].value : interp::Value{};
    if (g.shape() != w.shape()) throw CheckMismatch(CheckMismatch::Where::Output, "check: output '" + want[i].name + "' has a different shape after lowering");
    if (std::optional<interp::Difference> d = interp::first_difference(w, g)) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "element %lld: %.9g by the graph's definition, %.9g after lowering", static_cast<long long>(d->index), d->a, d->b);
      throw CheckMismatch(CheckMismatch::Where::Output, "check: output '" + want[i].name + "' " + buf + " (every kernel agreed with the interpreter, so a lowering pass changed the meaning: see ow check --passes)");
    }
  }
  for (auto& [name, d] : ref)  // the interpreter knows what is still uninitialized
    if (auto it = buffers.find(name); it != buffers.end()) it->second.poison = d.poison;
  return got;
}

std::vector<interp::Output> run_graph(UOp graph, interp::BufferMap& buffers, const RunOptions& opts) {
  return CompiledGraph(graph, opts).run(buffers);
}

}  // namespace ow::backend
