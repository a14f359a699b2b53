// Translation validation (validate.h).
#include "validate.h"

#include <algorithm>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli.h"
#include "uop/error.h"
#include "uop/text.h"

namespace ow::cli {

// A pass may drop a buffer nothing reads any more (the reads of an empty tensor, a gradient's
// input that cancels): the inputs of buffers the graph no longer has are not given to it.
std::vector<interp::Output> evaluate(UOp g, const interp::BufferMap& inputs, const interp::Options& opts) {
  interp::BufferMap b;
  for (const interp::BufferSpec& s : interp::graph_buffers(g))
    if (auto it = inputs.find(s.name); it != inputs.end()) b.emplace(s.name, it->second);
  b = copy_buffers(b);
  return interp::run(g, b, opts);
}

Verdict validate_pass(const std::vector<interp::Output>& want, const std::string& pass, UOp g, const interp::BufferMap& inputs,
                      const interp::Options& opts) {
  std::vector<interp::Output> got;
  try {
    got = evaluate(g, inputs, opts);
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error& e) {
    bool budget = dynamic_cast<const BudgetExceeded*>(&e) != nullptr;
    return {false, "pass " + pass + ": the lowered graph fails to evaluate: " + e.what() + "\n", budget};
  }
  for (size_t i = 0; i < want.size(); ++i) {
    auto d = i < got.size() ? first_difference(want[i].value, got[i].value) : std::optional<Difference>(Difference{-1, 0, 0});
    if (!d) continue;
    std::ostringstream os;
    os << "pass " << pass << " changes output '" << want[i].name << "'";
    if (d->index < 0) os << ": its shape or presence differs\n";
    else os << " at element " << d->index << ": " << d->a << " before, " << d->b << " after\n";
    os << "  output node after the pass:\n" << print_graph(i < g->src.size() ? g->src[i] : g);
    return {false, os.str()};
  }
  return {true, "pass " + pass + ": outputs unchanged (" + std::to_string(toposort(g).size()) + " nodes)\n"};
}

int check_passes(UOp root, const interp::BufferMap& inputs) {
  std::vector<interp::Output> want = evaluate(root, inputs);
  std::cout << "input graph: " << want.size() << " output(s) evaluated\n";
  int status = 0;
  for_each_stage(root, [&](const std::string& pass, UOp g) {
    if (status) return;
    Verdict v = validate_pass(want, pass, g, inputs);
    std::cout << v.text;
    if (!v.ok) status = 1;
  });
  return status;
}

void for_each_stage(UOp root, const std::function<void(const std::string& name, UOp g)>& f) {
  lower::Context ctx = lower::through_kernel_opt(opt::Target::cc);
  UOp lowered;  // the program before the kernel-opt stage
  lower::lower(root, ctx, [&](const lower::Pass& p, UOp g) {
    if (!p.kernel_opt) lowered = g;
    f(p.name, g);
  });
  opt::Options tcc = opt::options_for(opt::Target::tcc);
  for (const opt::Pass& p : opt::passes())
    if (std::count(p.targets.begin(), p.targets.end(), opt::Target::tcc)) {
      lowered = opt::run_pass(p, lowered, tcc);
      f(p.name + " (tcc)", lowered);
    }
}

}  // namespace ow::cli
