// The explicit form of an assign scan (SEMANTICS S6.1) as ordinary effects, built by lowering
// (pass `scans`) and by reverse mode (src/grad), which differentiates through it:
//
//   acc = identity; written = false
//   for r: acc = acc OP x(r); written |= footprint(x(r)); target = written ? acc : target
//   target = acc
//
// With ADD and a contribution PAD(y) whose y has no footprint of its own, only the padded box
// changes: `acc[box] += y; target[box] = acc[box]` (the pad's zeros leave the rest as it was).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace ow {

// The fold identity of a reduce op (SEMANTICS S3): 0, 1, or the lowest value for MAX.
UOp reduce_identity(Ops op, DType dt);

// Where a PAD places its source: (begin, end) per axis.
std::vector<std::pair<UOp, UOp>> pad_box(UOp pad);

// The footprint of a contribution (S6.1: its elements that are not a PAD's fill), as a bool
// tensor; null when every element is real data. Mirrors the interpreter's footprint masks.
UOp footprint(UOp x, std::map<const UOpNode*, UOp>& memo);

struct ScanForm {
  UOp init;    // before the loop
  UOp body;    // every iteration
  UOp finish;  // after the loop
};

// `scratch(prefix, dtype)` gives a fresh buffer viewed with the target's shape.
ScanForm assign_scan_form(UOp target, Ops op, UOp x, const std::function<UOp(const std::string&, DType)>& scratch);

}  // namespace ow
