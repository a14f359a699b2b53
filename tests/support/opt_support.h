// What the kernel-opt pass tests share (tests/opt, and tests/backends where they call a pass): a
// pass of the stage by name, the options it reads, and a matmul-like kernel's output on the kernel
// evaluator.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "interp/kernel_eval.h"
#include "matmul_support.h"
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

// The kernel evaluator's out (buffer 0, `out_size` float32s) of a kernel over (out, a, b), a and b
// of data() (an infinity and a -0.0 among them).
inline std::vector<float> run_out_a_b(UOp kernel, int64_t out_size, int64_t a_size, int64_t b_size) {
  interp::BufferData out = test_matmul::data(dtypes::float32, out_size, 0), a = test_matmul::data(dtypes::float32, a_size, 1),
                     b = test_matmul::data(dtypes::float32, b_size, 2);
  interp::KernelArgs args;
  args.buffers = {&out, &a, &b};
  interp::run_kernel(kernel->src[0], args);
  const float* o = out.data->as<float>();
  return {o, o + out_size};
}

}  // namespace ow::test
