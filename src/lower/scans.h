// The scans pass's own vocabulary (private to src/lower): shared by its two files, scans.cpp
// (OUTER folds and assign scans become explicit loops) and fold_placement.cpp (where a fold runs:
// on the host around its enclosing loop, before a parallel loop, or inside a kernel as a map).
#pragma once
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lower/lower.h"
#include "uop/pattern.h"

namespace ow::lower::scans_pass {

// The pass's own state: the lowering's Context, and the buffers the pass made for its folds
// (accumulators, copies), which are not the graph's: their reads must see their writes.
struct ScansState {
  Context& ctx;
  std::set<std::string> temps;
};

// ---- scans.cpp ----
// Does u depend on some of `ranges` (does it change from one iteration of a loop over them to
// another)?
bool depends_on_any(UOp u, const std::vector<UOp>& ranges);
// A fresh buffer of n elements; the same viewed with the static shape of `like`.
UOp buffer(ScansState& st, const std::string& prefix, DType dt, int64_t n);
UOp scratch(ScansState& st, const std::string& prefix, DType dt, UOp like);
// The same range with another axis type; as an OUTER range (folding in order is sequential).
UOp twin(UOp r, AxisType axis);
UOp outer_twin(UOp r);
UOp group(std::vector<UOp> steps);
// The BUFFER nodes `u` reads or writes; those the effects in `effects` write.
std::set<const UOpNode*> buffers_in(UOp u);
std::set<const UOpNode*> written_by(const std::vector<UOp>& effects);
// The effects in `x`, each with the node that runs it, in the order the interpreter runs them.
std::vector<std::pair<UOp, UOp>> effects_and_runners(UOp x);

// ---- fold_placement.cpp ----
// Is `red` a fold that this pass turns into host effects: an OUTER fold, or a REDUCE that runs on
// the host because it encloses one or runs an effect per iteration?
bool folds_on_host(UOp red);
// Its rules, in the pass's table (scans.cpp).
UOp host_reduce_with_effects(const Match& m);
UOp host_enclosing_reduce(const Match& m);
UOp host_enclosing_end(const Match& m);
UOp folds_before_parallel_end(const Match& m);
UOp outer_map(const Match& m);
UOp collect_as_map(const Match& m);

}  // namespace ow::lower::scans_pass
