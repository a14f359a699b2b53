// Gradients as graph transformations (reference/SEMANTICS.md S9). GRADIENT(loss, x) is
// d(sum of the elements of loss)/dx; expand() replaces every GRADIENT node by the graph that
// computes it, so the interpreter and every backend define gradients the same way.
//
//   rules.cpp    reverse mode over values: one rule per op, ranges summed out (S9.2)
//   program.cpp  the effects a loss depends on, as a tree of statements (stores, loops, sequences)
//   reverse.cpp  reverse mode through those effects: the forward saves what each store overwrites
//                (a tape, O(iterations x region)), the backward runs every loop in reverse on
//                working copies, carrying the adjoint of each buffer (S9.3)
//   expand.cpp   GRADIENT nodes, innermost first, those of one loss together
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "uop/error.h"
#include "uop/uop.h"

namespace ow::grad {

// A gradient refused with its reason ("gradient: ..."): the interpreter cannot define it, so no
// backend computes it. A type of its own so ow fuzz counts refusals apart from findings; `reason`
// says which limit it is, the same for every graph that meets it (the message names the node).
struct NotDifferentiable : Error {
  enum class Reason {
    NoRule,                   // an op (or an effect) without a gradient rule
    UnshapedValue,            // the value flows through an unshaped node
    SymbolicShape,            // a tape or working copy of symbolic size
    CollectedWindow,          // a SHRINK of a collected axis to a window other than its own row
    PerBindingThroughEffects, // a per-binding variable whose loss sums over the loop, effects between
    UnorderedRead,            // a read of a buffer not ordered after an earlier write of it (S5.5)
    StoreNotToBuffer,         // a store whose target is not a view of a buffer
    StoreRunsTwice,           // one STORE node run at two places of the program
    EffectInLoopValue,        // an effect a loop's value runs in every iteration
    ReadAfterLoopEffect,      // a parallel END's value reads a buffer an effect inside it writes (S5.3)
  };
  NotDifferentiable(Reason reason, const std::string& why) : Error("gradient: " + why), reason(reason) {}
  ErrorKind kind() const noexcept override { return ErrorKind::NotDifferentiable; }
  Reason reason;
};

// The reason as a short stable name ("no-rule"), for summaries and machine output.
const char* reason_name(NotDifferentiable::Reason r);

// Reverse mode over values: the adjoint of each leaf (null where root does not depend on it),
// given root_grad, the adjoint of root. The sweep goes on below a leaf (a target x below a
// target t gets the paths through t too: d(t - 2)/dx is 1 whether or not t is a target as well),
// not below a node `stop` accepts (a read of a buffer, whose adjoint the caller scatters).
// A contribution carrying a range that its source does not depend on is summed over it, unless
// root itself depends on that range (then the gradient is one per binding of it).
std::vector<UOp> reverse(UOp root, UOp root_grad, const std::vector<UOp>& leaves, const std::function<bool(UOp)>& stop = {});

bool has_gradient(UOp root);

// Every GRADIENT node replaced by the graph computing it. The forward effects a gradient
// differentiates through are replaced too, by the same effects that also save what they
// overwrite, so the graph still runs each effect once. Throws ow::Error naming the node for a
// graph whose gradient is not supported (never a wrong gradient).
UOp expand(UOp root);

}  // namespace ow::grad
