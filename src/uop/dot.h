// Graphviz DOT for a graph (built with Boost.Graph's write_graphviz). Nodes are coloured by op
// class, ranges by AxisType; edges point from a source to its user and carry the source index.
#pragma once
#include <ostream>

#include "uop/uop.h"

namespace ow {

void write_dot(std::ostream& os, UOp root);

}  // namespace ow
