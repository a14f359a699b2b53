// The scalar kernel evaluator (kernel_eval.h).
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
#include "interp/kernel_eval.h"

#include <functional>
#include <algorithm>
#include <cstring>
#include <utility>
#include <set>
#include <unordered_map>

#include "interp/dispatch.h"
#include "interp/launch_snapshot.h"
#include "interp/scalar_ops.h"
#include "interp/value.h"
#include "uop/args.h"
#include "uop/text.h"
#include "uop/verify.h"

namespace ow::interp {

namespace {

union Val {
  int64_t i;
  double d;
  float f;
  int32_t i32;
  uint32_t u32;
  uint64_t u64;
  uint8_t b;
};

template <class T> inline T& get(Val& v) {
  if constexpr (std::is_same_v<T, uint8_t>) return v.b;
  else if constexpr (std::is_same_v<T, int32_t>) return v.i32;
  else if constexpr (std::is_same_v<T, int64_t>) return v.i;
  else if constexpr (std::is_same_v<T, uint32_t>) return v.u32;
  else if constexpr (std::is_same_v<T, uint64_t>) return v.u64;
  else if constexpr (std::is_same_v<T, float>) return v.f;
  else return v.d;
}

}  // namespace

struct Kernel::Impl {
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
    // LOAD: the pointer's parts
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
  };

  struct Slot {
    BufferData* bd = nullptr;
    const void* rdata = nullptr;
    const uint8_t* rpoison = nullptr;
    int64_t size = 0;
    std::string name;
    LaunchSnapshot* snap = nullptr;  // a buffer the kernel also stores to: loads read it as at launch
  };

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
  std::set<int64_t> loaded, stored;

  // ---- run state ----
  std::vector<Slot> slots;
  std::vector<std::unique_ptr<LaunchSnapshot>> snaps;  // per buffer both loaded and stored, this run
  std::vector<Node*> active;
  uint64_t clock = 0, base = 0, ops = 0;

  // ---------- diagnostics ----------
  std::string describe(UOp u) const { return opts.describe ? opts.describe(u) : printed.line(u); }

  [[noreturn]] void fail(UOp at, const std::string& msg) const {
    std::vector<std::pair<UOp, int64_t>> b;
    for (Node* r : active) b.push_back({r->u, r->v.i});
    throw Error(msg + "\n  at " + describe(at) + "\n  in kernel " + opts.name + "\n  with " + bindings_text(b));
  }

  std::string slot_text(int slot) const {
    const Slot& s = slots[static_cast<size_t>(slot)];
    return "buffer " + (s.name.empty() ? "" : "'" + s.name + "' ") + "(slot " + std::to_string(slot) + ") of " + std::to_string(s.size) + " elements";
  }

  // Checks the pointer's gate and index; returns false when a gate is false (no access).
  bool access(const char* what, int slot, Node* lin, Node* gate, UOp index) {
    if (gate) {
      if (gate->poison) fail(index, std::string("the gate of a ") + what + " is poison (computed from uninitialized memory)");
      if (!gate->v.b) return false;
    }
    if (lin->poison) fail(index, std::string("the index of a ") + what + " is poison (computed from uninitialized memory)");
    int64_t k = lin->v.i;
    if (static_cast<uint64_t>(k) >= static_cast<uint64_t>(slots[static_cast<size_t>(slot)].size))
      fail(index, std::string("out-of-bounds index: ") + what + " at " + std::to_string(k) + " into " + slot_text(slot));
    return true;
  }

