// The reference cases: tinygrad's outerworld tests written with outerworld's Tensor API, one
// graph per golden directory. Inputs are named buffers (Tensor::empty) carrying the names of
// the golden in_*.npy files; the SINK names the outputs after the out_*.npy files.
#pragma once
#include <string>
#include <vector>

#include "uop/uop.h"

namespace ow::cases {

std::vector<std::string> names();
UOp build(const std::string& name);  // throws ow::Error for an unknown name

}  // namespace ow::cases
