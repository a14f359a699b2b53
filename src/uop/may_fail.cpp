// The nodes that may report an error (may_fail.h).
#include "uop/may_fail.h"

namespace ow {

bool shift_in_range(UOp shift) {
  UOp n = shift->src.at(1);
  return n->dtype != dtypes::uint64 && n.vmin() >= 0 && n.vmax() < static_cast<int64_t>(shift->dtype.itemsize()) * 8;
}

bool may_fail(UOp u, bool bounds_checked) {
  if (u->op == Ops::INDEX && u->dtype.ptr) {
    if (!bounds_checked) return false;
    if (u->src.size() < 2) return true;
    int64_t size = u->src[0]->dtype.size;
    return !(size >= 0 && u->src[1].vmin() >= 0 && u->src[1].vmax() < size);
  }
  if (u->src.size() != 2 || !u->src[0]->dtype.is_int()) return false;
  UOp b = u->src[1];
  switch (u->op) {
    case Ops::IDIV: case Ops::MOD: return b.vmin() <= 0 && b.vmax() >= 0;
    case Ops::SHL: case Ops::SHR: return !shift_in_range(u);
    case Ops::POW: return u->src[0]->dtype.is_signed_int() && b.vmin() < 0;
    default: return false;
  }
}

}  // namespace ow
