// Which build of the vector loops tcc's kernels call (vector_loops.h): the widest this CPU runs.
#include <cstdlib>
#include <string>

#include "backends/tcc/vector_loops.h"
#include "uop/error.h"

namespace ow::backend {

namespace detail {
// One per build of vector_loops.cpp (backends/meson.build).
extern const VectorLoops vector_loops_sse2;
#if OW_WIDE_VECTOR_LOOPS
extern const VectorLoops vector_loops_avx2, vector_loops_avx512;
#endif
}  // namespace detail

std::vector<const VectorLoops*> supported_vector_loops() {
  std::vector<const VectorLoops*> out{&detail::vector_loops_sse2};
#if OW_WIDE_VECTOR_LOOPS
  __builtin_cpu_init();  // (checks the OS saves the wide registers too)
  if (__builtin_cpu_supports("avx2")) out.push_back(&detail::vector_loops_avx2);
  if (__builtin_cpu_supports("avx512f")) out.push_back(&detail::vector_loops_avx512);
#endif
  return out;
}

const VectorLoops& vector_loops() {
  static const VectorLoops& chosen = [] () -> const VectorLoops& {
    std::vector<const VectorLoops*> all = supported_vector_loops();
    const char* want = std::getenv("OW_VECTOR_ISA");
    if (!want || !*want) return *all.back();
    std::string names;
    for (const VectorLoops* v : all) {
      if (want == std::string(v->isa)) return *v;
      names += std::string(names.empty() ? "" : ", ") + v->isa;
    }
    throw Error("OW_VECTOR_ISA=" + std::string(want) + ": this CPU runs the vector loops built for " + names);
  }();
  return chosen;
}

}  // namespace ow::backend
