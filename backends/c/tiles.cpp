// cc's register tiles (backends/README.md, "The C the renderer writes"): a fold GROUP marked
// "tiles" by the kernel-opt pass `interchange` (folds.cpp), every fold acc[j] = acc[j] + s * b[off
// + j] (a matmul: s = a[i, k], b's row k), fills its accumulators tile by tile:
//   for (j_t32 ...) {                    // 32 columns (two vectors of 16 floats) at a time
//     ow_vf32 t0_0 = load(acc0 + 32*j_t32), t0_1 = ..., t1_0, ...;   // rows x vectors: registers
//     for (k ...) { float s0 = a[...]; ow_vf32 l0 = load(b + off + 32*j_t32), l1 = ...;
//                   t0_0 = t0_0 + s0 * l0; t0_1 = t0_1 + s0 * l1; ... }
//     store t0_0 to acc0 + 32*j_t32, ...
//   }
// then single vectors, then single columns for the columns left over. The pass blocks up to 14
// rows (28 accumulators, each vector of b loaded once for 14 rows; about 97 % of this CPU's peak
// of separate multiplies and adds). Each element's sum still adds its terms one by one in the
// order of k to what the accumulator holds, each product and each addition rounded once in the
// dtype (cc: -ffp-contract=off, no FMA): only which elements are computed together changes, so
// results are bit-identical.
#include <algorithm>

#include "kernel_renderer.h"

namespace ow::backend::detail {

namespace {

constexpr int kVecBytes = 64;    // ow_vf32 / ow_vf64 (prelude): one AVX-512 register
constexpr int kTileVectors = 28;  // accumulators of one tile (rows x vectors per row) of AVX-512's 32 registers

}  // namespace

// The accumulators of fold f filled by tiles of several vectors per row, then of one, then
// single columns.
void KernelRenderer::fill_tiles(const Fold& f) {
  int64_t n = *opt::const_extent(f.j), lanes = kVecBytes / f.regs[0]->dtype.base().itemsize(), done = 0;
  int per_row = std::max<int>(1, std::min<int>(4, kTileVectors / static_cast<int>(f.regs.size())));
  std::vector<int> shapes{per_row};  // vectors per row of each kind of tile; 0: one column
  if (per_row > 1) shapes.push_back(1);
  shapes.push_back(0);
  Fold t = f;
  if (n > per_row * lanes) t.terms = scalars_ahead(f);
  for (int nvec : shapes) {
    int64_t width = nvec ? nvec * lanes : 1, count = (n - done) / width;
    if (count > 0) tile_loop(t, done, count, nvec);
    done += count * width;
  }
}

// A row's factor s that is more than a load (relu(a[i, k]) of a fused layer) would be computed
// again in every tile of the row: computed once for every k into an array instead (the same ops
// on the same values: results do not change), when the fold has one range of at most 1024 steps.
std::vector<KernelRenderer::FoldTerm> KernelRenderer::scalars_ahead(const Fold& f) {
  std::vector<FoldTerm> terms = f.terms;
  const int64_t* e = f.ks.size() == 1 ? opt::const_extent(f.ks[0]) : nullptr;
  if (!e || *e > 1024) return terms;
  UOp k = f.ks[0];
  DType d = f.regs[0]->dtype.base();
  std::vector<size_t> costly;
  for (size_t u = 0; u < terms.size(); ++u)
    if (terms[u].s->op != Ops::LOAD && has_free_range(terms[u].s, k)) costly.push_back(u);
  if (costly.empty()) return terms;
  for (size_t u : costly) {
    terms[u].ahead = "s" + num(f.regs[u]);
    emit(depth(), ctype(d, f.regs[u]) + " " + terms[u].ahead + "[" + std::to_string(*e) + "];");
  }
  open(k);
  for (size_t u : costly) emit(depth(), terms[u].ahead + "[" + range_var(k) + "] = " + val(terms[u].s, depth()) + ";");
  close();
  return terms;
}

// `count` tiles of nvec vectors per accumulator (nvec 0: one column), from column `start`. A
// tile starts from what its accumulators hold (the fold adds to them, as its STOREs do).
void KernelRenderer::tile_loop(const Fold& f, int64_t start, int64_t count, int nvec) {
  DType d = f.regs[0]->dtype.base();
  UOp j = f.j;
  std::string sfx = is32(d) ? "f32" : "f64", vt = nvec ? "ow_v" + sfx : ctype(d, j);
  int64_t lanes = nvec ? kVecBytes / d.itemsize() : 1, width = nvec ? nvec * lanes : 1;
  int nv = std::max(nvec, 1);
  const ArgTuple& arg = *j->arg.tuple();
  UOp jt = UOp::range(count, arg[0].as<int64_t>(), range_axis(j), {-1000 - width});  // a name no lowering uses
  range_names_[jt.get()] = range_var(j) + "_t" + std::to_string(width);
  open(jt);
  std::string jv = range_var(jt);
  auto reg = [&](size_t u, int v) { return "t" + num(f.regs[u]) + "_" + std::to_string(v); };
  auto cell = [&](size_t u, int v) {  // the accumulator's element or vector of column v
    std::string at = reg_name(f.regs[u]) + (nvec ? " + " : "[") + jv + " * " + std::to_string(width) + "LL + " + std::to_string(start + v * lanes) + "LL";
    return nvec ? at : at + "]";
  };
  for (size_t u = 0; u < f.regs.size(); ++u)
    for (int v = 0; v < nv; ++v) emit(depth(), vt + " " + reg(u, v) + " = " + (nvec ? "ow_vload_" + sfx + "(" + cell(u, v) + ")" : cell(u, v)) + ";");
  for (UOp k : f.ks) open(k);
  auto col = [&](int v) { return jt * width + (start + v * lanes); };
  std::vector<std::pair<UOp, At>> cells;  // b's index in each row and vector, simplified together
  for (size_t u = 0; u < f.regs.size(); ++u)
    for (int v = 0; v < nv; ++v) cells.push_back({f.terms[u].idx->src[1], {{j, col(v)}}});
  simplify_ahead(cells);
  std::map<const UOpNode*, std::string> loaded;  // a vector of b shared by the rows
  for (size_t u = 0; u < f.regs.size(); ++u) {
    const FoldTerm& t = f.terms[u];
    std::string s = t.ahead.empty() ? val(t.s, depth(), true) : t.ahead + "[" + range_var(f.ks[0]) + "]";
    for (int v = 0; v < nv; ++v) {
      UOp idx = simplified_at(t.idx->src[1], {{j, col(v)}});
      std::string b = "b" + std::to_string(t.idx->src[0]->arg.as<int64_t>()), l = "l" + num(idx);
      if (loaded.emplace(idx.get(), l).second)
        emit(depth(), vt + " " + l + " = " + (nvec ? "ow_vload_" + sfx + "(" + b + " + " + val(idx, depth()) + ")" : b + "[" + val(idx, depth()) + "]") + ";");
      std::string x = t.load_first ? "(" + l + " * " + s + ")" : "(" + s + " * " + l + ")";
      emit(depth(), reg(u, v) + " = (" + reg(u, v) + " + " + x + ");");
    }
  }
  for (size_t q = 0; q < f.ks.size(); ++q) close();
  for (size_t u = 0; u < f.regs.size(); ++u)
    for (int v = 0; v < nv; ++v) emit(depth(), nvec ? "ow_vstore_" + sfx + "(" + cell(u, v) + ", " + reg(u, v) + ");" : cell(u, v) + " = " + reg(u, v) + ";");
  close();
}

}  // namespace ow::backend::detail
