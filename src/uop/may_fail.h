// Which nodes may report an error when a kernel runs (SEMANTICS S2.1, S3; the compiled kernels'
// error kinds in backends/c/kernel_abi.h): one definition for every pass and renderer that must
// keep the first error where the interpreter reports it (a value is not hoisted out of a loop
// that may run zero times; iterations are not reordered or split across threads past a
// possible error).
#pragma once
#include "uop/uop.h"

namespace ow {

// True when evaluating u may report an error for some binding its value ranges allow:
//   - an integer IDIV or MOD whose divisor may be 0;
//   - an integer SHL or SHR whose count may lie outside [0, bits) (a uint64 count always may);
//   - a signed integer POW whose exponent may be negative;
//   - a pointer INDEX the bounds do not prove inside its buffer, when accesses are
//     checked (`bounds_checked`; unchecked kernels trust their indices).
// Loads read memory but never fail by themselves: their INDEX does.
bool may_fail(UOp u, bool bounds_checked);

// An integer shift whose count the value ranges prove to be in [0, bits): it needs no check.
bool shift_in_range(UOp shift);

}  // namespace ow
