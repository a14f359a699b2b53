// The scalar kernel evaluator's compiled form (kernel_eval.h), private to src/interp and shared
// by its parts: kernel_eval_ops.h (what each node computes), kernel_eval_compile.cpp (the ast
// into nodes, loops and statements) and kernel_eval.cpp (running them).
//
// The ast is compiled once into flat node records (one per value node, sources by pointer) and a
// tree of loops. Every value node knows the loop ranges it depends on. A loop over ranges
// (r0, ..., rk) (an END or a REDUCE) keeps, for its body:
//   - the extent nodes of its ranges (no range dependence: computed once per run, cached);
//   - `invariant`: body nodes that depend on none of r0..rk; checked against their cache once
//     per execution of the loop (a node is fresh when none of its ranges was rebound since it
//     was computed: a clock stamp per range and per node);
//   - `levels[j]`: body nodes whose innermost range among r0..rk is rj; recomputed, in
//     topological order, once per iteration of rj (they are hoisted out of the deeper loops).
// A loop with an empty extent runs nothing, so hoisting never evaluates a node the reference
// semantics would not (errors stay exactly where SEMANTICS.md puts them). A REDUCE is a node
// whose evaluation runs its own loop; its body is not part of the enclosing lists.
// Registers (DEFINE_REG) are kernel-local memory, zero at each launch, read and written in
// statement order: a node computed from a register's contents is never hoisted or cached but
// computed by each store statement that needs it, just before it stores (`Stmt::locals`).
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "interp/kernel_eval.h"
#include "interp/launch_snapshot.h"
#include "interp/narrow.h"
#include "interp/value.h"
#include "uop/text.h"

namespace ow::interp {

namespace kernel_eval {

// One scalar of any dtype, read and written through get<T>.
union Val {
  int64_t i;
  double d;
  float f;
  int32_t i32;
  uint32_t u32;
  uint64_t u64;
  uint8_t b;
  int8_t i8;
  u8 u8_;
  int16_t i16;
  uint16_t u16;
  f16 h;
  bf16 bh;
  f8e4m3 e4m3;
  f8e5m2 e5m2;
};

template <class T> inline T& get(Val& v) {
  if constexpr (std::is_same_v<T, uint8_t>) return v.b;
  else if constexpr (std::is_same_v<T, int8_t>) return v.i8;
  else if constexpr (std::is_same_v<T, u8>) return v.u8_;
  else if constexpr (std::is_same_v<T, int16_t>) return v.i16;
  else if constexpr (std::is_same_v<T, uint16_t>) return v.u16;
  else if constexpr (std::is_same_v<T, f16>) return v.h;
  else if constexpr (std::is_same_v<T, bf16>) return v.bh;
  else if constexpr (std::is_same_v<T, f8e4m3>) return v.e4m3;
  else if constexpr (std::is_same_v<T, f8e5m2>) return v.e5m2;
  else if constexpr (std::is_same_v<T, int32_t>) return v.i32;
  else if constexpr (std::is_same_v<T, int64_t>) return v.i;
  else if constexpr (std::is_same_v<T, uint32_t>) return v.u32;
  else if constexpr (std::is_same_v<T, uint64_t>) return v.u64;
  else if constexpr (std::is_same_v<T, float>) return v.f;
  else return v.d;
}

}  // namespace kernel_eval

struct Kernel::Impl {
  using Val = kernel_eval::Val;
  struct Node;
  using Fn = void (*)(Impl&, Node&);

  struct Node {
    Val v{};
    bool poison = false;
    Fn fn = nullptr;
    Node* s[3] = {nullptr, nullptr, nullptr};
    uint64_t stamp = 0;       // clock when last computed
    uint64_t changed_at = 0;  // RANGE: clock when last bound
    std::vector<Node*> deps;  // loop ranges the value depends on
    UOp u;
    size_t order = 0;         // topological position
    bool listed = false;      // computed by fn (not CONST/RANGE/DEFINE_VAR/pointer INDEX/DEFINE_GLOBAL)
    bool reads_reg = false;   // computed from a register's contents: evaluated by its statements
    // LOAD: the pointer's parts (DEFINE_REG, INDEX: the slot; a register's is register_slot(k))
    int slot = -1;
    Node* lin = nullptr;
    Node* gate = nullptr;
    // REDUCE
    int loop = -1;
  };

  struct Loop {
    std::vector<Node*> ranges;
    std::vector<std::vector<Node*>> extent_lists;
    std::vector<Node*> extent_nodes;
    std::vector<Node*> invariant;
    std::vector<std::vector<Node*>> levels;
    std::vector<int64_t> ext;
    Node* fold = nullptr;     // REDUCE: the folded value
    std::vector<int> stmts;   // END: statements run at the innermost level
  };

