// The compile layer of the C backends (backends/compiler.h): tcc and cc must compile generated C
// so that it computes exactly what the interpreter computes (one rounding per op, the C library's
// math functions), cache what they compiled, and explain what went wrong.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <string>

#include "backends/c/c_code.h"
#include "backends/compiler.h"
#include "uop/error.h"

using namespace ow;
using namespace ow::backend;

namespace {

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

template <class F>
F fn(const Library& lib, const std::string& name) {
  return reinterpret_cast<F>(lib.symbol(name));
}

// A source no other test (or earlier run) compiled: the process cache and cc's disk cache miss.
std::string unique_source(const std::string& body) {
  static int n = 0;
  return "/* " + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + " " +
         std::to_string(n++) + " */\n" + body;
}

// Sets an environment variable for one scope, then restores it.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const std::string& n, const std::string& v) : name(n) {
    if (const char* o = std::getenv(n.c_str())) old = o;
    setenv(n.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old)
      setenv(name.c_str(), old->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};

const char* kMath = R"(float exp2f(float);
float log2f(float);
float sinf(float);
float sqrtf(float);
float powf(float, float);
double exp2(double);
double sin(double);
float k_exp2(float x) { return exp2f(x); }
float k_log2(float x) { return log2f(x); }
float k_sin(float x) { return sinf(x); }
float k_sqrt(float x) { return sqrtf(x); }
float k_pow(float x, float y) { return powf(x, y); }
double k_exp2d(double x) { return exp2(x); }
double k_sind(double x) { return sin(x); }
)";

const char* kConversions = R"(long long f2i(float x) { return (long long)x; }
unsigned long long f2u(float x) { return (unsigned long long)x; }
unsigned long long d2u(double x) { return (unsigned long long)x; }
float i2f(long long x) { return (float)x; }
float u2f(unsigned long long x) { return (float)x; }
double u2d(unsigned long long x) { return (double)x; }
int f2i32(float x) { return (int)x; }
unsigned f2u32(float x) { return (unsigned)x; }
float u322f(unsigned x) { return (float)x; }
)";

}  // namespace

TEST_CASE("backends: a*b+c rounds twice, never fused into an FMA", "[backends]") {
  for (const char* name : {"tcc", "cc"}) {
    INFO("compiler " << name);
    auto c = make_compiler(name);
    CHECK(c->name() == name);
    auto lib = c->compile("float axpb(float a, float b) { return a*b - 1.0f; }\n"
                          "float axpc(float a, float b, float c) { return a*b + c; }\n");
    // a*b = 1 + 2^-11 + 2^-24 exactly; rounded to float it is 1 + 2^-11 (a tie, to even).
    float a = 1.0f + std::ldexp(1.0f, -12), b = a;
    volatile float p = a * b;
    volatile float two_roundings = p - 1.0f;
    float fused = std::fma(a, b, -1.0f);
    REQUIRE(two_roundings == std::ldexp(1.0f, -11));
    REQUIRE(fused == std::ldexp(1.0f, -11) + std::ldexp(1.0f, -24));  // an FMA would be visible
    CHECK(bits(fn<float (*)(float, float)>(*lib, "axpb")(a, b)) == bits(two_roundings));
    float c3 = -(1.0f + std::ldexp(1.0f, -11));
    volatile float p2 = a * b;
    volatile float r2 = p2 + c3;
    CHECK(r2 == 0.0f);
    CHECK(std::fma(a, b, c3) == std::ldexp(1.0f, -24));
    CHECK(bits(fn<float (*)(float, float, float)>(*lib, "axpc")(a, b, c3)) == bits(0.0f));
  }
}

TEST_CASE("backends: math functions are the C library's, bit for bit", "[backends]") {
  const float xs[] = {-3.75f, -1.0f, -0.1f, 0.0f, 0.3f, 0.5f, 1.0f, 2.5f, 10.0f, 100.0f, 1e-30f, 88.7f, 12345.678f};
  for (const char* name : {"tcc", "cc"}) {
    INFO("compiler " << name);
    auto lib = make_compiler(name)->compile(kMath);
    auto e = fn<float (*)(float)>(*lib, "k_exp2");
    auto l = fn<float (*)(float)>(*lib, "k_log2");
    auto s = fn<float (*)(float)>(*lib, "k_sin");
    auto q = fn<float (*)(float)>(*lib, "k_sqrt");
    auto pw = fn<float (*)(float, float)>(*lib, "k_pow");
    auto ed = fn<double (*)(double)>(*lib, "k_exp2d");
    auto sd = fn<double (*)(double)>(*lib, "k_sind");
    for (float x : xs) {
      INFO("x = " << x);
      CHECK(bits(e(x)) == bits(std::exp2(x)));
      CHECK(bits(s(x)) == bits(std::sin(x)));
      if (x > 0) {
        CHECK(bits(l(x)) == bits(std::log2(x)));
        CHECK(bits(q(x)) == bits(std::sqrt(x)));
        CHECK(bits(pw(x, 1.7f)) == bits(std::pow(x, 1.7f)));
      } else if (x < 0) {
        CHECK(std::isnan(q(x)));
        CHECK(std::isnan(l(x)));
      }
      CHECK(ed(double(x) / 3) == std::exp2(double(x) / 3));
      CHECK(sd(double(x) / 3) == std::sin(double(x) / 3));
    }
    CHECK(e(3.0f) == 8.0f);
    CHECK(q(2.25f) == 1.5f);
  }
}

