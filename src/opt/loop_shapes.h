// The loop shapes of a store nest END(STORE, range...) that keep its results bit-identical, one
// rule each, for the kernel-opt passes:
//  - blocking: iterations r = B*rb + u, u < B, run side by side inside one iteration of the block
//    range rb (passes transposes, columns);
//  - the reduce interchange: the innermost store range j moves inside the REDUCEs' loops, each
//    REDUCE an array of accumulators over j (pass interchange), and the form of its folds that
//    vector loops take.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
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
// The range over the steps within one block of r (extent `block`), named like block_range(r,
// block) with 0 appended to its sub-ids.
UOp lane_range(UOp r, int block);

// The REDUCEs that depend on range j reached from `value` through non-REDUCE nodes, in
// first-visit order.
std::vector<UOp> reduces_over(UOp value, UOp j);

// The REDUCEs of END(STORE, ..., j) to fold as arrays of accumulators over j, or none when the
// interchange does not apply. Each acc[j] then folds the same terms in the same order from the
// same identity, and the inner j loop walks the loads contiguously. Conditions: j is the
// innermost store range, not repeated, with a constant extent 1..kMaxAccElems; every REDUCE the
// stored value reaches that depends on j has no REDUCE in its body, reduce ranges whose extents
// do not depend on j, nothing in its body that may fail (the first error, if any, is then the
// same: it can only come from what the store computes from the REDUCEs, in j order as before),
// and every LOAD in its body that depends on j is contiguous in j (coefficient 1: a row sum
// would become a strided walk); all arrays together hold at most kMaxAccBytes.
constexpr int64_t kMaxAccElems = 4096;
constexpr int64_t kMaxAccBytes = 64 * 1024;
std::vector<UOp> interchange_reduces(UOp end, bool bounds_check);

// One fold acc[j] = acc[j] OP x of an interchanged nest in the form tcc's vector calls and cc's
// register tiles take: OP is ADD and x = s * b[off + j] (the factors in either order: load_first
// when b's load comes first), s not depending on j, b a buffer of the accumulator's float dtype
// read contiguously in j (a matmul's fold); not under bounds checks (the vector loops do not
// check). Else none.
struct AxpyTerm {
  UOp s, idx;  // the factor fixed in j; the INDEX of b[off + j]
  bool load_first;
};
std::optional<AxpyTerm> axpy_term(Ops op, DType d, UOp x, UOp j, bool bounds_check);

// The most factors (rows x steps of the one range) of a fold tcc writes as one ow_gemv call (pass
// interchange's "gemv" mark): the call takes them from an array on the stack (32 KiB of doubles).
constexpr int64_t kMaxGemvFactors = 4096;

// The pieces of interchange_reduces, for a pass that needs the REDUCEs either way: is `end`
// END(STORE(ptr, value), range...); are `reds` (reduces_over(value, j), j its innermost range)
// to fold as arrays of accumulators.
bool store_nest(UOp end);
bool interchangeable(UOp end, const std::vector<UOp>& reds, bool bounds_check);

}  // namespace ow::opt
