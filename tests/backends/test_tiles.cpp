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
#include "lower/lower.h"
#include "uop/text.h"

#include "render_support.h"

#include "matmul_support.h"

using namespace ow;
using namespace ow::test_matmul;
using ow::test::render_optimized;

namespace {

// a @ b on the interpreter, then on tcc, cc and check (each kernel against the interpreter's
// kernel evaluator): every element bit for bit the interpreter's.
void check_matmul(int64_t m, int64_t kn, int64_t n, DType d, bool relu_a = false) {
  INFO(m << " x " << kn << " x " << n << " " << to_string(d) << (relu_a ? " relu(a)" : ""));
  UOp root = parse_graph(matmul_text(m, kn, n, d == dtypes::float32 ? "float32" : "float64", relu_a), "mm.uop").root;
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
    o.backend = backend::parse_backend(tier);
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

}  // namespace

TEST_CASE("tiles: cc renders a matmul as register tiles of up to 14 rows, tcc as 4 rows of axpy calls", "[tiles]") {
  // 16 rows: two blocks of 8 (as even as blocks of at most 14 can be). 56 columns: one tile of 48
  // (three vectors of 16 floats per row: 24 registers), then 8 single columns. The tiles are cc's
  // alone; the C for tcc has its rows 4 at a time, each a call to ow_axpy_f32.
  backend::RenderedKernel k = render_optimized(matmul_kernel(16, 7, 56));
  std::string src = k.source.substr(k.source.find("\nint mm("));
  INFO(src);
  CHECK(src.find("for (long long i_8 = 0; i_8 < 2LL; i_8++) {") != std::string::npos);
  size_t tile = src.find("for (long long j_t48 = 0; j_t48 < 1LL; j_t48++) {");
  size_t cols = src.find("for (long long j_t1 = 0; j_t1 < 8LL; j_t1++) {");
  REQUIRE(tile != std::string::npos);
  CHECK(tile < cols);
  CHECK(cols != std::string::npos);
  CHECK(src.find("ow_vload_f32(b2 + ", tile) < cols);
  CHECK(src.find("ow_vstore_f32(reg", tile) < cols);
  CHECK(src.find("ow_axpy_f32") == std::string::npos);
  backend::RenderOptions for_tcc;
  for_tcc.target = backend::Target::tcc;
  std::string tsrc = render_optimized(matmul_kernel(16, 7, 56), for_tcc).function;
  INFO(tsrc);
  CHECK(tsrc.find("for (long long i_4 = 0; i_4 < 4LL; i_4++) {") != std::string::npos);  // tcc's rows,
  CHECK(tsrc.find("ow_gemv_f32(4LL, 7LL, 56LL, ") != std::string::npos);                  // 4 at a time
  CHECK(tsrc.find("j_t48") == std::string::npos);
  CHECK(tsrc.find("ow_vf32") == std::string::npos);
  CHECK(src.find("loop-unroll-and-jam") == std::string::npos);        // it would spill the tiles
  // 37 rows: two blocks of 13 in a loop, then the 11 rows left over, unrolled in the function
  // body, in the first 11 of the block's 13 registers; 512 rows: 36 blocks of 14 and 8 rows left
  // over, in tiles of 3 vectors (24 registers).
  backend::RenderedKernel odd = render_optimized(matmul_kernel(37, 5, 40));
  INFO(odd.source);
  size_t block = odd.source.find("for (long long i_13 = 0; i_13 < 2LL; i_13++) {");
  CHECK(block != std::string::npos);
  CHECK(odd.source.find("float reg12[40] = {0};") != std::string::npos);
  CHECK(odd.source.find("float reg13[") == std::string::npos);
  CHECK(odd.source.find("\n  for (long long j_t32 = 0;", block) != std::string::npos);  // the 11 rows' tiles, outside the block loop
  backend::RenderedKernel big = render_optimized(matmul_kernel(512, 512, 512));
  CHECK(big.source.find("for (long long i_14 = 0; i_14 < 36LL; i_14++) {") != std::string::npos);
  CHECK(big.source.find("for (long long j_t48 = 0; j_t48 < 10LL; j_t48++) {") != std::string::npos);
  // Under --bounds-check the loads must be checked: no tiles.
  backend::RenderedKernel checked = render_optimized(matmul_kernel(16, 7, 56), {true});
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

// A fused layer's relu(a[i, k]) is each row's factor in every tile of the row: cc computes it once
// per k into an array (s<acc>[k]) and the tiles read it back. The values must not change.
TEST_CASE("tiles: a row factor that is more than a load is computed once per k, the same bits", "[tiles]") {
  UOp root = parse_graph(matmul_text(11, 40, 96, "float32", true), "mm.uop").root;
  std::string c = backend::show_c(ow::test::optimized(lower::lower(root)), {}, true);
  INFO(c);
  CHECK(c.find("[40];") != std::string::npos);  // an array of 40 factors per row
  CHECK(c.find("[i] * l") != std::string::npos);  // read back inside the tiles (the reduce range is named i here)
  for (auto [m, kn, n] : {std::tuple<int64_t, int64_t, int64_t>{11, 40, 96}, {3, 7, 80}, {16, 5, 48}}) {
    check_matmul(m, kn, n, dtypes::float32, true);
    check_matmul(m, kn, n, dtypes::float64, true);
  }
}
