// The kernel evaluator's compiler (kernel_eval_impl.h): a verified kernel ast into node records
// with their functions (kernel_eval_ops.h), loops with their hoisting lists, and statements.
#include <algorithm>
#include <set>

#include "interp/dispatch.h"
#include "interp/kernel_eval_impl.h"
#include "interp/kernel_eval_ops.h"
#include "uop/args.h"
#include "uop/verify.h"

namespace ow::interp {

using kernel_eval::get;

void Kernel::Impl::compile_fail(UOp u, const std::string& msg) const {
  compile_failed = true;
  throw Error(msg + "\n  at " + describe(u) + "\n  in kernel " + opts.name);
}

template <class T> Kernel::Impl::Fn Kernel::Impl::alu_fn(UOp u) {
  using E = Eval;
  switch (u->op) {
    case Ops::NEG: return &E::un<T, sop::neg_op<T>>;
    case Ops::RECIPROCAL: return &E::un<T, sop::recip_op<T>>;
    case Ops::SQRT: return &E::un<T, sop::sqrt_op<T>>;
    case Ops::EXP2: return &E::un<T, sop::exp2_op<T>>;
    case Ops::LOG2: return &E::un<T, sop::log2_op<T>>;
    case Ops::SIN: return &E::un<T, sop::sin_op<T>>;
    case Ops::TRUNC: return &E::un<T, sop::trunc_op<T>>;
    case Ops::ADD: return &E::bin<T, T, sop::wrap_add<T>>;
    case Ops::SUB: return &E::bin<T, T, sop::wrap_sub<T>>;
    case Ops::MUL: return &E::bin<T, T, sop::wrap_mul<T>>;
    case Ops::MAX: return &E::bin<T, T, sop::max_op<T>>;
    case Ops::FDIV: return &E::bin<T, T, sop::fdiv_op<T>>;
    case Ops::POW: if constexpr (std::is_integral_v<T>) return &E::checked_bin<T, sop::pow_op<T>>; else return &E::bin<T, T, sop::pow_op<T>>;
    case Ops::IDIV: return &E::checked_bin<T, sop::idiv_op<T>>;
    case Ops::MOD: return &E::checked_bin<T, sop::mod_op<T>>;
    case Ops::CMPLT: return &E::bin<T, uint8_t, sop::cmplt_op<T>>;
    case Ops::CMPNE: return &E::bin<T, uint8_t, sop::cmpne_op<T>>;
    case Ops::CMPEQ: return &E::bin<T, uint8_t, sop::cmpeq_op<T>>;
    case Ops::AND: if constexpr (std::is_integral_v<T>) return &E::bin<T, T, sop::and_op<T>>; else break;
    case Ops::OR: if constexpr (std::is_integral_v<T>) return &E::bin<T, T, sop::or_op<T>>; else break;
    case Ops::XOR: if constexpr (std::is_integral_v<T>) return &E::bin<T, T, sop::xor_op<T>>; else break;
    case Ops::SHL: if constexpr (sop::is_integer_v<T>) return &E::checked_bin<T, sop::shl_op<T>>; else break;
    case Ops::SHR: if constexpr (sop::is_integer_v<T>) return &E::checked_bin<T, sop::shr_op<T>>; else break;
    case Ops::THREEFRY: if constexpr (std::is_same_v<T, uint64_t>) return &E::bin<T, T, sop::threefry2x32_20>; else break;
    case Ops::MULACC: return &E::tern<T, sop::mulacc_op<T>>;
    case Ops::WHERE: return &E::where<T>;
    default: break;
  }
  compile_fail(u, std::string("the interpreter has no ") + std::string(op_name(u->op)) + " for " + to_string(u->src[0]->dtype));
}

// CAST converts (dispatch.h's rule); BITCAST copies the bits of an element of the same size.
Kernel::Impl::Fn Kernel::Impl::convert_fn(UOp u) {
  return dispatch(u->dtype, [&](auto to) -> Fn {
    return dispatch(u->src[0]->dtype, [&](auto from) -> Fn {
      using T = typename decltype(to)::type;
      using F = typename decltype(from)::type;
      if (u->op == Ops::CAST) return &Eval::cast_fn<T, F>;
      if constexpr (sizeof(T) == sizeof(F)) return &Eval::bitcast_fn<T, F>;
      compile_fail(u, "BITCAST from " + to_string(u->src[0]->dtype) + " to " + to_string(u->dtype) + " changes the size of an element");
    });
  });
}

// The loop ranges a node's value depends on: a RANGE itself; a REDUCE its body's, less its own
// ranges; anything else the union of its sources'.
std::vector<Kernel::Impl::Node*> Kernel::Impl::range_deps(Node& n) {
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

void Kernel::Impl::compile_const(Node& n) {
  UOp u = n.u;
  Value c = u->arg.is<int64_t>() ? int_scalar(u->dtype, u->arg.as<int64_t>()) : scalar(u->dtype, u.const_value());
  dispatch(u->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    get<T>(n.v) = c.data->as<T>()[0];
  });
}

// INDEX T* (DEFINE_GLOBAL, linear[, gate]) or INDEX T* (DEFINE_REG, linear): the slot and the
// nodes of the address.
void Kernel::Impl::compile_pointer(Node& n) {
  UOp u = n.u;
  bool reg = u->src[0]->op == Ops::DEFINE_REG;
  if (!u->dtype.ptr || (u->src[0]->op != Ops::DEFINE_GLOBAL && !reg))
    compile_fail(u, "a kernel INDEX must be a pointer INDEX of a DEFINE_GLOBAL or a DEFINE_REG (INDEX T* (DEFINE_GLOBAL, linear[, gate]))");
  if (u->src.size() != 2 && (reg || u->src.size() != 3)) compile_fail(u, "a pointer INDEX takes (DEFINE_GLOBAL, linear[, gate]) or (DEFINE_REG, linear)");
  if (u->src.size() == 3 && !u->src[2]->dtype.is_bool()) compile_fail(u, "the gate of a pointer INDEX must be bool");
  n.slot = reg ? node(u->src[0]).slot : static_cast<int>(u->src[0]->arg.as<int64_t>());
  n.lin = &node(u->src[1]);
  n.gate = u->src.size() == 3 ? &node(u->src[2]) : nullptr;
}

// LOAD T (INDEX): reads through the pointer its INDEX compiled to.
void Kernel::Impl::compile_load(Node& n) {
  UOp u = n.u, p = u->src[0];
  if (p->op != Ops::INDEX) compile_fail(u, "LOAD needs an INDEX of a DEFINE_GLOBAL");
  Node& ix = node(p);
  n.slot = ix.slot;
  n.lin = ix.lin;
  n.gate = ix.gate;
  if (n.slot >= 0) loaded.insert(n.slot);
  n.reads_reg = n.reads_reg || n.slot < 0;
  n.fn = dispatch(u->dtype, [&](auto tag) -> Fn { return &Eval::load<typename decltype(tag)::type>; });
  n.listed = true;
}

// REDUCE T (value, range...) op: a fold function and the loop it runs.
void Kernel::Impl::compile_reduce(Node& n) {
  UOp u = n.u;
  Ops op = u->arg.as<Ops>();
  n.fn = dispatch(u->dtype, [&](auto tag) -> Fn {
    using T = typename decltype(tag)::type;
    if (op == Ops::ADD) return &Eval::reduce<T, Ops::ADD>;
    if (op == Ops::MUL) return &Eval::reduce<T, Ops::MUL>;
    return &Eval::reduce<T, Ops::MAX>;
  });
  std::vector<UOp> ranges(u->src.begin() + 1, u->src.end());
  n.loop = make_loop(ranges, {&node(u->src[0])}, u);
  loops[static_cast<size_t>(n.loop)].fold = &node(u->src[0]);
  n.listed = true;
}

// An ALU op (or WHERE), its function chosen by its operands' dtype (WHERE's by its branches').
void Kernel::Impl::compile_alu(Node& n) {
  UOp u = n.u;
  if (!is_alu(u->op))
    compile_fail(u, std::string("the kernel evaluator does not evaluate ") + std::string(op_name(u->op)) + " nodes (not a kernel-level form)");
  DType t = u->op == Ops::WHERE ? u->src[1]->dtype : u->src[0]->dtype;
  n.fn = dispatch(t, [&](auto tag) -> Fn { return alu_fn<typename decltype(tag)::type>(u); });
  n.listed = true;
}

// The value node for u at topological position idx; statements are compiled from the root.
void Kernel::Impl::compile_node(UOp u, size_t idx) {
  Node& n = nodes[idx];
  n.u = u;
  n.order = idx;
  for (size_t i = 0; i < u->src.size() && i < 3; ++i) n.s[i] = &node(u->src[i]);
  n.deps = range_deps(n);
  for (UOp s : u->src) n.reads_reg = n.reads_reg || node(s).reads_reg;
  if (n.reads_reg && u->op == Ops::REDUCE) compile_fail(u, "a REDUCE's body reads a register (registers are read by statements only)");
  try {
    compile_value(n, idx);
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error& e) {
    if (compile_failed) throw;
    compile_fail(u, e.what());  // an error from below (a dtype, an arg): located at this node
  }
}

void Kernel::Impl::compile_value(Node& n, size_t idx) {
  UOp u = n.u;
  switch (u->op) {
    case Ops::CONST: return compile_const(n);
    case Ops::RANGE:
      if (!u->dtype.is_index()) compile_fail(u, "a RANGE must be index");
      return;
    case Ops::DEFINE_VAR: return vars.push_back(idx);
    case Ops::DEFINE_GLOBAL: return globals.push_back({idx, u});
    case Ops::DEFINE_REG:
      if (!u->dtype.ptr || u->dtype.size < 1) compile_fail(u, "a DEFINE_REG needs a pointer dtype with its element count");
      n.slot = register_slot(regs.size());
      return regs.push_back(u);
    case Ops::INDEX: return compile_pointer(n);
    case Ops::LOAD: return compile_load(n);
    case Ops::REDUCE: return compile_reduce(n);
    case Ops::CAST: case Ops::BITCAST:
      n.fn = convert_fn(u);
      n.listed = true;
      return;
    case Ops::STORE: case Ops::END: case Ops::SINK: case Ops::GROUP: return;
    default: return compile_alu(n);
  }
}

// The nodes a loop (registers false) or a store statement (true) computes for `roots`, in
// topological order. A loop's are the listed nodes that read no register, reached without
// entering REDUCE bodies; a statement's those that read a register, reached through such nodes
// only (their other sources are its loops' business).
std::vector<Kernel::Impl::Node*> Kernel::Impl::reach(const std::vector<Node*>& roots, bool registers) {
  std::vector<Node*> out, stack(roots.begin(), roots.end());
  std::set<Node*> seen;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (!n || !seen.insert(n).second) continue;
    Ops op = n->u->op;
    if (op == Ops::RANGE || op == Ops::CONST || op == Ops::DEFINE_VAR || op == Ops::DEFINE_GLOBAL) continue;
    if (op == Ops::INDEX) {
      stack.insert(stack.end(), {n->lin, n->gate});
      continue;
    }
    if (registers && !n->reads_reg) continue;  // a statement stops at what its loops compute
    if (n->reads_reg == registers) out.push_back(n);
    if (op == Ops::REDUCE) continue;
    for (Node* s : n->s) stack.push_back(s);
  }
  std::sort(out.begin(), out.end(), [](Node* a, Node* b) { return a->order < b->order; });
  return out;
}

