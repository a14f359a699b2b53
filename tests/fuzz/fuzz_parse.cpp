// libFuzzer harness for the .uop text format: parse, verify, print, re-parse.
//
// Contract under test (src/uop/error.h, src/uop/text.h):
//   - any input either parses or throws ow::Error (a ParseError); nothing else may escape, and
//     nothing may crash, hang or leak;
//   - a graph that parses and verifies prints to a normalized text that parses back to the very
//     same interned root, and printing that again gives the same bytes.
// An ow::Error from the original input is expected and swallowed. Everything else is a bug: any
// other exception escapes (libFuzzer reports it as a crash via std::terminate), and a broken
// round trip aborts with both texts on stderr.
//
// Build and run: tools/fuzz.sh [SECONDS]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "uop/error.h"
#include "uop/text.h"
#include "uop/uop.h"
#include "uop/verify.h"

namespace {

[[noreturn]] void bug(const char* what, const std::string& a, const std::string& b) {
  std::fprintf(stderr, "fuzz_parse: %s\n--- first ---\n%s\n--- second ---\n%s\n--- end ---\n", what, a.c_str(),
               b.c_str());
  std::abort();
}

// The round trip of a verified graph; every failure here is a bug, so ow::Error is not caught
// as "expected" but turned into an abort with context.
void check_round_trip(ow::UOp root) {
  const std::string printed = ow::print_graph(root);
  ow::ParsedGraph again;
  try {
    again = ow::parse_graph(printed, "<printed>");
  } catch (const ow::Error& e) {
    bug("printed graph does not parse back", printed, e.what());
  }
  if (again.root != root) bug("re-parsed root is not the same interned node", printed, ow::print_graph(again.root));
  const std::string reprinted = ow::print_graph(again.root);
  if (reprinted != printed) bug("print(parse(print(g))) != print(g)", printed, reprinted);
  try {
    ow::verify_parsed(again);
  } catch (const ow::Error& e) {
    bug("the re-parsed graph no longer verifies", printed, e.what());
  }
}

void one_input(const std::string& text) {
  ow::ParsedGraph g;
  try {
    g = ow::parse_graph(text, "<fuzz>");
  } catch (const ow::Error&) {
    return;  // malformed input: the expected outcome for most inputs
  }
  // The strict verifier only adds warnings-as-errors; run it too for its code paths.
  try {
    ow::VerifyOptions strict;
    strict.strict = true;
    ow::verify_parsed(g, strict);
  } catch (const ow::Error&) {
  }
  try {
    ow::verify_parsed(g);
  } catch (const ow::Error&) {
    return;  // parses but breaks a verifier rule
  }
  check_round_trip(g.root);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  one_input(std::string(reinterpret_cast<const char*>(data), size));
  // Every UOp handle from this input is gone now; free the interned nodes so memory stays bounded
  // and each input starts from an empty table.
  ow::reset_uop_table();
  return 0;
}
