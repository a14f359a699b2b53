#include "uop/pinned_reads.h"

#include "uop/args.h"
#include "uop/shape.h"

namespace ow {

namespace {

// Is a buffer in `written` read as a value in `u` (not as a STORE/ASSIGN target)?
bool reads_any(UOp u, const std::set<const UOpNode*>& written, std::set<const UOpNode*>& seen) {
  if (!seen.insert(u.get()).second) return false;
  if (u->op == Ops::BUFFER) return written.count(u.get()) > 0;
  size_t first = 0;
  if (is_write(u->op)) {
    first = 1;
    for (UOp t = u->src[0]; t->op != Ops::BUFFER && !t->src.empty(); t = t->src[0])  // the target's view chain
      for (size_t i = 1; t->op == Ops::AFTER && i < t->src.size(); ++i)
        if (reads_any(t->src[i], written, seen)) return true;
  }
  for (size_t i = first; i < u->src.size(); ++i)
    if (reads_any(u->src[i], written, seen)) return true;
  return false;
}

}  // namespace

bool reads_after_inner_write(UOp body, const std::set<std::string>& skip) {
  for (UOp u : toposort(body)) {
    if (u->op != Ops::STORE && u->op != Ops::ASSIGN) continue;
    std::set<const UOpNode*> written, seen;
    for (UOp w : toposort(u->src[1]))
      if (UOp b = is_write(w->op) ? base_buffer(w->src[0]) : UOp(); b && !skip.count(buffer_name(b)))
        written.insert(b.get());
    if (!written.empty() && reads_any(u->src[1], written, seen)) return true;
  }
  return false;
}

}  // namespace ow
