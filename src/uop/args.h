// Named accessors for the args of the nodes whose arg has structure (the verifier guarantees the
// forms: BUFFER ("name", size)).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "uop/uop.h"

namespace ow {

inline const std::string& buffer_name(UOp buffer) { return buffer->arg.tuple()->at(0).as<std::string>(); }
inline int64_t buffer_size(UOp buffer) { return buffer->arg.tuple()->at(1).as<int64_t>(); }
inline const std::string& var_name(UOp define_var) { return define_var->arg.tuple()->at(0).as<std::string>(); }  // ("name", lo, hi)
inline const std::string& kernel_name(UOp kernel) { return kernel->arg.tuple()->at(0).as<std::string>(); }      // ("name",)
// ("name", n), n >= 2: the statements of the kernel's SINK, in n consecutive parts of equal
// count, run on n threads at once, no part reading or writing an element another part writes
// (kernel-opt pass `threads`, LOWERING.md). Evaluated in order, they compute the serial kernel.
inline int64_t kernel_threads(UOp kernel) {
  const ArgTuple* t = kernel->arg.tuple();
  return t && t->size() > 1 && (*t)[1].is<int64_t>() ? (*t)[1].as<int64_t>() : 1;
}
inline Ops reduce_op(UOp reduce_axis) { return reduce_axis->arg.tuple()->at(0).as<Ops>(); }                  // (Ops.ADD, (axes...))

// The name of output i of a graph: the SINK's arg names its outputs, else a lone output is
// "out" and several are "out0", "out1", ...
inline std::string output_name(UOp root, size_t i) {
  const ArgTuple* names = root->op == Ops::SINK ? root->arg.tuple() : nullptr;
  if (names && i < names->size() && (*names)[i].is<std::string>()) return (*names)[i].as<std::string>();
  size_t n = root->op == Ops::SINK ? root->src.size() : 1;
  return n == 1 ? "out" : "out" + std::to_string(i);
}

// The two tags lowering puts on a node whose meaning changes with them (LOWERING.md), each
// made and tested here only:
//  - a KERNEL that materializes a realized value into its own temporary (a "value kernel");
//  - a REDUCE that rangeify made from a REDUCE_AXIS: its terms were one value at tensor level, so
//    they stay unordered (SEMANTICS S3.2).
inline const Arg& value_kernel_tag() {
  static const Arg tag(std::string("value"));
  return tag;
}
inline const Arg& axis_fold_tag() {
  static const Arg tag(std::string("axis"));
  return tag;
}
inline bool is_value_kernel(UOp u) { return u->op == Ops::KERNEL && u->tag == value_kernel_tag(); }
inline bool is_axis_fold(UOp u) { return u->op == Ops::REDUCE && u->tag == axis_fold_tag(); }

// A kernel's GROUP of STOREs that fold registers over the j loop around it (kernel-opt pass
// `interchange`: acc[j] = acc[j] OP x, one STORE per accumulator), marked with how the C backend
// writes it: "tiles" (cc's register tiles), "axpy" (tcc: an ow_axpy call per accumulator),
// "gemv" (tcc: the whole fold over its one range as one ow_gemv call, every row's b the same),
// "jam" (cc: plain loops in a kernel GCC is asked to unroll-and-jam). Run in order, the STOREs are
// the fold in every form.
enum class FoldForm { tiles, axpy, gemv, jam };
inline const char* fold_form_name(FoldForm f) {
  switch (f) {
    case FoldForm::tiles: return "tiles";
    case FoldForm::axpy: return "axpy";
    case FoldForm::gemv: return "gemv";
    default: return "jam";
  }
}
inline Arg fold_arg(FoldForm f) { return Arg(std::string(fold_form_name(f))); }
inline std::optional<FoldForm> fold_form(UOp u) {
  if (u->op != Ops::GROUP) return std::nullopt;
  for (FoldForm f : {FoldForm::tiles, FoldForm::axpy, FoldForm::gemv, FoldForm::jam})
    if (u->arg == fold_arg(f)) return f;
  return std::nullopt;
}

// An END statement marked with how the C backend writes its innermost loops (kernel-opt passes
// `unroll`, tcc only, and `transposes`). The iterations run in their order in every form.
//  - "unroll", on END(body, ..., r): blocks of kUnroll copies of its body (r = kUnroll*rb + u),
//    then a remainder loop, tcc never unrolling;
//  - "unroll-pointers": the same, with every access b[r] read through a pointer b + kUnroll*rb
//    set once per block;
//  - "transpose8", on END(STORE, ..., a, b) with a, b < 8: an 8x8 tile of a transposing copy of
//    4-byte elements, one ow_transpose8_u32 call (a transpose in registers) for the loops a, b.
enum class LoopForm { unroll, unroll_pointers, transpose8 };
constexpr int kUnroll = 8;
inline const char* loop_form_name(LoopForm f) {
  return f == LoopForm::unroll ? "unroll" : f == LoopForm::unroll_pointers ? "unroll-pointers" : "transpose8";
}
inline const Arg& loop_arg(LoopForm f) {
  static const Arg args[] = {Arg(std::string("unroll")), Arg(std::string("unroll-pointers")), Arg(std::string("transpose8"))};
  return args[static_cast<int>(f)];
}
inline std::optional<LoopForm> loop_form(UOp u) {
  if (u->op != Ops::END) return std::nullopt;
  for (LoopForm f : {LoopForm::unroll, LoopForm::unroll_pointers, LoopForm::transpose8})
    if (u->arg == loop_arg(f)) return f;
  return std::nullopt;
}

// Buffers whose names start with '_' are a program's own temporaries (made by lowering or by
// reverse mode): never a caller's input or output, and private to one run.
inline bool is_temporary(const std::string& name) { return name.rfind('_', 0) == 0; }

}  // namespace ow
