// Translation validation of the lowering pipeline, shared by `ow check --passes`, `ow explain`
// and `ow report`: the interpreter evaluates the graph before lowering and after a pass, and the
// outputs must agree bit for bit.
#pragma once
#include <string>
#include <vector>

#include "interp/interp.h"
#include "lower/lower.h"
#include "uop/uop.h"

namespace ow::cli {

// Evaluates a graph on its own copy of the inputs.
std::vector<interp::Output> evaluate(UOp g, const interp::BufferMap& inputs, const interp::Options& opts = {});

struct Verdict {
  bool ok = true;
  std::string text;  // what `ow check --passes` prints for this pass (one or more lines)
  bool over_budget = false;  // not decided: the evaluation ran out of its budget (opts)
};

// Compares the outputs of `g` (the graph after `pass`) with `want` (the input graph's outputs).
// opts limit the evaluation (ow report gives a budget of node evaluations).
Verdict validate_pass(const std::vector<interp::Output>& want, const std::string& pass, UOp g, const interp::BufferMap& inputs,
                      const interp::Options& opts = {});

// ow check --passes: validates every pass and stops at the first that changes an output.
int check_passes(UOp root, const interp::BufferMap& inputs);

}  // namespace ow::cli