  struct Stmt;
  using StoreFn = void (*)(Impl&, Stmt&);
  struct Stmt {
    bool is_store = false;
    int loop = -1;                 // a loop statement
    StoreFn store = nullptr;       // a store statement
    int slot = -1;
    Node* lin = nullptr;
    Node* gate = nullptr;
    Node* value = nullptr;
    UOp index;
    std::vector<Node*> locals;     // the nodes reading registers it needs, in order
  };

  struct Slot {
    BufferData* bd = nullptr;
    const void* rdata = nullptr;
    const uint8_t* rpoison = nullptr;
    int64_t size = 0;
    std::string name;
    LaunchSnapshot* snap = nullptr;  // a buffer the kernel also stores to: loads read it as at launch
  };
  // Slots >= 0 are the DEFINE_GLOBALs'; register k (regs[k]) is slot -1 - k.
  static int register_slot(size_t k) { return -1 - static_cast<int>(k); }
  Slot& slot(int k) { return k >= 0 ? slots[static_cast<size_t>(k)] : reg_slots[static_cast<size_t>(-1 - k)]; }

  // The node and store functions, per op and dtype (kernel_eval_ops.h).
  struct Eval;

  // ---- compiled form ----
  UOp ast;
  KernelOptions opts;
  Printed printed;
  std::vector<Node> nodes;
  std::unordered_map<const UOpNode*, size_t> id;
  std::vector<Loop> loops;
  std::vector<Stmt> stmts;
  std::vector<int> top;  // top-level statements, in order
  std::vector<std::pair<size_t, UOp>> globals;  // node index -> DEFINE_GLOBAL
  std::vector<size_t> vars;                     // DEFINE_VAR nodes
  std::vector<UOp> regs;                        // DEFINE_REG nodes, by register slot
  std::set<int64_t> loaded, stored;

  // ---- run state ----
  std::vector<Slot> slots;
  std::vector<Slot> reg_slots;           // the registers, made by the first run, zeroed by each
  std::vector<BufferData> reg_data;
  std::vector<std::unique_ptr<LaunchSnapshot>> snaps;  // per buffer both loaded and stored, this run
  std::vector<Node*> active;
  uint64_t clock = 0, base = 0, ops = 0;

  // ---- diagnostics (kernel_eval.cpp) ----
  std::string describe(UOp u) const { return opts.describe ? opts.describe(u) : printed.line(u); }
  [[noreturn]] void fail(UOp at, const std::string& msg) const;
  std::string slot_text(int slot) const;

  // Checks the pointer's gate and index; returns false when a gate is false (no access).
  bool access(const char* what, int slot, Node* lin, Node* gate, UOp index) {
    if (gate) {
      if (gate->poison) fail(index, std::string("the gate of a ") + what + " is poison (computed from uninitialized memory)");
      if (!gate->v.b) return false;
    }
    if (lin->poison) fail(index, std::string("the index of a ") + what + " is poison (computed from uninitialized memory)");
    int64_t k = lin->v.i;
    if (static_cast<uint64_t>(k) >= static_cast<uint64_t>(this->slot(slot).size))
      fail(index, std::string("out-of-bounds index: ") + what + " at " + std::to_string(k) + " into " + slot_text(slot));
    return true;
  }

  // ---- compilation (kernel_eval_compile.cpp) ----
  Impl(UOp root, KernelOptions o);
  mutable bool compile_failed = false;  // compile_fail's error is on its way out: pass it through
  [[noreturn]] void compile_fail(UOp u, const std::string& msg) const;
  Node& node(UOp u) { return nodes[id.at(u.get())]; }
  template <class T> Fn alu_fn(UOp u);
  Fn convert_fn(UOp u);
  std::vector<Node*> range_deps(Node& n);
  void compile_node(UOp u, size_t idx);
  void compile_value(Node& n, size_t idx);
  void compile_const(Node& n);
  void compile_pointer(Node& n);
  void compile_load(Node& n);
  void compile_reduce(Node& n);
  void compile_alu(Node& n);
  std::vector<Node*> reach(const std::vector<Node*>& roots, bool registers = false);
  int make_loop(const std::vector<UOp>& ranges, const std::vector<Node*>& roots, UOp at);
  int loop_stmt(int loop);
  std::vector<int> compile_stmt(UOp u);
  int compile_end(UOp u);
  int compile_store(UOp u);

  // ---- running (kernel_eval.cpp) ----
  bool fresh(const Node* n) const;
  void ensure(const std::vector<Node*>& list);
  template <class Inner> void nest(Loop& L, size_t j, Inner& inner);
  template <class Inner> void run_loop(Loop& L, Inner&& inner);
  void run_loop_fn(Loop& L, const std::function<void()>& inner);
  void run_stmt(int k);
  void bind_buffers(const KernelArgs& args);
  void snapshot_written_loads();
  void bind_vars(const KernelArgs& args);
  void bind_registers();
  void run(const KernelArgs& args);
};

}  // namespace ow::interp
