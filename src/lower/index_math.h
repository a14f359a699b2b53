// Small helpers for lowering: shapes as index expressions, row-major (un)linearization,
// tensor-level INDEX nodes and bool gates. Everything returned is simplified.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "uop/scan_form.h"  // reduce_identity
#include "uop/shape.h"      // base_buffer
#include "uop/uop.h"

namespace ow::lower {

// A dimension's size: a bare RANGE as a dimension means its extent (SEMANTICS S4.1).
UOp dim_extent(UOp d);
std::vector<UOp> dims_of(UOp u);  // the node's shape dims (empty if unshaped)
bool is_shaped(UOp u);
std::optional<int64_t> static_size(UOp d);  // dim_extent as a constant, if it is one

// sum(idx[i] * stride[i]) with row-major strides of dims, and its inverse.
UOp linearize(const std::vector<UOp>& idx, const std::vector<UOp>& dims);
std::vector<UOp> unlinearize(UOp lin, const std::vector<UOp>& dims);

// bool helpers; a null gate means "always true".
UOp gate_and(UOp a, UOp b);
UOp in_range(UOp i, UOp lo, UOp hi);  // lo <= i < hi

// Tensor-level INDEX(x, idx..., [gate]) (LOWERING.md). An unshaped x is its own element.
struct IndexParts {
  UOp x;
  std::vector<UOp> idx;
  UOp gate;  // null: ungated
};
std::optional<IndexParts> index_parts(UOp u);
// A value for messages: op, dtype and shape, or what makes its shape invalid.
std::string value_text(UOp u);
UOp make_index(UOp x, std::vector<UOp> idx, UOp gate);


// The BUFFERIZE a STORE writes through (tagged "store"), as opposed to a realized value.
bool is_store_value(UOp u);


// `root` with each range in `map` replaced by its value (an index expression), except inside
// the nodes that close such a range (BUFFERIZE, REDUCE, END): those stay as they are, so a
// realized value holding every binding of r is indexed at r's value, not rebuilt around it.
// A value that can leave r's domain (it is only read under a gate that is false there) is
// clamped into it, so every rebuilt view keeps a shape that fits.
UOp bind_ranges(UOp root, const std::vector<std::pair<UOp, UOp>>& map);

// A vmap: `REDUCE(ADD, PAD(y(r), ...), r)` over one range where the pad gives each iteration its
// own slot, [before + r, before + r + 1) along `axis`, and moves nothing else with r. Element
// i of that axis is then `0 + y(r = i - before)` inside the slots and 0 outside.
struct SlotMap {
  UOp y, range;
  size_t axis;
  int64_t before;
};
std::optional<SlotMap> slot_map(UOp reduce);

// Does a REDUCE or END close an OUTER range?
bool has_outer(UOp reduce);

// Is a tensor-level effect (is_effect, uop/ops.h) reachable from u?
bool runs_effect(UOp u);

// Is u an effect or an OUTER fold (a REDUCE over an OUTER range): a node whose iterations or
// runs see earlier writes, so it cannot be repeated or reordered freely? Does `body` hold one?
bool is_effect_or_outer_fold(UOp u);
bool has_effect_or_outer_fold(UOp body);

// Ranges sorted by their printed identity (free_ranges orders by address, which is not stable).
std::vector<UOp> sorted_ranges(std::vector<UOp> rs);
std::vector<UOp> free_loop_ranges(UOp u);  // free non-OUTER ranges, sorted
std::vector<UOp> free_outer_ranges(UOp u);

}  // namespace ow::lower