  // ---------- node functions ----------
  template <class T, T (*F)(T)> static void un(Impl&, Node& n) {
    get<T>(n.v) = F(get<T>(n.s[0]->v));
    n.poison = n.s[0]->poison;
  }
  template <class T, class R, R (*F)(T, T)> static void bin(Impl&, Node& n) {
    get<R>(n.v) = F(get<T>(n.s[0]->v), get<T>(n.s[1]->v));
    n.poison = n.s[0]->poison | n.s[1]->poison;
  }
  // A binary op that can fail: integer division by zero, a shift count out of range.
  template <class T, T (*F)(T, T)> static void checked_bin(Impl& I, Node& n) {
    try {
      get<T>(n.v) = F(get<T>(n.s[0]->v), get<T>(n.s[1]->v));
    } catch (const sop::DivByZero&) {
      I.fail(n.u, "integer division by zero");
    } catch (const sop::BadShift& e) {
      I.fail(n.u, e.message());
    }
    n.poison = n.s[0]->poison | n.s[1]->poison;
  }
  template <class T, T (*F)(T, T, T)> static void tern(Impl&, Node& n) {
    get<T>(n.v) = F(get<T>(n.s[0]->v), get<T>(n.s[1]->v), get<T>(n.s[2]->v));
    n.poison = n.s[0]->poison | n.s[1]->poison | n.s[2]->poison;
  }
  // WHERE is poison where the condition is, or where the branch it selects is.
  template <class T> static void where(Impl&, Node& n) {
    bool c = n.s[0]->v.b != 0;
    Node* pick = c ? n.s[1] : n.s[2];
    get<T>(n.v) = get<T>(pick->v);
    n.poison = n.s[0]->poison | pick->poison;
  }
  template <class To, class From> static void cast_fn(Impl&, Node& n) {
    get<To>(n.v) = convert<To>(get<From>(n.s[0]->v));
    n.poison = n.s[0]->poison;
  }
  template <class To, class From> static void bitcast_fn(Impl&, Node& n) {
    get<To>(n.v) = sop::bitcast_op<To, From>(get<From>(n.s[0]->v));
    n.poison = n.s[0]->poison;
  }
  template <class T> static void load(Impl& I, Node& n) {
    if (!I.access("LOAD", n.slot, n.lin, n.gate, n.s[0]->u)) {
      get<T>(n.v) = T(0);
      n.poison = false;
      return;
    }
    const Slot& s = I.slots[static_cast<size_t>(n.slot)];
    int64_t k = n.lin->v.i;
    if (s.snap) {
      get<T>(n.v) = s.snap->load<T>(k, n.poison);
      return;
    }
    get<T>(n.v) = static_cast<const T*>(s.rdata)[k];
    n.poison = s.rpoison && s.rpoison[k];
  }
  template <class T, Ops OP> static void reduce(Impl& I, Node& n) {
    Loop& L = I.loops[static_cast<size_t>(n.loop)];
    T acc = sop::identity<T>(OP);
    bool p = false;
    Node* x = L.fold;
    uint64_t steps = 0;
    I.run_loop_fn(L, [&] {
      if constexpr (OP == Ops::ADD) acc = sop::wrap_add<T>(acc, get<T>(x->v));
      else if constexpr (OP == Ops::MUL) acc = sop::wrap_mul<T>(acc, get<T>(x->v));
      else acc = sop::max_op<T>(acc, get<T>(x->v));
      p |= x->poison;
      ++steps;
    });
    I.ops += steps;
    get<T>(n.v) = acc;
    n.poison = p;
  }
  template <class T> static void store(Impl& I, Stmt& s) {
    if (!I.access("STORE", s.slot, s.lin, s.gate, s.index)) return;
    Slot& b = I.slots[static_cast<size_t>(s.slot)];
    int64_t k = s.lin->v.i;
    if (b.snap) b.snap->before_store(k);
    b.bd->data->as<T>()[k] = get<T>(s.value->v);
    if (s.value->poison && !b.bd->poison) {
      b.bd->poison = std::make_shared<Storage>(dtypes::bool_, b.size);
      b.bd->poison->set_nonzero(0);
    }
    if (b.bd->poison) b.bd->poison->set_mask_element(k, s.value->poison);
    ++I.ops;
  }

  // ---------- compilation ----------
  mutable bool compile_failed = false;  // compile_fail's error is on its way out: pass it through
  [[noreturn]] void compile_fail(UOp u, const std::string& msg) const {
    compile_failed = true;
    throw Error(msg + "\n  at " + describe(u) + "\n  in kernel " + opts.name);
  }

