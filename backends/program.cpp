#include "backends/program.h"

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "backends/c/render.h"
#include "backends/compiler.h"
#include "interp/compare.h"
#include "interp/inputs.h"
#include "interp/kernel_eval.h"
#include "lower/lower.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/symbolic.h"
#include "uop/text.h"

namespace ow::backend {

namespace {

using Bindings = std::vector<std::pair<std::string, int64_t>>;



std::string bindings_text(const Bindings& b) {
  if (b.empty()) return "outside any host loop";
  std::string s;
  for (auto& [n, v] : b) s += (s.empty() ? "" : ", ") + n + "=" + std::to_string(v);
  return s;
}

// One way of running a kernel on a set of buffers.
class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual void prepare(UOp kernel) = 0;  // render/compile ahead of the first launch
  virtual void launch(UOp kernel, std::vector<interp::BufferData*>& slots, const std::map<std::string, int64_t>& vars) = 0;
};

class InterpLauncher : public Launcher {
 public:
  void prepare(UOp kernel) override { prepared(kernel); }

  void launch(UOp kernel, std::vector<interp::BufferData*>& slots, const std::map<std::string, int64_t>& vars) override {
    interp::KernelArgs a;
    a.buffers = slots;
    a.vars = vars;
    prepared(kernel).run(a);
  }

 private:
  std::map<const UOpNode*, std::unique_ptr<interp::Kernel>> kernels_;

  interp::Kernel& prepared(UOp kernel) {
    auto it = kernels_.find(kernel.get());
    if (it == kernels_.end()) {
      interp::KernelOptions o;
      o.name = kernel_name(kernel);
      it = kernels_.emplace(kernel.get(), std::make_unique<interp::Kernel>(kernel->src[0], o)).first;
    }
    return *it->second;
  }
};

class CompiledLauncher : public Launcher {
 public:
  CompiledLauncher(const std::string& compiler, bool bounds_check) : compiler_(make_compiler(compiler)) { opts_.bounds_check = bounds_check; }

  void prepare(UOp kernel) override { compiled(kernel); }

  void launch(UOp kernel, std::vector<interp::BufferData*>& slots, const std::map<std::string, int64_t>& vars) override {
    Compiled& c = compiled(kernel);
    std::vector<void*> bufs;
    for (interp::BufferData* b : slots) bufs.push_back(b->data->bytes.data());
    std::vector<long long> vals;
    for (const std::string& v : c.rendered.vars) {
      auto it = vars.find(v);
      if (it == vars.end()) throw Error("kernel " + c.rendered.name + ": variable " + v + " is not bound");
      vals.push_back(it->second);
    }
    long long err[4] = {0, 0, 0, 0};
    if (c.fn(bufs.data(), vals.data(), err) != 0) fail(kernel, c, err);
    for (int64_t slot : c.stored)  // compiled kernels do not track poison: what they write is data
      if (slot < static_cast<int64_t>(slots.size())) slots[slot]->poison = nullptr;
  }

 private:
  using Fn = int (*)(void**, const long long*, long long*);
  struct Compiled {
    RenderedKernel rendered;
    std::shared_ptr<const Library> lib;
    Fn fn;
    std::vector<int64_t> stored;  // DEFINE_GLOBAL slots the kernel writes
  };
  std::unique_ptr<Compiler> compiler_;
  RenderOptions opts_;
  std::map<const UOpNode*, Compiled> cache_;

  Compiled& compiled(UOp kernel) {
    auto it = cache_.find(kernel.get());
    if (it != cache_.end()) return it->second;
    Compiled c;
    c.rendered = render_kernel(kernel, opts_);
    c.lib = compiler_->compile(c.rendered.source);
    c.fn = reinterpret_cast<Fn>(c.lib->symbol(c.rendered.name));
    c.stored = interp::slots_stored(kernel->src[0]);
    return cache_.emplace(kernel.get(), std::move(c)).first->second;
  }

