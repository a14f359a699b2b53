// Graphviz DOT for a graph, drawn to be read rather than to show every node:
//  - constants and pure index arithmetic (ALU ops over constants, ranges and variables) are not
//    nodes of their own: their users list them inline, `%9 SHRINK (%5, rm1, (rm1+1), 0, 16)`,
//    and a dashed edge runs from each range or variable they read to the user. An expression too
//    long to inline becomes one node showing its whole infix text (cut with "..." when huge);
//  - ranges are coloured by AxisType, other nodes by op class; the nodes of a lowered program's
//    kernels are grouped in one box per kernel;
//  - an edge carries its source index only where order matters and is not otherwise obvious
//    (a non-commutative user with two or more drawn sources).
// DOT node ids and SVG <title>s are the printed node numbers (%N in `ow print`).
#pragma once
#include <cstddef>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace ow {

// Returns the number of boxes drawn (what Graphviz's layout time grows with).
size_t write_dot(std::ostream& os, UOp root);

// What the fill colours mean, for a legend: {"OUTER range", "#f4a582"}, ...
std::vector<std::pair<std::string, std::string>> dot_legend();

}  // namespace ow
