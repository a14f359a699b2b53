// The memory budget: every Storage (values, buffers, masks; interpreter and compiled runs alike)
// is charged against one process-wide limit when allocated, so a 4e9-element intermediate is
// refused up front, naming the node, instead of taking 16 GB before anything says no.
#pragma once
#include <cstdint>
#include <string>

namespace ow::interp {

// Bytes all live storage may take together; 0 means no limit. Default: half of physical memory.
void set_memory_limit(uint64_t bytes);
uint64_t memory_limit();
uint64_t memory_in_use();

// Charges n bytes (throws ow::Error "memory budget exceeded: ..." when over) and gives them back.
void charge_memory(uint64_t n);
void release_memory(uint64_t n) noexcept;

std::string bytes_text(uint64_t n);  // "512 B", "1.5 MB", "16.0 GB"

}  // namespace ow::interp
