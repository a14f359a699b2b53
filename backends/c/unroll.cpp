// tcc's unrolled inner loops (backends/README.md, "The C the renderer writes"): computing exactly
// what the plain loop computes.
#include <cctype>
#include <set>

#include "kernel_renderer.h"

namespace ow::backend::detail {

namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Does `line` use the identifier `v` (as a whole word)?
bool mentions(const std::string& line, const std::string& v) {
  for (size_t at = line.find(v); at != std::string::npos; at = line.find(v, at + 1))
    if ((at == 0 || !ident_char(line[at - 1])) && (at + v.size() == line.size() || !ident_char(line[at + v.size()]))) return true;
  return false;
}

// `line` with every access b<k>[v] at exactly the loop variable rewritten to b<k>_at[u]; the
// slots k found are added to `slots`.
std::string pointer_accesses(const std::string& line, const std::string& v, int u, std::set<int>& slots) {
  std::string out, key = "[" + v + "]";
  size_t from = 0;
  for (size_t at = line.find(key); at != std::string::npos; at = line.find(key, at + 1)) {
    size_t d = at;
    while (d > 0 && std::isdigit(static_cast<unsigned char>(line[d - 1]))) --d;
    if (d == at || d == 0 || line[d - 1] != 'b' || (d >= 2 && ident_char(line[d - 2]))) continue;
    slots.insert(std::stoi(line.substr(d, at - d)));
    out += line.substr(from, at - from) + "_at[" + std::to_string(u) + "]";
    from = at + key.size();
  }
  return out + line.substr(from);
}

}  // namespace

// unroll: for tcc, which keeps every variable in memory, recomputes every address from scratch
// and never unrolls. A loop with a constant extent >= 8 and a short body is rendered for tcc
// unrolled by 8 with a remainder loop; iterations still run in order.
// When the body uses the loop variable only in accesses b<k>[v], those go through pointers set
// once per 8 iterations (b<k>_at = b<k> + v): about 1.5x faster elementwise loops under tcc.
void KernelRenderer::close(bool unroll) {
  Scope s = std::move(stack_.back());
  stack_.pop_back();
  const int64_t* ext = s.range && !s.range->src.empty() && s.range->src[0].is_const() ? s.range->src[0]->arg.get_if<int64_t>() : nullptr;
  constexpr size_t kMaxUnrolledLines = 24;  // keeps tcc's compile time and the source readable
  if (!unroll || opts_.target != Target::tcc || !ext || *ext < 8 || s.lines.size() > kMaxUnrolledLines) {
    emit(depth(), s.header);
    for (std::string& l : s.lines) emit(depth(), "  " + l);
    emit(depth(), "}");
    return;
  }
  std::string v = range_var(s.range), v8 = v + "_8", n = std::to_string(*ext), n8 = std::to_string(*ext / 8 * 8);
  std::set<int> slots;
  std::vector<std::vector<std::string>> copies(8);
  bool direct = true;  // every use of v is an access b<k>[v]
  for (int u = 0; u < 8; ++u)
    for (const std::string& l : s.lines) {
      copies[u].push_back(pointer_accesses(l, v, u, slots));
      direct = direct && !mentions(copies[u].back(), v);
    }
  emit(depth(), "for (long long " + v8 + " = 0; " + v8 + " < " + n8 + "LL; " + v8 + " += 8) {");
  for (int k : slots)
    if (direct) {
      std::string b = "b" + std::to_string(k), ty = ctype(params_.at(static_cast<size_t>(k)).base(), kernel_);
      emit(depth(), "  " + ty + "* restrict " + b + "_at = " + b + " + " + v8 + ";");
    }
  bool braces = !direct || s.lines.size() > 1;  // a block per copy keeps its names apart
  for (int u = 0; u < 8; ++u) {
    if (braces) emit(depth(), "  {");
    if (!direct) emit(depth(), "    long long " + v + " = " + v8 + (u ? " + " + std::to_string(u) : "") + ";");
    for (const std::string& l : direct ? copies[u] : s.lines) emit(depth(), (braces ? "    " : "  ") + l);
    if (braces) emit(depth(), "  }");
  }
  emit(depth(), "}");
  if (n8 != n) {
    emit(depth(), "for (long long " + v + " = " + n8 + "LL; " + v + " < " + n + "LL; " + v + "++) {");
    for (const std::string& l : s.lines) emit(depth(), "  " + l);
    emit(depth(), "}");
  }
}

}  // namespace ow::backend::detail
