// Internal to src/tensor: what the Tensor files share.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "tensor/tensor.h"

namespace ow {
struct Tensor::State {
  UOp uop;
  bool requires_grad = false;
  std::optional<Tensor> grad;
};
}  // namespace ow

namespace ow::tensor_detail {

// Builds a node and turns an impossible shape into an error naming the op.
UOp checked(UOp u);
bool is_one(UOp d);
std::string fresh_name();  // t0, t1, ...: names of realized values in buffer_store()

// A named buffer of buffer_store() holding `data`, seen with `shape`.
UOp store_data(const std::string& name, DType dtype, const std::vector<int64_t>& shape, interp::StoragePtr data, interp::StoragePtr poison);

// Every Tensor's state is known (weakly), so a realize can make every tensor that names an
// effect it ran the memory that effect wrote (tinygrad's "becomes").
std::shared_ptr<Tensor::State> new_state(UOp u);
std::vector<std::shared_ptr<Tensor::State>> live_tensors();

}  // namespace ow::tensor_detail
