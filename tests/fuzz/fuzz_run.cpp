// libFuzzer harness for the interpreter: every input that parses and verifies is evaluated
// (with budgets, so a legal but enormous loop is not a hang). Evaluation may fail only with an
// ow::Error; any other exception, a crash or a sanitizer report is a bug. A graph that parses but
// does not verify must be refused by the interpreter and by lowering (the compiled path's entry)
// with the same message: before 2026-12-04 lowering ran such graphs. Build and run:
// tools/fuzz.sh --target run [SECONDS].
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "interp/interp.h"
#include "lower/lower.h"
#include "uop/error.h"
#include "uop/text.h"
#include "uop/verify.h"

namespace {

// The message `f` throws as an ow::Error ("" when it returns).
template <class F>
std::string refusal(F f) {
  try {
    f();
  } catch (const ow::Error& e) {
    return e.what();
  }
  return "";
}

// An invalid graph: the interpreter and lowering both refuse it, saying the same.
void check_both_refuse(ow::UOp root) {
  ow::interp::BufferMap none;
  std::string interp = refusal([&] { ow::interp::run(root, none); });
  std::string lower = refusal([&] { ow::lower::lower(root); });
  if (interp.empty() || interp != lower) {
    std::fprintf(stderr, "fuzz_run: an invalid graph is not refused alike\ninterpreter: %s\nlowering: %s\n", interp.c_str(), lower.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    ow::ParsedGraph g = ow::parse_graph(text, "fuzz.uop");
    if (!ow::verify(g.root).empty()) {
      check_both_refuse(g.root);
      ow::reset_uop_table();
      return 0;
    }
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