  [[noreturn]] void fail(UOp kernel, const Compiled& c, const long long* err) {
    std::vector<std::string> lines;
    std::string text = print_graph(kernel);
    for (size_t a = 0, b; a < text.size(); a = b + 1) {
      b = text.find('\n', a);
      if (b == std::string::npos) b = text.size();
      lines.push_back(text.substr(a, b - a));
    }
    bool known = err[1] >= 0 && static_cast<size_t>(err[1]) < lines.size();
    std::string node = known ? lines[static_cast<size_t>(err[1])] : "node #" + std::to_string(err[1]);
    std::string bits = known ? std::to_string(toposort(kernel)[static_cast<size_t>(err[1])]->dtype.itemsize() * 8) : "?";
    std::string what = err[0] == 1   ? "integer division by zero"
                       : err[0] == 2 ? "out-of-bounds access at index " + std::to_string(err[2])
                       : err[0] == 3 ? "shift count " + std::to_string(err[2]) + " outside [0, " + bits + ")"
                                     : "error kind " + std::to_string(err[0]);
    throw Error("kernel " + c.rendered.name + " (" + compiler_->name() + "): " + what + "\n  at " + node);
  }
};

// The host walk: GROUP in order, END over OUTER ranges as loops, KERNEL launches.
class Host {
 public:
  // poison_fresh: buffers the caller did not give start uninitialized (all poison), as in the
  // interpreter; for a run whose launcher tracks poison (InterpLauncher).
  Host(interp::BufferMap& buffers, interp::BufferMap& temps, Launcher& launcher, const RunOptions& opts, bool poison_fresh = false)
      : buffers_(buffers), temps_(temps), launcher_(launcher), opts_(opts), poison_fresh_(poison_fresh) {}

  void exec(UOp u) {
    switch (u->op) {
      case Ops::GROUP: case Ops::SINK:
        for (UOp s : u->src) exec(s);
        return;
      case Ops::END: loop(u, 1); return;
      case Ops::KERNEL: launch(u); return;
      case Ops::AFTER:
        if (!done_.insert(u.get()).second) return;
        for (size_t i = 1; i < u->src.size(); ++i) exec(u->src[i]);
        return;
      default: return;  // views and values: nothing to run
    }
  }

  // A named buffer: the caller's, or (names starting with '_') a temporary of this run only.
  interp::BufferData& buffer(UOp b) {
    const std::string& name = buffer_name(b);
    int64_t size = b->arg.tuple()->at(1).as<int64_t>();
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

  const Bindings& bindings() const { return env_order_; }

 private:
  interp::BufferMap& buffers_;
  interp::BufferMap& temps_;
  Launcher& launcher_;
  const RunOptions& opts_;
  std::map<const UOpNode*, int64_t> env_;
  Bindings env_order_;
  std::set<const UOpNode*> done_;
  uint64_t launches_ = 0;
  bool poison_fresh_;

  void loop(UOp end, size_t i) {
    if (i == end->src.size()) return exec(end->src[0]);
    UOp r = end->src[i];
    int64_t n = eval_index(r->src[0]);
    env_order_.push_back({range_name(r), 0});
    for (int64_t k = 0; k < n; ++k) {
      env_[r.get()] = k;
      env_order_.back().second = k;
      loop(end, i + 1);
    }
    env_.erase(r.get());
    env_order_.pop_back();
  }

  int64_t eval_index(UOp u) {
    if (u->op == Ops::CONST) return static_cast<int64_t>(u.const_value());
    if (u->op == Ops::RANGE) {
      auto it = env_.find(u.get());
      if (it == env_.end()) throw Error("host loop variable " + range_name(u) + " is used outside its loop");
      return it->second;
    }
    std::vector<int64_t> v;
    for (UOp s : u->src) v.push_back(eval_index(s));
    int64_t out;
    if (!is_alu(u->op) || !fold_int_alu(u->op, u->dtype, v.data(), v.size(), out))
      throw Error(std::string("cannot evaluate ") + std::string(op_name(u->op)) + " in a host-side index expression");
    return out;
  }

  void launch(UOp k) {
    if (opts_.max_launches && ++launches_ > opts_.max_launches)
      throw BudgetExceeded("step budget exceeded: " + std::to_string(opts_.max_launches) + " kernel launches, at kernel " + kernel_name(k) + " with " +
                  bindings_text(env_order_) + " (ow: --max-steps N raises it)");
    std::vector<interp::BufferData*> slots;
    std::map<std::string, int64_t> vars;
    for (size_t i = 1; i < k->src.size(); ++i) {
      UOp s = k->src[i];
      if (s->op == Ops::BUFFER) slots.push_back(&buffer(s));
      else if (s->op == Ops::BIND) vars[var_name(s->src[0])] = eval_index(s->src[1]);
      else throw Error(std::string("a KERNEL source must be a BUFFER or a BIND, got ") + std::string(op_name(s->op)));
    }
    launcher_.launch(k, slots, vars);
    if (opts_.on_launch) opts_.on_launch(k, env_order_);
  }
};

// A program output: the name the SINK gives it, the buffer holding it and its shape.
struct OutputSlot {
  std::string name;
  UOp buffer;
  std::vector<int64_t> shape;
};

std::vector<OutputSlot> output_slots(UOp program) {
  std::vector<OutputSlot> outs;
  std::vector<UOp> srcs = program->op == Ops::SINK ? program->src : std::vector<UOp>{program};
  for (size_t i = 0; i < srcs.size(); ++i) {
    UOp o = srcs[i];
    if (o->dtype.is_void()) continue;
    while (o->op == Ops::AFTER) o = o->src[0];
    UOp b = o;
    while (b->op == Ops::RESHAPE) b = b->src[0];
    if (b->op != Ops::BUFFER) throw Error("a program output must be a buffer seen through RESHAPE, got " + std::string(op_name(b->op)));
    OutputSlot slot{output_name(program, i), b, {}};
    for (UOp d : o->shape.dims) slot.shape.push_back(static_cast<int64_t>(d.const_value()));
    outs.push_back(slot);
  }
  return outs;
}

// check: the interpreter and a compiled tier run every launch on their own copies of the
// buffers; after each launch the buffers the kernel stored to must agree bit for bit. The
// tolerance is zero on purpose: the renderer keeps the interpreter's operation order (no
// reassociation, no FMA contraction: -ffp-contract=off) and both call the same libm, so any
// difference is a bug. Elements the interpreter knows are uninitialized (poison) are skipped.
class CheckLauncher : public Launcher {
 public:
  explicit CheckLauncher(const RunOptions& opts) : compiled_(opts.compiler, opts.bounds_check), compiler_(opts.compiler) {}
  const Bindings* bindings = nullptr;

