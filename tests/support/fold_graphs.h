// Graph texts shared by the compiled-path tests (test_compiled.cpp, test_nested_loops.cpp).
#pragma once
#include <string>

namespace ow::test {

// A fold over r1 (2 values) and r2 (3 values) whose effect c += x[r] depends on one of them:
// `r` is m2 (the innermost: the effect runs in all 6 iterations) or m1 (it runs only when r1
// changes: at 2 of them).
inline std::string effect_in_2d_fold(const std::string& r) {
  return R"(%0 = BUFFER float32 () ("c", 1)
%1 = RESHAPE float32 (%0)
%2 = CONST index () 2
%3 = RANGE index (%2) (-1, AxisType.OUTER)
%4 = CONST index () 3
%5 = RANGE index (%4) (-2, AxisType.OUTER)
%6 = BUFFER float32 () ("x", 3)
%7 = RESHAPE float32 (%6, %4)
%8 = CONST index () 1
%9 = ADD index ()" + r + R"(, %8)
%10 = SHRINK float32 (%7, )" + r + R"(, %9)
%11 = RESHAPE float32 (%10)
%12 = ADD float32 (%1, %11)
%13 = STORE void (%1, %12)
%14 = AFTER float32 (%1, %13)
%15 = REDUCE float32 (%14, %3, %5) Ops.ADD
%16 = SINK void (%15) ("sum",)
)";
}

}  // namespace ow::test
