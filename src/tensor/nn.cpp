#include "tensor/nn.h"

#include <cmath>

#include "uop/error.h"

namespace ow::nn {

namespace {
// tinygrad's default init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases.
Tensor init(const std::vector<int64_t>& shape, int64_t fan_in) {
  float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
  return Tensor::uniform(shape, -bound, bound);
}
}  // namespace

Linear::Linear(int64_t in, int64_t out, bool with_bias) : weight(init({out, in}, in)) {
  if (with_bias) bias = init({out}, in);
}

Conv2d::Conv2d(int64_t in, int64_t out, int64_t k, bool with_bias) : weight(init({out, in, k, k}, in * k * k)) {
  if (with_bias) bias = init({out}, in * k * k);
}

std::vector<Tensor> get_parameters(const std::vector<Linear>& layers) {
  std::vector<Tensor> out;
  for (const Linear& l : layers) {
    out.push_back(l.weight);
    if (l.bias) out.push_back(*l.bias);
  }
  return out;
}

SGD::SGD(std::vector<Tensor> p, double lr_, double wd) : params(std::move(p)), lr(lr_), weight_decay(wd) {
  for (Tensor& t : params) t.requires_grad(true);
}

void SGD::zero_grad() {
  for (Tensor& p : params) p.set_grad(std::nullopt);
}

std::vector<Tensor> SGD::schedule_step() {
  for (Tensor& p : params) {
    if (!p.grad()) throw Error("SGD step: a parameter has no gradient (call backward() on a loss that depends on it first)");
    Tensor g = *p.grad();
    if (weight_decay != 0.0) g = g + p.detach() * weight_decay;
    p.assign((p.detach() - g * lr).cast(p.dtype()));
  }
  return params;
}

void SGD::step() {
  std::vector<Tensor> ps = schedule_step();
  std::vector<Tensor*> all;
  for (Tensor& p : ps) all.push_back(&p);
  Tensor::realize_all(all);
}

}  // namespace ow::nn
