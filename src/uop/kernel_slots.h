// Which buffers a kernel reads and writes (reference/LOWERING.md "Kernel-level program"): a
// kernel's ast loads and stores through INDEX(DEFINE_GLOBAL slot, ...), and the KERNEL binds
// slot k to its source k + 1. The one answer for lowering (schedule, fuse), the kernel
// evaluator, the input rules and the compiled runners.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace ow {

// The DEFINE_GLOBAL slots a kernel ast (or a value of one) STOREs to, sorted, each once: what a
// launch may change, whichever backend runs it.
std::vector<int64_t> slots_stored(UOp ast);
std::vector<int64_t> slots_loaded(UOp ast);  // and the slots it LOADs from
bool loads_slot(UOp ast, int64_t slot);

// The buffers a KERNEL loads from and stores to, by name, added to `reads` and `writes`.
void kernel_buffers(UOp kernel, std::set<std::string>& reads, std::set<std::string>& writes);

}  // namespace ow
