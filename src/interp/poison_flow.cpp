#include "interp/poison_flow.h"

#include <unordered_set>

namespace ow::interp {

namespace {

// Whether operand i of u only carries values (its poison flows elementwise into u's), rather
// than deciding which elements are read, written or selected.
bool value_operand(UOp u, size_t i) {
  switch (u->op) {
    case Ops::WHERE: return i != 0;
    case Ops::STORE: return i == 1;
    case Ops::REDUCE: return i == 0;
    case Ops::CAST: case Ops::BITCAST: return true;
    default: return is_alu(u->op);
  }
}

}  // namespace

bool poison_follows_data(UOp ast) {
  std::unordered_set<const UOpNode*> loaded;  // nodes whose value is computed from a LOAD
  for (UOp u : toposort(ast)) {
    bool from_load = u->op == Ops::LOAD;
    for (size_t i = 0; i < u->src.size(); ++i) {
      if (!loaded.count(u->src[i].get())) continue;
      if (!value_operand(u, i)) return true;
      from_load = true;
    }
    bool value = u->op == Ops::LOAD || u->op == Ops::REDUCE || u->op == Ops::CAST || u->op == Ops::BITCAST || is_alu(u->op);
    if (from_load && value) loaded.insert(u.get());  // a STORE's value ends in the buffer
  }
  return false;
}

}  // namespace ow::interp
