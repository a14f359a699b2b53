// uint32/uint64, BITCAST and THREEFRY. The cases in reference/unsigned (make_unsigned.py computes
// their outputs from the math and Random123's Threefry spec, not from outerworld) run on the
// interpreter and, lowered and compiled, on tcc and cc in check mode; every output must match
// the expected .npy byte for byte. Then the errors: a bad BITCAST, division by zero, shift counts.
#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include "backends/program.h"
#include "interp/compare.h"
#include "interp/interp.h"
#include "interp/npy.h"
#include "interp/scalar_ops.h"
#include "tensor/tensor.h"
#include "test_support.h"
#include "uop/symbolic.h"
#include "uop/text.h"

using namespace ow;
using ow::test::error_of;
using ow::test::slurp;
using ow::test::source_root;
namespace fs = std::filesystem;

namespace {

fs::path case_dir() { return source_root() / "reference" / "unsigned"; }

// The case's inputs (in_NAME.npy) or expected outputs (out_NAME.npy), by NAME.
std::map<std::string, interp::NpyArray> arrays(const std::string& c, const std::string& prefix) {
  std::map<std::string, interp::NpyArray> out;
  for (const auto& e : fs::directory_iterator(case_dir() / c)) {
    std::string f = e.path().filename().string();
    if (f.rfind(prefix, 0) == 0) out[f.substr(prefix.size(), f.size() - prefix.size() - 4)] = interp::load_npy(e.path().string());
  }
  return out;
}

interp::BufferMap inputs(const std::string& c) {
  interp::BufferMap b;
  for (auto& [name, a] : arrays(c, "in_")) b[name] = interp::BufferData{a.dtype, std::make_shared<interp::Storage>(*a.data), nullptr};
  return b;
}

// Every output has the expected dtype, shape and bytes.
void require_expected(const std::string& c, const std::vector<interp::Output>& got) {
  auto want = arrays(c, "out_");
  REQUIRE(got.size() == want.size());
  for (const interp::Output& o : got) {
    INFO("output " << o.name);
    REQUIRE(want.count(o.name));
    const interp::NpyArray& w = want.at(o.name);
    interp::Value v = interp::contiguous(o.value);
    REQUIRE(to_string(v.dtype) == to_string(w.dtype));
    REQUIRE(v.numel() == w.data->size);
    size_t bytes = static_cast<size_t>(v.numel()) * static_cast<size_t>(v.dtype.itemsize());
    interp::Value wv;
    wv.dtype = w.dtype;
    wv.view = interp::View::contiguous(v.shape());
    wv.data = w.data;
    std::optional<interp::Difference> d = interp::first_difference(wv, v);
    INFO("first differing element " << (d ? d->index : -2) << ": expected " << (d ? d->a : 0) << ", got " << (d ? d->b : 0));
    CHECK(!d);
    CHECK(std::memcmp(v.data->bytes.data(), w.data->bytes.data(), bytes) == 0);
  }
}

UOp case_graph(const std::string& c) {
  fs::path file = case_dir() / (c + ".uop");
  ParsedGraph g = parse_graph(slurp(file), file.string());
  verify_parsed(g);
  return g.root;
}

const char* const kCases[] = {"arith_u32", "arith_u64", "casts", "bitcasts", "reduce", "threefry", "rand"};

// The message of running `text` with `inputs` on a backend ("interp", "tcc", "cc").
std::string run_error(const std::string& text, interp::BufferMap inputs, const std::string& backend) {
  UOp root = parse_graph(text).root;
  backend::RunOptions o;
  o.backend = backend::parse_backend(backend);
  return error_of([&] { backend::run_graph(root, inputs, o); });
}

template <class T> interp::BufferData data(DType d, std::vector<T> v) {
  auto s = std::make_shared<interp::Storage>(d, static_cast<int64_t>(v.size()));
  std::memcpy(s->bytes.data(), v.data(), v.size() * sizeof(T));
  return interp::BufferData{d, s, nullptr};
}

}  // namespace

