#include "uop/kernel_slots.h"

#include <algorithm>

#include "uop/args.h"
#include "uop/shape.h"

namespace ow {

namespace {
std::vector<int64_t> slots_accessed(UOp ast, Ops op) {
  std::set<int64_t> out;
  for (UOp u : toposort(ast))
    if (u->op == op && u->src[0]->op == Ops::INDEX && u->src[0]->src[0]->op == Ops::DEFINE_GLOBAL) out.insert(u->src[0]->src[0]->arg.as<int64_t>());
  return {out.begin(), out.end()};
}

void add_buffers(UOp kernel, const std::vector<int64_t>& slots, std::set<std::string>& names) {
  for (int64_t s : slots) {
    size_t src = 1 + static_cast<size_t>(s);
    if (src >= kernel->src.size()) continue;
    if (UOp b = base_buffer(kernel->src[src])) names.insert(buffer_name(b));
  }
}
}  // namespace

std::vector<int64_t> slots_stored(UOp ast) { return slots_accessed(ast, Ops::STORE); }
std::vector<int64_t> slots_loaded(UOp ast) { return slots_accessed(ast, Ops::LOAD); }

bool loads_slot(UOp ast, int64_t slot) {
  std::vector<int64_t> loaded = slots_loaded(ast);
  return std::binary_search(loaded.begin(), loaded.end(), slot);
}

void kernel_buffers(UOp kernel, std::set<std::string>& reads, std::set<std::string>& writes) {
  add_buffers(kernel, slots_loaded(kernel->src[0]), reads);
  add_buffers(kernel, slots_stored(kernel->src[0]), writes);
}

}  // namespace ow
