// The vector loops tcc's kernels call (backends/tcc/vector_loops.h), every build this CPU runs
// (SSE2, AVX2, AVX-512): bit for bit what the scalar loops compute, for lengths that exercise
// every width of the tail (0..70 elements) and matrix-vector products with a stride. The inputs
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
    for (long long m : {1LL, 3LL, 17LL}) {
      long long stride = n + 3;
      std::vector<T> sk = irregular<T>(static_cast<size_t>(m), 3), mat = irregular<T>(static_cast<size_t>(m * stride), 4);
      std::vector<T> a = irregular<T>(static_cast<size_t>(n), 5), w = a;
      for (long long k = 0; k < m; ++k)
        for (long long i = 0; i < n; ++i) w[static_cast<size_t>(i)] = step(w[static_cast<size_t>(i)], sk[static_cast<size_t>(k)], mat[static_cast<size_t>(k * stride + i)]);
      gemv(m, n, sk.data(), mat.data(), stride, a.data());
      for (long long i = 0; i < n; ++i) {
        INFO("gemv m = " << m << ", n = " << n << ", element " << i);
        CHECK(same_bits(a[static_cast<size_t>(i)], w[static_cast<size_t>(i)]));
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
  // tcc's kernels call the widest (OW_VECTOR_ISA unset in the test environment) or the one named.
  const char* want = std::getenv("OW_VECTOR_ISA");
  CHECK(std::string(vector_loops().isa) == (want && *want ? std::string(want) : std::string(all.back()->isa)));
  WARN("vector loops built and checked for this CPU: " << all.size() << ", tcc calls " << vector_loops().isa);
}
