// The prelude of every rendered kernel (render.cpp): declarations of the C library functions a
// kernel may call and the helpers that give C the interpreter's meaning (src/interp/dispatch.h,
// scalar_ops.h): NaN-propagating MAX, saturating float->int casts, IDIV/MOD that wrap, bitcasts
// through unions (no strict-aliasing UB); the narrow floats' conversions and THREEFRY, only in a
// unit whose kernels have such nodes (a compile of tcc spends half its time on the narrow floats'
// functions); then what only one compiler's kernels use. No headers: tcc compiles it in isolation.
#include "prelude.h"

namespace ow::backend::detail {

const char* const kPrelude = R"C(/* outerworld kernel: no headers, the C library functions it may call are declared here */
float exp2f(float); double exp2(double); float log2f(float); double log2(double);
float sinf(float); double sin(double); float sqrtf(float); double sqrt(double);
float powf(float, float); double pow(double, double); float truncf(float); double trunc(double);
float fmodf(float, float); double fmod(double, double);
static inline float ow_f32_bits(unsigned int b) { union { unsigned int u; float f; } x; x.u = b; return x.f; }
static inline double ow_f64_bits(unsigned long long b) { union { unsigned long long u; double f; } x; x.u = b; return x.f; }
static inline int ow_f32_as_i32(float v) { union { float f; int i; } x; x.f = v; return x.i; }
static inline long long ow_f64_as_i64(double v) { union { double f; long long i; } x; x.f = v; return x.i; }
/* MAX: NaN if either operand is NaN, else a > b ? a : b (so max(+0, -0) is -0) */
static inline float ow_max_f32(float a, float b) { if (a != a || b != b) return ow_f32_bits(0x7fc00000u); return a > b ? a : b; }
static inline double ow_max_f64(double a, double b) { if (a != a || b != b) return ow_f64_bits(0x7ff8000000000000ull); return a > b ? a : b; }
static inline int ow_max_i32(int a, int b) { return a > b ? a : b; }
static inline long long ow_max_i64(long long a, long long b) { return a > b ? a : b; }
static inline unsigned char ow_max_u8(unsigned char a, unsigned char b) { return a > b ? a : b; }
/* float -> int: truncate, saturate at the limits, NaN -> 0 */
static inline int ow_f32_to_i32(float x) { if (x != x) return 0; if (x <= (float)(-2147483647 - 1)) return -2147483647 - 1; if (x >= (float)2147483647) return 2147483647; return (int)x; }
static inline int ow_f64_to_i32(double x) { if (x != x) return 0; if (x <= (double)(-2147483647 - 1)) return -2147483647 - 1; if (x >= (double)2147483647) return 2147483647; return (int)x; }
static inline long long ow_f32_to_i64(float x) { if (x != x) return 0; if (x <= (float)(-9223372036854775807LL - 1)) return -9223372036854775807LL - 1; if (x >= (float)9223372036854775807LL) return 9223372036854775807LL; return (long long)x; }
static inline long long ow_f64_to_i64(double x) { if (x != x) return 0; if (x <= (double)(-9223372036854775807LL - 1)) return -9223372036854775807LL - 1; if (x >= (double)9223372036854775807LL) return 9223372036854775807LL; return (long long)x; }
/* IDIV/MOD by a nonzero divisor (zero is checked before): MIN / -1 wraps, MIN % -1 is 0 */
static inline int ow_idiv_i32(int a, int b) { return b == -1 ? (int)-(unsigned)a : a / b; }
static inline long long ow_idiv_i64(long long a, long long b) { return b == -1 ? (long long)-(unsigned long long)a : a / b; }
static inline int ow_mod_i32(int a, int b) { return b == -1 ? 0 : a % b; }
static inline long long ow_mod_i64(long long a, long long b) { return b == -1 ? 0 : a % b; }
/* integer POW (exponent >= 0, checked before): a^b modulo 2^bits by square and multiply, in
   unsigned arithmetic (wraps by definition); 0^0 is 1. The 8- and 16-bit types use the 32-bit
   helpers and are cast back (the low bits agree). */
static inline unsigned long long ow_ipow_u64(unsigned long long a, unsigned long long b) { unsigned long long r = 1; for (; b; b >>= 1, a *= a) if (b & 1) r *= a; return r; }
static inline unsigned int ow_ipow_u32(unsigned int a, unsigned int b) { return (unsigned int)ow_ipow_u64(a, b); }
static inline int ow_ipow_i32(int a, int b) { return (int)(unsigned int)ow_ipow_u64((unsigned long long)(long long)a, (unsigned long long)b); }
static inline long long ow_ipow_i64(long long a, long long b) { return (long long)ow_ipow_u64((unsigned long long)a, (unsigned long long)b); }
/* unsigned: MAX; float -> unsigned saturates at 0 and the max, NaN -> 0. The conversions go
   through signed 64-bit ones (a value >= 2^63 is shifted down first), which every compiler,
   tcc included, does exactly; x - 2^63 is exact for x in [2^63, 2^64). */
static inline unsigned int ow_max_u32(unsigned int a, unsigned int b) { return a > b ? a : b; }
static inline unsigned long long ow_max_u64(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
static inline unsigned long long ow_f64_to_u64(double x) {
  if (x != x || x <= 0.0) return 0;
  if (x >= 18446744073709551616.0) return 18446744073709551615ull;
  if (x >= 9223372036854775808.0) return (unsigned long long)(long long)(x - 9223372036854775808.0) + 9223372036854775808ull;
  return (unsigned long long)(long long)x;
}
static inline unsigned long long ow_f32_to_u64(float x) { return ow_f64_to_u64((double)x); }
static inline unsigned int ow_f64_to_u32(double x) { if (x != x || x <= 0.0) return 0; if (x >= 4294967296.0) return 4294967295u; return (unsigned int)(long long)x; }
static inline unsigned int ow_f32_to_u32(float x) { return ow_f64_to_u32((double)x); }
/* unsigned -> float, rounded once: below 2^63 the signed conversion; above, halve keeping the
   lost bit as a sticky bit (so ties still round to even) and double the exact result. */
static inline double ow_u64_to_f64(unsigned long long x) { if (!(x >> 63)) return (double)(long long)x; return (double)(long long)((x >> 1) | (x & 1)) * 2.0; }
static inline float ow_u64_to_f32(unsigned long long x) { if (!(x >> 63)) return (float)(long long)x; return (float)(long long)((x >> 1) | (x & 1)) * 2.0f; }
static inline double ow_u32_to_f64(unsigned int x) { return (double)(long long)x; }
static inline float ow_u32_to_f32(unsigned int x) { return (float)(long long)x; }
static inline unsigned int ow_f32_as_u32(float v) { union { float f; unsigned int u; } x; x.f = v; return x.u; }
static inline unsigned long long ow_f64_as_u64(double v) { union { double f; unsigned long long u; } x; x.f = v; return x.u; }
/* NEG flips the sign bit, also of a NaN (tcc 0.9.27 compiles -x as a subtraction, which keeps a NaN's sign) */
static inline float ow_neg_f32(float x) { return ow_f32_bits(ow_f32_as_u32(x) ^ 0x80000000u); }
static inline double ow_neg_f64(double x) { return ow_f64_bits(ow_f64_as_u64(x) ^ 0x8000000000000000ull); }
/* 8- and 16-bit integers from a float: the saturated 64-bit value clamped to their limits */
static inline long long ow_clamp_i64(long long v, long long lo, long long hi) { return v < lo ? lo : v > hi ? hi : v; }
)C";

const char* const kPreludeNarrow = R"C(/* Narrow floats (float16, bfloat16, fp8e4m3, fp8e5m2) are held as their bits, 1 sign, eb exponent
   and mb mantissa bits (SEMANTICS S2.1, the same rule as src/uop/floats.cpp): an op widens them
   exactly to float32 and rounds its result back; every conversion into one rounds the exact
   value (-1)^neg * m * 2^e once, ties to even. Past the largest finite value: +-inf, or the
   largest finite (sat: the fp8s); fp8e4m3 has no infinities (has_inf 0: only S.1111.111 is NaN).
   A NaN keeps its sign and leading payload bits and becomes quiet. */
static inline unsigned long long ow_shift_round(unsigned long long m, int k) {
  unsigned long long q, rem, half;
  if (k == 0) return m;
  if (k > 64) return 0;
  q = k == 64 ? 0 : m >> k;
  rem = k == 64 ? m : m & ((1ull << k) - 1);
  half = 1ull << (k - 1);
  return (rem > half || (rem == half && (q & 1))) ? q + 1 : q;
}
static unsigned int ow_round_narrow(int neg, unsigned long long m, int e, int eb, int mb, int sat, int has_inf) {
  unsigned int sign = neg ? 1u << (eb + mb) : 0, infb = ((1u << eb) - 1) << mb, bits;
  unsigned int maxb = has_inf ? infb - 1 : (infb | ((1u << mb) - 1)) - 1, over = sign | (sat ? maxb : infb);
  int bias = (1 << (eb - 1)) - 1, emin = 1 - bias, emax = has_inf ? (1 << eb) - 2 - bias : (1 << eb) - 1 - bias;
  int p = mb + 1, top = 63, exponent, quantum, biased;
  unsigned long long s;
  if (m == 0) return sign;
  while (!(m >> top)) top--;
  exponent = top + e;
  if (exponent > emax + 1) return over;
  quantum = (exponent < emin ? emin : exponent) - (p - 1);
  s = quantum >= e ? ow_shift_round(m, quantum - e) : m << (e - quantum);
  if (s >> p) { s >>= 1; quantum++; }
  if (s == 0) return sign;
  biased = (s >> (p - 1)) ? quantum + (p - 1) + bias : 0;
  bits = ((unsigned int)biased << mb) | (unsigned int)(s & ((1ull << mb) - 1));
  if (quantum + (p - 1) > emax || bits > maxb) return over;
  return sign | bits;
}
static unsigned int ow_f64_to_narrow(double x, int eb, int mb, int sat, int has_inf) {
  unsigned long long u = ow_f64_as_u64(x), mant = u & ((1ull << 52) - 1);
  int neg = (int)(u >> 63), biased = (int)((u >> 52) & 0x7ff);
  unsigned int sign = neg ? 1u << (eb + mb) : 0, infb = ((1u << eb) - 1) << mb;
  if (biased == 0x7ff) {
    if (!has_inf) return sign | infb | ((1u << mb) - 1);  /* NaN, also for an infinity */
    if (mant == 0) return sign | infb;
    return sign | infb | (1u << (mb - 1)) | (unsigned int)(mant >> (52 - mb));
  }
  if (biased == 0) return ow_round_narrow(neg, mant, -1074, eb, mb, sat, has_inf);
  return ow_round_narrow(neg, mant | (1ull << 52), biased - 1075, eb, mb, sat, has_inf);
}
static float ow_narrow_to_f32(unsigned int b, int eb, int mb, int has_inf) {
  unsigned int sign = (b >> (eb + mb)) & 1, mant = b & ((1u << mb) - 1), mag = b & ((1u << (eb + mb)) - 1), infb = ((1u << eb) - 1) << mb;
  int bias = (1 << (eb - 1)) - 1, biased = (int)(mag >> mb);
  double v;
  if (has_inf ? mag > infb : mag == (infb | ((1u << mb) - 1))) return ow_f32_bits(sign << 31 | 0x7fc00000u | mant << (23 - mb));
  if (has_inf && mag == infb) return ow_f32_bits(sign << 31 | 0x7f800000u);
  if (biased == 0) v = (double)mant * ow_f64_bits((unsigned long long)(1023 + 1 - bias - mb) << 52);
  else v = (double)(mant | (1u << mb)) * ow_f64_bits((unsigned long long)(1023 + biased - bias - mb) << 52);
  return (float)(sign ? -v : v);
}
#define OW_NARROW(N, T, EB, MB, SAT, INF) \
  static inline float ow_##N##_to_f32(T b) { return ow_narrow_to_f32(b, EB, MB, INF); } \
  static inline T ow_f64_to_##N(double x) { return (T)ow_f64_to_narrow(x, EB, MB, SAT, INF); } \
  static inline T ow_f32_to_##N(float x) { return (T)ow_f64_to_narrow((double)x, EB, MB, SAT, INF); } \
  static inline T ow_u64_to_##N(unsigned long long x) { return (T)ow_round_narrow(0, x, 0, EB, MB, SAT, INF); } \
  static inline T ow_i64_to_##N(long long x) { return (T)ow_round_narrow(x < 0, x < 0 ? 0ull - (unsigned long long)x : (unsigned long long)x, 0, EB, MB, SAT, INF); }
OW_NARROW(f16, unsigned short, 5, 10, 0, 1)
OW_NARROW(bf16, unsigned short, 8, 7, 0, 1)
OW_NARROW(e4m3, unsigned char, 4, 3, 1, 0)
OW_NARROW(e5m2, unsigned char, 5, 2, 1, 1)
#undef OW_NARROW
)C";

