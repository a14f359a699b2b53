// The reference cases: tinygrad's outerworld tests written with outerworld's Tensor API, one
// graph per golden directory. Inputs are named buffers (Tensor::empty) carrying the names of
// the golden in_*.npy files; the SINK names the outputs after the out_*.npy files.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace ow::cases {

std::vector<std::string> names();
UOp build(const std::string& name);  // throws ow::Error for an unknown name

// The seed's scan (case scan_with_assign, and scan_big_SxD) with n steps of width d:
// out[k] = vec @ M0 @ ... @ Mk, as the assign of a range-`axis` REDUCE. Benchmarks and tests
// build it at other sizes.
UOp scan_with_assign(int64_t n, int64_t d, AxisType axis = AxisType::OUTER);

// c = a * b + 1 on n float32 elements, as .uop text: one elementwise kernel (ow bench --micro,
// backend::Program's tests).
std::string axpb_text(int64_t n);

}  // namespace ow::cases
