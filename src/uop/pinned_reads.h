// SEMANTICS S5.3: every read inside a parallel END (a loop over non-OUTER ranges) sees the
// buffers written inside the loop as they were when the loop began, even a read ordered after
// an effect of the same iteration. Passes that would let such a read see the effect's write (the
// gradient pass, scans hoisting the effect) ask this first and refuse.
#pragma once
#include <set>
#include <string>

#include "uop/uop.h"

namespace ow {

// Does a value stored in `body` (an END's body) read, as a value, a buffer that a STORE or
// ASSIGN inside that same value writes? Buffers named in `skip` do not count.
bool reads_after_inner_write(UOp body, const std::set<std::string>& skip = {});

}  // namespace ow
