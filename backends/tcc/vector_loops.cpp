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

}  // namespace

extern "C" {
void ow_axpy_f32(long long n, float s, const float* x, float* acc) { axpy<float, 4>(n, s, x, acc); }
void ow_axpy_f64(long long n, double s, const double* x, double* acc) { axpy<double, 2>(n, s, x, acc); }
}
