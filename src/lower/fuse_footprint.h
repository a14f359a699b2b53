// What pass `fuse` proves about a kernel before it computes a value kernel inside its reader
// (fuse.cpp): that the value cannot fail, and that the reader's stores miss the value's loads.
#pragma once
#include "lower/lower.h"
#include "uop/uop.h"

namespace ow::lower {

// An integer op by a divisor, shift count or exponent that may trap (division by zero, a shift
// count outside the width, a negative exponent of a signed POW): the one list of such ops.
bool may_trap(UOp u);

// No node of a kernel-level value can raise an error: every INDEX provably in bounds with an
// index and gate computed without loads (never poison), every integer division, modulo and
// shift by a constant that cannot trap.
bool value_cannot_fail(UOp value);

// For every STORE of the kernel ast `ast` and every LOAD under `value` (a part of the ast's
// stored values) from the same slot: no iteration's store writes the element the load reads,
// under the WHERE conditions the load is read under. Proved on index bounds; false when not
// proven (or when the walk would be too long).
bool stores_miss_loads(UOp ast, UOp value, Context& ctx);

}  // namespace ow::lower
