// The reference interpreter's evaluator (internal to src/interp; the API is interp.h).
//
// Values: eval() computes a node under the current range bindings, memoized per node (one
// binding at a time). Effects and their order live in effects.cpp, the memory model (which write
// a read sees) in memory.h. Split across files by concept:
//   interp.cpp   setup, memo, values (ALU, movement, vmap collecting, INDEX/BUFFERIZE)
//   folds.cpp    reductions: REDUCE_AXIS (materialized or folded virtually) and REDUCE over ranges
//   effects.cpp  AFTER, STORE, END, ASSIGN (scans), KERNEL launches, forks of unordered sources
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "interp/interp.h"
#include "interp/kernel_eval.h"
#include "interp/memory.h"
#include "interp/virtual_fold.h"
#include "uop/args.h"
#include "uop/shape.h"
#include "uop/text.h"

namespace ow::interp {

// The shape of the first shaped value among `vals` (elementwise operands broadcast to it); none: {}.
std::vector<int64_t> concrete_shape(const std::vector<Value>& vals);

class Interpreter {
 public:
  Interpreter(UOp root, BufferMap& buffers, const Options& opts);  // root verified (interp::run)
  std::vector<Output> outputs();

 private:
  struct BufferState {
    std::string name;
    BufferData* data;
    bool initialized_by_caller;
    int slot = -1;  // its place in the memory model when the graph writes it
  };
  struct NodeInfo {
    std::vector<UOp> free;   // ranges the value depends on
    std::vector<size_t> mut; // memory slots of the written buffers it reads or writes
    bool effect = false;     // evaluating it performs writes
    bool fork = false;       // its sources are unordered siblings and some of them write
    // Memo lifetime (retire, interp.cpp): consumers that may still ask for this value (edges from
    // consumers not yet retired; the root counts as one). At 0 the memo is dropped.
    size_t wanted = 0;
    bool retired = false;    // has counted down its sources' `wanted`
  };
  struct Memo {
    bool valid = false;
    std::vector<uint64_t> key;  // range values, then the versions of NodeInfo::mut
    Value value;
    Clock after;                // for nodes that run effects: what a reuse is ordered after
  };
  struct Run {  // the last run of an effect, or of the effects an AFTER or ASSIGN runs
    bool valid = false;
    std::vector<uint64_t> key;  // ranges (AFTER, ASSIGN) or iteration numbers (STORE, END)
    Clock done;                 // the clock at its completion
  };

  // ---- setup and diagnostics (interp.cpp) ----
  void analyse();
  void bind_buffers(BufferMap& buffers);
  std::string describe(UOp u) const;
  [[noreturn]] void fail(UOp u, const std::string& msg) const { raise(u, Error(msg)); }
  // Throws e (keeping its type) located at u: its line and the current bindings.
  template <class E> [[noreturn]] void raise(UOp u, E e) const {
    locate(u, e);
    throw e;
  }
  void locate(UOp u, Error& e) const;  // unless e already names its node
  void check_clean(const std::string& name, UOp u, const Value& v) const;

  // The iterations of a loop whose bodies are unordered siblings (the elements of a BUFFERIZE,
  // the terms of an axis fold): each starts from the loop's clock; the loop ends after them all.
  struct Unordered {
    Interpreter& I;
    bool on;
    Clock start, all;
    Unordered(Interpreter& in, bool unordered) : I(in), on(unordered) {
      if (on) start = I.ctx_, all = I.ctx_.snapshot();
    }
    void next() {
      if (!on) return;
      all.merge(I.ctx_);
      I.ctx_ = start;
    }
    ~Unordered() {
      if (on) I.ctx_.merge(all);
    }
  };

  // ---- ranges ----
  struct Bind {
    Interpreter& I;
    UOp r;
    bool had;
    int64_t old;
    Bind(Interpreter& in, UOp range, int64_t v);
    ~Bind();
  };
  int64_t range_end(UOp r);
  template <class F> void loop(const std::vector<UOp>& ranges, size_t i, F&& body);
  std::vector<uint64_t> range_key(UOp u);