TEST_CASE("unsigned cases: the interpreter computes the numpy-independent expectations", "[unsigned]") {
  for (const char* c : kCases) {
    DYNAMIC_SECTION("case " << c) {
      interp::BufferMap b = inputs(c);
      require_expected(c, interp::run(case_graph(c), b));
    }
  }
}

TEST_CASE("unsigned cases: compiled with tcc and cc, every kernel and output bit for bit", "[unsigned][compiled]") {
  for (const char* c : kCases) {
    for (const char* tier : {"tcc", "cc"}) {
      DYNAMIC_SECTION("case " << c << " on " << tier) {
        backend::RunOptions o;
        o.backend = backend::Backend::Check;  // each kernel against the interpreter, then the outputs
        o.compiler = backend::parse_backend(tier);
        interp::BufferMap b = inputs(c);
        require_expected(c, backend::run_graph(case_graph(c), b, o));
      }
    }
  }
}

TEST_CASE("THREEFRY is Random123's threefry2x32_20 on (low word, high word)", "[unsigned]") {
  // Random123 kat_vectors; x and key pack (word 0, word 1) as low and high halves.
  CHECK(interp::sop::threefry2x32_20(0, 0) == 0x99ba4efe6b200159ull);
  CHECK(interp::sop::threefry2x32_20(~0ull, ~0ull) == 0xbb002be71cb996fcull);
  CHECK(interp::sop::threefry2x32_20(0x85a308d3243f6a88ull, 0x0370734413198a2eull) == 0x483df7a0c4923a9cull);
}

TEST_CASE("a BITCAST between sizes is a verifier error at its line", "[unsigned][verify]") {
  std::string text = "%x = BUFFER float32 () (\"x\", 4)\n%b = BITCAST uint64 (%x)\n%s = SINK void (%b) (\"b\",)\n";
  std::string msg = error_of([&] { verify_parsed(parse_graph(text, "bad.uop")); });
  CHECK_THAT(msg, Catch::StartsWith("bad.uop:2:"));
  CHECK_THAT(msg, Catch::Contains("bitcast.size: BITCAST from float32 (4 bytes) to uint64 (8 bytes) changes the size of an element"));
}

TEST_CASE("unsigned errors: division by zero and shift counts, the same on every backend", "[unsigned]") {
  std::string div = "%a = BUFFER uint32 () (\"a\", 2)\n%b = BUFFER uint32 () (\"b\", 2)\n%q = IDIV uint32 (%a, %b)\n%s = SINK void (%q) (\"q\",)\n";
  std::string shl = "%a = BUFFER uint64 () (\"a\", 2)\n%b = BUFFER uint64 () (\"b\", 2)\n%q = SHL uint64 (%a, %b)\n%s = SINK void (%q) (\"q\",)\n";
  std::string shr = "%a = BUFFER int32 () (\"a\", 2)\n%b = BUFFER int32 () (\"b\", 2)\n%q = SHR int32 (%a, %b)\n%s = SINK void (%q) (\"q\",)\n";
  for (const char* be : {"interp", "tcc", "cc"}) {
    INFO("backend " << be);
    CHECK_THAT(run_error(div, {{"a", data<uint32_t>(dtypes::uint32, {7, 8})}, {"b", data<uint32_t>(dtypes::uint32, {1, 0})}}, be),
               Catch::Contains("integer division by zero"));
    CHECK_THAT(run_error(shl, {{"a", data<uint64_t>(dtypes::uint64, {7, 8})}, {"b", data<uint64_t>(dtypes::uint64, {63, 64})}}, be),
               Catch::Contains("shift count 64 outside [0, 64)"));
    CHECK_THAT(run_error(shr, {{"a", data<int32_t>(dtypes::int32, {-7, 8})}, {"b", data<int32_t>(dtypes::int32, {-1, 0})}}, be),
               Catch::Contains("shift count -1 outside [0, 32)"));
  }
  // a valid signed SHR is arithmetic
  UOp root = parse_graph(shr).root;
  interp::BufferMap b{{"a", data<int32_t>(dtypes::int32, {-7, 8})}, {"b", data<int32_t>(dtypes::int32, {1, 3})}};
  for (const char* be : {"interp", "tcc", "cc"}) {
    backend::RunOptions o;
    o.backend = backend::parse_backend(be);
    interp::BufferMap bb = b;
    auto out = backend::run_graph(root, bb, o);
    CHECK(out[0].value.data->as<int32_t>()[0] == -4);
    CHECK(out[0].value.data->as<int32_t>()[1] == 1);
  }
}

