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

// gemv's columns i.. of n, one vector of W lanes at a time (it stays in a register for the whole
// of k), then halves of them down to single columns.
template <class T, int W>
void gemv_tail(long long m, long long i, long long n, const T* s, const T* x, long long stride, T* acc) {
  for (; i + W <= n; i += W) {
    Vec<T, W> a = load<T, W>(acc + i);
    for (long long k = 0; k < m; ++k) a = a + splat<T, W>(s[k]) * load<T, W>(x + k * stride + i);
    store<T, W>(acc + i, a);
  }
  if constexpr (W > 1) gemv_tail<T, W / 2>(m, i, n, s, x, stride, acc);
}

// The k loop inside: a block of 4 vectors of acc stays in registers for the whole of k instead of
// a store and a load per k (the latency chain of a 16-wide matvec). Each element still folds
// k = 0, 1, ... in turn, one rounded product and one rounded sum a step.
template <class T, int W>
void gemv(long long m, long long n, const T* s, const T* x, long long stride, T* acc) {
  long long i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    Vec<T, W> a0 = load<T, W>(acc + i), a1 = load<T, W>(acc + i + W), a2 = load<T, W>(acc + i + 2 * W), a3 = load<T, W>(acc + i + 3 * W);
    for (long long k = 0; k < m; ++k) {
      Vec<T, W> sv = splat<T, W>(s[k]);
      const T* row = x + k * stride + i;
      a0 = a0 + sv * load<T, W>(row);
      a1 = a1 + sv * load<T, W>(row + W);
      a2 = a2 + sv * load<T, W>(row + 2 * W);
      a3 = a3 + sv * load<T, W>(row + 3 * W);
    }
    store<T, W>(acc + i, a0);
    store<T, W>(acc + i + W, a1);
    store<T, W>(acc + i + 2 * W, a2);
    store<T, W>(acc + i + 3 * W, a3);
  }
  gemv_tail<T, W>(m, i, n, s, x, stride, acc);
}

constexpr int kF32 = OW_VECTOR_BYTES / 4, kF64 = OW_VECTOR_BYTES / 8;

void axpy_f32(long long n, float s, const float* x, float* acc) { axpy<float, kF32>(n, s, x, acc); }
void axpy_f64(long long n, double s, const double* x, double* acc) { axpy<double, kF64>(n, s, x, acc); }
void gemv_f32(long long m, long long n, const float* s, const float* x, long long stride, float* acc) { gemv<float, kF32>(m, n, s, x, stride, acc); }
void gemv_f64(long long m, long long n, const double* s, const double* x, long long stride, double* acc) { gemv<double, kF64>(m, n, s, x, stride, acc); }

}  // namespace

namespace detail {
extern const VectorLoops OW_CAT(vector_loops_, OW_VECTOR_ISA);
const VectorLoops OW_CAT(vector_loops_, OW_VECTOR_ISA){OW_VECTOR_ISA_NAME, axpy_f32, axpy_f64, gemv_f32, gemv_f64};
}  // namespace detail

}  // namespace ow::backend
