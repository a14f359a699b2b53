// The kernel grammar of reference/LOWERING.md ("Kernel-level program", and the ranges a buffer
// source may depend on from "Kernels and their dependencies"), checked once, at the end
// of `kernelize`: everything after it (schedule, the renderer, the kernel evaluator) may then
// assume the grammar instead of re-checking it. A kernel that breaks it is outerworld's bug, so
// it is an InternalError naming the node by its line in the kernel's print.
#include <set>
#include <string>
#include <vector>

#include "uop/args.h"
#include "uop/error.h"
#include "uop/text.h"
#include "uop/verify.h"

namespace ow {

namespace {

// The first node of one kernel that breaks the grammar, with the rule it breaks.
class KernelGrammar {
 public:
  explicit KernelGrammar(UOp kernel) : kernel_(kernel) {}

  // Empty when the kernel is well formed; else (node, message).
  std::pair<UOp, std::string> first_problem() {
    if (kernel_->op != Ops::KERNEL || kernel_->src.empty() || !kernel_->arg.tuple() || kernel_->arg.tuple()->empty() ||
        !kernel_->arg.tuple()->at(0).is<std::string>())
      return {kernel_, "a kernel is KERNEL void (ast, buffer..., bind...) (\"name\",)"};
    if (auto p = sources(); p.first) return p;
    UOp ast = kernel_->src[0];
    if (ast->op != Ops::SINK) return {ast, "a kernel's ast is a SINK of stores"};
    if (int64_t n = kernel_threads(kernel_); n > 1 && ast->src.size() % static_cast<size_t>(n))
      return {ast, "a kernel for " + std::to_string(n) + " threads has its statements in " + std::to_string(n) + " parts of equal count"};
    for (UOp s : ast->src)
      if (auto p = store(s); p.first) return p;
    std::vector<UOp> order = toposort(ast);
    for (UOp u : order)
      if (!stores_.count(u.get()) && u != ast)
        if (auto p = value(u); p.first) return p;
    return registers(order);
  }

 private:
  UOp kernel_;
  size_t buffers_ = 0;               // KERNEL sources 1..buffers_ are the DEFINE_GLOBAL slots
  std::set<std::string> bound_;      // variables the KERNEL's BINDs bind
  std::set<const UOpNode*> stores_;  // the statements (STORE, END, GROUP) under the SINK

  // buffer... then bind...: a buffer seen through AFTERs, then BINDs of DEFINE_VARs.
  std::pair<UOp, std::string> sources() {
    size_t i = 1;
    for (; i < kernel_->src.size() && kernel_->src[i]->op != Ops::BIND; ++i) {
      UOp b = kernel_->src[i];
      for (; b->op == Ops::AFTER; b = b->src[0])
        if (auto p = host_ranges(b); p.first) return p;
      if (b->op != Ops::BUFFER) return {kernel_->src[i], "a kernel's buffer source is a BUFFER or AFTER(BUFFER, dep...)"};
    }
    buffers_ = i - 1;
    for (; i < kernel_->src.size(); ++i) {
      UOp b = kernel_->src[i];
      if (b->op != Ops::BIND || b->src.size() != 2 || b->src[0]->op != Ops::DEFINE_VAR)
        return {b, "after the buffers a kernel's sources are BIND(DEFINE_VAR, value)"};
      bound_.insert(var_name(b->src[0]));
    }
    return {};
  }

  // The ranges a buffer source's AFTER names, bare or in an anchor AFTER(0, effect..., range...),
  // are the host's: only a host loop (OUTER) binds a range there. Any other range is iterated
  // inside a kernel, so at the host it is free and the stage cannot be evaluated (S1.3).
  static std::pair<UOp, std::string> host_ranges(UOp after) {
    for (size_t d = 1; d < after->src.size(); ++d) {
      UOp dep = after->src[d];
      bool anchor = dep->op == Ops::AFTER && dep->src[0]->op == Ops::CONST;
      for (UOp r : anchor ? std::vector<UOp>(dep->src.begin() + 1, dep->src.end()) : std::vector<UOp>{dep})
        if (r->op == Ops::RANGE && range_axis(r) != AxisType::OUTER)
          return {r, "a kernel's buffer is ordered after a " + std::string(axis_name(range_axis(r))) +
                         " range (only OUTER ranges, host loops, are dependencies at the host; any other is iterated inside a kernel)"};
    }
    return {};
  }

  // A statement: STORE(ptr, value); END(statement, range...), a loop, with no arg or a loop form
  // (args.h: transpose8's holds a STORE and closes two ranges at least); GROUP(statement...), in
  // order, with no arg or a fold's (STOREs to registers, args.h). Walked without recursion.
  std::pair<UOp, std::string> store(UOp top) {
    std::vector<UOp> todo{top};
    while (!todo.empty()) {
      UOp s = todo.back();
      todo.pop_back();
      stores_.insert(s.get());
      if (s->op == Ops::END) {
        for (size_t i = 1; i < s->src.size(); ++i)
          if (s->src[i]->op != Ops::RANGE) return {s, "an END in a kernel closes RANGEs"};
        if (s->src.empty()) return {s, "an END in a kernel holds a statement"};
        if (!s->arg.none() && !loop_form(s)) return {s, "an END in a kernel has no arg or is marked unroll, unroll-pointers or transpose8"};
        if (loop_form(s) == LoopForm::transpose8 && (s->src.size() < 3 || s->src[0]->op != Ops::STORE))
          return {s, "an END marked transpose8 holds a STORE and closes two ranges at least"};
        todo.push_back(s->src[0]);
        continue;
      }
      if (s->op == Ops::GROUP) {
        bool folds = fold_form(s).has_value();
        if (!s->arg.none() && !folds) return {s, "a GROUP in a kernel has no arg or is a fold's (tiles, axpy, gemv, jam)"};
        for (size_t i = s->src.size(); i-- > 0;) {
          UOp x = s->src[i];
          if (folds && (x->op != Ops::STORE || x->src.empty() || x->src[0]->src.empty() || x->src[0]->src[0]->op != Ops::DEFINE_REG))
            return {s, "a fold GROUP holds STOREs to registers"};
          todo.push_back(x);
        }
        continue;
      }
      if (s->op != Ops::STORE || s->src.size() != 2) return {s, "a kernel's ast holds STORE(ptr, value), possibly under ENDs and GROUPs"};
      if (!pointer(s->src[0])) return {s, "a STORE writes through INDEX(DEFINE_GLOBAL, linear[, gate]) or INDEX(DEFINE_REG, linear)"};
    }
    return {};
  }

