// The fold GROUPs the kernel-opt pass `interchange` marks (args.h), written as vector code: a fold
//   END(END(GROUP[form](STORE(acc[j], acc[j] + s * b[off + j]) per accumulator), j), k...)
// (each accumulator a register, each term opt::axpy_term's) is
//  - "axpy" (tcc): per step of k..., one ow_axpy call per accumulator;
//  - "gemv" (tcc): accumulators (rows) over one range k reading one b: each row's factors s(k)
//    computed into an array first (nothing in an interchanged nest can fail, so computing them
//    before the folds changes nothing), then one ow_gemv call for the whole loop, every row's
//    accumulators kept in vector registers while k runs (a scan step's 16 x 16 matvec: one call
//    instead of 16; a matmul's block of rows: each vector of b loaded once for all rows);
//  - "tiles" (cc): register tiles (tiles.cpp).
// The helpers (backends/tcc/vector_loops.h, the prelude) do the same roundings in the same order
// per element: results are bit-identical. Under bounds checks every form is written as its plain
// loops (the helpers do not check); a "jam" fold is plain loops in a kernel GCC unrolls-and-jams.
#include "kernel_renderer.h"
#include "uop/symbolic.h"

namespace ow::backend::detail {

std::optional<KernelRenderer::Fold> KernelRenderer::fold_at(UOp end) const {
  if (opts_.bounds_check || end->op != Ops::END || end->src.size() < 2 || end->src[0]->op != Ops::END || end->src[0]->src.size() != 2) return std::nullopt;
  UOp g = end->src[0]->src[0];
  std::optional<FoldForm> form = fold_form(g);
  if (!form || *form == FoldForm::jam) return std::nullopt;
  Fold f{*form, end->src[0]->src[1], std::vector<UOp>(end->src.begin() + 1, end->src.end()), {}, {}};
  const int64_t* n = opt::const_extent(f.j);
  auto bad = [&](const std::string& why) { return InternalError(std::string("a ") + fold_form_name(*form) + " fold " + why + " (at " + printed_.line(g) + ")"); };
  if (!n || g->src.empty()) throw bad("needs an inner range of constant extent and a STORE per accumulator");
  for (UOp st : g->src) {  // STORE(INDEX(reg, j), ADD(LOAD(INDEX(reg, j)), x))
    UOp at = st->src.at(0), v = st->src.at(1);
    bool shape = at->src.size() == 2 && at->src[1] == f.j && at->src[0]->dtype.size == *n && v->op == Ops::ADD && v->src[0]->op == Ops::LOAD && v->src[0]->src[0] == at;
    std::optional<opt::AxpyTerm> term = shape ? opt::axpy_term(Ops::ADD, v->dtype, v->src[1], f.j, false) : std::nullopt;
    if (!term) throw bad("is not acc[j] = acc[j] + s * b[off + j] at " + printed_.line(st));
    f.regs.push_back(at->src[0]);
    f.terms.push_back({*term, ""});
  }
  if (*form == FoldForm::gemv) {
    const int64_t* m = f.ks.size() == 1 ? opt::const_extent(f.ks[0]) : nullptr;
    bool shared = std::all_of(f.terms.begin(), f.terms.end(), [&](const FoldTerm& t) { return t.idx == f.terms[0].idx; });
    if (!shared || !m || *m < 1 || *m * static_cast<int64_t>(f.regs.size()) > opt::kMaxGemvFactors || !coefficient(f.terms[0].idx->src[1], f.ks[0]))
      throw bad("is not accumulators over one range with at most " + std::to_string(opt::kMaxGemvFactors) + " factors, one b moving by a constant stride");
  }
  return f;
}

void KernelRenderer::vector_fold(const Fold& f) {
  if (f.form == FoldForm::tiles) return fill_tiles(f);
  if (f.form == FoldForm::gemv) return gemv(f);
  for (UOp k : f.ks) open(k);
  std::string n = std::to_string(*opt::const_extent(f.j)) + "LL";
  std::vector<std::pair<UOp, At>> offsets;  // b's offsets of all accumulators, simplified together
  for (const FoldTerm& t : f.terms) offsets.push_back({t.idx->src[1], {{f.j, UOp::index(0)}}});
  simplify_ahead(offsets);
  for (size_t u = 0; u < f.terms.size(); ++u) {
    UOp idx = f.terms[u].idx;
    std::string s = val(f.terms[u].s, depth(), true), o = offset_at(idx, f.j, {});
    std::string b = "b" + std::to_string(idx->src[0]->arg.as<int64_t>());
    emit(depth(), std::string("ow_axpy_") + (is32(f.regs[u]->dtype) ? "f32(" : "f64(") + n + ", " + s + ", " + b + " + " + o + ", " + reg_name(f.regs[u]) + ");");
  }
  for (size_t q = 0; q < f.ks.size(); ++q) close();
}

// b's offset at j = 0 (and `at` for another range), as a C value named in the current scope.
std::string KernelRenderer::offset_at(UOp idx, UOp j, std::vector<std::pair<UOp, UOp>> at) {
  at.push_back({j, UOp::index(0)});
  UOp off = simplified_at(idx->src[1], at);
  return val(off, depth(), true);
}

void KernelRenderer::gemv(const Fold& f) {
  UOp k = f.ks[0], acc = f.regs[0], idx = f.terms[0].idx;
  int64_t m = *opt::const_extent(k), stride = *coefficient(idx->src[1], k);
  std::string ty = ctype(acc->dtype.base(), acc), sv = "s" + num(acc), av = "accs" + num(acc), kv = range_var(k), ms = std::to_string(m);
  size_t rows = f.regs.size();
  emit(depth(), ty + " " + sv + "[" + std::to_string(m * static_cast<int64_t>(rows)) + "];");  // row r's factors from r*m
  // One row's factors (a scan step's matvec: as many as the products of the call) are filled by
  // 8 at a time; a block of rows' are a small part of its work, not worth 8 copies of C.
  open(k, rows == 1 && m >= kUnroll ? std::optional(LoopForm::unroll) : std::nullopt);
  for (size_t r = 0; r < rows; ++r) emit(depth(), sv + "[" + (r ? std::to_string(r) + " * " + ms + "LL + " : "") + kv + "] = " + val(f.terms[r].s, depth()) + ";");
  close();
  std::string regs;
  for (UOp reg : f.regs) regs += (regs.empty() ? "" : ", ") + reg_name(reg);
  emit(depth(), ty + "* " + av + "[" + std::to_string(rows) + "] = {" + regs + "};");
  std::string o = offset_at(idx, f.j, {{k, UOp::index(0)}});
  std::string b = "b" + std::to_string(idx->src[0]->arg.as<int64_t>()), n = std::to_string(*opt::const_extent(f.j));
  emit(depth(), std::string("ow_gemv_") + (is32(acc->dtype) ? "f32(" : "f64(") + std::to_string(rows) + "LL, " + ms + "LL, " + n + "LL, " + sv + ", " + b + " + " + o +
                    ", " + std::to_string(stride) + "LL, " + av + ");");
}

}  // namespace ow::backend::detail