  // A run starts from `ref`, the caller's buffers as they were, and fresh (poisoned) temporaries.
  void begin_run(interp::BufferMap& ref) {
    ref_ = &ref;
    ref_temps_.clear();
  }

  void prepare(UOp kernel) override {
    reference_.prepare(kernel);
    compiled_.prepare(kernel);
  }

  void launch(UOp kernel, std::vector<interp::BufferData*>& slots, const std::map<std::string, int64_t>& vars) override {
    std::vector<interp::BufferData*> ref_slots;
    std::vector<UOp> bufs;
    for (size_t i = 1; i < kernel->src.size(); ++i)
      if (kernel->src[i]->op == Ops::BUFFER) bufs.push_back(kernel->src[i]);
    for (UOp b : bufs) ref_slots.push_back(&ref_buffer(b));
    reference_.launch(kernel, ref_slots, vars);
    compiled_.launch(kernel, slots, vars);
    for (size_t s = 0; s < bufs.size(); ++s) compare(kernel, bufs[s], *ref_slots[s], *slots[s]);
  }

 private:
  interp::BufferMap* ref_ = nullptr;
  interp::BufferMap ref_temps_;
  InterpLauncher reference_;
  CompiledLauncher compiled_;
  std::string compiler_;

  interp::BufferData& ref_buffer(UOp b) {
    const std::string& name = buffer_name(b);
    interp::BufferMap& owner = is_temporary(name) ? ref_temps_ : *ref_;
    auto it = owner.find(name);
    if (it == owner.end()) {  // never given data: uninitialized, tracked as poison
      int64_t n = b->arg.tuple()->at(1).as<int64_t>();
      interp::BufferData d{b->dtype, std::make_shared<interp::Storage>(b->dtype, n), std::make_shared<interp::Storage>(dtypes::bool_, n)};
      std::memset(d.poison->bytes.data(), 1, d.poison->bytes.size());
      it = owner.emplace(name, d).first;
    }
    return it->second;
  }

  void compare(UOp kernel, UOp b, const interp::BufferData& want, const interp::BufferData& got) {
    interp::Value w, g;
    w.dtype = g.dtype = b->dtype;
    w.view = g.view = interp::View::contiguous({want.data->size});
    w.data = want.data;
    g.data = got.data;
    w.poison = want.poison;
    if (std::optional<interp::Difference> d = interp::first_difference(w, g, /*skip_poison_of_a=*/true)) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "buffer '%s' element %lld: interp %.9g, %s %.9g", buffer_name(b).c_str(), static_cast<long long>(d->index), d->a, compiler_.c_str(), d->b);
      throw CheckMismatch("check: kernel " + kernel_name(kernel) + " diverges (" + bindings_text(bindings ? *bindings : Bindings{}) + "): " + buf +
                  "\n  tolerance: 0 (bit for bit: same operation order, no FMA contraction, same libm)\n" + print_graph(kernel));
    }
  }
};