TEST_CASE("lowering keeps unsigned wrap-around: (2a - 1) // 2 in uint32 is not a - 1", "[unsigned][compiled]") {
  // The simplifier's division rules assume no wrap-around, which holds for signed index math
  // only; for uint32, a = 0 gives (2^32 - 1) // 2.
  std::string text =
      "%a = BUFFER uint32 () (\"a\", 6)\n%two = CONST uint32 () 2\n%m1 = CONST uint32 () 4294967295\n%x = MUL uint32 (%a, %two)\n"
      "%y = ADD uint32 (%x, %m1)\n%q = IDIV uint32 (%y, %two)\n%s = SINK void (%q) (\"q\",)\n";
  UOp root = parse_graph(text).root;
  for (const char* be : {"interp", "tcc", "cc"}) {
    INFO("backend " << be);
    interp::BufferMap b{{"a", data<uint32_t>(dtypes::uint32, {0, 1, 2, 3, 4, 5})}};
    backend::RunOptions o;
    o.backend = backend::parse_backend(be);
    auto out = backend::run_graph(root, b, o);
    interp::Value q = interp::contiguous(out[0].value);
    const uint32_t* p = q.data->as<uint32_t>();
    CHECK(std::vector<uint32_t>(p, p + 6) == std::vector<uint32_t>{2147483647u, 0, 1, 2, 3, 4});
  }
  int64_t r = 0;
  REQUIRE(fold_int_alu(Ops::ADD, dtypes::uint32, std::array<int64_t, 2>{4294967295, 2}.data(), 2, r));
  CHECK(r == 1);
  CHECK_FALSE(fold_int_alu(Ops::ADD, dtypes::uint64, std::array<int64_t, 2>{1, 2}.data(), 2, r));
}

TEST_CASE(".npy: u4 and u8 round-trip, and convert only where exact", "[unsigned][npy]") {
  interp::Value v = interp::alloc(dtypes::uint64, {3});
  uint64_t vals[] = {0, 1ull << 63, ~0ull};
  std::memcpy(v.data->bytes.data(), vals, sizeof vals);
  std::string bytes = interp::npy_bytes(v);
  CHECK(bytes.find("'descr': '<u8'") != std::string::npos);
  interp::NpyArray back = interp::parse_npy(bytes, "u8.npy");
  REQUIRE(back.dtype == dtypes::uint64);
  CHECK(std::memcmp(back.data->bytes.data(), vals, sizeof vals) == 0);
  // into an int64 buffer: 2^63 does not fit, and the message says which element and value
  CHECK_THAT(error_of([&] { interp::npy_as(back, dtypes::int64, "u8.npy", "x"); }),
             Catch::Contains("element 1: 9223372036854775808") && Catch::Contains("a.astype(np.int64)"));
  // uint32 data converts exactly to uint64 and int64; a negative int32 does not fit uint32
  interp::Value w = interp::alloc(dtypes::uint32, {2});
  w.data->as<uint32_t>()[1] = 4294967295u;
  interp::NpyArray u4 = interp::parse_npy(interp::npy_bytes(w), "u4.npy");
  CHECK(u4.dtype == dtypes::uint32);
  CHECK(interp::npy_as(u4, dtypes::uint64, "u4.npy", "x")->as<uint64_t>()[1] == 4294967295ull);
  CHECK(interp::npy_as(u4, dtypes::int64, "u4.npy", "x")->as<int64_t>()[1] == 4294967295ll);
  interp::Value n = interp::alloc(dtypes::int32, {1});
  n.data->as<int32_t>()[0] = -1;
  CHECK_THAT(error_of([&] { interp::npy_as(interp::parse_npy(interp::npy_bytes(n), "i4.npy"), dtypes::uint32, "i4.npy", "x"); }),
             Catch::Contains("element 0: -1"));
}

