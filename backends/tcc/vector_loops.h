// Loops the tcc tier calls instead of compiling them itself. TCC keeps every value on the stack
// and never vectorizes: the innermost loop of a matmul-like reduction, rendered by TCC, spends
// about 1.5 cycles per multiply-add. These are compiled ahead of time by the project's compiler
// (vectorized, no FMA contraction), once per vector width the x86-64 line has (SSE2's 16 bytes,
// AVX2's 32, AVX-512's 64), and the widest the running CPU supports is handed to every TCC state
// with tcc_add_symbol. The C renderer calls them only in the C it writes for tcc
// (RenderOptions::target); cc compiles the plain loops.
//
// Each computes exactly what the scalar loop computes, in every width: every element rounds its
// product, then its sum, in the order the loop would (elements are independent, so their order
// does not matter).
#pragma once
#include <vector>

namespace ow::backend {

struct VectorLoops {
  const char* isa;  // "sse2", "avx2" or "avx512"
  // acc[i] = acc[i] + s * x[i] for 0 <= i < n.
  void (*axpy_f32)(long long n, float s, const float* x, float* acc);
  void (*axpy_f64)(long long n, double s, const double* x, double* acc);
  // For each row r < rows and k = 0, 1, ..., m - 1 in turn, the axpy above into acc[r] with
  // s[r*m + k] and x + k * stride: a matrix-vector product's whole interchanged loop in one call
  // (a scan step's, where 16 calls of 16 elements each cost more in calling than in arithmetic),
  // or a block of rows of a matrix product's, each vector of x loaded once for all rows.
  void (*gemv_f32)(long long rows, long long m, long long n, const float* s, const float* x, long long stride, float* const* acc);
  void (*gemv_f64)(long long rows, long long m, long long n, const double* s, const double* x, long long stride, double* const* acc);
  // The 8 rows of 8 4-byte elements s + k*ss become the 8 columns of d + k*ds, moved as bits
  // (an END marked transpose8 by the kernel-opt pass transposes; cc's C has its own in its prelude).
  void (*transpose8_u32)(const unsigned* s, long long ss, unsigned* d, long long ds);
};

// The builds this CPU runs, narrowest first (sse2 always: the x86-64 baseline).
std::vector<const VectorLoops*> supported_vector_loops();

// The loops tcc's kernels call: the widest supported build, or the one OW_VECTOR_ISA names (sse2,
// avx2, avx512; one this CPU does not support is an ow::Error). Chosen once per process.
const VectorLoops& vector_loops();

}  // namespace ow::backend
