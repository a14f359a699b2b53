// The loop shapes the C renderer picks for speed, each computing exactly what the plain loop
// nest computes (backends/README.md, "The C the renderer writes"): tcc's unrolled inner loops,
// the reduce interchange, and row and column blocking.
#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "kernel_renderer.h"
#include "opt/loop_shapes.h"
#include "uop/may_fail.h"
#include "uop/pattern.h"
#include "uop/symbolic.h"

namespace ow::backend::detail {

// ---- tcc's unrolled inner loops ----

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

// ---- reduce interchange ----
//
// A store nest `for (i...) for (j) { acc = id; for (k...) acc = acc OP x(i, j, k); out = f(acc); }`
// whose REDUCEs opt::interchange_reduces names (src/opt/loop_shapes.h: when it keeps results) is
// rendered as
//   for (i...) { T acc[N]; for (j) acc[j] = id; for (k...) { <k-only values>; for (j) acc[j] = acc[j] OP x; }
//                for (j) out = f(acc[j]); }

constexpr int64_t kMaxBlockBytes = 128 * 1024;  // the accumulator arrays of a block of register-tiled rows

// ---- row blocking: B rows of an interchanged nest rendered together ----
//
// The accumulator arrays of B rows i = B*ib + u, u < B (i the range just outside j) fill in one
// pass over the reduce ranges, so a value that does not depend on i (a row of b in a matmul) is
// loaded once for B rows (2x for cc's 512^3 matmul). Each accumulator still folds the same terms
// in the same order: results are bit-identical. B is 4, or up to kTileRows for rows of register
// tiles (tiles.cpp), when opt::block_size allows it (src/opt/loop_shapes.h).
int KernelRenderer::block_size(UOp end, size_t pos, const std::vector<UOp>& reds, int most, bool divides) const {
  return opt::block_size(kernel_->src[0], end, pos, reds, most, divides, opts_.bounds_check);
}

// Opens the loop over blocks of end->src[pos] (named like it, with the block size appended).
UOp KernelRenderer::open_block(UOp end, size_t pos, int block) {
  UOp r = end->src[pos], rb = opt::block_range(r, block);
  range_names_[rb.get()] = range_var(r) + "_" + std::to_string(block);
  open(rb);
  return rb;
}

namespace {

// Distinct nodes, in order (a REDUCE that does not depend on the blocked range is one node in
// every iteration of the block: one accumulator, folded once).
std::vector<UOp> distinct(const std::vector<UOp>& xs) {
  std::vector<UOp> out;
  for (UOp x : xs)
    if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  return out;
}

}  // namespace

void KernelRenderer::interchange(UOp end, const std::vector<UOp>& reds) {
  UOp j = end->src.back();
  if (end->src.size() < 3) return fill_and_store(end, reds, {end->src[0]}, {});
  size_t pos = end->src.size() - 2;  // i, the range just outside j
  bool tiled = true;  // every fold is cc's register tiles: up to 14 rows share each vector of b
  int64_t row_bytes = 0;
  for (UOp r : reds) {
    tiled = tiled && !tile_terms({r}, *r->arg.get_if<Ops>(), j).empty();
    row_bytes += *j->src[0]->arg.get_if<int64_t>() * static_cast<int64_t>(r->dtype.itemsize());
  }
  for (size_t q = 1; q < pos; ++q) open(end->src[q]);
  int block = block_size(end, pos, reds, 4, true);
  if (!tiled) {
    rows_in_blocks(end, reds, block, true);
  } else {  // cc: blocks of tiled rows; tcc: its rows of axpy calls, 4 at a time (faster there)
    // The arrays of a block and of the rows left over stay within 2 * kMaxBlockBytes of stack.
    int most = static_cast<int>(std::clamp<int64_t>(kMaxBlockBytes / std::max<int64_t>(row_bytes, 1), 1, kTileRows));
    int cc_block = block_size(end, pos, reds, most, false);
    rows_in_blocks(end, reds, opts_.target == Target::cc ? cc_block : block, false);
  }
  for (size_t q = 1; q < pos; ++q) close();
}

// The rows of the range just outside j (end->src[end->src.size() - 2]) in blocks of `block`,
// the rows left over as one more block; jam: ask GCC to unroll-and-jam blocked rows.
void KernelRenderer::rows_in_blocks(UOp end, const std::vector<UOp>& reds, int block, bool jam) {
  size_t pos = end->src.size() - 2;
  UOp i = end->src[pos];
  if (block == 1) {
    open(i);
    fill_and_store(end, reds, {end->src[0]}, {});
    close();
    return;
  }
  int64_t n = *i->src[0]->arg.get_if<int64_t>(), full = n / block * block;
  jam_rows_ = jam_rows_ || jam;  // (jamming tiles would spill their registers)
  if (full > 0) {
    UOp ib = open_block(end, pos, block);
    fill_and_store(end, reds, in_block(end->src[0], i, ib * block, block), rows_of(reds, i, ib * block, block));
    close();
  }
  if (full < n)  // the rows left over: one block of n - full rows
    fill_and_store(end, reds, in_block(end->src[0], i, UOp::index(full), static_cast<int>(n - full)), rows_of(reds, i, UOp::index(full), static_cast<int>(n - full)));
}

// rows[p]: REDUCE p in each row of the block of `count` rows from `start`.
std::vector<std::vector<UOp>> KernelRenderer::rows_of(const std::vector<UOp>& reds, UOp i, UOp start, int count) {
  std::vector<std::vector<UOp>> rows;
  for (UOp r : reds) rows.push_back(in_block(r, i, start, count));
  return rows;
}

// The accumulator arrays of one block of rows (rows[p]: REDUCE p's in each row; empty: one row,
// reds itself), filled, then the j loop of `stores`.
void KernelRenderer::fill_and_store(UOp end, const std::vector<UOp>& reds, const std::vector<UOp>& stores, std::vector<std::vector<UOp>> rows) {
  UOp j = end->src.back();
  if (rows.empty())
    for (UOp r : reds) rows.push_back({r});
  int lv = depth();
  std::string jv = range_var(j), n = std::to_string(*j->src[0]->arg.get_if<int64_t>());
  for (size_t p = 0; p < reds.size(); ++p) {
    UOp r = reds[p];
    std::vector<UOp> accs = distinct(rows[p]);
    for (UOp d : accs) emit(lv, ctype(r->dtype, r) + " acc" + num(d) + "[" + n + "];");
    std::vector<TileTerm> terms = opts_.target == Target::cc ? tile_terms(accs, *r->arg.get_if<Ops>(), j) : std::vector<TileTerm>{};
    if (terms.empty()) fold_rows(r, accs, j);
    else fill_tiles(r, accs, j, terms);
    for (UOp d : accs) named_[d.get()] = {"acc" + num(d) + "[" + jv + "]", stack_[static_cast<size_t>(lv)].id};
  }
  open(j);
  for (UOp st : stores) store(st);
  close();
}

// Fills the accumulator arrays of REDUCE r's rows `accs`: for (j) acc[j] = id; then for each
// step of r's ranges, for (j) acc[j] = acc[j] OP x (tcc: ow_axpy calls where they apply).
void KernelRenderer::fold_rows(UOp r, const std::vector<UOp>& accs, UOp j) {
  Ops op = *r->arg.get_if<Ops>();
  std::string ident = identity(r, op), jv = range_var(j);
  std::vector<std::string> at;
  for (UOp d : accs) at.push_back("acc" + num(d) + "[" + jv + "]");
  open(j);
  for (const std::string& a : at) emit(depth(), a + " = " + ident + ";");
  close();
  if (accs.size() == 1 && gemv_loop(r, accs[0], op, j)) return;
  for (size_t s = 1; s < r->src.size(); ++s) open(r->src[s]);
  std::vector<std::string> calls = opts_.target == Target::tcc ? axpy_calls(accs, op, j) : std::vector<std::string>{};
  for (const std::string& c : calls) emit(depth(), c);
  if (calls.empty()) fold_row(accs, at, r, op, j, true);
  for (size_t s = 1; s < r->src.size(); ++s) close();
}

// The j loop of an interchanged nest: every accumulator folds its term.
void KernelRenderer::fold_row(const std::vector<UOp>& accs, const std::vector<std::string>& at, UOp r, Ops op, UOp j, bool unroll) {
  open(j);
  for (size_t u = 0; u < accs.size(); ++u) {
    std::string x = val(accs[u]->src[0], depth());
    emit(depth(), at[u] + " = " + binop(op, r->dtype, at[u], x, true, r) + ";");
  }
  close(unroll);
}

// ---- tcc: the j loop as calls to vectorized loops ----
//
// When every statement of an interchanged j loop is acc[j] = acc[j] + s * b[off + j] (float32 or
// float64, s not depending on j, b read contiguously in j, the two factors in either order),
// tcc calls ow_axpy_f32/_f64 (backends/tcc/vector_loops.h) once per accumulator instead:
// 4-8x faster than anything TCC compiles, and the same roundings in the same order per element.
// Not under --bounds-check (the helpers do not check).
// Per accumulator, (s, the INDEX of b[off + j]) when every one folds acc[j] + s * b[off + j];
// else none.
std::vector<std::pair<UOp, UOp>> KernelRenderer::axpy_terms(const std::vector<UOp>& accs, Ops op, UOp j) {
  if (op != Ops::ADD || opts_.bounds_check) return {};
  std::vector<std::pair<UOp, UOp>> terms;
  for (UOp a : accs) {
    DType d = a->dtype;
    UOp x = a->src[0];
    if (!(d.scalar == Scalar::Float32 || d.scalar == Scalar::Float64) || x->op != Ops::MUL || x->dtype != d) return {};
    UOp ld = has_free_range(x->src[0], j) ? x->src[0] : x->src[1], s = ld == x->src[0] ? x->src[1] : x->src[0];
    if (has_free_range(s, j) || ld->op != Ops::LOAD || ld->dtype != d || ld->src.size() != 1) return {};
    UOp idx = ld->src[0];
    if (idx->op != Ops::INDEX || idx->src.size() != 2 || idx->src[0]->op != Ops::DEFINE_GLOBAL || coefficient(idx->src[1], j) != 1) return {};
    terms.push_back({s, idx});
  }
  return terms;
}

// b's offset at j = 0 (and `at` for another range), as a C value named in the current scope.
std::string KernelRenderer::offset_at(UOp idx, UOp j, std::vector<std::pair<UOp, UOp>> at) {
  at.push_back({j, UOp::index(0)});
  UOp off = simplified_at(idx->src[1], at);
  return val(off, depth(), true);
}

std::vector<std::string> KernelRenderer::axpy_calls(const std::vector<UOp>& accs, Ops op, UOp j) {
  std::vector<std::pair<UOp, UOp>> terms = axpy_terms(accs, op, j);
  std::string n = std::to_string(*j->src[0]->arg.get_if<int64_t>()) + "LL";
  std::vector<std::string> calls;
  std::vector<std::pair<UOp, At>> offsets;  // b's offsets of all rows, simplified together
  for (auto& [s, idx] : terms) offsets.push_back({idx->src[1], {{j, UOp::index(0)}}});
  simplify_ahead(offsets);
  for (size_t u = 0; u < terms.size(); ++u) {
    UOp idx = terms[u].second;
    std::string s = val(terms[u].first, depth(), true), o = offset_at(idx, j, {});
    std::string b = "b" + std::to_string(idx->src[0]->arg.as<int64_t>());
    calls.push_back(std::string("ow_axpy_") + (is32(accs[u]->dtype) ? "f32(" : "f64(") + n + ", " + s + ", " + b + " + " + o + ", acc" + num(accs[u]) + ");");
  }
  return calls;
}

// ---- tcc: a whole interchanged reduce loop as one call ----
//
// When the REDUCE folds over one range k of constant extent, its j loop is an axpy (above), and
// b's offset moves by a constant stride per k, tcc computes the factors s(k) into an array first
// (nothing in the nest can fail, interchangeable() made sure, so computing them before the folds
// changes nothing), then calls ow_gemv_f32/_f64 once for the whole loop, the same roundings in
// the same order per element. A scan step's 16 x 16 matvec: one call instead of 16.
constexpr int64_t kMaxGemvFactors = 1024;  // the array of factors lives on the stack

bool KernelRenderer::gemv_loop(UOp r, UOp acc, Ops op, UOp j) {
  UOp k = r->src.size() == 2 ? r->src[1] : UOp();
  const int64_t* m = k && k->src[0].is_const() ? k->src[0]->arg.get_if<int64_t>() : nullptr;
  std::vector<std::pair<UOp, UOp>> terms = axpy_terms({acc}, op, j);
  if (opts_.target != Target::tcc || !m || *m < 1 || *m > kMaxGemvFactors || terms.size() != 1) return false;
  auto [s, idx] = terms[0];
  std::optional<int64_t> stride = coefficient(idx->src[1], k);
  if (!stride) return false;
  std::string sv = "s" + num(acc), kv = range_var(k);
  emit(depth(), ctype(acc->dtype, acc) + " " + sv + "[" + std::to_string(*m) + "];");
  open(k);
  emit(depth(), sv + "[" + kv + "] = " + val(s, depth()) + ";");
  close(true);
  std::string o = offset_at(idx, j, {{k, UOp::index(0)}});
  std::string b = "b" + std::to_string(idx->src[0]->arg.as<int64_t>()), n = std::to_string(*j->src[0]->arg.get_if<int64_t>());
  emit(depth(), std::string("ow_gemv_") + (is32(acc->dtype) ? "f32(" : "f64(") + std::to_string(*m) + "LL, " + n + "LL, " + sv + ", " + b + " + " + o + ", " +
                    std::to_string(*stride) + "LL, acc" + num(acc) + ");");
  return true;
}

}  // namespace ow::backend::detail