TEST_CASE("backends: conversions between floats and 64-bit integers", "[backends]") {
  for (const char* name : {"tcc", "cc"}) {
    INFO("compiler " << name);
    auto lib = make_compiler(name)->compile(kConversions);
    auto f2i = fn<long long (*)(float)>(*lib, "f2i");
    auto f2u = fn<unsigned long long (*)(float)>(*lib, "f2u");
    auto d2u = fn<unsigned long long (*)(double)>(*lib, "d2u");
    auto i2f = fn<float (*)(long long)>(*lib, "i2f");
    auto u2f = fn<float (*)(unsigned long long)>(*lib, "u2f");
    auto u2d = fn<double (*)(unsigned long long)>(*lib, "u2d");
    auto f2i32 = fn<int (*)(float)>(*lib, "f2i32");
    auto f2u32 = fn<unsigned (*)(float)>(*lib, "f2u32");
    auto u322f = fn<float (*)(unsigned)>(*lib, "u322f");
    CHECK(f2i(-2.75f) == -2);
    CHECK(f2i(3.0e18f) == static_cast<long long>(3.0e18f));
    CHECK(f2i(-9.2e18f) == static_cast<long long>(-9.2e18f));
    CHECK(f2u(2.75f) == 2u);
    CHECK(f2u(1.8e19f) == static_cast<unsigned long long>(1.8e19f));  // above 2^63
    CHECK(f2u(9.3e18f) == 0x81103d0000000000ull);  // 9.3e18f is exactly this
    CHECK(d2u(1.8446744073709550e19) == 18446744073709549568ull);
    CHECK(d2u(12345678901234.9) == 12345678901234ull);
    CHECK(i2f(-(1LL << 62) - 1) == -std::ldexp(1.0f, 62));
    CHECK(i2f(16777217) == 16777216.0f);  // 2^24 + 1: round to even
    CHECK(i2f(16777219) == 16777220.0f);
    // 2^63 + 2^39 + 1: above half an ulp (2^40) over 2^63, so it rounds up; rounding in two steps
    // (to 2^63 + 2^39, then a tie to even) would give 2^63.
    const unsigned long long sticky = (1ull << 63) + (1ull << 39) + 1;
    CHECK(u2f(sticky) == std::ldexp(1.0f, 63) + std::ldexp(1.0f, 40));
    CHECK(u2f(sticky) == static_cast<float>(sticky));
    CHECK(u2f(~0ull) == std::ldexp(1.0f, 64));
    CHECK(u2f(12345) == 12345.0f);
    CHECK(u2d(~0ull) == std::ldexp(1.0, 64));
    CHECK(u2d((1ull << 63) + 1025) == static_cast<double>((1ull << 63) + 1025));
    CHECK(u2d((1ull << 63) + 1025) == std::ldexp(1.0, 63) + 2048);
    CHECK(f2i32(-7.9f) == -7);
    CHECK(f2u32(4.0e9f) == 4000000000u);
    CHECK(u322f(4294967295u) == 4294967296.0f);
  }
}

TEST_CASE("backends: the compile cache returns the same library without compiling", "[backends]") {
  for (const char* name : {"tcc", "cc"}) {
    INFO("compiler " << name);
    auto c = make_compiler(name);
    std::string src = unique_source("int twice(int x) { return 2 * x; }\n");
    auto lib1 = c->compile(src);
    CompileStats s1 = c->stats();
    CHECK(s1.compiles == 1);
    CHECK(s1.cache_hits == 0);
    CHECK(s1.compile_seconds > 0);
    auto lib2 = c->compile(src);
    CHECK(lib1.get() == lib2.get());
    CompileStats s2 = c->stats();
    CHECK(s2.compiles == 1);
    CHECK(s2.cache_hits == 1);
    // The cache is process-wide: another compiler object of the same kind hits it too...
    auto other = make_compiler(name);
    CHECK(other->compile(src).get() == lib1.get());
    CHECK(other->stats().compiles == 0);
    CHECK(other->stats().cache_hits == 1);
    // ... and a different source is compiled.
    auto lib3 = c->compile(src + "int thrice(int x) { return 3 * x; }\n");
    CHECK(lib3.get() != lib1.get());
    CHECK(c->stats().compiles == 2);
    CHECK(fn<int (*)(int)>(*lib1, "twice")(21) == 42);
    CHECK(fn<int (*)(int)>(*lib3, "thrice")(5) == 15);
    // int32 overflow wraps (the cc tier compiles with -fwrapv).
    CHECK(fn<int (*)(int)>(*lib1, "twice")(0x40000000) == std::numeric_limits<int>::min());
    CHECK_THROWS_WITH(lib1->symbol("nope"), Catch::Contains("'nope'"));
  }
}