  template <class T> Fn alu_fn(UOp u) {
    switch (u->op) {
      case Ops::NEG: return &un<T, sop::neg_op<T>>;
      case Ops::RECIPROCAL: return &un<T, sop::recip_op<T>>;
      case Ops::SQRT: return &un<T, sop::sqrt_op<T>>;
      case Ops::EXP2: return &un<T, sop::exp2_op<T>>;
      case Ops::LOG2: return &un<T, sop::log2_op<T>>;
      case Ops::SIN: return &un<T, sop::sin_op<T>>;
      case Ops::TRUNC: return &un<T, sop::trunc_op<T>>;
      case Ops::ADD: return &bin<T, T, sop::wrap_add<T>>;
      case Ops::SUB: return &bin<T, T, sop::wrap_sub<T>>;
      case Ops::MUL: return &bin<T, T, sop::wrap_mul<T>>;
      case Ops::MAX: return &bin<T, T, sop::max_op<T>>;
      case Ops::FDIV: return &bin<T, T, sop::fdiv_op<T>>;
      case Ops::POW: return &bin<T, T, sop::pow_op<T>>;
      case Ops::IDIV: return &checked_bin<T, sop::idiv_op<T>>;
      case Ops::MOD: return &checked_bin<T, sop::mod_op<T>>;
      case Ops::CMPLT: return &bin<T, uint8_t, sop::cmplt_op<T>>;
      case Ops::CMPNE: return &bin<T, uint8_t, sop::cmpne_op<T>>;
      case Ops::CMPEQ: return &bin<T, uint8_t, sop::cmpeq_op<T>>;
      case Ops::AND: if constexpr (std::is_integral_v<T>) return &bin<T, T, sop::and_op<T>>; else break;
      case Ops::OR: if constexpr (std::is_integral_v<T>) return &bin<T, T, sop::or_op<T>>; else break;
      case Ops::XOR: if constexpr (std::is_integral_v<T>) return &bin<T, T, sop::xor_op<T>>; else break;
      case Ops::SHL: if constexpr (sop::is_integer_v<T>) return &checked_bin<T, sop::shl_op<T>>; else break;
      case Ops::SHR: if constexpr (sop::is_integer_v<T>) return &checked_bin<T, sop::shr_op<T>>; else break;
      case Ops::THREEFRY: if constexpr (std::is_same_v<T, uint64_t>) return &bin<T, T, sop::threefry2x32_20>; else break;
      case Ops::MULACC: return &tern<T, sop::mulacc_op<T>>;
      case Ops::WHERE: return &where<T>;
      default: break;
    }
    compile_fail(u, std::string("the interpreter has no ") + std::string(op_name(u->op)) + " for " + to_string(u->src[0]->dtype));
  }

  // CAST converts (dispatch.h's rule); BITCAST copies the bits of an element of the same size.
  Fn convert_fn(UOp u) {
    return dispatch(u->dtype, [&](auto to) -> Fn {
      return dispatch(u->src[0]->dtype, [&](auto from) -> Fn {
        using T = typename decltype(to)::type;
        using F = typename decltype(from)::type;
        if (u->op == Ops::CAST) return &cast_fn<T, F>;
        if constexpr (sizeof(T) == sizeof(F)) return &bitcast_fn<T, F>;
        compile_fail(u, "BITCAST from " + to_string(u->src[0]->dtype) + " to " + to_string(u->dtype) + " changes the size of an element");
      });
    });
  }

  Node& node(UOp u) { return nodes[id.at(u.get())]; }

  // The loop ranges a node's value depends on: a RANGE itself; a REDUCE its body's, less its own
  // ranges; anything else the union of its sources'.
  std::vector<Node*> range_deps(Node& n) {
    UOp u = n.u;
    std::set<Node*> deps;
    if (u->op == Ops::RANGE) {
      deps.insert(&n);
    } else if (u->op == Ops::REDUCE) {
      deps.insert(n.s[0]->deps.begin(), n.s[0]->deps.end());
      for (size_t i = 1; i < u->src.size(); ++i) deps.erase(&node(u->src[i]));
    } else {
      for (UOp s : u->src) deps.insert(node(s).deps.begin(), node(s).deps.end());
    }
    return {deps.begin(), deps.end()};
  }