const char* const kPreludeThreefry = R"C(/* THREEFRY: Threefry-2x32-20 (Random123) of the counter (x low, x high) under the key (key low,
   key high), packed the same way (src/interp/scalar_ops.h has the same function) */
static inline unsigned long long ow_threefry(unsigned long long x, unsigned long long key) {
  static const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  unsigned int ks[3], x0, x1;
  int r;
  ks[0] = (unsigned int)key; ks[1] = (unsigned int)(key >> 32); ks[2] = ks[0] ^ ks[1] ^ 0x1BD11BDAu;
  x0 = (unsigned int)x + ks[0]; x1 = (unsigned int)(x >> 32) + ks[1];
  for (r = 0; r < 20; r++) {
    x0 += x1;
    x1 = ((x1 << rot[r % 8]) | (x1 >> (32 - rot[r % 8]))) ^ x0;
    if (r % 4 == 3) { unsigned int s = (unsigned int)(r / 4 + 1); x0 += ks[s % 3]; x1 += ks[(s + 1) % 3] + s; }
  }
  return (unsigned long long)x1 << 32 | x0;
}
)C";

const char* const kPreludeCc = R"C(/* cc's register tiles (render: tiles.cpp): GCC vectors of 64 bytes, loaded and stored unaligned */
typedef float ow_vf32 __attribute__((vector_size(64)));
typedef double ow_vf64 __attribute__((vector_size(64)));
static inline ow_vf32 ow_vload_f32(const float* p) { ow_vf32 v; __builtin_memcpy(&v, p, sizeof v); return v; }
static inline ow_vf64 ow_vload_f64(const double* p) { ow_vf64 v; __builtin_memcpy(&v, p, sizeof v); return v; }
static inline void ow_vstore_f32(float* p, ow_vf32 v) { __builtin_memcpy(p, &v, sizeof v); }
static inline void ow_vstore_f64(double* p, ow_vf64 v) { __builtin_memcpy(p, &v, sizeof v); }
static inline ow_vf32 ow_vsplat_f32(float x) { ow_vf32 v; for (int l = 0; l < 16; l++) v[l] = x; return v; }
static inline ow_vf64 ow_vsplat_f64(double x) { ow_vf64 v; for (int l = 0; l < 8; l++) v[l] = x; return v; }
/* cc's transposed copies (render: transposes.cpp): 8 rows of 8 4-byte elements, s + k*ss, become
   the 8 columns of d + k*ds, moved as bits through three rounds of pairwise interleaves */
