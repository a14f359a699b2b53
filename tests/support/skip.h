// A test that cannot run its check reports a skip, never a pass: OW_SKIP_UNLESS in a TEST_CASE
// records why and returns, and the test binary then exits 77, meson's code for a skipped test
// (test_main.cpp), when nothing failed. Where the missing piece is required (the environment
// variable named, e.g. OW_REQUIRE_GRAPHVIZ, is set: tools/test.sh sets them), it fails instead.
// Give such test cases a tag of their own so that meson runs them as a test of their own
// (tests/tools/meson.build: `cli` excludes [graphviz], `cli-graphviz` runs only those).
#pragma once
#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace ow::test {

// "test case: why" for every skip of this run, in order.
inline std::vector<std::string>& skipped() {
  static std::vector<std::string> list;
  return list;
}

inline void record_skip(const std::string& why) {
  skipped().push_back(Catch::getResultCapture().getCurrentTestName() + ": " + why);
}

}  // namespace ow::test

// OW_SKIP_UNLESS(have_graphviz(), "OW_REQUIRE_GRAPHVIZ", "/usr/bin/dot is not installed")
#define OW_SKIP_UNLESS(available, require_var, why)                                     \
  do {                                                                                  \
    if (!(available)) {                                                                 \
      if (std::getenv(require_var)) FAIL(why << " (" << require_var << " is set)");     \
      std::ostringstream ow_skip_why_;                                                  \
      ow_skip_why_ << why;                                                              \
      ow::test::record_skip(ow_skip_why_.str());                                        \
      WARN("skipped: " << ow_skip_why_.str());                                          \
      return;                                                                           \
    }                                                                                   \
  } while (0)