TEST_CASE("backends: the code of a C source is its text without comments, literals kept whole", "[backends]") {
  CHECK(code_of("a /* x */ b // c\nd") == "a   b  \nd");
  CHECK(code_of("s = \"// not a comment /* nor this */\"; // but this\n") == "s = \"// not a comment /* nor this */\";  \n");
  CHECK(code_of("c = '/'; e = '\\''; /* two\nlines */ f") == "c = '/'; e = '\\'';   f");
  CHECK(code_of("x // continued \\\nstill the comment\ny") == "x  \ny");
  CHECK(code_of("/* never closed") == " ");
  CHECK(code_of("\"never closed") == "\"never closed");
}

TEST_CASE("backends: a compile error names the line and shows the source", "[backends]") {
  const std::string src =
      "float ok(float x) { return x; }\n"
      "float bad(float x) {\n"
      "  return x + undeclared_y;\n"
      "}\n";
  for (const char* name : {"tcc", "cc"}) {
    INFO("compiler " << name);
    auto c = make_compiler(name);
    std::string msg;
    try {
      c->compile(unique_source(src));
    } catch (const Error& e) {
      msg = e.what();
    }
    INFO(msg);
    // unique_source adds one comment line: the bad line is line 4.
    CHECK_THAT(msg, Catch::Contains(":4:"));
    CHECK_THAT(msg, Catch::Contains("error"));
    CHECK_THAT(msg, Catch::Contains("   4 |   return x + undeclared_y;"));
    CHECK_THAT(msg, Catch::Contains("undeclared_y"));
    CHECK_THAT(msg, Catch::Contains("   2 | float ok(float x) { return x; }"));
    CHECK(c->stats().compiles == 0);
  }
  // A link error: a function the generated code declares but nobody defines.
  std::string msg;
  try {
    make_compiler("tcc")->compile(unique_source("float nosuch(float);\nfloat f(float x) { return nosuch(x); }\n"));
  } catch (const Error& e) {
    msg = e.what();
  }
  CHECK_THAT(msg, Catch::Contains("nosuch"));
}

TEST_CASE("backends: a missing C compiler and an unknown backend are clear errors", "[backends]") {
  {
    ScopedEnv env("OW_CC", "/nonexistent/cc");
    auto c = make_compiler("cc");
    CHECK_THROWS_WITH(c->compile(unique_source("int f(void) { return 1; }\n")),
                      Catch::Contains("the cc backend needs a C compiler: '/nonexistent/cc' was not found "
                                      "(set OW_CC or install gcc)"));
  }
  CHECK_THROWS_AS(make_compiler("foo"), Error);
  CHECK_THROWS_WITH(make_compiler("foo"), Catch::Contains("'foo'") && Catch::Contains("'tcc'") &&
                                              Catch::Contains("'cc'"));
}

// Not run by default: `test_backends "[.bench]"` prints compile latencies.
TEST_CASE("backends: compile latency", "[.bench]") {
  const std::string kernel = R"(float exp2f(float);
void k0(float* restrict out, const float* restrict a, const float* restrict b, int m1) {
  for (int r0 = 0; r0 < 64; r0++) {
    float acc = 0.0f;
    for (int r1 = 0; r1 < 32; r1++) {
      float x = a[r0 * 32 + r1] * b[r1 + m1 * 32];
      acc = acc + (x < 0.0f ? 0.0f : x);
    }
    out[r0] = exp2f(acc * 0.5f) + (float)(r0 & 3);
  }
}
)";
  for (const char* name : {"tcc", "cc"}) {
    auto c = make_compiler(name);
    const int n = name == std::string("tcc") ? 200 : 5;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) c->compile(unique_source(kernel));
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n;
    std::cout << name << ": " << dt * 1e3 << " ms per compile (" << n << " compiles of a " << kernel.size()
              << "-byte kernel)\n";
    auto t1 = std::chrono::steady_clock::now();
    std::string src = unique_source(kernel);
    c->compile(src);
    for (int i = 0; i < 1000; ++i) c->compile(src);
    std::cout << name << ": cache hit " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count()
              << " s for 1 compile + 1000 hits\n";
  }
}
