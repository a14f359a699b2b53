// GRADIENT nodes expanded: innermost first (a gradient of a gradient differentiates the inner
// one's expansion), and the GRADIENTs of one loss together (one backward serves them all, and
// the forward saves its tapes once).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "grad/gradient.h"
#include "grad/program.h"
#include "uop/pattern.h"

namespace ow::grad {

const char* reason_name(NotDifferentiable::Reason r) {
  using R = NotDifferentiable::Reason;
  switch (r) {
    case R::NoRule: return "no-rule";
    case R::UnshapedValue: return "unshaped-value";
    case R::SymbolicShape: return "symbolic-shape";
    case R::CollectedWindow: return "collected-window";
    case R::PerBindingThroughEffects: return "per-binding-through-effects";
    case R::UnorderedRead: return "unordered-read";
    case R::StoreNotToBuffer: return "store-not-to-buffer";
    case R::StoreRunsTwice: return "store-runs-twice";
    case R::EffectInLoopValue: return "effect-in-loop-value";
    case R::ReadAfterLoopEffect: return "read-after-loop-effect";
  }
  return "unknown";
}

bool has_gradient(UOp root) {
  for (UOp u : toposort(root))
    if (u->op == Ops::GRADIENT) return true;
  return false;
}

namespace {
// The GRADIENT nodes no other GRADIENT is below, grouped by loss (in graph order).
std::vector<std::pair<UOp, std::vector<UOp>>> innermost(UOp root) {
  std::unordered_map<const UOpNode*, bool> below;  // has a GRADIENT strictly inside
  std::vector<std::pair<UOp, std::vector<UOp>>> groups;
  for (UOp u : toposort(root)) {
    bool b = false;
    for (UOp s : u->src) b = b || below.at(s.get()) || s->op == Ops::GRADIENT;
    below[u.get()] = b;
    if (u->op != Ops::GRADIENT || b) continue;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == u->src[0]; });
    if (it == groups.end()) groups.push_back({u->src[0], {u}});
    else it->second.push_back(u);
  }
  return groups;
}
}  // namespace

UOp expand(UOp root) {
  while (true) {
    auto groups = innermost(root);
    if (groups.empty()) return root;
    // One loss per round: the next one then sees (and differentiates) this one's tapes.
    auto& [loss, nodes] = groups.front();
    std::vector<UOp> targets;
    for (UOp g : nodes) targets.push_back(g->src[1]);
    Namer names(root);
    Expansion ex;
    std::vector<UOp> grads = gradients_of(loss, targets, names, ex);
    for (size_t i = 0; i < nodes.size(); ++i) ex.replace.push_back({nodes[i], grads[i]});
    root = ex.apply(root);
  }
}

}  // namespace ow::grad
