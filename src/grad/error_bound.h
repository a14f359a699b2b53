// Error bounds as a derived graph, as gradients are (gradient.h): for every float output of a
// pure tensor-level graph, a float64 output of the same shape bounding |computed - exact|, where
// "exact" evaluates every op of the graph in real numbers on the same inputs. The bound holds for
// any evaluation that rounds each op once in its dtype, whatever the order of a reduction's terms
// and whether a*b+c is contracted, and allows transcendental functions (EXP2, LOG2, SIN, SQRT,
// POW) kTranscendentalUlps units in the last place of their own. It is a running error analysis
// (Wilkinson; Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., 3.1-3.3): a
// sum's rounding error grows with the sum of its terms' magnitudes, not with the result's.
//
// Integer and bool values are exact unless they come from floats: a comparison of floats whose
// bounds overlap "may flip" (its bound is 1), and a WHERE on such a condition is bounded by the
// distance between its branches. Alongside, per output element, the number (as `ow print`
// numbers it) of the first node that did what IEEE 754 calls invalid: made a NaN out of operands
// that were not NaN (inf*0, inf-inf, 0/0, sqrt(-1), ...), which an algebraic rewrite of that node
// may legitimately avoid, or converted a float outside an integer type's range (or a NaN) to it,
// which C leaves undefined and outerworld saturates (S2.1); or -1.
//
// reference/SEMANTICS.md S8.1 states the model; the tinygrad oracle judges with it.
#pragma once
#include <string>

#include "uop/uop.h"

namespace ow::grad {

inline constexpr double kTranscendentalUlps = 16;

// The root with two more outputs after each float or integer output NAME: "NAME:bound" (float64)
// and "NAME:invalid_origin" (int64). Throws ow::Error naming the first node it has no rule for (effects,
// loops over ranges, ...).
UOp with_error_bounds(UOp root);

}  // namespace ow::grad
