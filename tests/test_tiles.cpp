// cc's register tiles for matmul-like nests (backends/c/tiles.cpp): the C they render, and
// matrix products of odd and tile-sized shapes computed on tcc and cc bit for bit as the
// interpreter computes them (each element summed over k in order, in the dtype, no FMA).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "backends/c/render.h"
#include "backends/program.h"
#include "interp/interp.h"
#include "uop/text.h"

using namespace ow;

namespace {

// c = a @ b for an (m x kn) by (kn x n) matrix pair, as `ow bench --micro` builds it: REDUCE_AXIS
// of an expanded product, (m, kn, 1) * (1, kn, n) summed over axis 1.
std::string matmul_text(int64_t m, int64_t kn, int64_t n, const char* dt = "float32") {
  std::string d(dt), s;
  auto line = [&](const std::string& l) { s += l + "\n"; };
  line("%0 = BUFFER " + d + " () (\"a\", " + std::to_string(m * kn) + ")");
  line("%1 = CONST index () " + std::to_string(m));
  line("%2 = CONST index () " + std::to_string(kn));
  line("%3 = CONST index () " + std::to_string(n));
  line("%4 = CONST index () 1");
  line("%5 = RESHAPE " + d + " (%0, %1, %2, %4)");
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
interp::BufferData data(DType d, int64_t size, int salt) {
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

bool same_bits(double x, double y) { return (x != x && y != y) || (x == y && std::signbit(x) == std::signbit(y)); }

// a @ b on the interpreter, then on tcc, cc and check (each kernel against the interpreter's
// kernel evaluator): every element bit for bit the interpreter's.
void check_matmul(int64_t m, int64_t kn, int64_t n, DType d) {
  INFO(m << " x " << kn << " x " << n << " " << to_string(d));
  UOp root = parse_graph(matmul_text(m, kn, n, d == dtypes::float32 ? "float32" : "float64"), "mm.uop").root;
  interp::BufferMap in{{"a", data(d, m * kn, 0)}, {"b", data(d, kn * n, 11)}};
  auto fresh = [&] {
    interp::BufferMap b;
    for (auto& [name, v] : in) b[name] = interp::BufferData{v.dtype, std::make_shared<interp::Storage>(*v.data), nullptr};
    return b;
  };
  interp::BufferMap ib = fresh();
  std::vector<interp::Output> want = interp::run(root, ib);
  REQUIRE(want.size() == 1);
  for (const char* tier : {"tcc", "cc", "check"}) {
    INFO(tier);
    backend::RunOptions o;
    o.backend = tier;
    interp::BufferMap b = fresh();
    std::vector<interp::Output> got = backend::run_graph(root, b, o);
    REQUIRE(got.size() == 1);
    REQUIRE(got[0].value.numel() == m * n);
    int64_t bad = -1;
    for (int64_t q = 0; q < m * n && bad < 0; ++q)
      if (!same_bits(interp::get_element(want[0].value, q), interp::get_element(got[0].value, q))) bad = q;
    CHECK(bad == -1);
  }
}

UOp global(int64_t slot, int64_t size) { return UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.pointer(size), {}, Arg(slot)); }
UOp buffer(const char* name, int64_t size) { return UOp::make(Ops::BUFFER, dtypes::float32, {}, Arg(ArgTuple{Arg(name), Arg(size)})); }

// out[i*n+j] = sum_k a[i*kn+k] * b[k*n+j] as one kernel.
UOp matmul_kernel(int64_t m, int64_t kn, int64_t n) {
  UOp out = global(0, m * n), a = global(1, m * kn), b = global(2, kn * n);
  UOp i = UOp::range(m, 0), j = UOp::range(n, 1), k = UOp::range(kn, 2, AxisType::REDUCE);
  UOp prod = a.index({i * kn + k}).load() * b.index({k * n + j}).load();
  UOp st = out.index({i * n + j}).store(prod.reduce({k}, Ops::ADD)).end({i, j});
  std::vector<UOp> src{UOp::sink({st}), buffer("out", m * n), buffer("a", m * kn), buffer("b", kn * n)};
  return UOp::make(Ops::KERNEL, dtypes::void_, std::move(src), Arg(ArgTuple{Arg("mm")}));
}

}  // namespace

TEST_CASE("tiles: cc renders a matmul as register tiles of up to 14 rows, tcc as 4 rows of axpy calls", "[tiles]") {
  // 16 rows: two blocks of 8 (as even as blocks of at most 14 can be). 56 columns: one tile of 48
  // (three vectors of 16 floats per row: 24 registers), then 8 single columns. The tile's loads and accumulators are cc's alone (#ifndef __TINYC__).
  backend::RenderedKernel k = backend::render_kernel(matmul_kernel(16, 7, 56));
  std::string src = k.source.substr(k.source.find("\nint mm("));
  INFO(src);
  CHECK(src.find("for (long long i_8 = 0; i_8 < 2LL; i_8++) {") != std::string::npos);
  size_t ifn = src.find("#ifndef __TINYC__"), tile = src.find("for (long long j_t48 = 0; j_t48 < 1LL; j_t48++) {");
  size_t cols = src.find("for (long long j_t1 = 0; j_t1 < 8LL; j_t1++) {"), els = src.find("#else", ifn);
  REQUIRE(ifn != std::string::npos);
  CHECK(ifn < tile);
  CHECK(tile < cols);
  CHECK(cols < els);
  CHECK(src.find("ow_vload_f32(b2 + ", tile) < cols);
  CHECK(src.find("ow_vstore_f32(acc", tile) < cols);
  CHECK(src.find("for (long long i_4 = 0; i_4 < 4LL; i_4++) {", els) != std::string::npos);  // tcc's rows,
  CHECK(src.find("ow_axpy_f32(56LL, ", els) != std::string::npos);                           // 4 at a time
  CHECK(src.find("loop-unroll-and-jam") == std::string::npos);        // it would spill the tiles
  // 37 rows: two blocks of 13 in a loop, then the 11 rows left over, unrolled in the function
  // body; 512 rows: 36 blocks of 14 and 8 rows left over, in tiles of 3 vectors (24 registers).
  backend::RenderedKernel odd = backend::render_kernel(matmul_kernel(37, 5, 40));
  INFO(odd.source);
  CHECK(odd.source.find("for (long long i_13 = 0; i_13 < 2LL; i_13++) {") != std::string::npos);
  CHECK(odd.source.find("\n  float acc") != std::string::npos);  // the last 11 rows' arrays
  backend::RenderedKernel big = backend::render_kernel(matmul_kernel(512, 512, 512));
  CHECK(big.source.find("for (long long i_14 = 0; i_14 < 36LL; i_14++) {") != std::string::npos);
  CHECK(big.source.find("for (long long j_t48 = 0; j_t48 < 10LL; j_t48++) {") != std::string::npos);
  // Under --bounds-check the loads must be checked: no tiles.
  backend::RenderedKernel checked = backend::render_kernel(matmul_kernel(16, 7, 56), {true});
  CHECK(checked.source.find("ow_vload_f32(b") == std::string::npos);
  CHECK(checked.source.find("j_t48") == std::string::npos);
}

TEST_CASE("tiles: matrix products of odd and tile-sized shapes equal the interpreter's bit for bit", "[tiles]") {
  // 37 x 53 x 29: rows in 2 blocks of 13 and 11 left over, one vector and 13 single columns;
  // 1 x 1 x 1; 16 rows: 2 blocks of 8; 12 and 6 rows: one block; 64 rows: 4 blocks of 13 and 12
  // left over; 29 rows: 2 blocks of 10 and 9; whole tiles only; tiles plus single vectors plus
  // single columns; 1 row (a vector times a matrix).
  for (auto [m, kn, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{37, 53, 29},
                                                                             {1, 1, 1},
                                                                             {16, 7, 40},
                                                                             {12, 5, 64},
                                                                             {6, 9, 50},
                                                                             {64, 96, 128},
                                                                             {29, 33, 83},
                                                                             {8, 512, 48},
                                                                             {1, 40, 200}})
    check_matmul(m, kn, n, dtypes::float32);
  // float64: vectors of 8 doubles, tiles of 16 columns.
  for (auto [m, kn, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{16, 7, 40}, {5, 3, 11}})
    check_matmul(m, kn, n, dtypes::float64);
}