typedef unsigned int ow_vu32x8 __attribute__((vector_size(32)));
typedef int ow_vi32x8 __attribute__((vector_size(32)));
/* one interleave of rows p and q into rows x and y of o: their lo and hi lanes */
#define OW_PAIR(o, i, x, y, p, q, lo, hi) (o[x] = __builtin_shuffle(i[p], i[q], lo), o[y] = __builtin_shuffle(i[p], i[q], hi))
static inline __attribute__((always_inline)) void ow_transpose8_u32(const unsigned int* s, long long ss, unsigned int* d, long long ds) {
  const ow_vi32x8 lo1 = {0, 8, 1, 9, 4, 12, 5, 13}, hi1 = {2, 10, 3, 11, 6, 14, 7, 15};
  const ow_vi32x8 lo2 = {0, 1, 8, 9, 4, 5, 12, 13}, hi2 = {2, 3, 10, 11, 6, 7, 14, 15};
  const ow_vi32x8 lo3 = {0, 1, 2, 3, 8, 9, 10, 11}, hi3 = {4, 5, 6, 7, 12, 13, 14, 15};
  ow_vu32x8 r[8], t[8];
  __builtin_memcpy(&r[0], s, 32); __builtin_memcpy(&r[1], s + ss, 32); __builtin_memcpy(&r[2], s + 2 * ss, 32); __builtin_memcpy(&r[3], s + 3 * ss, 32);
  __builtin_memcpy(&r[4], s + 4 * ss, 32); __builtin_memcpy(&r[5], s + 5 * ss, 32); __builtin_memcpy(&r[6], s + 6 * ss, 32); __builtin_memcpy(&r[7], s + 7 * ss, 32);
  OW_PAIR(t, r, 0, 1, 0, 1, lo1, hi1); OW_PAIR(t, r, 2, 3, 2, 3, lo1, hi1); OW_PAIR(t, r, 4, 5, 4, 5, lo1, hi1); OW_PAIR(t, r, 6, 7, 6, 7, lo1, hi1);
  OW_PAIR(r, t, 0, 1, 0, 2, lo2, hi2); OW_PAIR(r, t, 2, 3, 1, 3, lo2, hi2); OW_PAIR(r, t, 4, 5, 4, 6, lo2, hi2); OW_PAIR(r, t, 6, 7, 5, 7, lo2, hi2);
  OW_PAIR(t, r, 0, 4, 0, 4, lo3, hi3); OW_PAIR(t, r, 1, 5, 1, 5, lo3, hi3); OW_PAIR(t, r, 2, 6, 2, 6, lo3, hi3); OW_PAIR(t, r, 3, 7, 3, 7, lo3, hi3);
  __builtin_memcpy(d, &t[0], 32); __builtin_memcpy(d + ds, &t[1], 32); __builtin_memcpy(d + 2 * ds, &t[2], 32); __builtin_memcpy(d + 3 * ds, &t[3], 32);
  __builtin_memcpy(d + 4 * ds, &t[4], 32); __builtin_memcpy(d + 5 * ds, &t[5], 32); __builtin_memcpy(d + 6 * ds, &t[6], 32); __builtin_memcpy(d + 7 * ds, &t[7], 32);
}
#undef OW_PAIR
/* cc's two-thread kernels (render: parallel.cpp); pthread_t is an unsigned long in glibc */
typedef unsigned long ow_pthread_t;
int pthread_create(ow_pthread_t*, const void*, void* (*)(void*), void*);
int pthread_join(ow_pthread_t, void**);
)C";

const char* const kPreludeTcc = R"C(/* vectorized loops handed to TCC (backends/tcc/vector_loops.h): acc[i] = acc[i] + s * x[i] */
void ow_axpy_f32(long long n, float s, const float* x, float* acc);
void ow_axpy_f64(long long n, double s, const double* x, double* acc);
void ow_gemv_f32(long long rows, long long m, long long n, const float* s, const float* x, long long stride, float* const* acc);
void ow_gemv_f64(long long rows, long long m, long long n, const double* s, const double* x, long long stride, double* const* acc);
void ow_transpose8_u32(const unsigned int* s, long long ss, unsigned int* d, long long ds);
)C";

}  // namespace ow::backend::detail
