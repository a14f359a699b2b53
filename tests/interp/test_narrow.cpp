// int8, uint8, int16, uint16, float16, bfloat16, fp8e4m3, fp8e5m2 beyond the generated tables of
// tests/interp/narrow (every conversion and the arithmetic, run from the CLI): what the C code could get
// wrong by C's rules (int promotion, tcc's negation), the error messages, the simplifier's
// wrap-around, .npy and the printer. Expectations are hand-derived (two's complement, IEEE) or
// numpy's own output.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "backends/program.h"
#include "interp/compare.h"
#include "interp/format.h"
#include "interp/interp.h"
#include "interp/npy.h"
#include "tensor/tensor.h"
#include "test_support.h"
#include "uop/floats.h"
#include "uop/symbolic.h"
#include "uop/text.h"

using namespace ow;
using ow::test::error_of;

namespace {

template <class T> interp::BufferData data(DType d, std::vector<T> v) {
  auto s = std::make_shared<interp::Storage>(d, static_cast<int64_t>(v.size()));
  std::memcpy(s->bytes.data(), v.data(), v.size() * sizeof(T));
  return interp::BufferData{d, s, nullptr};
}

// The first output's elements as T, run on `backend`.
template <class T> std::vector<T> run(const std::string& text, interp::BufferMap inputs, const std::string& backend) {
  backend::RunOptions o;
  o.backend = backend::parse_backend(backend);
  auto out = backend::run_graph(parse_graph(text).root, inputs, o);
  interp::Value v = interp::contiguous(out.at(0).value);
  const T* p = reinterpret_cast<const T*>(std::as_const(*v.data).bytes.data());
  return std::vector<T>(p, p + v.numel());
}

std::string unary(const std::string& op, const std::string& dt, int n) {
  return "%a = BUFFER " + dt + " () (\"a\", " + std::to_string(n) + ")\n%y = " + op + " " + dt + " (%a)\n%s = SINK void (%y) (\"y\",)\n";
}
std::string binary(const std::string& op, const std::string& dt, int n) {
  return "%a = BUFFER " + dt + " () (\"a\", " + std::to_string(n) + ")\n%b = BUFFER " + dt + " () (\"b\", " + std::to_string(n) + ")\n%y = " + op + " " + dt +
         " (%a, %b)\n%s = SINK void (%y) (\"y\",)\n";
}

const char* const kBackends[] = {"interp", "tcc", "cc"};

}  // namespace

TEST_CASE("NEG flips the sign bit of a NaN on every backend (tcc compiled -x as a subtraction)", "[narrow][compiled]") {
  for (const char* be : kBackends) {
    INFO("backend " << be);
    auto f = run<uint32_t>(unary("NEG", "float32", 3), {{"a", data<uint32_t>(dtypes::float32, {0x7fc00000u, 0xffc00001u, 0})}}, be);
    CHECK(f == std::vector<uint32_t>{0xffc00000u, 0x7fc00001u, 0x80000000u});
    auto d = run<uint64_t>(unary("NEG", "float64", 1), {{"a", data<uint64_t>(dtypes::float64, {0x7ff8000000000000ull})}}, be);
    CHECK(d == std::vector<uint64_t>{0xfff8000000000000ull});
    // float16: widened (quiet), negated, rounded back: 0x7e00 -> 0xfe00, -0 -> +0
    auto h = run<uint16_t>(unary("NEG", "float16", 2), {{"a", data<uint16_t>(dtypes::float16, {0x7e00, 0x8000})}}, be);
    CHECK(h == std::vector<uint16_t>{0xfe00, 0x0000});
  }
}