  // INDEX T* (DEFINE_GLOBAL, linear[, gate]): the slot and the nodes of the address.
  void compile_pointer(Node& n) {
    UOp u = n.u;
    if (!u->dtype.ptr || u->src[0]->op != Ops::DEFINE_GLOBAL)
      compile_fail(u, "a kernel INDEX must be a pointer INDEX of a DEFINE_GLOBAL (INDEX T* (DEFINE_GLOBAL, linear[, gate]))");
    if (u->src.size() != 2 && u->src.size() != 3) compile_fail(u, "a pointer INDEX takes (DEFINE_GLOBAL, linear[, gate])");
    if (u->src.size() == 3 && !u->src[2]->dtype.is_bool()) compile_fail(u, "the gate of a pointer INDEX must be bool");
    n.slot = static_cast<int>(u->src[0]->arg.as<int64_t>());
    n.lin = &node(u->src[1]);
    n.gate = u->src.size() == 3 ? &node(u->src[2]) : nullptr;
  }

  // REDUCE T (value, range...) op: a fold function and the loop it runs.
  void compile_reduce(Node& n) {
    UOp u = n.u;
    Ops op = u->arg.as<Ops>();
    n.fn = dispatch(u->dtype, [&](auto tag) -> Fn {
      using T = typename decltype(tag)::type;
      if (op == Ops::ADD) return &reduce<T, Ops::ADD>;
      if (op == Ops::MUL) return &reduce<T, Ops::MUL>;
      return &reduce<T, Ops::MAX>;
    });
    std::vector<UOp> ranges(u->src.begin() + 1, u->src.end());
    n.loop = make_loop(ranges, {&node(u->src[0])}, u);
    loops[static_cast<size_t>(n.loop)].fold = &node(u->src[0]);
    n.listed = true;
  }

  void compile_node(UOp u, size_t idx) {
    Node& n = nodes[idx];
    n.u = u;
    n.order = idx;
    for (size_t i = 0; i < u->src.size() && i < 3; ++i) n.s[i] = &node(u->src[i]);
    n.deps = range_deps(n);
    try {
      switch (u->op) {
        case Ops::CONST: {
          Value c = u->arg.is<int64_t>() ? int_scalar(u->dtype, u->arg.as<int64_t>()) : scalar(u->dtype, u.const_value());
          dispatch(u->dtype, [&](auto tag) {
            using T = typename decltype(tag)::type;
            get<T>(n.v) = c.data->as<T>()[0];
          });
          return;
        }
        case Ops::RANGE:
          if (!u->dtype.is_index()) compile_fail(u, "a RANGE must be index");
          return;
        case Ops::DEFINE_VAR:
          vars.push_back(idx);
          return;
        case Ops::DEFINE_GLOBAL:
          globals.push_back({idx, u});
          return;
        case Ops::INDEX:
          compile_pointer(n);
          return;
        case Ops::LOAD: {
          UOp p = u->src[0];
          if (p->op != Ops::INDEX) compile_fail(u, "LOAD needs an INDEX of a DEFINE_GLOBAL");
          Node& ix = node(p);
          n.slot = ix.slot;
          n.lin = ix.lin;
          n.gate = ix.gate;
          loaded.insert(n.slot);
          n.fn = dispatch(u->dtype, [&](auto tag) -> Fn { return &load<typename decltype(tag)::type>; });
          n.listed = true;
          return;
        }
        case Ops::REDUCE:
          compile_reduce(n);
          return;
        case Ops::CAST: case Ops::BITCAST:
          n.fn = convert_fn(u);
          n.listed = true;
          return;
        case Ops::STORE: case Ops::END: case Ops::SINK: case Ops::GROUP:
          return;  // statements, compiled from the root
        default:
          if (is_alu(u->op)) {
            DType t = u->op == Ops::WHERE ? u->src[1]->dtype : u->src[0]->dtype;
            n.fn = dispatch(t, [&](auto tag) -> Fn { return alu_fn<typename decltype(tag)::type>(u); });
            n.listed = true;
            return;
          }
          compile_fail(u, std::string("the kernel evaluator does not evaluate ") + std::string(op_name(u->op)) + " nodes (not a kernel-level form)");
      }
    } catch (const Error& e) {
      if (compile_failed) throw;
      compile_fail(u, e.what());
    }
  }

