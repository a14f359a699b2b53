// Shape inference. Shapes are symbolic: each dimension is a simplified index-typed UOp (a CONST
// when static, or an expression over ranges and variables such as `a` in expand(a, 10)).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace ow {

// Computes a node's ShapeInfo from its sources (called once, while the node is built).
// Never throws for bad input: an impossible shape comes back as Kind::Invalid with the reason.
ShapeInfo infer_shape(const UOpNode& n);

// Helpers for clients that need concrete shapes. A RANGE dimension counts as its extent.
bool is_static(const std::vector<UOp>& dims);
std::optional<std::vector<int64_t>> static_dims(const std::vector<UOp>& dims);
std::string render_shape(const std::vector<UOp>& dims);  // "(3, rm1, 10)"
std::string shape_text(const std::vector<int64_t>& dims);  // "(3, 1, 10)", "(10,)", "()", as numpy writes them

// An unshaped value seen with shape `dims`: EXPAND(RESHAPE(value, 1, ..., 1), dims...).
UOp broadcast(UOp value, const std::vector<UOp>& dims);

// The BUFFER a view is of (through movement ops and AFTERs): what a STORE/ASSIGN target writes or
// a read reads. Null if the chain ends anywhere else.
UOp base_buffer(UOp view);

// Largest element count we accept for one shape or buffer (2^32): bigger is an error, not an OOM.
inline constexpr int64_t kMaxElements = int64_t{1} << 32;
// A view no one stores (EXPAND, RESHAPE, PAD, SHRINK of one: tinygrad's arange window has
// (n+1)(2n-1) elements) may be larger, up to this: index arithmetic on it stays far from 2^63.
inline constexpr int64_t kMaxVirtualElements = int64_t{1} << 56;

}  // namespace ow
