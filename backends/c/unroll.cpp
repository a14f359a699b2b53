// Closing a loop, and the unrolled forms of a loop the kernel-opt pass `unroll` marks (args.h;
// backends/README.md, "The C the renderer writes"). Each copy of the body is its rendered lines
// as they are, in a block of its own that binds the copy's iteration:
//   unroll:           { long long i = i_8 + u; <body> }
//   unroll-pointers:  { enum { i_u = u }; <body> }   (the body reads b_at[i_u], b_at = b + i_8)
// The iterations run in their order: the loop computes exactly what the plain loop computes.
#include "kernel_renderer.h"

namespace ow::backend::detail {

Scope* KernelRenderer::pointer_loop(UOp r) {
  if (r->op != Ops::RANGE) return nullptr;
  for (Scope& s : stack_)
    if (s.range == r) return s.form == LoopForm::unroll_pointers ? &s : nullptr;
  return nullptr;
}

void KernelRenderer::close() {
  Scope s = std::move(stack_.back());
  stack_.pop_back();
  if (!s.form) {
    emit(depth(), s.header);
    for (std::string& l : s.lines) emit(depth(), "  " + l);
    emit(depth(), "}");
    return;
  }
  const int64_t* ext = opt::const_extent(s.range);
  if (!ext || *ext < kUnroll)
    throw InternalError(std::string("a loop marked ") + loop_form_name(*s.form) + " needs a constant extent of at least " + std::to_string(kUnroll) +
                        " (at " + printed_.line(s.range) + ")");
  bool pointers = *s.form == LoopForm::unroll_pointers;
  std::string v = range_var(s.range), vb = v + "_" + std::to_string(kUnroll);
  int64_t full = *ext / kUnroll * kUnroll;
  // The pointers b_at = b + `at` for the accesses of the body.
  auto set_pointers = [&](const std::string& at) {
    for (int k : s.pointers) {
      std::string b = "b" + std::to_string(k), ty = ctype(params_.at(static_cast<size_t>(k)).base(), kernel_);
      emit(depth(), "  " + ty + "* restrict " + b + "_at = " + b + " + " + at + ";");
    }
  };
  // Copy u of the body: iteration i_8 + u.
  auto copy = [&](int u) {
    std::string n = std::to_string(u);
    emit(depth(), "  {");
    emit(depth(), pointers ? "    enum { " + v + "_u = " + n + " };" : "    long long " + v + " = " + vb + (u ? " + " + n : "") + ";");
    for (const std::string& l : s.lines) emit(depth(), "    " + l);
    emit(depth(), "  }");
  };
  emit(depth(), "for (long long " + vb + " = 0; " + vb + " < " + std::to_string(full) + "LL; " + vb + " += " + std::to_string(kUnroll) + ") {");
  if (pointers) set_pointers(vb);
  for (int u = 0; u < kUnroll; ++u) copy(u);
  emit(depth(), "}");
  if (full == *ext) return;
  emit(depth(), "for (long long " + v + " = " + std::to_string(full) + "LL; " + v + " < " + std::to_string(*ext) + "LL; " + v + "++) {");
  if (pointers) {
    set_pointers(v);
    emit(depth(), "  enum { " + v + "_u = 0 };");
  }
  for (const std::string& l : s.lines) emit(depth(), "  " + l);
  emit(depth(), "}");
}

}  // namespace ow::backend::detail
