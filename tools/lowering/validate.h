// Translation validation of the lowering pipeline, shared by `ow check --passes`, `ow explain`
// and `ow report`: the interpreter evaluates the graph before lowering and after a pass, and the
// outputs must agree bit for bit.
#pragma once
#include <functional>
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

// Every stage of the pipeline for `root`, in order: each lowering pass with the kernel-opt
// passes for cc, then the kernel-opt passes for tcc on the same lowered program (named
// "PASS (tcc)"): what the two compilers' kernels are made from.
void for_each_stage(UOp root, const std::function<void(const std::string& name, UOp g)>& f);

// ow check --passes: validates every pass and stops at the first that changes an output.
int check_passes(UOp root, const interp::BufferMap& inputs);

}  // namespace ow::cli