TEST_CASE("8- and 16-bit integers wrap where C would promote to int", "[narrow][compiled]") {
  for (const char* be : kBackends) {
    INFO("backend " << be);
    // uint16 65535 * 65535 = 2^32 - 2^17 + 1, which is 1 modulo 2^16 (as int it overflows)
    CHECK(run<uint16_t>(binary("MUL", "uint16", 2), {{"a", data<uint16_t>(dtypes::uint16, {65535, 300})}, {"b", data<uint16_t>(dtypes::uint16, {65535, 300})}}, be) ==
          std::vector<uint16_t>{1, 24464});
    // int8: 100 + 100 = -56, -128 / -1 = -128, -128 % -1 = 0, -7 / 2 = -3
    CHECK(run<int8_t>(binary("ADD", "int8", 2), {{"a", data<int8_t>(dtypes::int8, {100, -128})}, {"b", data<int8_t>(dtypes::int8, {100, -1})}}, be) ==
          std::vector<int8_t>{-56, 127});
    CHECK(run<int8_t>(binary("IDIV", "int8", 2), {{"a", data<int8_t>(dtypes::int8, {-128, -7})}, {"b", data<int8_t>(dtypes::int8, {-1, 2})}}, be) ==
          std::vector<int8_t>{-128, -3});
    CHECK(run<int8_t>(binary("MOD", "int8", 2), {{"a", data<int8_t>(dtypes::int8, {-128, -7})}, {"b", data<int8_t>(dtypes::int8, {-1, 2})}}, be) ==
          std::vector<int8_t>{0, -1});
    // a comparison of a wrapped sum sees the wrapped value: uint8 200 + 100 = 44 < 50
    std::string cmp =
        "%a = BUFFER uint8 () (\"a\", 1)\n%b = BUFFER uint8 () (\"b\", 1)\n%c = CONST uint8 () 50\n%y = ADD uint8 (%a, %b)\n%l = CMPLT bool (%y, %c)\n%s = SINK void (%l) (\"l\",)\n";
    CHECK(run<uint8_t>(cmp, {{"a", data<uint8_t>(dtypes::uint8, {200})}, {"b", data<uint8_t>(dtypes::uint8, {100})}}, be) == std::vector<uint8_t>{1});
  }
}

TEST_CASE("narrow integer errors name the width, the same on every backend", "[narrow]") {
  for (const char* be : kBackends) {
    INFO("backend " << be);
    backend::RunOptions o;
    o.backend = backend::parse_backend(be);
    interp::BufferMap shl{{"a", data<int8_t>(dtypes::int8, {1, 1})}, {"b", data<int8_t>(dtypes::int8, {7, 8})}};
    CHECK_THAT(error_of([&] { backend::run_graph(parse_graph(binary("SHL", "int8", 2)).root, shl, o); }), Catch::Contains("shift count 8 outside [0, 8)"));
    interp::BufferMap shr{{"a", data<uint16_t>(dtypes::uint16, {1, 1})}, {"b", data<uint16_t>(dtypes::uint16, {15, 16})}};
    CHECK_THAT(error_of([&] { backend::run_graph(parse_graph(binary("SHR", "uint16", 2)).root, shr, o); }), Catch::Contains("shift count 16 outside [0, 16)"));
    interp::BufferMap div{{"a", data<int16_t>(dtypes::int16, {1, 1})}, {"b", data<int16_t>(dtypes::int16, {1, 0})}};
    CHECK_THAT(error_of([&] { backend::run_graph(parse_graph(binary("IDIV", "int16", 2)).root, div, o); }), Catch::Contains("integer division by zero"));
  }
}

TEST_CASE("the simplifier folds narrow integer constants with wrap-around", "[narrow][symbolic]") {
  UOp a = UOp::int_const(dtypes::int8, 100);
  UOp s = simplify(a.alu(Ops::ADD, {a}));
  REQUIRE(s->op == Ops::CONST);
  CHECK(s->arg.as<int64_t>() == -56);
  UOp u = UOp::int_const(dtypes::uint16, 65535);
  UOp p = simplify(u.alu(Ops::MUL, {u}));
  REQUIRE(p->op == Ops::CONST);
  CHECK(p->arg.as<int64_t>() == 1);
}

TEST_CASE("CONSTs of narrow dtypes: range checks and the value a float CONST holds", "[narrow][verify]") {
  auto verify = [](const std::string& dt, const std::string& v) {
    return error_of([&] { verify_parsed(parse_graph("%c = CONST " + dt + " () " + v + "\n%s = SINK void (%c) (\"c\",)\n", "c.uop")); });
  };
  CHECK_THAT(verify("int8", "200"), Catch::Contains("value 200 does not fit int8"));
  CHECK(verify("int8", "-128") == "(no error)");
  CHECK(verify("uint8", "-1") == "(no error)");  // modulo 2^8, as uint32 takes -1
  CHECK_THAT(verify("uint8", "256"), Catch::Contains("does not fit uint8"));
  // a float16 CONST holds the nearest float16: 0.1 -> 0.0999755859375 (0x2e66)
  CHECK(UOp::cnst(dtypes::float16, 0.1).const_value() == 0.0999755859375);
  // fp8e4m3 saturates: 1000 -> 448; fp8e5m2: 1e6 -> 57344
  CHECK(UOp::cnst(dtypes::fp8e4m3, 1000.0).const_value() == 448.0);
  CHECK(UOp::cnst(dtypes::fp8e5m2, 1e6).const_value() == 57344.0);
}

