// Blocking a range of a store nest: iterations r = B*rb + u, u < B, run side by side inside one
// iteration of the block range rb. Shared by the kernel-opt passes that block (transposes) and the
// renderer's loop shapes that still do (row and column blocking, register tiles).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "uop/uop.h"

namespace ow::opt {

// The block size B for range end->src[pos] of the nest END(STORE, range...) in kernel ast `ast`:
// at most `most`, a power of 2 dividing the extent when `divides` (else as even as blocks can
// be, the last one taking what is left), or 1 when the range may not be blocked. Blocking keeps
// results bit-identical when: nothing in the nest may fail (the first error would change); the
// ranges of `reds` (the nest's REDUCEs) do not depend on the blocked range; the nest loads no
// buffer the kernel stores to (iterations now interleave); the store is ungated, in bounds when
// accesses are checked, and writes a distinct element for every binding of the blocked range and
// those inside it (index = c*r + sum c_q*q + rest with |c| > sum |c_q|*(extent(q) - 1)), so the
// order of the writes does not matter.
int block_size(UOp ast, UOp end, size_t pos, const std::vector<UOp>& reds, int most, bool divides, bool bounds_check);

// The extent of range r when it is a constant, else null.
const int64_t* const_extent(UOp r);

// The range over the blocks of r (extent(r) / block, a constant), named like r with -block
// appended to its sub-ids (a name no range of the lowering uses).
UOp block_range(UOp r, int block);

}  // namespace ow::opt
