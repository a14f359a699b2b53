// The lowering pipeline run with every rule firing recorded (ow explain, ow report).
#pragma once
#include <string>
#include <vector>

#include "lower/lower.h"
#include "uop/text.h"

namespace ow::cli {

struct Firing {
  std::string rule;
  UOp before, after;
};

struct PassTrace {
  const lower::Pass* pass;
  UOp before, after;  // the graph the pass got and the one it returned
  std::vector<Firing> firings;
};

// Lowers root, the kernel-opt stage for compiler t; one entry per pass, in pipeline order.
std::vector<PassTrace> trace_lowering(UOp root, opt::Target t = opt::Target::cc);

// The firings of one rule, in the order the rules first fired.
struct RuleGroup {
  std::string rule;
  std::vector<const Firing*> firings;
};
std::vector<RuleGroup> group_by_rule(const std::vector<Firing>& firings);

// A node as one compact line: "%12 RESHAPE float32 (%4, %1) ..." numbered as in `g` when it is
// part of g; a node that is not (an intermediate of a rewrite) is "new OP dtype (...)".
std::string compact_node(UOp u, const Printed& g, size_t max_chars = 96);
// A rewrite as "BEFORE -> AFTER". When the two print alike (only a source changed, such as a
// range's AxisType), AFTER ends with "; source: S_BEFORE -> S_AFTER" for the first source, searched
// depth first, whose own line changed, so no rewrite reads "X -> X".
std::pair<std::string, std::string> rewrite_texts(UOp before, const Printed& in, UOp after, const Printed& out, size_t max_chars = 96);

}  // namespace ow::cli
