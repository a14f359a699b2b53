// Gradients from the Tensor API: GRADIENT nodes (SEMANTICS S9), expanded when they are realized,
// so each differentiates the whole graph it is realized in, effects included.
#include <algorithm>
#include <unordered_set>

#include "tensor/state.h"
#include "uop/error.h"
#include "uop/shape.h"

namespace ow {

using namespace tensor_detail;

Tensor& Tensor::requires_grad(bool on) {
  s_->requires_grad = on;
  return *this;
}
bool Tensor::requires_grad_enabled() const { return s_->requires_grad; }
std::optional<Tensor> Tensor::grad() const { return s_->grad; }
void Tensor::set_grad(std::optional<Tensor> g) { s_->grad = std::move(g); }

// As in tinygrad: the gradient of every tensor that requires grad and that the loss reaches is
// added to its .grad.
void Tensor::backward() {
  for (UOp d : shape())
    if (!is_one(d)) throw Error("backward() needs a tensor with one element, got shape " + render_shape(shape()));
  std::unordered_set<const UOpNode*> in_graph;
  for (UOp n : toposort(uop())) in_graph.insert(n.get());
  for (auto& st : live_tensors()) {
    if (!st->requires_grad || !in_graph.count(st->uop.get())) continue;
    Tensor g(UOp::make(Ops::GRADIENT, st->uop->dtype, {uop(), st->uop}));
    st->grad = st->grad ? *st->grad + g : g;
  }
}

std::vector<Tensor> Tensor::gradient(const std::vector<Tensor>& targets) const {
  std::vector<Tensor> out;
  for (const Tensor& t : targets) out.push_back(Tensor(UOp::make(Ops::GRADIENT, t.dtype(), {uop(), t.uop()})));
  return out;
}

}  // namespace ow
