// How a rendered kernel reports an error to its caller: the one definition shared by the
// renderer (render.cpp writes the helper and the calls) and the runner (backends/program.cpp
// decodes them). A kernel
//   int <name>(void** bufs, const long long* vars, long long* err)
// returns 0, or an error kind after filling err[kKind] = kind, err[kNode] = the offending node's
// number in the kernel's print (an IDIV/MOD, a shift, an integer POW, or the INDEX), err[kValue] =
// the bad index (0 for a division by zero, the shift count, the negative exponent). The renderer returns the printed line of every node it may name
// (RenderedKernel::fail_nodes), so the runner decodes without printing the kernel again.
#pragma once
#include <cstddef>
#include <map>
#include <string>

namespace ow::backend::abi {

// A shift's kind names its width, so the message can say the valid range.
enum Kind : long long { kDivisionByZero = 1, kOutOfBounds = 2, kShiftCount32 = 3, kShiftCount64 = 4, kShiftCount8 = 5, kShiftCount16 = 6, kNegativeExponent = 7 };
inline Kind shift_kind(int bits) { return bits == 8 ? kShiftCount8 : bits == 16 ? kShiftCount16 : bits == 32 ? kShiftCount32 : kShiftCount64; }
inline int shift_bits(long long kind) { return kind == kShiftCount8 ? 8 : kind == kShiftCount16 ? 16 : kind == kShiftCount32 ? 32 : kind == kShiftCount64 ? 64 : 0; }
enum Slot : int { kKind = 0, kNode = 1, kValue = 2, kSlots = 4 };  // err[] holds kSlots entries

// The C helper every kernel's prelude defines (indices as in Slot).
inline constexpr const char* kFailHelper =
    "static inline int ow_fail(long long* err, long long kind, long long node, long long value) { err[0] = kind; err[1] = node; err[2] = value; return (int)kind; }\n";

// A host loop compiled into the unit (render_host_loop), with the loops nested in it, returns 0,
// a kernel's kind, or one of these, with err[kLaunch] = the position of the launch that stopped
// it among the nest's launches (RenderedLoop::launches: the body's order, depth first) and
// err[kIteration + d] = the value then of the nest's d-th loop on the way to that launch (0: the
// compiled loop itself); the runner words the message as the host walk would. A nest of depth D
// needs loop_slots(D) entries in err.
enum LoopKind : long long { kBindRefused = 100, kBudgetExceeded = 101 };
enum LoopSlot : int { kLaunch = 4, kIteration = 5, kLoopSlots = 8 };
inline constexpr size_t loop_slots(size_t depth) {
  size_t need = static_cast<size_t>(kIteration) + depth;
  return need > static_cast<size_t>(kLoopSlots) ? need : static_cast<size_t>(kLoopSlots);
}

// The C statement reporting `kind` at node number `node`, with the C expression `value`.
inline std::string fail_statement(Kind kind, size_t node, const std::string& value) {
  return "return ow_fail(err, " + std::to_string(static_cast<long long>(kind)) + ", " + std::to_string(node) + ", " + value + ");";
}

// What err says: "integer division by zero\n  at <the node's line>".
inline std::string describe(const long long* err, const std::map<long long, std::string>& nodes) {
  auto it = nodes.find(err[kNode]);
  std::string node = it != nodes.end() ? it->second : "node #" + std::to_string(err[kNode]);
  std::string what = err[kKind] == kDivisionByZero ? "integer division by zero"
                     : err[kKind] == kOutOfBounds  ? "out-of-bounds access at index " + std::to_string(err[kValue])
                     : err[kKind] == kNegativeExponent ? "integer POW with negative exponent " + std::to_string(err[kValue])
                     : shift_bits(err[kKind])      ? "shift count " + std::to_string(err[kValue]) + " outside [0, " + std::to_string(shift_bits(err[kKind])) + ")"
                                                   : "error kind " + std::to_string(err[kKind]);
  return what + "\n  at " + node;
}

}  // namespace ow::backend::abi
