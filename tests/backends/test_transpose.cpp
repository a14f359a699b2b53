// Transposing copies (kernel-opt pass `transposes`, src/opt/transposes.cpp): cc moves a pure copy
// of 4-byte elements in 8x8 register tiles, tcc (and cc for other copies) blocks 16 rows inside
// the column loop. Every element must be exactly the input element it copies, bits included, on
// every tier: checked against the transpose computed here by hand, not against the renderer.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/c/render.h"
#include "backends/program.h"
#include "interp/interp.h"
#include "lower/lower.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/text.h"

using namespace ow;

namespace {

struct Case {
  const char* dtype;
  int64_t batch, rows, cols;  // out[b, c, r] = a[b, r, c] (+ 1 when `plus_one`)
  bool plus_one;
};

std::string transpose_text(const Case& k) {
  std::string d(k.dtype), s;
  auto line = [&](const std::string& l) { s += l + "\n"; };
  auto n = [](int64_t v) { return std::to_string(v); };
  line("%0 = BUFFER " + d + " () (\"a\", " + n(k.batch * k.rows * k.cols) + ")");
  line("%1 = CONST index () " + n(k.batch));
  line("%2 = CONST index () " + n(k.rows));
  line("%3 = CONST index () " + n(k.cols));
  line("%4 = RESHAPE " + d + " (%0, %1, %2, %3)");
  line("%5 = PERMUTE " + d + " (%4) (0, 2, 1)");
  if (k.plus_one) {
    line("%6 = CONST " + d + " () 1.0");
    line("%7 = CONST index () 1");
    line("%8 = RESHAPE " + d + " (%6, %7, %7, %7)");
    line("%9 = EXPAND " + d + " (%8, %1, %3, %2)");
    line("%10 = ADD " + d + " (%5, %9)");
    line("%11 = SINK void (%10) (\"out\",)");
  } else {
    line("%6 = SINK void (%5) (\"out\",)");
  }
  return s;
}

// Distinct bit patterns; the 4-byte ones include -0.0f and a NaN with a payload, which a copy
// must move unchanged.
std::shared_ptr<interp::Storage> input(DType d, int64_t size) {
  auto s = std::make_shared<interp::Storage>(d, size);
  size_t w = d.itemsize();
  for (int64_t q = 0; q < size; ++q) {
    uint64_t bits = d == dtypes::float64 ? 0x3ff0000000000000ull + uint64_t(q) * 0x9e3779b9ull : 0x3f800000u + uint32_t(q) * 2654435u;
    if (w == 4 && q % 37 == 3) bits = 0x80000000u;  // -0.0f
    if (w == 4 && q % 41 == 7) bits = 0x7fc0abcdu;  // a quiet NaN with a payload
    std::memcpy(s->bytes.data() + q * w, &bits, w);
  }
  return s;
}

// tiles: the C of both compilers has the 8x8 tiles; blocked: it blocks rows (named r_m8/_m16).
void check_transpose(const Case& k, bool tiles, bool blocked) {
  DType d = std::string(k.dtype) == "float64" ? dtypes::float64 : std::string(k.dtype) == "int32" ? dtypes::int32 : dtypes::float32;
  INFO(k.dtype << " " << k.batch << "x" << k.rows << "x" << k.cols << (k.plus_one ? " + 1" : ""));
  UOp root = parse_graph(transpose_text(k), "t.uop").root;
  for (opt::Target t : {opt::Target::cc, opt::Target::tcc}) {
    lower::Context ctx = lower::through_kernel_opt(t);
    backend::RenderOptions ro;
    ro.target = t;
    std::string c = backend::show_c(lower::lower(root, ctx), ro, true);
    INFO(opt::target_name(t) << "\n" << c);
    CHECK((c.find("ow_transpose8_u32((const") != std::string::npos) == tiles);
    CHECK((c.find("_m16\n") != std::string::npos || c.find("_m8\n") != std::string::npos) == blocked);
  }
  int64_t size = k.batch * k.rows * k.cols;
  auto a = input(d, size);
  size_t w = d.itemsize();
  for (const char* tier : {"interp", "tcc", "cc", "check"}) {
    INFO(tier);
    interp::BufferMap in{{"a", interp::BufferData{d, std::make_shared<interp::Storage>(*a), nullptr}}};
    std::vector<interp::Output> got;
    if (std::string(tier) == "interp") {
      got = interp::run(root, in);
    } else {
      backend::RunOptions o;
      o.backend = backend::parse_backend(tier);
      got = backend::run_graph(root, in, o);
    }
    REQUIRE(got.size() == 1);
    REQUIRE(got[0].value.numel() == size);
    REQUIRE(got[0].value.view.offset == 0);
    const uint8_t* out = got[0].value.data->bytes.data();
    int64_t bad = -1;
    for (int64_t b = 0; b < k.batch && bad < 0; ++b)
      for (int64_t r = 0; r < k.rows; ++r)
        for (int64_t col = 0; col < k.cols; ++col) {
          int64_t from = (b * k.rows + r) * k.cols + col, to = (b * k.cols + col) * k.rows + r;
          if (k.plus_one) {
            double x = d == dtypes::float64 ? reinterpret_cast<const double*>(a->bytes.data())[from] : reinterpret_cast<const float*>(a->bytes.data())[from];
            double y = d == dtypes::float64 ? reinterpret_cast<const double*>(out)[to] : reinterpret_cast<const float*>(out)[to];
            double want = d == dtypes::float64 ? x + 1.0 : double(float(x) + 1.0f);
            if (!(y == want || (y != y && want != want))) bad = to;
          } else if (std::memcmp(out + to * w, a->bytes.data() + from * w, w) != 0) {
            bad = to;
          }
        }
    CHECK(bad == -1);
  }
}

}  // namespace