std::unique_ptr<Launcher> make_launcher(const RunOptions& opts) {
  if (opts.backend == "interp") return std::make_unique<InterpLauncher>();
  if (opts.backend == "check") return std::make_unique<CheckLauncher>(opts);
  return std::make_unique<CompiledLauncher>(opts.backend, opts.bounds_check);
}

}  // namespace

struct Program::Impl {
  UOp program;
  RunOptions opts;
  std::unique_ptr<Launcher> launcher;
  std::vector<OutputSlot> outs;
  std::set<std::string> declared;  // the names of the buffers the program declares
  std::vector<interp::BufferSpec> specs;  // what run() accepts (interp/inputs.h)
  std::set<std::string> loaded;           // buffers some kernel reads
  std::unique_ptr<InterpLauncher> poison_runner;  // made when first needed (check_uninitialized)

  // Compiled kernels do not track uninitialized memory per element. When the caller left out a
  // named buffer that the program writes and also reads (an accumulator, a scan's rows), the
  // kernel-level interpreter runs first, on a copy, tracking it as the interpreter does, and an
  // output that reads it is the interpreter's error; without such a buffer nothing extra runs.
  void check_uninitialized(const interp::BufferMap& buffers) {
    std::string missing;
    for (const interp::BufferSpec& s : specs)
      if (!s.input && !buffers.count(s.name)) missing += (missing.empty() ? "" : ", ") + s.name;
    bool read = std::any_of(specs.begin(), specs.end(), [&](const interp::BufferSpec& s) { return !s.input && !buffers.count(s.name) && loaded.count(s.name); });
    if (!read || dynamic_cast<CheckLauncher*>(launcher.get()) || dynamic_cast<InterpLauncher*>(launcher.get())) return;
    if (!poison_runner) poison_runner = std::make_unique<InterpLauncher>();
    interp::BufferMap copy = interp::copy_buffers(buffers), scratch;
    Host host(copy, scratch, *poison_runner, opts, /*poison_fresh=*/true);
    host.exec(program);
    for (const OutputSlot& o : outs) {
      const interp::BufferData& d = host.buffer(o.buffer);
      interp::Value v;
      v.dtype = d.dtype;
      v.view = interp::View::contiguous(o.shape);
      v.data = d.data;
      v.poison = d.poison;
      if (std::string msg = interp::uninitialized_output(o.name, v, missing); !msg.empty()) throw UninitializedRead(msg);
    }
  }
  interp::BufferMap temps;         // kept between runs, except the outputs (handed over)

  // out=: the caller's buffer of an output's name becomes the temporary the output is computed in.
  void bind_outputs(interp::BufferMap& buffers) {
    for (const OutputSlot& o : outs) {
      const std::string& temp = buffer_name(o.buffer);
      auto it = buffers.find(o.name);
      if (!is_temporary(temp) || it == buffers.end() || declared.count(o.name)) continue;
      int64_t size = o.buffer->arg.tuple()->at(1).as<int64_t>();
      if (it->second.dtype != o.buffer->dtype || it->second.data->size != size)
        throw Error("output '" + o.name + "': the buffer given for it holds " + std::to_string(it->second.data->size) + " " + to_string(it->second.dtype) +
                    " elements, the output is " + std::to_string(size) + " " + to_string(o.buffer->dtype) + " (an output is written in place only into its own dtype and size)");
      temps[temp] = it->second;
    }
  }

  // A value, not a view of memory the caller keeps using: a caller's buffer is copied; an
  // output temporary is handed over (and forgotten, so the next run does not overwrite it).
  std::vector<interp::Output> collect(Host& host) {
    std::vector<interp::Output> values;
    for (const OutputSlot& o : outs) {
      interp::Value v;
      v.dtype = o.buffer->dtype;
      v.view = interp::View::contiguous(o.shape);
      const interp::StoragePtr& live = host.buffer(o.buffer).data;
      v.data = is_temporary(buffer_name(o.buffer)) ? live : std::make_shared<interp::Storage>(*live);
      values.push_back({o.name, v});
    }
    return values;
  }

  void forget_outputs() {
    for (const OutputSlot& o : outs) temps.erase(buffer_name(o.buffer));
  }
};