  // ---- values (interp.cpp) ----
  Value eval(UOp u);
  void retire(UOp u);
  bool reusable(const Memo& m, const NodeInfo& in, const std::vector<uint64_t>& key) const;
  Value compute(UOp u);
  Value compute_alu(UOp u);
  Value read_buffer(UOp u);
  int64_t dim(UOp d);
  std::vector<std::pair<int64_t, int64_t>> pairs(UOp u);
  Value movement(UOp u, const Value& src);
  Value expand(UOp u);
  std::vector<size_t> collected_axes(UOp u) const;
  Value expand_checked(UOp u, const Value& v, const std::vector<int64_t>& shape);
  Value reduce_axis(UOp u);
  std::optional<VirtualTree> virtual_operand(UOp x);
  bool worth_folding_virtually(const VirtualTree& t, Ops op, const std::vector<int64_t>& axes) const;
  struct Contribution {
    Value full;                                    // when !boxed
    Value inner;                                   // when boxed: the PAD's source
    std::vector<std::pair<int64_t, int64_t>> box;  // when boxed: where inner lands
    std::vector<int64_t> shape;
    bool boxed = false;
  };
  Contribution contribution(UOp x, Ops op);
  void add_into(Ops op, Value& acc, const Contribution& c);
  Value reduce(UOp u);
  int64_t access_operand(UOp u, UOp operand, const char* what);
  Value tensor_index(UOp u);
  Value bufferize(UOp u);

  // ---- effects and their order (effects.cpp) ----
  Value operand(UOp u, UOp s);  // a source, in a fork of the clock when its siblings are unordered
  void run_iteration_effects(UOp value);  // S5.4: a fold's effects at the start of an iteration
  Value after(UOp u);
  void run_after_deps(UOp u);
  // `depth`: the effect's runner depends on the loops of the first `depth` bindings only, so it
  // runs once per iteration of those (S5.4); by default, of every loop being run.
  void exec(UOp u, bool step = false, size_t depth = SIZE_MAX);
  void run_store(UOp u);
  void run_end(UOp u);
  Value assign(UOp u);
  void assign_scan(UOp u, UOp value);
  void run_kernel(UOp u);
  Kernel& kernel_for(UOp u);
  void run_target_deps(UOp t);
  std::optional<Value> strided_place(UOp t);
  Value place_index(UOp t);
  Value place_contents(UOp t);
  void write(UOp at, UOp target, const Value& v, const std::vector<std::pair<int64_t, int64_t>>* box = nullptr);
  Version read_version(size_t slot) const;
  std::vector<size_t> slots_written_in(UOp body);

  UOp root_;
  const Options& opts_;
  Printed printed_;
  BufferMap temps_;  // temporaries the caller did not give: this run's alone
  Memory mem_;  // before everything that holds a Clock
  Clock ctx_;   // what the point being evaluated is ordered after
  std::vector<std::pair<std::vector<size_t>, Clock>> pins_;  // parallel loops: reads of these slots see the clock
  std::vector<Clock> joins_;  // per node with forked sources: where its forks got to
  std::unordered_map<const UOpNode*, NodeInfo> info_;
  std::unordered_map<const UOpNode*, Memo> memo_;
  std::unordered_map<const UOpNode*, Run> runs_;                       // AFTER, ASSIGN, value KERNEL
  std::unordered_map<const UOpNode*, std::vector<Run>> effect_runs_;   // STORE, END: one per depth
  std::unordered_map<const UOpNode*, BufferState> buffers_;
  std::unordered_map<const UOpNode*, std::unique_ptr<Kernel>> kernels_;  // compiled once per KERNEL node
  std::unordered_map<const UOpNode*, std::vector<size_t>> written_in_;   // END -> slots its body writes
  std::unordered_map<const UOpNode*, std::vector<UOp>> runners_;         // fold value -> its runners, in execution order
  std::unordered_map<const UOpNode*, int64_t> env_;
  std::vector<std::pair<UOp, int64_t>> env_order_;
  std::vector<uint64_t> iterations_;  // a fresh number for every binding made, innermost last
  std::vector<const UOpNode*> iteration_ranges_;  // ... and the range each binds
  uint64_t iteration_count_ = 0;
  uint64_t evals_ = 0;
  size_t depth_ = 0;
};

template <class F> void Interpreter::loop(const std::vector<UOp>& ranges, size_t i, F&& body) {
  if (i == ranges.size()) {
    body();
    return;
  }
  int64_t n = range_end(ranges[i]);
  for (int64_t k = 0; k < n; ++k) {
    Bind b(*this, ranges[i], k);
    loop(ranges, i + 1, body);
  }
}

}  // namespace ow::interp