TEST_CASE("transposes: cc copies 4-byte elements in 8x8 register tiles, bits unchanged", "[tiles][transpose]") {
  check_transpose({"float32", 1, 24, 40, false}, true, true);
  check_transpose({"int32", 3, 16, 32, false}, true, true);  // a batch: the tiles sit inside its loop
  check_transpose({"float32", 1, 128, 128, false}, true, true);
}

TEST_CASE("transposes: other copies are blocked 16 rows at a time or left alone, the same values", "[tiles][transpose]") {
  check_transpose({"float32", 1, 20, 48, false}, false, true);   // 20 rows: not a multiple of 8
  check_transpose({"float64", 1, 16, 32, false}, false, true);   // 8-byte elements
  check_transpose({"float32", 2, 16, 32, true}, false, true);    // not a pure copy: a.T + 1
  check_transpose({"float32", 1, 16, 12, false}, false, false);  // 12 columns: too few to block
}

TEST_CASE("transposes: an END marked transpose8 is one call with the strides of its store, or refused when it is no 8x8 copy", "[tiles][transpose]") {
  UOp root = parse_graph(transpose_text({"float32", 1, 8, 16, false}), "t.uop").root;  // out (16, 8) = a (8, 16).T
  lower::Context ctx = lower::through_kernel_opt(opt::Target::cc);
  UOp k;
  for (UOp u : toposort(lower::lower(root, ctx)))
    if (u->op == Ops::KERNEL) k = u;
  REQUIRE(k);
  UOp end = k->src[0]->src.at(0);
  REQUIRE(loop_form(end) == LoopForm::transpose8);
  // out[j + 8i] = a[16j + i]: the source moves 16 per column j, the target 8 per row i.
  std::string c = backend::render_kernel(k).function;
  INFO(c);
  CHECK(c.find("ow_transpose8_u32((const unsigned int*)(b1 + ") != std::string::npos);
  CHECK(c.find("), 16LL, (unsigned int*)(b0 + ") != std::string::npos);
  CHECK(c.find("), 8LL);") != std::string::npos);
  CHECK(c.find("_m8\n") != std::string::npos);     // the block loops are loops,
  CHECK(c.find("< 8LL") == std::string::npos);       // the tile's are the call
  // The same END with other parts: each is no longer the copy the call makes.
  size_t n = end->src.size();
  UOp st = end->src[0], a = end->src[n - 2], b = end->src[n - 1];
  auto with = [&](std::vector<UOp> end_src) {
    std::vector<UOp> k_src = k->src;
    k_src[0] = UOp::sink({end.replace_src(std::move(end_src))});
    return k.replace_src(std::move(k_src));
  };
  auto with_store = [&](UOp store) {
    std::vector<UOp> src = end->src;
    src[0] = store;
    return with(src);
  };
  UOp a_b = substitute(st, {{a, b}, {b, a}});  // the tile read along the wrong axis: a copy, no transpose
  CHECK_THROWS_WITH(backend::render_kernel(with_store(a_b)), Catch::Contains("not a transpose's"));
  UOp plus1 = st.replace_src({st->src[0], st->src[1] + st->src[1].const_like(1.0)});  // a.T + 1: no plain copy
  CHECK_THROWS_WITH(backend::render_kernel(with_store(plus1)), Catch::Contains("not a plain copy"));
  std::vector<UOp> short_tile = end->src;
  short_tile[n - 1] = UOp::range(4, 7777);  // a tile 8 x 4 (its store does not use it: only the extent is wrong)
  CHECK_THROWS_WITH(backend::render_kernel(with(short_tile)), Catch::Contains("other than 8 steps"));
  // Under bounds checks the same END is plain checked loops.
  backend::RenderOptions checked;
  checked.bounds_check = true;
  CHECK(backend::render_kernel(k, checked).function.find("ow_transpose8_u32") == std::string::npos);
}
