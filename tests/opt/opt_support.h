// What the kernel-opt pass tests share: a pass of the stage by name, and the options it reads.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "opt/opt.h"

namespace ow::test {

inline const opt::Pass& kernel_opt_pass(const std::string& name) {
  const std::vector<opt::Pass>& all = opt::passes();
  auto p = std::find_if(all.begin(), all.end(), [&](const opt::Pass& q) { return q.name == name; });
  REQUIRE(p != all.end());
  return *p;
}

inline opt::Options opt_options(opt::Target t, int threads = 1, bool bounds_check = false) {
  opt::Options o;
  o.target = t;
  o.threads = threads;
  o.bounds_check = bounds_check;
  return o;
}

}  // namespace ow::test
