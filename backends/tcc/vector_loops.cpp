// See vector_loops.h. Compiled once per width (backends/meson.build): OW_VECTOR_BYTES is the
// widest vector, OW_VECTOR_ISA the build's name, and the flags (-mavx2, -mavx512f) let GCC's
// vector extensions (lane-wise IEEE operations) use those registers. Meson compiles every build
// with -ffp-contract=off, so s * x[i] + acc[i] is never fused into one rounding, even where the
// ISA has FMA.
#include "vector_loops.h"

#define OW_CAT2(a, b) a##b
#define OW_CAT(a, b) OW_CAT2(a, b)

namespace ow::backend {

namespace {

template <class T, int W>
using Vec __attribute__((vector_size(W * sizeof(T)))) = T;

template <class T, int W>
Vec<T, W> load(const T* p) {
  Vec<T, W> v;
  __builtin_memcpy(&v, p, sizeof v);  // unaligned: one movups
  return v;
}

template <class T, int W>
void store(T* p, Vec<T, W> v) {
  __builtin_memcpy(p, &v, sizeof v);
}

template <class T, int W>
Vec<T, W> splat(T x) {
  Vec<T, W> r;
  for (int l = 0; l < W; ++l) r[l] = x;
  return r;
}

// The axpy of elements i.. of n: vectors of W lanes, then halves of them down to single elements.
template <class T, int W>
void axpy_tail(long long i, long long n, T s, const T* x, T* acc) {
  if constexpr (W == 1) {
    for (; i < n; ++i) acc[i] = acc[i] + s * x[i];
  } else {
    for (; i + W <= n; i += W) store<T, W>(acc + i, load<T, W>(acc + i) + splat<T, W>(s) * load<T, W>(x + i));
    axpy_tail<T, W / 2>(i, n, s, x, acc);
  }
}

// Two vectors of W lanes per step (independent chains), then the tail.
template <class T, int W>
void axpy(long long n, T s, const T* x, T* acc) {
  Vec<T, W> sv = splat<T, W>(s);
  long long i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    Vec<T, W> a0 = load<T, W>(acc + i) + sv * load<T, W>(x + i), a1 = load<T, W>(acc + i + W) + sv * load<T, W>(x + i + W);
    store<T, W>(acc + i, a0);
    store<T, W>(acc + i + W, a1);
  }
  axpy_tail<T, W>(i, n, s, x, acc);
}

// Rows R of gemv from column i on, V vectors of W lanes per row at a time: every accumulator
// stays in a register while k runs; each row still folds k = 0, 1, ... in turn, one rounded
// product and one rounded sum a step. Then the columns left, by halves of W down to single ones.
template <class T, int W, int R, int V>
void gemv_rows(long long m, long long i, long long n, const T* s, const T* x, long long stride, T* const* acc) {
  for (; i + V * W <= n; i += V * W) {
    Vec<T, W> a[R][V];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
      for (int v = 0; v < V; ++v) a[r][v] = load<T, W>(acc[r] + i + v * W);
    for (long long k = 0; k < m; ++k) {
      const T* row = x + k * stride + i;
      Vec<T, W> b[V];
#pragma GCC unroll 16
      for (int v = 0; v < V; ++v) b[v] = load<T, W>(row + v * W);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        Vec<T, W> sv = splat<T, W>(s[r * m + k]);
#pragma GCC unroll 16
        for (int v = 0; v < V; ++v) a[r][v] = a[r][v] + sv * b[v];
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
      for (int v = 0; v < V; ++v) store<T, W>(acc[r] + i + v * W, a[r][v]);
  }
  if constexpr (V > 1) gemv_rows<T, W, R, 1>(m, i, n, s, x, stride, acc);
  else if constexpr (W > 1) gemv_rows<T, W / 2, R, 1>(m, i, n, s, x, stride, acc);
}

// Up to 4 rows at a time: one row keeps 4 vectors of accumulators (4 independent chains of
// additions), more rows 2 vectors each (8 accumulators and 2 vectors of x in SSE's and AVX2's 16
// registers) or 4 with AVX-512's 32 registers (16 and 4).
constexpr int kRowVectors = OW_VECTOR_BYTES == 64 ? 4 : 2;

template <class T, int W>
void gemv(long long rows, long long m, long long n, const T* s, const T* x, long long stride, T* const* acc) {
  for (long long r = 0; r < rows; r += 4, s += 4 * m, acc += 4) {
    switch (rows - r) {
      case 1: gemv_rows<T, W, 1, 4>(m, 0, n, s, x, stride, acc); break;
      case 2: gemv_rows<T, W, 2, kRowVectors>(m, 0, n, s, x, stride, acc); break;
      case 3: gemv_rows<T, W, 3, kRowVectors>(m, 0, n, s, x, stride, acc); break;
      default: gemv_rows<T, W, 4, kRowVectors>(m, 0, n, s, x, stride, acc); break;
    }
  }
}

// Three rounds of pairwise interleaves of 8-lane rows (the same moves as the cc prelude's).
// __builtin_shufflevector (GCC 12 and clang) takes its lanes as constants, hence the macros.
#define OW_LO1(x, y) __builtin_shufflevector(x, y, 0, 8, 1, 9, 4, 12, 5, 13)
#define OW_HI1(x, y) __builtin_shufflevector(x, y, 2, 10, 3, 11, 6, 14, 7, 15)
#define OW_LO2(x, y) __builtin_shufflevector(x, y, 0, 1, 8, 9, 4, 5, 12, 13)
#define OW_HI2(x, y) __builtin_shufflevector(x, y, 2, 3, 10, 11, 6, 7, 14, 15)
#define OW_LO3(x, y) __builtin_shufflevector(x, y, 0, 1, 2, 3, 8, 9, 10, 11)
#define OW_HI3(x, y) __builtin_shufflevector(x, y, 4, 5, 6, 7, 12, 13, 14, 15)
void transpose8_u32(const unsigned* s, long long ss, unsigned* d, long long ds) {
  typedef unsigned u32x8 __attribute__((vector_size(32)));
  u32x8 r[8], t[8];
  for (int k = 0; k < 8; ++k) __builtin_memcpy(&r[k], s + k * ss, 32);
  t[0] = OW_LO1(r[0], r[1]), t[1] = OW_HI1(r[0], r[1]), t[2] = OW_LO1(r[2], r[3]), t[3] = OW_HI1(r[2], r[3]);
  t[4] = OW_LO1(r[4], r[5]), t[5] = OW_HI1(r[4], r[5]), t[6] = OW_LO1(r[6], r[7]), t[7] = OW_HI1(r[6], r[7]);
  r[0] = OW_LO2(t[0], t[2]), r[1] = OW_HI2(t[0], t[2]), r[2] = OW_LO2(t[1], t[3]), r[3] = OW_HI2(t[1], t[3]);
  r[4] = OW_LO2(t[4], t[6]), r[5] = OW_HI2(t[4], t[6]), r[6] = OW_LO2(t[5], t[7]), r[7] = OW_HI2(t[5], t[7]);
  t[0] = OW_LO3(r[0], r[4]), t[4] = OW_HI3(r[0], r[4]), t[1] = OW_LO3(r[1], r[5]), t[5] = OW_HI3(r[1], r[5]);
  t[2] = OW_LO3(r[2], r[6]), t[6] = OW_HI3(r[2], r[6]), t[3] = OW_LO3(r[3], r[7]), t[7] = OW_HI3(r[3], r[7]);
  for (int k = 0; k < 8; ++k) __builtin_memcpy(d + k * ds, &t[k], 32);
}
#undef OW_LO1
#undef OW_HI1
#undef OW_LO2
#undef OW_HI2
#undef OW_LO3
#undef OW_HI3

constexpr int kF32 = OW_VECTOR_BYTES / 4, kF64 = OW_VECTOR_BYTES / 8;

void axpy_f32(long long n, float s, const float* x, float* acc) { axpy<float, kF32>(n, s, x, acc); }
void axpy_f64(long long n, double s, const double* x, double* acc) { axpy<double, kF64>(n, s, x, acc); }
void gemv_f32(long long rows, long long m, long long n, const float* s, const float* x, long long stride, float* const* acc) {
  gemv<float, kF32>(rows, m, n, s, x, stride, acc);
}
void gemv_f64(long long rows, long long m, long long n, const double* s, const double* x, long long stride, double* const* acc) {
  gemv<double, kF64>(rows, m, n, s, x, stride, acc);
}

}  // namespace

namespace detail {
extern const VectorLoops OW_CAT(vector_loops_, OW_VECTOR_ISA);
const VectorLoops OW_CAT(vector_loops_, OW_VECTOR_ISA){OW_VECTOR_ISA_NAME, axpy_f32, axpy_f64, gemv_f32, gemv_f64, transpose8_u32};
}  // namespace detail

}  // namespace ow::backend
