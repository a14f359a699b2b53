// tinygrad's nn, as far as the outerworld tests use it: layers whose weights follow tinygrad's
// default init, and an SGD whose step is graph nodes (schedule_step), so forward, backward and
// update of every step can sit inside one loop.
#pragma once
#include <optional>
#include <vector>

#include "tensor/tensor.h"

namespace ow::nn {

struct Linear {
  Tensor weight;
  std::optional<Tensor> bias;
  Linear(int64_t in, int64_t out, bool bias = true);
  Tensor operator()(const Tensor& x) const { return x.linear(weight.T(), bias); }
};

struct Conv2d {
  Tensor weight;
  std::optional<Tensor> bias;
  Conv2d(int64_t in, int64_t out, int64_t kernel, bool bias = true);
  Tensor operator()(const Tensor& x) const { return x.conv2d(weight, bias); }
};

// The parameters of layers (tinygrad's nn.state.get_parameters), weights before biases.
std::vector<Tensor> get_parameters(const std::vector<Linear>& layers);

// Plain SGD. As in tinygrad, its parameters require grad from the moment it is made.
struct SGD {
  std::vector<Tensor> params;
  double lr, weight_decay;
  SGD(std::vector<Tensor> p, double lr, double weight_decay = 0.0);
  void zero_grad();
  // Every parameter assigned p - lr * (grad + weight_decay * p), not realized: the returned
  // tensors (the parameters themselves) are realized with whatever else, e.g. the loss
  // (`loss.realize(opt.schedule_step())`), or under a range in one loop.
  std::vector<Tensor> schedule_step();
  void step();  // schedule_step, realized now
};

}  // namespace ow::nn
