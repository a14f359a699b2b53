// Which OpenBLAS kernel numpy runs in `ow bench`. OpenBLAS picks its kernel from the CPU it
// recognises; 0.3.21 does not know every recent CPU and may fall back to an old kernel (SSE3
// "Prescott": a 512^3 float32 matmul in 7.8 ms instead of 1.4 ms with "SkylakeX"). Comparing
// against that would flatter outerworld, so by default numpy gets the best kernel the CPU's
// flags allow (OPENBLAS_CORETYPE), and bench_numpy.py reports the kernel that actually ran.
#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

#include "bench.h"
#include "uop/error.h"

namespace ow::cli::bench {

namespace {

// The words on /proc/cpuinfo's first "flags" line ("" when there is none).
std::string cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("flags", 0) == 0) return " " + line.substr(line.find(':') + 1) + " ";
  return "";
}

bool has_flag(const std::string& flags, const std::string& f) { return flags.find(" " + f + " ") != std::string::npos; }

}  // namespace

CoreType openblas_coretype(const std::string& which) {
  if (which == "none") return {"", "OpenBLAS's own choice (--openblas-coretype none)"};
  if (which != "auto") {
    for (char c : which)
      if (!std::isalnum(static_cast<unsigned char>(c))) throw Error("ow bench: --openblas-coretype takes auto, none or a core name such as SkylakeX, not '" + which + "'");
    return {which, "--openblas-coretype " + which};
  }
  std::string flags = cpu_flags();
  if (has_flag(flags, "avx512f")) return {"SkylakeX", "auto: this CPU has avx512f"};
  if (has_flag(flags, "avx2")) return {"Haswell", "auto: this CPU has avx2"};
  return {"", "auto: no avx2 in /proc/cpuinfo, OpenBLAS's own choice"};
}

}  // namespace ow::cli::bench
