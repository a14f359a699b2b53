// cc's register tiles (backends/README.md, "The C the renderer writes"). An interchanged nest
// whose every fold is acc[j] = acc[j] + s * b[off + j] (a matmul: s = a[i, k], b's row k) fills
// its accumulator arrays, for cc, tile by tile:
//   for (j_t32 ...) {                    // 32 columns (two vectors of 16 floats) at a time
//     ow_vf32 t0_0 = splat(0), t0_1 = ..., t1_0, ...;   // rows of the block x vectors: registers
//     for (k ...) { float s0 = a[...]; ow_vf32 l0 = load(b + off + 32*j_t32), l1 = ...;
//                   t0_0 = t0_0 + s0 * l0; t0_1 = t0_1 + s0 * l1; ... }
//     store t0_0 to acc0[32*j_t32], ...
//   }
// then single vectors, then single columns for the columns left over. The rows come in blocks of
// up to 14 (loop_shapes.cpp, interchange: 28 accumulators, each vector of b loaded once for 14
// rows; about 97 % of this CPU's peak of separate multiplies and adds). Each element's sum still
// starts from the identity and adds its terms one by one in the order of k, each product and
// each addition rounded once in the dtype (cc: -ffp-contract=off, no FMA): the accumulators are
// the same; only which elements are computed together changes, so results are bit-identical.
// Not under --bounds-check (the vector loads are not checked); tcc renders fold_rows instead.
#include <algorithm>

#include "kernel_renderer.h"
#include "uop/symbolic.h"
#include "uop/pattern.h"

