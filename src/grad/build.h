// Building tensor-level graphs directly on UOps, for the gradient transformation (it sits below
// the Tensor API, so the interpreter and lowering can expand GRADIENT nodes too). Every builder
// takes shaped operands of matching shapes, as the nodes of a gradient are; unshaped constants
// broadcast by themselves.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace ow::grad {

std::vector<UOp> dims_of(UOp u);
bool shaped(UOp u);

UOp reshape(UOp x, const std::vector<UOp>& dims);
UOp expand(UOp x, const std::vector<UOp>& dims);  // x's size-1 axes (same rank) to dims
UOp permute(UOp x, const std::vector<int64_t>& order);
UOp flip(UOp x, const std::vector<bool>& axes);
UOp pad(UOp x, const std::vector<std::pair<UOp, UOp>>& widths);
UOp shrink(UOp x, const std::vector<std::pair<UOp, UOp>>& bounds);
UOp sum(UOp x, const std::vector<int64_t>& axes);  // REDUCE_AXIS ADD, reduced axes kept as 1

UOp cnst(DType dt, double v);                  // unshaped
UOp full(const std::vector<UOp>& dims, DType dt, double v);
UOp zeros_like(UOp x);
UOp ones_like(UOp x);
UOp alu(Ops op, UOp a, UOp b);
UOp where(UOp c, UOp t, UOp f);
UOp cast(UOp x, DType d);
UOp add(UOp a, UOp b);
UOp mul(UOp a, UOp b);

// A buffer's contents as a tensor of `dims` (RESHAPE of the flat BUFFER), and the slot at index
// `at` (one index per leading axis) of a buffer holding one value of shape `dims` per index.
UOp view(UOp buffer, const std::vector<UOp>& dims);
UOp slot(UOp buffer, const std::vector<UOp>& extents, const std::vector<UOp>& at, const std::vector<UOp>& dims);

}  // namespace ow::grad