TEST_CASE("Tensor dtype promotion with unsigned operands follows tinygrad's lattice", "[unsigned][tensor]") {
  Tensor u32 = Tensor::full({2}, 1, dtypes::uint32), i32 = Tensor::full({2}, 1, dtypes::int32);
  CHECK((u32 + i32).dtype() == dtypes::int64);
  CHECK((u32 + Tensor::full({2}, 1, dtypes::uint64)).dtype() == dtypes::uint64);
  CHECK((u32 * Tensor::full({2}, 1.5, dtypes::float32)).dtype() == dtypes::float32);
  CHECK_THAT(error_of([&] { (Tensor::full({2}, 1, dtypes::uint64) + i32).uop(); }), Catch::Contains("no common dtype for uint64 and int32"));
}

TEST_CASE("integer POW is a^b modulo 2^bits on every backend; a negative exponent is an error naming the node", "[unsigned][pow]") {
  // Expected values by hand: (-2)^29 = -2^29; 0^0 = 1; 13^7 = 62748517; 3^40 mod 2^32 = 689956897
  // (as int32); (-1)^5 = -1; uint8 3^5 = 243, 2^8 = 256 -> 0, 255^2 = 65025 -> 1 (mod 256).
  std::string i32 = "%a = BUFFER int32 () (\"a\", 6)\n%b = BUFFER int32 () (\"b\", 6)\n%p = POW int32 (%a, %b)\n%s = SINK void (%p) (\"p\",)\n";
  std::string u8 = "%a = BUFFER uint8 () (\"a\", 3)\n%b = BUFFER uint8 () (\"b\", 3)\n%p = POW uint8 (%a, %b)\n%s = SINK void (%p) (\"p\",)\n";
  for (const char* be : {"interp", "tcc", "cc"}) {
    INFO("backend " << be);
    backend::RunOptions o;
    o.backend = backend::parse_backend(be);
    interp::BufferMap b{{"a", data<int32_t>(dtypes::int32, {-2, 0, 2, 13, 3, -1})}, {"b", data<int32_t>(dtypes::int32, {29, 0, 29, 7, 40, 5})}};
    auto out = backend::run_graph(parse_graph(i32).root, b, o);
    const int32_t* p = out[0].value.data->as<int32_t>();
    CHECK(std::vector<int32_t>(p, p + 6) == std::vector<int32_t>{-536870912, 1, 536870912, 62748517, 689956897, -1});
    interp::BufferMap c{{"a", data<char8_t>(dtypes::uint8, {3, 2, 255})}, {"b", data<char8_t>(dtypes::uint8, {5, 8, 2})}};
    auto out8 = backend::run_graph(parse_graph(u8).root, c, o);
    const char8_t* q = out8[0].value.data->as<char8_t>();
    CHECK(std::vector<int>(q, q + 3) == std::vector<int>{243, 0, 1});
    CHECK_THAT(run_error(i32, {{"a", data<int32_t>(dtypes::int32, {1, 2, 3, 4, 5, 6})}, {"b", data<int32_t>(dtypes::int32, {1, 2, -3, 4, 5, 6})}}, be),
               Catch::Contains("integer POW with negative exponent -3") && Catch::Contains("POW int32"));
  }
}