Program::Program(UOp lowered, RunOptions opts) : impl_(std::make_unique<Impl>()) {
  impl_->program = lowered;
  impl_->opts = std::move(opts);
  impl_->launcher = make_launcher(impl_->opts);
  impl_->outs = output_slots(lowered);
  impl_->specs = interp::graph_buffers(lowered);
  for (UOp k : toposort(lowered)) {
    if (k->op != Ops::KERNEL) continue;
    std::vector<UOp> slots;
    for (size_t i = 1; i < k->src.size(); ++i)
      if (k->src[i]->op == Ops::BUFFER) slots.push_back(k->src[i]);
    for (int64_t s : interp::slots_loaded(k->src[0]))
      if (s >= 0 && static_cast<size_t>(s) < slots.size()) impl_->loaded.insert(buffer_name(slots[static_cast<size_t>(s)]));
  }
  for (UOp u : toposort(lowered)) {
    if (u->op == Ops::BUFFER) impl_->declared.insert(buffer_name(u));
    if (u->op == Ops::KERNEL) impl_->launcher->prepare(u);
  }
}

void Program::graph_writes(const std::vector<interp::BufferSpec>& graph_specs) {
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
  interp::BufferMap ref;  // check: the interpreter's own copy of the caller's buffers
  auto* check = dynamic_cast<CheckLauncher*>(p.launcher.get());
  if (check) check->begin_run(ref = interp::copy_buffers(buffers));
  std::vector<std::string> out_names;  // out=: a caller's buffer may be named after an output
  for (const OutputSlot& o : p.outs) out_names.push_back(o.name);
  interp::check_inputs(p.specs, buffers, out_names);
  p.check_uninitialized(buffers);
  Host host(buffers, p.temps, *p.launcher, p.opts);
  if (check) check->bindings = &host.bindings();
  std::vector<interp::Output> values;
  try {
    p.bind_outputs(buffers);
    host.exec(p.program);
    values = p.collect(host);
  } catch (...) {
    p.forget_outputs();
    throw;
  }
  p.forget_outputs();
  return values;
}

std::vector<interp::Output> run_program(UOp program, interp::BufferMap& buffers, const RunOptions& opts) { return Program(program, opts).run(buffers); }

CompiledGraph::CompiledGraph(UOp graph, RunOptions opts)
    : graph_(graph), backend_(opts.backend), opts_(std::move(opts)), specs_(interp::graph_buffers(graph)) {}

void CompiledGraph::prepare() {
  if (program_) return;
  UOp program = lower::lower(graph_);
  std::set<std::string> keep;
  for (UOp u : toposort(program))
    if (u->op == Ops::BUFFER) keep.insert(buffer_name(u));
  for (const OutputSlot& o : output_slots(program)) keep.insert(o.name);
  declared_.assign(keep.begin(), keep.end());
  program_ = std::make_unique<Program>(program, opts_);
  program_->graph_writes(specs_);
}

// Runs the lowered graph on the caller's buffers the program still declares (lowering may drop
// a buffer, e.g. a WHERE's discarded branch), after checking them against the graph itself: the
// inputs a graph needs do not depend on how it was lowered.
std::vector<interp::Output> CompiledGraph::run_lowered(interp::BufferMap& buffers) {
  interp::check_inputs(specs_, buffers);  // before lowering, which could fail for another reason
  prepare();
  interp::BufferMap mine;
  for (const std::string& name : declared_)
    if (auto it = buffers.find(name); it != buffers.end()) mine.emplace(name, it->second);
  std::vector<interp::Output> outs = program_->run(mine);
  for (auto& [name, d] : mine) buffers[name] = d;
  return outs;
}

std::vector<interp::Output> CompiledGraph::run(interp::BufferMap& buffers) {
  if (backend_ == "interp") return interp::run(graph_, buffers);
  if (backend_ != "check") return run_lowered(buffers);
  // check: the lowered program kernel by kernel (CheckLauncher), and its outputs against the
  // tensor-level interpreter on the original graph, which defines them.
  interp::BufferMap ref = interp::copy_buffers(buffers);
  std::vector<interp::Output> want = interp::run(graph_, ref);
  std::vector<interp::Output> got = run_lowered(buffers);
  for (size_t i = 0; i < want.size(); ++i) {
    interp::Value w = want[i].value, g = i < got.size() ? got[i].value : interp::Value{};
    if (g.shape() != w.shape()) throw CheckMismatch("check: output '" + want[i].name + "' has a different shape after lowering");
    if (std::optional<interp::Difference> d = interp::first_difference(w, g)) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "element %lld: %.9g by the graph's definition, %.9g after lowering", static_cast<long long>(d->index), d->a, d->b);
      throw CheckMismatch("check: output '" + want[i].name + "' " + buf + " (every kernel agreed with the interpreter, so a lowering pass changed the meaning: see ow check --passes)");
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
