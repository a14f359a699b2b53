// Loops the tcc tier calls instead of compiling them itself. TCC keeps every value on the stack
// and never vectorizes: the innermost loop of a matmul-like reduction, rendered by TCC, spends
// about 1.5 cycles per multiply-add. These are compiled ahead of time by the project's compiler
// (vectorized, no FMA contraction) and handed to every TCC state with tcc_add_symbol. The C
// renderer calls them only in the C it writes for tcc (RenderOptions::target); cc compiles the plain loops.
//
// Each computes exactly what the scalar loop computes: every element rounds its product, then its
// sum, in the order the loop would (elements are independent, so their order does not matter).
#pragma once

extern "C" {
// acc[i] = acc[i] + s * x[i] for 0 <= i < n.
void ow_axpy_f32(long long n, float s, const float* x, float* acc);
void ow_axpy_f64(long long n, double s, const double* x, double* acc);
// For k = 0, 1, ..., m - 1 in turn, the axpy above with s[k] and x + k * stride: a matrix-vector
// product's whole interchanged loop in one call (a scan step's, where 16 calls of 16 elements
// each cost more in calling than in arithmetic).
void ow_gemv_f32(long long m, long long n, const float* s, const float* x, long long stride, float* acc);
void ow_gemv_f64(long long m, long long n, const double* s, const double* x, long long stride, double* acc);
}
