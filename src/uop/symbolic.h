// Integer bounds (vmin/vmax) and the symbolic simplifier for index arithmetic (symbolic.cpp);
// reading index expressions without rewriting them (index_text.cpp).
//
// The simplifier only rewrites integer, index and bool nodes, so float results never change.
// Its central rule normalises sums: ADD/SUB/NEG/MUL-by-constant chains become a canonical
// linear form over "atoms" (ranges, variables, max/div/mod, ...), so `1 + a + (3-a-1)` is `3`.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "uop/pattern.h"
#include "uop/uop.h"

namespace ow {

// The dtypes whose values the simplifier bounds and folds: their whole range fits int64 (every
// integer but uint64, and bool). uint64 nodes are left alone (their bounds are unknown).
inline bool intlike(DType d) { return (d.is_int() && d != dtypes::uint64) || d.is_bool(); }

// vmin/vmax of a node from its sources (used while the node is being built).
std::pair<int64_t, int64_t> compute_bounds(const UOpNode& n);

// The rule table (named rules, in order) and its application to a graph.
const PatternMatcher& symbolic_rules();
UOp simplify(UOp u);

// The coefficient c of range r in the index expression u = c*r + (terms free of r), through ADD,
// SUB, NEG and MUL by a constant; nullopt when u is not of that form or c overflows.
std::optional<int64_t> coefficient(UOp u, UOp r);
// `expr` simplified where the bool `cond` holds (its value elsewhere is not kept): the nodes cond
// bounds (`0 < p`, `p < 2`) are read with those bounds, so `(p*196 - 196) // 196` under
// `0 < p < 2` is 0. For an index read only under its gate. Both must be pure index math.
UOp simplify_given(UOp expr, UOp cond);

// Infix text of an index expression for messages: simplified `3-a-1` prints as `((rm1*-1)+2)`.
// Text longer than max_chars is cut and ends in "...".
std::string render_expr(UOp u, size_t max_chars = 400);

// Evaluates an integer/bool ALU op on constants with the dtype's wrap-around (index: int64). The
// args are values (a uint32 in [0, 2^32), not a CONST arg of -1 standing for 2^32 - 1).
// Returns false when the op cannot be folded (division by zero, a shift count outside the width,
// a non-integer op, uint64 whose values do not all fit the int64 args).
bool fold_int_alu(Ops op, DType dtype, const int64_t* args, size_t n, int64_t& out);

}  // namespace ow
