// backend::Program: a lowered program prepared once and run many times, on every backend.
// Expected values are computed here in plain C++ (one rounding per operation, forced through
// volatile so the compiler cannot fuse them) or derived by hand.
#include <catch2/catch.hpp>

#include "test_support.h"

#include "backends/program.h"
#include "lower/lower.h"
#include "uop/text.h"

using namespace ow;
using ow::test::error_of;

namespace {

const char* kAxpb = R"(%0 = BUFFER float32 () ("a", 1000)
%1 = BUFFER float32 () ("b", 1000)
%2 = MUL float32 (%0, %1)
%3 = CONST float32 () 1.0
%4 = ADD float32 (%2, %3)
%5 = SINK void (%4) ("c",)
)";

// Row sums of a 4x8 matrix: the lowered program accumulates in a private temporary.
const char* kRowSums = R"(%0 = BUFFER float32 () ("m", 32)
%1 = CONST index () 4
%2 = CONST index () 8
%3 = RESHAPE float32 (%0, %1, %2)
%4 = REDUCE_AXIS float32 (%3) (Ops.ADD, (1,))
%5 = SINK void (%4) ("s",)
)";

interp::BufferData floats(int64_t n, float (*f)(int64_t)) {
  auto s = std::make_shared<interp::Storage>(dtypes::float32, n);
  for (int64_t i = 0; i < n; ++i) s->as<float>()[i] = f(i);
  return {dtypes::float32, s, nullptr};
}

float axpb(float a, float b) {
  volatile float p = a * b;
  return p + 1.0f;
}

void require_axpb(const interp::Value& c, const interp::BufferMap& in) {
  REQUIRE(c.numel() == 1000);
  const float *a = in.at("a").data->as<float>(), *b = in.at("b").data->as<float>();
  int64_t bad = -1;
  for (int64_t i = 0; i < 1000 && bad < 0; ++i)
    if (interp::get_element(c, i) != axpb(a[i], b[i])) bad = i;
  INFO("first wrong element " << bad);
  CHECK(bad == -1);
}

UOp lowered(const char* text) { return lower::lower(parse_graph(text, "<test>").root); }

const char* kBackends[] = {"interp", "tcc", "cc", "check"};

}  // namespace

TEST_CASE("Program: runs again on new inputs, and earlier results stay as they were", "[program]") {
  for (const char* be : kBackends) {
    INFO("backend " << be);
    backend::RunOptions o;
    o.backend = be;
    backend::Program p(lowered(kAxpb), o);
    interp::BufferMap in{{"a", floats(1000, [](int64_t i) { return 0.1f * float(i); })}, {"b", floats(1000, [](int64_t i) { return 3.0f - 0.01f * float(i); })}};
    std::vector<interp::Output> first = p.run(in);
    REQUIRE(first.size() == 1);
    CHECK(first[0].name == "c");
    require_axpb(first[0].value, in);
    interp::BufferMap in2{{"a", floats(1000, [](int64_t i) { return -0.5f * float(i); })}, {"b", in["b"]}};
    std::vector<interp::Output> second = p.run(in2);
    require_axpb(second[0].value, in2);
    require_axpb(first[0].value, in);  // the first result was handed over, not reused
    CHECK(first[0].value.data != second[0].value.data);
  }
}

TEST_CASE("Program: an output is written in place into a caller's buffer of its name (out=)", "[program]") {
  for (const char* be : kBackends) {
    INFO("backend " << be);
    backend::RunOptions o;
    o.backend = be;
    backend::Program p(lowered(kAxpb), o);
    interp::BufferMap in{{"a", floats(1000, [](int64_t i) { return float(i % 17) - 8.0f; })},
                         {"b", floats(1000, [](int64_t i) { return 0.25f * float(i % 5); })},
                         {"c", floats(1000, [](int64_t) { return -99.0f; })}};
    const interp::StoragePtr out = in["c"].data;
    for (int run = 0; run < 2; ++run) {
      in["a"].data->as<float>()[7] = float(run) * 3.0f;  // a new input value each run
      std::vector<interp::Output> got = p.run(in);
      CHECK(got[0].value.data == out);
      CHECK(in["c"].data == out);
      require_axpb(got[0].value, in);
      CHECK(out->as<float>()[7] == axpb(float(run) * 3.0f, in["b"].data->as<float>()[7]));
    }
  }
}

TEST_CASE("Program: out= of the wrong size or dtype is an error naming the output", "[program]") {
  backend::Program p(lowered(kAxpb), {});
  interp::BufferMap in{{"a", floats(1000, [](int64_t) { return 1.0f; })}, {"b", floats(1000, [](int64_t) { return 2.0f; })}, {"c", floats(999, [](int64_t) { return 0.0f; })}};
  std::string e = error_of([&] { p.run(in); });
  CHECK_THAT(e, Catch::Contains("output 'c'") && Catch::Contains("999 float32") && Catch::Contains("1000 float32"));
  in.erase("c");  // and the failed run left nothing behind: the next run makes a fresh output
  std::vector<interp::Output> got = p.run(in);
  CHECK(interp::get_element(got[0].value, 999) == 3.0);
}

TEST_CASE("Program: kept temporaries do not leak one run's sums into the next", "[program]") {
  for (const char* be : kBackends) {
    INFO("backend " << be);
    backend::RunOptions o;
    o.backend = be;
    backend::Program p(lowered(kRowSums), o);
    for (int run = 1; run <= 3; ++run) {
      // m[r][k] = run * (r + 1): row r sums to 8 * run * (r + 1), exactly.
      interp::BufferMap in{{"m", floats(32, [](int64_t i) { return float(i / 8 + 1); })}};
      for (int64_t i = 0; i < 32; ++i) in["m"].data->as<float>()[i] *= float(run);
      std::vector<interp::Output> got = p.run(in);
      REQUIRE(got[0].value.numel() == 4);
      for (int64_t r = 0; r < 4; ++r) CHECK(interp::get_element(got[0].value, r) == 8.0 * run * double(r + 1));
    }
  }
}

TEST_CASE("Program: a kernel that cannot be compiled fails when the program is prepared", "[program]") {
  // float16 is not rendered by the C backend: the error comes from the constructor, not a run.
  const char* half = R"(%0 = BUFFER float16 () ("h", 4)
%1 = CONST float16 () 1.0
%2 = ADD float16 (%0, %1)
%3 = SINK void (%2) ("o",)
)";
  UOp prog = lowered(half);
  CHECK_THAT(error_of([&] { backend::Program(prog, {}); }), Catch::Contains("float16"));
}
