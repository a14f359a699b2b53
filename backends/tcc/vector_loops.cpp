// See vector_loops.h. GCC's vector extensions (lane-wise IEEE operations, SSE2 on x86-64,
// the target's SIMD elsewhere) keep this portable; meson compiles it with -ffp-contract=off so
// s * x[i] + acc[i] is never fused into one rounding.
#include "vector_loops.h"

namespace {

// One axpy: two vectors of W lanes per step, then the remainder one element at a time.
template <class T, int W>
void axpy(long long n, T s, const T* x, T* acc) {
  typedef T vec __attribute__((vector_size(W * sizeof(T))));
  auto load = [](const T* p) {
    vec v;
    __builtin_memcpy(&v, p, sizeof v);  // unaligned: one movups
    return v;
  };
  vec sv;
  for (int l = 0; l < W; ++l) sv[l] = s;
  long long i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    vec a0 = load(acc + i) + sv * load(x + i), a1 = load(acc + i + W) + sv * load(x + i + W);
    __builtin_memcpy(acc + i, &a0, sizeof a0);
    __builtin_memcpy(acc + i + W, &a1, sizeof a1);
  }
  for (; i < n; ++i) acc[i] = acc[i] + s * x[i];
}

// The k loop inside: a block of 4 (then 1) vectors of acc stays in registers for the whole of k
// instead of a store and a load per k (the latency chain of a 16-wide matvec). Each element still
// folds k = 0, 1, ... in turn, one rounded product and one rounded sum a step.
template <class T, int W>
void gemv(long long m, long long n, const T* s, const T* x, long long stride, T* acc) {
  typedef T vec __attribute__((vector_size(W * sizeof(T))));
  auto load = [](const T* p) {
    vec v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  };
  auto splat = [](T v) {
    vec r;
    for (int l = 0; l < W; ++l) r[l] = v;
    return r;
  };
  long long i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    vec a0 = load(acc + i), a1 = load(acc + i + W), a2 = load(acc + i + 2 * W), a3 = load(acc + i + 3 * W);  // named: kept in registers
    for (long long k = 0; k < m; ++k) {
      vec sv = splat(s[k]);
      const T* row = x + k * stride + i;
      a0 = a0 + sv * load(row);
      a1 = a1 + sv * load(row + W);
      a2 = a2 + sv * load(row + 2 * W);
      a3 = a3 + sv * load(row + 3 * W);
    }
    __builtin_memcpy(acc + i, &a0, sizeof a0);
    __builtin_memcpy(acc + i + W, &a1, sizeof a1);
    __builtin_memcpy(acc + i + 2 * W, &a2, sizeof a2);
    __builtin_memcpy(acc + i + 3 * W, &a3, sizeof a3);
  }
  for (; i + W <= n; i += W) {
    vec a = load(acc + i);
    for (long long k = 0; k < m; ++k) a = a + splat(s[k]) * load(x + k * stride + i);
    __builtin_memcpy(acc + i, &a, sizeof a);
  }
  for (; i < n; ++i) {
    T a = acc[i];
    for (long long k = 0; k < m; ++k) a = a + s[k] * x[k * stride + i];
    acc[i] = a;
  }
}

}  // namespace

extern "C" {
void ow_axpy_f32(long long n, float s, const float* x, float* acc) { axpy<float, 4>(n, s, x, acc); }
void ow_axpy_f64(long long n, double s, const double* x, double* acc) { axpy<double, 2>(n, s, x, acc); }
void ow_gemv_f32(long long m, long long n, const float* s, const float* x, long long stride, float* acc) { gemv<float, 4>(m, n, s, x, stride, acc); }
void ow_gemv_f64(long long m, long long n, const double* s, const double* x, long long stride, double* acc) { gemv<double, 2>(m, n, s, x, stride, acc); }
}
