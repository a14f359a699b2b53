// Linked into test executables that use the Tensor API: with OW_TEST_BACKEND=tcc (or cc) every
// realize() runs through the compiled path in check mode (compiled and interpreted kernels
// compared launch by launch, outputs compared with the interpreter), so the same tests cover
// every backend. Unset: the reference interpreter, as usual.
#include <cstdlib>
#include <string>

#include "backends/program.h"
#include "tensor/tensor.h"

namespace {
const bool installed = [] {
  const char* tier = std::getenv("OW_TEST_BACKEND");
  if (!tier || !*tier) return false;
  std::string compiler = tier;
  ow::set_evaluator([compiler](ow::UOp graph, ow::interp::BufferMap& buffers) {
    ow::backend::RunOptions o;
    o.backend = ow::backend::Backend::Check;
    o.compiler = ow::backend::parse_backend(compiler);
    return ow::backend::run_graph(graph, buffers, o);
  });
  return true;
}();
}  // namespace
