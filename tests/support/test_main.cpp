// Catch2's main for every test binary: the run's exit code, or 77 (meson's "skipped") when
// nothing failed and a test case could not run its check (skip.h), with each one named.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <iostream>

#include "skip.h"

int main(int argc, char* argv[]) {
  int failed = Catch::Session().run(argc, argv);
  if (failed != 0 || ow::test::skipped().empty()) return failed;
  for (const std::string& s : ow::test::skipped()) std::cout << "SKIP " << s << "\n";
  return 77;
}
