// libFuzzer harness for the interpreter: every input that parses and verifies is evaluated
// (with budgets, so a legal but enormous loop is not a hang). Evaluation may fail only with an
// ow::Error; any other exception, a crash or a sanitizer report is a bug. Build and run:
//   clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -Isrc \
//     $(ls src/uop/*.cpp | grep -v dot.cpp) src/interp/*.cpp tests/fuzz/fuzz_run.cpp -o fuzz_run
//   ./fuzz_run CORPUS_DIR reference/cases -max_total_time=300 -max_len=16384
#include <cstdint>
#include <string>

#include "interp/interp.h"
#include "uop/error.h"
#include "uop/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    ow::ParsedGraph g = ow::parse_graph(text, "fuzz.uop");
    ow::verify_parsed(g);
    ow::interp::BufferMap buffers;
    ow::interp::Options o;
    o.max_evals = 20000;
    o.max_loop = 64;
    o.max_depth = 500;
    ow::interp::run(g.root, buffers, o);
  } catch (const ow::Error&) {
  }
  ow::reset_uop_table();
  return 0;
}