  // The listed nodes reachable from roots without entering REDUCE bodies, topologically ordered.
  std::vector<Node*> reach(const std::vector<Node*>& roots) {
    std::vector<Node*> out, stack(roots.begin(), roots.end());
    std::set<Node*> seen;
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      if (!n || !seen.insert(n).second) continue;
      Ops op = n->u->op;
      if (op == Ops::RANGE || op == Ops::CONST || op == Ops::DEFINE_VAR || op == Ops::DEFINE_GLOBAL) continue;
      if (op == Ops::INDEX) {
        stack.push_back(n->lin);
        stack.push_back(n->gate);
        continue;
      }
      out.push_back(n);
      if (op == Ops::REDUCE) continue;
      for (Node* s : n->s) stack.push_back(s);
    }
    std::sort(out.begin(), out.end(), [](Node* a, Node* b) { return a->order < b->order; });
    return out;
  }

  int make_loop(const std::vector<UOp>& ranges, const std::vector<Node*>& roots, UOp at) {
    Loop L;
    for (UOp r : ranges) {
      if (r->op != Ops::RANGE) compile_fail(at, "loops run over RANGEs only");
      Node& rn = node(r);
      L.ranges.push_back(&rn);
      Node& e = node(r->src[0]);
      if (!e.deps.empty()) compile_fail(r, "a RANGE's extent may not depend on another range");
      L.extent_nodes.push_back(&e);
      L.extent_lists.push_back(reach({&e}));
    }
    for (size_t i = 0; i < L.ranges.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (L.ranges[i] == L.ranges[j]) compile_fail(at, "range " + range_name(ranges[i]) + " is listed twice");
    L.levels.resize(L.ranges.size());
    L.ext.resize(L.ranges.size());
    for (Node* n : reach(roots)) {
      int level = -1;
      for (size_t j = 0; j < L.ranges.size(); ++j)
        if (std::find(n->deps.begin(), n->deps.end(), L.ranges[j]) != n->deps.end()) level = static_cast<int>(j);
      if (level < 0) L.invariant.push_back(n);
      else L.levels[static_cast<size_t>(level)].push_back(n);
    }
    loops.push_back(std::move(L));
    return static_cast<int>(loops.size() - 1);
  }

  // Statements: SINK/GROUP (in order), END (a loop), STORE.
  std::vector<int> compile_stmt(UOp u) {
    std::vector<int> out;
    switch (u->op) {
      case Ops::SINK: case Ops::GROUP:
        for (UOp s : u->src) {
          auto v = compile_stmt(s);
          out.insert(out.end(), v.begin(), v.end());
        }
        return out;
      case Ops::END: {
        std::vector<int> body = compile_stmt(u->src[0]);
        std::vector<Node*> roots;
        for (int k : body)
          if (stmts[static_cast<size_t>(k)].is_store) {
            Stmt& s = stmts[static_cast<size_t>(k)];
            roots.insert(roots.end(), {s.lin, s.gate, s.value});
          }
        std::vector<UOp> ranges(u->src.begin() + 1, u->src.end());
        int l = make_loop(ranges, roots, u);
        loops[static_cast<size_t>(l)].stmts = body;
        Stmt st;
        st.loop = l;
        stmts.push_back(st);
        return {static_cast<int>(stmts.size() - 1)};
      }
      case Ops::STORE: {
        UOp p = u->src[0];
        if (p->op != Ops::INDEX || !p->dtype.ptr) compile_fail(u, "a kernel STORE writes through a pointer INDEX of a DEFINE_GLOBAL");
        Node& ix = node(p);
        Stmt s;
        s.is_store = true;
        s.slot = ix.slot;
        s.lin = ix.lin;
        s.gate = ix.gate;
        s.value = &node(u->src[1]);
        s.index = p;
        stored.insert(s.slot);
        s.store = dispatch(u->src[1]->dtype, [&](auto tag) -> StoreFn { return &store<typename decltype(tag)::type>; });
        stmts.push_back(s);
        return {static_cast<int>(stmts.size() - 1)};
      }
      default:
        compile_fail(u, std::string("a kernel ast holds STOREs (in END loops, GROUPs), not ") + std::string(op_name(u->op)));
    }
  }

  Impl(UOp root, KernelOptions o) : ast(root), opts(std::move(o)) {
    printed = number_graph(ast);
    auto issues = verify(ast);
    if (!issues.empty()) compile_fail(issues[0].node, "invalid kernel ast: " + issues[0].rule + ": " + issues[0].message);
    if (ast->op != Ops::SINK) compile_fail(ast, "a kernel ast is a SINK of stores");
    std::vector<UOp> order = toposort(ast);
    nodes.resize(order.size());
    for (size_t i = 0; i < order.size(); ++i) id[order[i].get()] = i;
    for (size_t i = 0; i < order.size(); ++i) compile_node(order[i], i);
    for (int k : compile_stmt(ast)) {
      if (stmts[static_cast<size_t>(k)].is_store) {  // a bare STORE: a loop over no ranges
        Stmt& s = stmts[static_cast<size_t>(k)];
        int l = make_loop({}, {s.lin, s.gate, s.value}, ast);
        loops[static_cast<size_t>(l)].stmts = {k};
        Stmt st;
        st.loop = l;
        stmts.push_back(st);
        top.push_back(static_cast<int>(stmts.size() - 1));
      } else {
        top.push_back(k);
      }
    }
  }

  // ---------- running ----------
  bool fresh(const Node* n) const {
    if (n->stamp < base) return false;
    for (const Node* d : n->deps)
      if (d->changed_at > n->stamp) return false;
    return true;
  }

  void ensure(const std::vector<Node*>& list) {
    for (Node* x : list)
      if (!fresh(x)) {
        x->fn(*this, *x);
        x->stamp = clock;
        ++ops;
      }
  }

  template <class Inner> void nest(Loop& L, size_t j, Inner& inner) {
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

  // Defined after the class: clang does not instantiate an in-class member template used
  // from a nested class defined earlier (an undefined symbol at link time).
  template <class Inner> void run_loop(Loop& L, Inner&& inner);
  void run_loop_fn(Loop& L, const std::function<void()>& inner) { run_loop(L, inner); }


  void run_stmt(int k) {
    Stmt& s = stmts[static_cast<size_t>(k)];
    if (s.is_store) return s.store(*this, s);
    Loop& L = loops[static_cast<size_t>(s.loop)];
    if (L.stmts.size() == 1) {
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

  void run(const KernelArgs& args) {
    active.clear();
    snaps.clear();
    ops = 0;
    base = ++clock;
    // bind the buffers
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
    // Loads see the buffers as they were at launch, also those the kernel stores to: the stores
    // keep what they overwrite (launch_snapshot.h).
    for (int64_t w : stored) {
      BufferData* bd = slots[static_cast<size_t>(w)].bd;
      auto same = [&](const Slot& x) { return x.bd && x.bd->data == bd->data; };
      bool read = std::any_of(loaded.begin(), loaded.end(), [&](int64_t l) { return same(slots[static_cast<size_t>(l)]); });
      if (!read || slots[static_cast<size_t>(w)].snap) continue;
      snaps.push_back(std::make_unique<LaunchSnapshot>(*bd));
      for (Slot& x : slots)
        if (same(x)) x.snap = snaps.back().get();
    }
    // bind the variables
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
    for (int k : top) run_stmt(k);
    snaps.clear();
  }
};

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
Kernel::Kernel(UOp ast, KernelOptions opts) : impl_(std::make_unique<Impl>(ast, std::move(opts))) {}
Kernel::~Kernel() = default;
Kernel::Kernel(Kernel&&) noexcept = default;
Kernel& Kernel::operator=(Kernel&&) noexcept = default;

void Kernel::run(const KernelArgs& args) { impl_->run(args); }
uint64_t Kernel::ops() const { return impl_->ops; }
namespace {
std::vector<int64_t> slots_accessed(UOp ast, Ops op) {
  std::set<int64_t> out;
  for (UOp u : toposort(ast))
    if (u->op == op && u->src[0]->op == Ops::INDEX && u->src[0]->src[0]->op == Ops::DEFINE_GLOBAL) out.insert(u->src[0]->src[0]->arg.as<int64_t>());
  return {out.begin(), out.end()};
}
}  // namespace

std::vector<int64_t> slots_stored(UOp ast) { return slots_accessed(ast, Ops::STORE); }
std::vector<int64_t> slots_loaded(UOp ast) { return slots_accessed(ast, Ops::LOAD); }

void run_kernel(UOp ast, const KernelArgs& args, const KernelOptions& opts) { Kernel(ast, opts).run(args); }

}  // namespace ow::interp
