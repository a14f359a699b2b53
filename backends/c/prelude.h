// The C source every rendered kernel starts with (prelude.cpp).
#pragma once

namespace ow::backend::detail {

extern const char* const kPrelude;

}  // namespace ow::backend::detail
