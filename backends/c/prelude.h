// The C source every rendered kernel starts with (prelude.cpp).
#pragma once

namespace ow::backend::detail {

extern const char* const kPrelude;          // every unit
extern const char* const kPreludeNarrow;    // PreludeParts::narrow: float16, bfloat16, the fp8s
extern const char* const kPreludeThreefry;  // PreludeParts::threefry
extern const char* const kPreludeCc;   // cc's: vector types, transposes, pthreads
extern const char* const kPreludeTcc;  // tcc's: the vectorized loops it calls

}  // namespace ow::backend::detail