namespace ow::backend::detail {

namespace {

constexpr int kVecBytes = 64;    // ow_vf32 / ow_vf64 (prelude): one AVX-512 register
constexpr int kTileVectors = 28;  // accumulators of one tile (rows x vectors per row) of AVX-512's 32 registers

}  // namespace

// The fold terms of `accs` (one per accumulator), or none when some accumulator is not
// acc + s * b[off + j] with b a float buffer read contiguously in j and s fixed in j.
std::vector<KernelRenderer::TileTerm> KernelRenderer::tile_terms(const std::vector<UOp>& accs, Ops op, UOp j) const {
  if (op != Ops::ADD || opts_.bounds_check) return {};
  std::vector<TileTerm> terms;
  for (UOp a : accs) {
    DType d = a->dtype;
    UOp x = a->src[0];
    if (!(d.scalar == Scalar::Float32 || d.scalar == Scalar::Float64) || x->op != Ops::MUL || x->dtype != d) return {};
    bool first = has_free_range(x->src[0], j);
    UOp ld = x->src[first ? 0 : 1], s = x->src[first ? 1 : 0];
    if (has_free_range(s, j) || ld->op != Ops::LOAD || ld->dtype != d || ld->src.size() != 1) return {};
    UOp idx = ld->src[0];
    if (idx->op != Ops::INDEX || idx->src.size() != 2 || idx->src[0]->op != Ops::DEFINE_GLOBAL || coefficient(idx->src[1], j) != 1) return {};
    terms.push_back({s, idx, first, ""});
  }
  return terms;
}

// The accumulator arrays of `accs` filled by tiles of several vectors per row, then of one,
// then single columns.
void KernelRenderer::fill_tiles(UOp r, const std::vector<UOp>& accs, UOp j, const std::vector<TileTerm>& terms) {
  int64_t n = *j->src[0]->arg.get_if<int64_t>(), lanes = kVecBytes / r->dtype.itemsize(), done = 0;
  int per_row = std::max<int>(1, std::min<int>(4, kTileVectors / static_cast<int>(accs.size())));
  std::vector<int> shapes{per_row};  // vectors per row of each kind of tile; 0: one column
  if (per_row > 1) shapes.push_back(1);
  shapes.push_back(0);
  std::vector<TileTerm> t = n > per_row * lanes ? scalars_ahead(r, accs, terms) : terms;
  for (int nvec : shapes) {
    int64_t width = nvec ? nvec * lanes : 1, count = (n - done) / width;
    if (count > 0) tile_loop(r, accs, j, t, done, count, nvec);
    done += count * width;
  }
}

// A row's factor s that is more than a load (relu(a[i, k]) of a fused layer) would be computed
// again in every tile of the row: computed once for every k into an array instead (the same ops
// on the same values: results do not change), when the fold has one range of at most 1024 steps.
std::vector<KernelRenderer::TileTerm> KernelRenderer::scalars_ahead(UOp r, const std::vector<UOp>& accs, std::vector<TileTerm> terms) {
  const int64_t* e = r->src.size() == 2 && r->src[1]->src.at(0).is_const() ? r->src[1]->src[0]->arg.get_if<int64_t>() : nullptr;
  if (!e || *e > 1024) return terms;
  UOp k = r->src[1];
  std::vector<size_t> costly;
  for (size_t u = 0; u < terms.size(); ++u)
    if (terms[u].s->op != Ops::LOAD && has_free_range(terms[u].s, k)) costly.push_back(u);
  if (costly.empty()) return terms;
  for (size_t u : costly) {
    terms[u].ahead = "s" + num(accs[u]);
    emit(depth(), ctype(r->dtype, r) + " " + terms[u].ahead + "[" + std::to_string(*e) + "];");
  }
  open(k);
  for (size_t u : costly) emit(depth(), terms[u].ahead + "[" + range_var(k) + "] = " + val(terms[u].s, depth()) + ";");
  close();
  return terms;
}

// `count` tiles of nvec vectors per accumulator (nvec 0: one column), from column `start`.
void KernelRenderer::tile_loop(UOp r, const std::vector<UOp>& accs, UOp j, const std::vector<TileTerm>& terms, int64_t start, int64_t count, int nvec) {
  DType d = r->dtype;
  std::string sfx = is32(d) ? "f32" : "f64", vt = nvec ? "ow_v" + sfx : ctype(d, r), ident = identity(r, Ops::ADD);
  int64_t lanes = nvec ? kVecBytes / d.itemsize() : 1, width = nvec ? nvec * lanes : 1;
  int nv = std::max(nvec, 1);
  const ArgTuple& arg = *j->arg.tuple();
  UOp jt = UOp::range(count, arg[0].as<int64_t>(), range_axis(j), {-1000 - width});  // a name no lowering uses
  range_names_[jt.get()] = range_var(j) + "_t" + std::to_string(width);
  open(jt);
  auto reg = [&](size_t u, int v) { return "t" + num(accs[u]) + "_" + std::to_string(v); };
  for (size_t u = 0; u < accs.size(); ++u)
    for (int v = 0; v < nv; ++v) emit(depth(), vt + " " + reg(u, v) + " = " + (nvec ? "ow_vsplat_" + sfx + "(" + ident + ")" : ident) + ";");
  for (size_t s = 1; s < r->src.size(); ++s) open(r->src[s]);
  auto col = [&](int v) { return jt * width + (start + v * lanes); };
  std::vector<std::pair<UOp, At>> cells;  // b's index in each row and vector, simplified together
  for (size_t u = 0; u < accs.size(); ++u)
    for (int v = 0; v < nv; ++v) cells.push_back({terms[u].idx->src[1], {{j, col(v)}}});
  simplify_ahead(cells);
  std::map<const UOpNode*, std::string> loaded;  // a vector of b shared by the rows
  for (size_t u = 0; u < accs.size(); ++u) {
    std::string s = terms[u].ahead.empty() ? val(terms[u].s, depth(), true) : terms[u].ahead + "[" + range_var(r->src[1]) + "]";
    for (int v = 0; v < nv; ++v) {
      UOp idx = simplified_at(terms[u].idx->src[1], {{j, col(v)}});
      std::string b = "b" + std::to_string(terms[u].idx->src[0]->arg.as<int64_t>()), l = "l" + num(idx);
      if (loaded.emplace(idx.get(), l).second)
        emit(depth(), vt + " " + l + " = " + (nvec ? "ow_vload_" + sfx + "(" + b + " + " + val(idx, depth()) + ")" : b + "[" + val(idx, depth()) + "]") + ";");
      std::string x = terms[u].load_first ? "(" + l + " * " + s + ")" : "(" + s + " * " + l + ")";
      emit(depth(), reg(u, v) + " = (" + reg(u, v) + " + " + x + ");");
    }
  }
  for (size_t s = 1; s < r->src.size(); ++s) close();
  std::string jv = range_var(jt);
  for (size_t u = 0; u < accs.size(); ++u)
    for (int v = 0; v < nv; ++v) {
      std::string at = "acc" + num(accs[u]) + (nvec ? " + " : "[") + jv + " * " + std::to_string(width) + "LL + " + std::to_string(start + v * lanes) + "LL";
      emit(depth(), nvec ? "ow_vstore_" + sfx + "(" + at + ", " + reg(u, v) + ");" : at + "] = " + reg(u, v) + ";");
    }
  close();
}

}  // namespace ow::backend::detail
