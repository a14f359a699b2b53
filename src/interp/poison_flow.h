// Whether a kernel's uninitialized-memory flow depends on the data it reads.
//
// Poison moves through a kernel elementwise (SEMANTICS: any poison operand makes the result
// poison) except where a value decides *which* elements are touched: an address or gate, a
// WHERE's condition (only the selected branch's poison counts), a loop bound. When none of these
// is computed from a loaded value, which elements end up poison depends only on which buffers
// start poison, never on their contents, so a verdict about one run holds for every run that
// leaves out the same buffers (backends/program.cpp keeps it).
#pragma once

#include "uop/uop.h"

namespace ow::interp {

// True when some address, gate, WHERE condition or loop bound of the kernel ast is computed
// from a LOAD (or from a node this analysis does not know: the safe answer).
bool poison_follows_data(UOp ast);

}  // namespace ow::interp
