// Transposing copies (backends/README.md, "The C the renderer writes"): a store nest without
// REDUCEs whose store runs along its inner range j while a load runs along the outer range i.
// Blocked 16 rows at a time inside j, and on cc a pure 4-byte copy moves as 8x8 tiles
// transposed in registers (the prelude's ow_transpose8_u32). Blocking's conditions
// (loop_shapes.cpp, block_size) make the order of the stores free: results are bit-identical.
#include <cstdlib>

#include "kernel_renderer.h"
#include "uop/symbolic.h"

namespace ow::backend::detail {

// Why: the plain nest's loads jump a row per inner step, so a 128^2 float copy touches 128 lines
// 512 bytes apart, more than L1's sets hold: 9.6 us. 16 rows per pass read one line per j
// (6 us, tcc's shape); cc's register tiles take 1.8 us.
bool KernelRenderer::transpose_blocked(UOp end) {
  if (end->src.size() < 3 || end->src[0]->op != Ops::STORE || end->src[0]->src.size() != 2) return false;
  size_t pos = end->src.size() - 2;
  UOp i = end->src[pos], j = end->src.back(), st = end->src[0], idx = st->src[0];
  if (idx->op != Ops::INDEX || idx->src.size() != 2 || coefficient(idx->src[1], j) != 1) return false;
  bool gathers = false;  // some load reads along i and jumps along j
  for (UOp u : toposort(st->src[1])) {
    if (u->op == Ops::REDUCE) return false;
    if (u->op != Ops::LOAD || u->src.size() != 1 || u->src[0]->op != Ops::INDEX || u->src[0]->src.size() < 2) continue;
    auto ci = coefficient(u->src[0]->src[1], i), cj = coefficient(u->src[0]->src[1], j);
    gathers = gathers || (ci == 1 && cj && std::abs(*cj) >= 16);
  }
  int block = gathers ? block_size(end, pos, {}, 16, true) : 1;
  if (block < 8) return false;
  for (size_t k = 1; k < pos; ++k) open(end->src[k]);
  auto rows = [&] {
    UOp ib = open_block(end, pos, block);
    open(j);
    for (UOp row : in_block(st, i, ib * block, block)) store(row);
    close();
    close();
  };
  UOp load = opts_.target == Target::cc ? tile_copy(end) : UOp();
  if (load) transpose_tiles(end, load);
  else rows();
  for (size_t k = 1; k < pos; ++k) close();
  return true;
}

// The LOAD a transposing nest stores unchanged, when cc can move it in 8x8 tiles: 4-byte
// elements, the load ungated at index i + c*j + rest (rest free of i and j), both extents
// multiples of 8 and no bounds checks (a tile's accesses are not checked one by one).
UOp KernelRenderer::tile_copy(UOp end) const {
  UOp st = end->src[0], v = st->src[1], i = end->src[end->src.size() - 2], j = end->src.back();
  if (opts_.bounds_check || v->op != Ops::LOAD || v->dtype != st->src[0]->dtype.base() || v->dtype.itemsize() != 4) return UOp();
  UOp at = v->src[0];
  if (at->op != Ops::INDEX || at->src.size() != 2) return UOp();
  for (UOp r : {i, j}) {
    const int64_t* e = r->src.at(0).is_const() ? r->src[0]->arg.get_if<int64_t>() : nullptr;
    if (!e || *e % 8 != 0) return UOp();
  }
  return coefficient(at->src[1], i) == 1 && coefficient(at->src[1], j) ? v : UOp();
}

// cc's tiles: for each 8x8 tile, the 8 source rows (along i, one per j) become the 8 rows of
// the target (along j, one per i).
void KernelRenderer::transpose_tiles(UOp end, UOp load) {
  size_t pos = end->src.size() - 2;
  UOp i = end->src[pos], j = end->src.back(), idx = end->src[0]->src[0], from = load->src[0];
  UOp ib = open_block(end, pos, 8), jb = open_block(end, pos + 1, 8);
  At corner{{i, ib * 8}, {j, jb * 8}};
  std::string src = "b" + std::to_string(from->src[0]->arg.as<int64_t>()) + " + " + val(simplified_at(from->src[1], corner), depth());
  std::string dst = "b" + std::to_string(idx->src[0]->arg.as<int64_t>()) + " + " + val(simplified_at(idx->src[1], corner), depth());
  emit(depth(), "ow_transpose8_u32((const unsigned int*)(" + src + "), " + std::to_string(*coefficient(from->src[1], j)) +
                    "LL, (unsigned int*)(" + dst + "), " + std::to_string(*coefficient(idx->src[1], i)) + "LL);");
  close();
  close();
}

}  // namespace ow::backend::detail
