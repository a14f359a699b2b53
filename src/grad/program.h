// The effects a value depends on, as a program of statements (internal to src/grad).
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "uop/shape.h"  // base_buffer
#include "uop/uop.h"

namespace ow::grad {

// Fresh names for the buffers and ranges a transformation adds, unused in the graph it starts from.
class Namer {
 public:
  explicit Namer(UOp root);
  UOp buffer(const std::string& prefix, DType dt, int64_t size);
  UOp range(UOp extent);  // an OUTER range
 private:
  std::set<std::string> used_;
  int next_buffer_ = 0;
  int64_t next_range_;
};

struct Stmt {
  enum class Kind { Store, Loop, Seq } kind;
  UOp node;                 // the effect node in the graph (STORE, END, GROUP, ASSIGN)
  UOp target, value;        // Store: where and what
  std::vector<UOp> ranges;  // Loop
  bool sequential = true;   // Loop: OUTER (each iteration after the previous) or a parallel map
  std::vector<Stmt> body;   // Loop, Seq
};

// The statements a value depends on (through AFTER dependencies and ASSIGNs, transitively), in
// execution order, leaving out those that `before` depends on with no variable of `before` below
// them (they are fixed: the variable of a gradient is what it reads after them). ASSIGNs become stores, assign scans their explicit form
// (uop/scan_form.h): `replace` collects each such ASSIGN with the node that replaces it.
// Throws ow::Error for effects reverse mode cannot follow.
struct Program {
  std::vector<Stmt> stmts;
  std::vector<std::pair<UOp, UOp>> replace;
};
Program program_of(UOp value, const std::vector<UOp>& before, Namer& names);

// Is `u` a read: a chain of RESHAPE/PERMUTE/SHRINK/FLIP/AFTER over a BUFFER?
bool is_read(UOp u);
// ... and one that can be written through as well (a RESHAPE only of the whole buffer).
bool is_writable_read(UOp u);

// What expanding gradients changes in a graph: nodes replaced (an ASSIGN by its explicit effects,
// a GRADIENT by its graph) and stores that first save what they overwrite. apply() makes every
// change at once, inside the replacements too, so each effect exists in one version only.
struct Expansion {
  std::vector<std::pair<UOp, UOp>> replace;
  std::map<const UOpNode*, std::function<UOp(UOp)>> save;  // store -> its save, given the store as rebuilt
  UOp apply(UOp root) const;
};

// The gradients of `targets` (reverse.cpp); `ex` receives the changes the forward needs.
std::vector<UOp> gradients_of(UOp loss, const std::vector<UOp>& targets, Namer& names, Expansion& ex);

// Every store of a statement tree, with the loops around it (outermost first).
void for_each_store(const std::vector<Stmt>& stmts, const std::function<void(const Stmt&, const std::vector<const Stmt*>&)>& f);

}  // namespace ow::grad
