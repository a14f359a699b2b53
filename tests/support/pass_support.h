// What the pass unit tests (tests/lower, tests/opt) share: a graph from its text, a program's
// kernels, the printed form of an expected graph to compare a pass's output with, and the
// interpreter's outputs of a graph before and after a pass, which must agree bit for bit (every
// stage is a graph the interpreter evaluates: reference/LOWERING.md).
#pragma once
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "interp/compare.h"
#include "interp/inputs.h"
#include "interp/interp.h"
#include "uop/args.h"
#include "uop/text.h"

namespace ow::test {

inline UOp graph_of(const std::string& text) { return parse_graph(text, "<test>").root; }

// The KERNELs of a lowered program, in toposort order.
inline std::vector<UOp> kernels_of(UOp program) {
  std::vector<UOp> out;
  for (UOp u : toposort(program))
    if (u->op == Ops::KERNEL) out.push_back(u);
  return out;
}

// The normalised text of a hand-written graph (print_graph adds the shape comments), to compare
// with print_graph of a pass's output: a mismatch shows both graphs.
inline std::string printed(const std::string& text) { return print_graph(graph_of(text)); }

// Data for every float32 buffer of the graph that is not a temporary: small exact values of
// both signs, different per buffer.
inline interp::BufferMap float_inputs(UOp root) {
  interp::BufferMap m;
  int salt = 0;
  for (const interp::BufferSpec& s : interp::graph_buffers(root)) {
    REQUIRE(s.dtype == dtypes::float32);
    auto data = std::make_shared<interp::Storage>(s.dtype, s.size);
    for (int64_t i = 0; i < s.size; ++i) data->as<float>()[i] = static_cast<float>((i * 5 + salt) % 11) * 0.75f - 3.0f;
    m[s.name] = interp::BufferData{s.dtype, data, nullptr};
    salt += 3;
  }
  return m;
}

// The graph's outputs on copies of the inputs it still has (a pass may drop a buffer nothing reads).
inline std::vector<interp::Output> outputs_of(UOp g, const interp::BufferMap& inputs) {
  interp::BufferMap b;
  for (const interp::BufferSpec& s : interp::graph_buffers(g))
    if (auto it = inputs.find(s.name); it != inputs.end()) b.emplace(s.name, it->second);
  b = interp::copy_buffers(b);
  return interp::run(g, b);
}

// `after` (a pass's output) computes what `before` (its input) does, output for output, bit for bit.
inline void check_same_outputs(UOp before, UOp after) {
  interp::BufferMap in = float_inputs(before);
  std::vector<interp::Output> want = outputs_of(before, in), got = outputs_of(after, in);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("output " << want[i].name);
    CHECK(got[i].name == want[i].name);
    CHECK(!interp::first_difference(want[i].value, got[i].value));
  }
}

}  // namespace ow::test
