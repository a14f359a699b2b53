// The `.uop` text format: one UOp per line, children before parents, the last line is the root.
//
//   %3 = RANGE index (%2) (-1, AxisType.OUTER)   # range m1
//
// Grammar and examples: reference/FORMAT.md. print_graph(parse_graph(t).root) == t for every
// normalised text t, and parse_graph(print_graph(g)).root == g (same interned node).
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "uop/uop.h"
#include "uop/verify.h"

namespace ow {

// Node numbering of a printed graph: toposort order, %0 first.
struct Printed {
  std::vector<UOp> order;
  std::unordered_map<const UOpNode*, size_t> number;
  std::string name(UOp u) const { return "%" + std::to_string(number.at(u.get())); }
  std::string line(UOp u) const;  // "%5 = ADD float32 (%3, %4)" without the comment
};

Printed number_graph(UOp root);
std::string print_graph(UOp root);

struct Loc {
  int line = 0, col = 0;
  std::string name;  // the name the file gave the node
  std::string text;  // the definition as written (trimmed, without comment)
};

struct ParsedGraph {
  std::string file;
  UOp root;
  std::unordered_map<const UOpNode*, Loc> where;  // first definition of each node

  // "file:line: text" of u's definition, for diagnostics; a node the file does not define (made
  // while evaluating, a gradient's) is named by its op.
  std::string line_of(UOp u) const;
};

// Throws ParseError ("file:line:col: message") for anything that is not a well-formed graph.
// Does not run the verifier; see verify_parsed.
ParsedGraph parse_graph(const std::string& text, const std::string& file = "<input>");

// Runs the verifier and throws ParseError at the first problem's node, naming rule and node.
void verify_parsed(const ParsedGraph& g, const VerifyOptions& opts = {});

// Runs the verifier on a built graph and throws ow::Error naming the printed node.
void verify_or_throw(UOp root, const VerifyOptions& opts = {});

}  // namespace ow