// A loop over `ranges` running what `roots` need: each body node listed at the level of the
// innermost of those ranges it depends on, or as invariant.
int Kernel::Impl::make_loop(const std::vector<UOp>& ranges, const std::vector<Node*>& roots, UOp at) {
  Loop L;
  for (UOp r : ranges) {
    if (r->op != Ops::RANGE) compile_fail(at, "loops run over RANGEs only");
    Node& rn = node(r);
    L.ranges.push_back(&rn);
    Node& e = node(r->src[0]);
    if (!e.deps.empty()) compile_fail(r, "a RANGE's extent may not depend on another range");
    if (e.reads_reg) compile_fail(r, "a RANGE's extent may not read a register");
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

// A statement that runs loop `loop`.
int Kernel::Impl::loop_stmt(int loop) {
  Stmt st;
  st.loop = loop;
  stmts.push_back(st);
  return static_cast<int>(stmts.size() - 1);
}

// Statements: SINK/GROUP (in order), END (a loop), STORE.
std::vector<int> Kernel::Impl::compile_stmt(UOp u) {
  std::vector<int> out;
  switch (u->op) {
    case Ops::SINK: case Ops::GROUP:
      for (UOp s : u->src) {
        auto v = compile_stmt(s);
        out.insert(out.end(), v.begin(), v.end());
      }
      return out;
    case Ops::END: return {compile_end(u)};
    case Ops::STORE: return {compile_store(u)};
    default:
      compile_fail(u, std::string("a kernel ast holds STOREs (in END loops, GROUPs), not ") + std::string(op_name(u->op)));
  }
}

// END (body, range...): a loop over the ranges running the body's statements.
int Kernel::Impl::compile_end(UOp u) {
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
  return loop_stmt(l);
}

int Kernel::Impl::compile_store(UOp u) {
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
  s.locals = reach({s.lin, s.gate, s.value}, true);
  if (s.slot >= 0) stored.insert(s.slot);
  s.store = dispatch(u->src[1]->dtype, [&](auto tag) -> StoreFn { return &Eval::store<typename decltype(tag)::type>; });
  stmts.push_back(s);
  return static_cast<int>(stmts.size() - 1);
}

Kernel::Impl::Impl(UOp root, KernelOptions o) : ast(root), opts(std::move(o)) {
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
      top.push_back(loop_stmt(l));
    } else {
      top.push_back(k);
    }
  }
}

}  // namespace ow::interp