TEST_CASE(".npy: numpy's narrow dtypes, and bfloat16/fp8 as bits in a named field", "[narrow][npy]") {
  std::string text = "%a = BUFFER bfloat16 () (\"a\", 3)\n%s = SINK void (%a) (\"a\",)\n";
  interp::BufferMap b{{"a", data<uint16_t>(dtypes::bfloat16, {0x3f80, 0xff81, 0x0001})}};  // 1, a negative sNaN, the smallest subnormal
  auto out = interp::run(parse_graph(text).root, b);
  std::string bytes = interp::npy_bytes(out[0].value);
  CHECK_THAT(bytes, Catch::Contains("{'descr': [('bfloat16', '<u2')], 'fortran_order': False, 'shape': (3,), }"));
  interp::NpyArray back = interp::parse_npy(bytes, "a.npy");
  REQUIRE(back.dtype == dtypes::bfloat16);
  CHECK(std::memcmp(back.data->bytes.data(), b["a"].data->bytes.data(), 6) == 0);  // the signalling NaN stays one
  // float32 data converts into a bfloat16 buffer only where every element is exact
  auto f32 = std::make_shared<interp::Storage>(dtypes::float32, 2);
  f32->as<float>()[0] = 1.5f;
  f32->as<float>()[1] = 1.1f;
  interp::NpyArray a{"'<f4'", dtypes::float32, {2}, f32};
  CHECK_THAT(error_of([&] { interp::npy_as(a, dtypes::bfloat16, "x.npy", "a"); }), Catch::Contains("element 1: 1.1"));
  f32->as<float>()[1] = -0.0f;
  interp::StoragePtr s = interp::npy_as(a, dtypes::bfloat16, "x.npy", "a");
  CHECK(s->as<uint16_t>()[0] == 0x3fc0);
  CHECK(s->as<uint16_t>()[1] == 0x8000);
}

TEST_CASE("float16 prints as numpy prints it; bfloat16 and fp8 by the same shortest-digits rule", "[narrow][format]") {
  // numpy 1.24: np.array([1, 65504, -0.0, 300.5], np.float16) + np.float16(0.1)
  std::string text = "%a = BUFFER float16 () (\"a\", 4)\n%c = CONST float16 () 0.1\n%y = ADD float16 (%a, %c)\n%s = SINK void (%y) (\"y\",)\n";
  interp::BufferMap b{{"a", data<uint16_t>(dtypes::float16, {0x3c00, 0x7bff, 0x8000, 0x5cb2})}};
  auto out = interp::run(parse_graph(text).root, b);
  CHECK(interp::format_array(out[0].value) == "[1.100e+00 6.550e+04 9.998e-02 3.005e+02]");
  // bfloat16 0x3dcd is 0.10009765625: "0.1" reads back to it in bfloat16
  CHECK(interp::format_element(fp::to_float(fp::kBFloat16, 0x3dcd), dtypes::bfloat16) == "0.1");
}

TEST_CASE("Tensor dtype promotion of the narrow dtypes is tinygrad's least_upper_dtype", "[narrow][tensor]") {
  // (a, b, what tinygrad 278ca0388b's least_upper_dtype(a, b) gives)
  const DType table[][3] = {
      {dtypes::int8, dtypes::uint8, dtypes::int16},         {dtypes::uint8, dtypes::int16, dtypes::int16},
      {dtypes::uint16, dtypes::int8, dtypes::int32},        {dtypes::float16, dtypes::bfloat16, dtypes::float32},
      {dtypes::fp8e4m3, dtypes::fp8e5m2, dtypes::float16},  {dtypes::int64, dtypes::fp8e5m2, dtypes::fp8e5m2},
      {dtypes::uint16, dtypes::float16, dtypes::float16},   {dtypes::bool_, dtypes::fp8e4m3, dtypes::fp8e4m3},
      {dtypes::int32, dtypes::bfloat16, dtypes::bfloat16},  {dtypes::uint8, dtypes::uint32, dtypes::uint32},
      {dtypes::int8, dtypes::float64, dtypes::float64},
  };
  for (const auto& [a, b, want] : table) {
    INFO(to_string(a) << " with " << to_string(b));
    CHECK((Tensor::full({2}, 1, a) + Tensor::full({2}, 1, b)).dtype() == want);
    CHECK((Tensor::full({2}, 1, b) + Tensor::full({2}, 1, a)).dtype() == want);
  }
}
