// The verifier: per-op rules on dtypes, sources, args, shapes and range scope. Each problem
// names the node and the rule it broke; formatting the node's name is the caller's job (a
// parsed file names it by file:line:col, a built graph by its printed id).
#pragma once
#include <string>
#include <vector>

#include "uop/uop.h"

namespace ow {

struct VerifyIssue {
  UOp node;
  std::string rule;     // short rule id, e.g. "alu.dtype", "scope"
  std::string message;  // what is wrong, in words
};

struct VerifyOptions {
  bool strict = false;  // also report legal-but-suspicious graphs (reduce over an unused range)
};

// Every problem in the graph under root, in topological order (sources first).
std::vector<VerifyIssue> verify(UOp root, const VerifyOptions& opts = {});

// Throws Error("invalid graph: rule: message (at the node's printed line)") for the first
// problem: what the interpreter and the compiled path both say before they run a graph, so a
// graph one refuses the other refuses too.
void require_valid(UOp root);

// Why a tensor-level STORE/ASSIGN target is not memory (a BUFFER seen through movement ops and
// AFTERs, no EXPAND: what the interpreter writes, interp/effects.cpp), or nothing when it is.
std::optional<std::string> unwritable_target(UOp target);

// The kernel grammar (reference/LOWERING.md, "Kernel-level program") of one KERNEL, or of every
// KERNEL under root; checked once, at the end of lowering's `kernelize`. A violation is
// outerworld's bug: an InternalError naming the kernel, the rule and the node's line in the
// kernel's print (src/uop/verify_kernel.cpp).
void verify_kernel(UOp kernel);
void verify_kernels(UOp root);

// The bytes all registers (DEFINE_REG) of one kernel may hold: they live on the C stack of a
// launch (and of each of a two-thread kernel's halves).
constexpr int64_t kMaxRegisterBytes = 256 * 1024;

// Ranges a node's value depends on that no REDUCE/END/range-dimension has closed yet, ordered
// by address. O(result): computed once per node when it is built (UOpNode::free).
std::vector<UOp> free_ranges(UOp u);
std::vector<const UOpNode*> free_ranges_of_new_node(const UOpNode& n);  // for UOp::make
// Does u depend on the range r: is r free in u (changes u's value from one binding to another)?
bool has_free_range(UOp u, UOp r);

}  // namespace ow