  // INDEX(DEFINE_GLOBAL, linear[, gate]) or INDEX(DEFINE_REG, linear).
  static bool pointer(UOp p) {
    if (p->op != Ops::INDEX || !p->dtype.ptr || p->src.size() < 2) return false;
    if (p->src[0]->op == Ops::DEFINE_REG) return p->src.size() == 2;
    return p->src.size() <= 3 && p->src[0]->op == Ops::DEFINE_GLOBAL;
  }

  // Registers (DEFINE_REG) are numbered apart, small enough for the C stack, and read only where
  // a statement evaluates its values: not in a REDUCE's body, a range's extent or a global
  // access's gate (the renderer and the kernel evaluator compute those ahead of the statement).
  static std::pair<UOp, std::string> registers(const std::vector<UOp>& order) {
    std::set<int64_t> numbers;
    int64_t bytes = 0;
    std::set<const UOpNode*> reads;  // nodes computed from a register's contents
    for (UOp u : order) {
      if (u->op == Ops::DEFINE_REG) {
        if (!numbers.insert(u->arg.as<int64_t>()).second) return {u, "two DEFINE_REGs of a kernel have the same number"};
        if (u->dtype.size <= kMaxRegisterBytes) bytes += u->dtype.size * static_cast<int64_t>(u->dtype.itemsize());
        if (u->dtype.size > kMaxRegisterBytes || bytes > kMaxRegisterBytes)
          return {u, "a kernel's registers hold at most " + std::to_string(kMaxRegisterBytes) + " bytes"};
      }
      bool reg_load = u->op == Ops::LOAD && u->src[0]->src[0]->op == Ops::DEFINE_REG;
      for (UOp s : u->src) reg_load = reg_load || reads.count(s.get());
      if (!reg_load) continue;
      if (u->op == Ops::REDUCE) return {u, "a REDUCE's body reads a register (registers are read by statements only)"};
      if (u->op == Ops::RANGE) return {u, "a RANGE's extent reads a register"};
      if (u->op == Ops::INDEX && u->src.size() == 3 && reads.count(u->src[2].get())) return {u, "a gate reads a register"};
      reads.insert(u.get());
    }
    return {};
  }

  // What a value may be: CONST, DEFINE_VAR, RANGE, elementwise ops, LOAD, REDUCE, and the
  // pointers (INDEX of DEFINE_GLOBAL) loads and stores go through.
  std::pair<UOp, std::string> value(UOp u) const {
    switch (u->op) {
      case Ops::CONST: return {};
      case Ops::DEFINE_VAR:
        if (!bound_.count(var_name(u))) return {u, "a DEFINE_VAR no BIND of the kernel binds"};
        return {};
      case Ops::RANGE:
        if (range_axis(u) == AxisType::OUTER) return {u, "an OUTER range in a kernel (it is a host loop: a DEFINE_VAR bound by the KERNEL)"};
        return {};
      case Ops::DEFINE_GLOBAL:
        if (!u->arg.is<int64_t>() || u->arg.as<int64_t>() < 0 || static_cast<size_t>(u->arg.as<int64_t>()) >= buffers_)
          return {u, "DEFINE_GLOBAL's slot names no buffer source of the kernel"};
        return {};
      case Ops::DEFINE_REG: return {};  // checked by registers()
      case Ops::INDEX:
        if (!pointer(u)) return {u, "an INDEX in a kernel is a pointer INDEX(DEFINE_GLOBAL, linear[, gate]) or INDEX(DEFINE_REG, linear)"};
        return {};
      case Ops::LOAD:
        if (u->src.size() != 1 || !pointer(u->src[0])) return {u, "a LOAD reads through INDEX(DEFINE_GLOBAL, linear[, gate]) or INDEX(DEFINE_REG, linear)"};
        return {};
      case Ops::REDUCE: return {};
      default:
        if (is_elementwise(u->op)) return {};
        return {u, std::string(op_name(u->op)) + " is not a kernel-level op (tensor-level forms must be gone after kernelize)"};
    }
  }
};

}  // namespace

void verify_kernel(UOp kernel) {
  auto [node, message] = KernelGrammar(kernel).first_problem();
  if (!node) return;
  std::string name = kernel->op == Ops::KERNEL && kernel->arg.tuple() && !kernel->arg.tuple()->empty() && kernel->arg.tuple()->at(0).is<std::string>()
                         ? kernel_name(kernel) : "?";
  throw InternalError("kernel " + name + ": " + message + ", at " + number_graph(kernel).line(node));
}

void verify_kernels(UOp root) {
  for (UOp u : toposort(root))
    if (u->op == Ops::KERNEL) verify_kernel(u);
}

}  // namespace ow
