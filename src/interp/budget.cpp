#include "interp/budget.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "uop/error.h"

namespace ow::interp {

namespace {

uint64_t half_of_physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 2 : 0;
}

std::atomic<uint64_t> g_limit{half_of_physical_memory()};
std::atomic<uint64_t> g_in_use{0};

}  // namespace

void set_memory_limit(uint64_t bytes) { g_limit = bytes; }
uint64_t memory_limit() { return g_limit; }
uint64_t memory_in_use() { return g_in_use; }

void charge_memory(uint64_t n) {
  uint64_t before = g_in_use.fetch_add(n), limit = g_limit;
  if (limit == 0 || before + n <= limit) return;
  g_in_use.fetch_sub(n);
  throw BudgetExceeded("memory budget exceeded: a value of " + bytes_text(n) + " with " + bytes_text(before) + " already in use is over the limit of " + bytes_text(limit) +
              " (ow: --max-memory SIZE raises it; the default is half of physical memory)");
}

void release_memory(uint64_t n) noexcept { g_in_use.fetch_sub(n); }

std::string bytes_text(uint64_t n) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double x = static_cast<double>(n);
  int u = 0;
  while (x >= 1024 && u < 4) x /= 1024, ++u;
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  else std::snprintf(buf, sizeof buf, "%.1f %s", x, units[u]);
  return buf;
}

}  // namespace ow::interp
