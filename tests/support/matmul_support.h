// Matrix products for the renderer's tests (test_tiles.cpp, test_parallel.cpp): the graph
// `ow bench --micro` builds, irregular data, bit comparison, and the kernel written by hand.
#pragma once
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "uop/uop.h"

namespace ow::test_matmul {

// c = a @ b for an (m x kn) by (kn x n) matrix pair, as `ow bench --micro` builds it: REDUCE_AXIS
// of an expanded product, (m, kn, 1) * (1, kn, n) summed over axis 1. relu_a: max(a, 0) @ b.
inline std::string matmul_text(int64_t m, int64_t kn, int64_t n, const char* dt = "float32", bool relu_a = false) {
  std::string d(dt), s;
  auto line = [&](const std::string& l) { s += l + "\n"; };
  line("%0 = BUFFER " + d + " () (\"a\", " + std::to_string(m * kn) + ")");
  line("%1 = CONST index () " + std::to_string(m));
  line("%2 = CONST index () " + std::to_string(kn));
  line("%3 = CONST index () " + std::to_string(n));
  line("%4 = CONST index () 1");
  line(std::string(relu_a ? "%50" : "%5") + " = RESHAPE " + d + " (%0, %1, %2, %4)");
  if (relu_a) {
    line("%51 = CONST " + d + " () 0.0");
    line("%52 = RESHAPE " + d + " (%51, %4, %4, %4)");
    line("%53 = EXPAND " + d + " (%52, %1, %2, %4)");
    line("%5 = MAX " + d + " (%50, %53)");
  }
  line("%6 = EXPAND " + d + " (%5, %1, %2, %3)");
  line("%7 = BUFFER " + d + " () (\"b\", " + std::to_string(kn * n) + ")");
  line("%8 = RESHAPE " + d + " (%7, %4, %2, %3)");
  line("%9 = EXPAND " + d + " (%8, %1, %2, %3)");
  line("%10 = MUL " + d + " (%6, %9)");
  line("%11 = REDUCE_AXIS " + d + " (%10) (Ops.ADD, (1,))");
  line("%12 = RESHAPE " + d + " (%11, %1, %3)");
  line("%13 = SINK void (%12) (\"c\",)");
  return s;
}

// Irregular values whose products and sums round, with -0.0 and an infinity among them.
inline interp::BufferData data(DType d, int64_t size, int salt) {
  auto s = std::make_shared<interp::Storage>(d, size);
  for (int64_t q = 0; q < size; ++q) {
    double x = std::sin(0.37 * double(q + salt)) * 3.1 + 1.0 / double(q % 7 + 2);
    if (q % 53 == 5) x = -0.0;
    if (q == 17) x = INFINITY;
    if (d == dtypes::float32) s->as<float>()[q] = static_cast<float>(x);
    else s->as<double>()[q] = x;
  }
  return interp::BufferData{d, s, nullptr};
}

// c = a @ b (b_t: a @ b transposed, b stored n x kn) as the kernels compute it: each element a
// sum from 0.0f over k ascending, one rounding per product and per addition.
inline std::vector<float> matmul_in_order(const std::vector<float>& a, const std::vector<float>& b, int64_t m, int64_t kn, int64_t n, bool b_t) {
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < kn; ++k) {
        volatile float p = a[static_cast<size_t>(i * kn + k)] * b[static_cast<size_t>(b_t ? j * kn + k : k * n + j)];
        acc = acc + p;
      }
      c[static_cast<size_t>(i * n + j)] = acc;
    }
  return c;
}

// The float32 values of `d` (data()'s, say), to compare a kernel's output with.
inline std::vector<float> floats_of(const interp::BufferData& d) { return {d.data->as<float>(), d.data->as<float>() + d.data->size}; }

inline bool same_bits(double x, double y) { return (x != x && y != y) || (x == y && std::signbit(x) == std::signbit(y)); }

inline UOp global(int64_t slot, int64_t size) { return UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.pointer(size), {}, Arg(slot)); }
inline UOp buffer(const char* name, int64_t size) { return UOp::make(Ops::BUFFER, dtypes::float32, {}, Arg(ArgTuple{Arg(name), Arg(size)})); }

// out[i*n+j] = sum_k a[i*kn+k] * b[k*n+j] as one kernel.
inline UOp matmul_kernel(int64_t m, int64_t kn, int64_t n) {
  UOp out = global(0, m * n), a = global(1, m * kn), b = global(2, kn * n);
  UOp i = UOp::range(m, 0), j = UOp::range(n, 1), k = UOp::range(kn, 2, AxisType::REDUCE);
  UOp prod = a.index({i * kn + k}).load() * b.index({k * n + j}).load();
  UOp st = out.index({i * n + j}).store(prod.reduce({k}, Ops::ADD)).end({i, j});
  std::vector<UOp> src{UOp::sink({st}), buffer("out", m * n), buffer("a", m * kn), buffer("b", kn * n)};
  return UOp::make(Ops::KERNEL, dtypes::void_, std::move(src), Arg(ArgTuple{Arg("mm")}));
}

}  // namespace ow::test_matmul
