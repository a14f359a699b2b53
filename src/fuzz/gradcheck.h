// Central differences in float64 for ow fuzz's gradient graphs: the interpreter's GRADIENT
// outputs against (f(x + h) - f(x - h)) / 2h at a few sampled elements of each variable.
#pragma once
#include <cstdint>
#include <string>

#include "interp/interp.h"
#include "uop/uop.h"

namespace ow::fuzz {

struct FdCheck {
  bool ok = true;
  std::string error;   // the first element that disagrees: variable, index, both values
  int checked = 0;     // elements compared
  int unreliable = 0;  // elements skipped: the difference quotient is not converged (or not finite)
};

// `root` is a SINK whose outputs include GRADIENT(loss, x) nodes, x a view of a whole float64
// buffer (other outputs are ignored). `inputs` are the buffers as given; they are not changed.
// Sampling is deterministic in `seed`. Throws ow::Error when the interpreter rejects the graph.
FdCheck check_finite_differences(UOp root, const interp::BufferMap& inputs, uint64_t seed, int samples_per_var = 4);

}  // namespace ow::fuzz
