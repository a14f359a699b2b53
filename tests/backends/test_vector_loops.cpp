// The vector loops tcc's kernels call (backends/tcc/vector_loops.h), every build this CPU runs
// (SSE2, AVX2, AVX-512): bit for bit what the scalar loops compute, for lengths that exercise
// every width of the tail (0..70 elements) and matrix-vector products of 1 to 9 rows with a stride;
// the 8x8 transpose moves bits unchanged. The inputs
// are irregular (an exact product or sum would hide a wrong lane) and include -0.0, subnormals and
// an infinity.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backends/tcc/vector_loops.h"

using namespace ow::backend;

namespace {

template <class T>
std::vector<T> irregular(size_t n, int salt) {
  std::vector<T> v(n);
  for (size_t q = 0; q < n; ++q) v[q] = static_cast<T>(std::sin(0.7 * static_cast<double>(q) + salt) * (1.0 + static_cast<double>(q % 7)) / 3.0);
  if (n > 3) v[3] = T(-0.0);
  if (n > 5) v[5] = std::numeric_limits<T>::denorm_min() * 3;
  if (n > 40) v[40] = std::numeric_limits<T>::infinity();
  return v;
}

// Stricter than test_matmul::same_bits: a NaN's payload and sign count too.
template <class T>
bool same_bits(T a, T b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }

// acc[i] + s * x[i], each operation rounded (volatile: never contracted).
template <class T>
T step(T acc, T s, T x) {
  volatile T p = s * x;
  volatile T r = acc + p;
  return r;
}

template <class T, class Axpy, class Gemv>
void check_loops(Axpy axpy, Gemv gemv) {
  for (long long n = 0; n <= 70; ++n) {
    std::vector<T> x = irregular<T>(static_cast<size_t>(n), 1), acc = irregular<T>(static_cast<size_t>(n), 2), want = acc;
    T s = T(1.37);
    for (long long i = 0; i < n; ++i) want[static_cast<size_t>(i)] = step(want[static_cast<size_t>(i)], s, x[static_cast<size_t>(i)]);
    axpy(n, s, x.data(), acc.data());
    for (long long i = 0; i < n; ++i) {
      INFO("axpy n = " << n << ", element " << i);
      CHECK(same_bits(acc[static_cast<size_t>(i)], want[static_cast<size_t>(i)]));
    }
    for (long long m : {1LL, 3LL, 17LL})
      for (long long rows : {1LL, 2LL, 3LL, 4LL, 7LL, 9LL}) {  // groups of 4 and each remainder
        long long stride = n + 3;
        std::vector<T> sk = irregular<T>(static_cast<size_t>(rows * m), 3), mat = irregular<T>(static_cast<size_t>(m * stride), 4);
        std::vector<std::vector<T>> a, w;
        std::vector<T*> ptrs;
        for (long long r = 0; r < rows; ++r) a.push_back(irregular<T>(static_cast<size_t>(n), 5 + static_cast<int>(r)));
        w = a;
        for (auto& row : a) ptrs.push_back(row.data());
        for (long long r = 0; r < rows; ++r)
          for (long long k = 0; k < m; ++k)
            for (long long i = 0; i < n; ++i) {
              T& e = w[static_cast<size_t>(r)][static_cast<size_t>(i)];
              e = step(e, sk[static_cast<size_t>(r * m + k)], mat[static_cast<size_t>(k * stride + i)]);
            }
        gemv(rows, m, n, sk.data(), mat.data(), stride, ptrs.data());
        for (long long r = 0; r < rows; ++r)
          for (long long i = 0; i < n; ++i) {
            INFO("gemv rows = " << rows << ", m = " << m << ", n = " << n << ", row " << r << ", element " << i);
            CHECK(same_bits(a[static_cast<size_t>(r)][static_cast<size_t>(i)], w[static_cast<size_t>(r)][static_cast<size_t>(i)]));
          }
      }
  }
}

}  // namespace

TEST_CASE("vector loops: every build this CPU runs computes the scalar loops bit for bit", "[vector_loops]") {
  std::vector<const VectorLoops*> all = supported_vector_loops();
  REQUIRE(!all.empty());
  CHECK(std::string(all.front()->isa) == "sse2");
  for (const VectorLoops* v : all) {
    INFO("build " << v->isa);
    check_loops<float>(v->axpy_f32, v->gemv_f32);
    check_loops<double>(v->axpy_f64, v->gemv_f64);
  }
  // transpose8: rows of 8 at stride 11 become columns at stride 13, bits unchanged (NaN payloads).
  for (const VectorLoops* v : all) {
    INFO("build " << v->isa);
    std::vector<unsigned> src(8 * 11), dst(8 * 13, 0xdeadbeefu);
    for (size_t q = 0; q < src.size(); ++q) src[q] = 0x7fc00000u + static_cast<unsigned>(q) * 2654435761u % 4096u;
    v->transpose8_u32(src.data(), 11, dst.data(), 13);
    for (int a = 0; a < 8; ++a)
      for (int b = 0; b < 13; ++b) {
        INFO("row " << a << ", column " << b);
        CHECK(dst[static_cast<size_t>(a * 13 + b)] == (b < 8 ? src[static_cast<size_t>(b * 11 + a)] : 0xdeadbeefu));  // nothing past the tile written
      }
  }
  // tcc's kernels call the widest (OW_VECTOR_ISA unset in the test environment) or the one named.
  const char* want = std::getenv("OW_VECTOR_ISA");
  CHECK(std::string(vector_loops().isa) == (want && *want ? std::string(want) : std::string(all.back()->isa)));
  WARN("vector loops built and checked for this CPU: " << all.size() << ", tcc calls " << vector_loops().isa);
}
