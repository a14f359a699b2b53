// REDUCE_AXIS over a value no one stores (SEMANTICS S3.4, interp/virtual_fold.h): tinygrad's
// cumsum window, folded a run at a time, gives the materialized fold's bits, and graphs whose
// window has more than 2^32 elements run in bounded memory. Expectations are hand-derived
// (a cumsum of ones is 1..n; sums modulo 2^bits; float32 stops counting at 2^24) or the
// interpreter materializing the same operand.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "interp/compare.h"
#include "interp/interp.h"
#include "tensor/tensor.h"
#include "test_support.h"

using namespace ow;
using ow::test::error_of;

namespace {

// tinygrad's Tensor._cumalu window over x of shape (n,): row i is x shifted right by i (zeros
// shifted in); REDUCE_AXIS(op) over each row gives the inclusive scan of x.
Tensor window_fold(const Tensor& x, int64_t n, Ops op, bool flip = false) {
  Tensor w = x.pad({std::pair<Dim, Dim>{n - 1, 0}})
                 .reshape({1, 2 * n - 1})
                 .expand({n + 1, 2 * n - 1})
                 .reshape({(n + 1) * (2 * n - 1)})
                 .shrink({std::pair<Dim, Dim>{0, 2 * n * n}})
                 .reshape({n, 2 * n})
                 .shrink({std::pair<Dim, Dim>{0, n}, std::pair<Dim, Dim>{0, n}})
                 .permute({1, 0});
  if (flip) w = w.flip({1});
  Tensor r(UOp::make(Ops::REDUCE_AXIS, x.dtype(), {w.uop()}, Arg(ArgTuple{Arg(op), Arg(ArgTuple{Arg(int64_t{1})})})));
  return r.reshape({n});
}

interp::Value run(const Tensor& t, int64_t virtual_min, interp::BufferMap inputs = {}) {
  interp::Options o;
  o.virtual_fold_min = virtual_min;
  return interp::run(UOp::sink({t.uop()}, Arg(ArgTuple{Arg(std::string("out"))})), inputs, o).at(0).value;
}

template <class T> std::vector<T> elements(const interp::Value& v) {
  interp::Value c = interp::contiguous(v);
  const T* p = std::as_const(*c.data).as<T>();
  return std::vector<T>(p, p + c.numel());
}

// Folded virtually and materialized: the same bits.
void same_both_ways(const Tensor& t, interp::BufferMap inputs = {}) {
  interp::Value folded = run(t, 0, inputs), stored = run(t, -1, inputs);
  auto d = interp::first_difference(stored, folded);
  INFO("element " << (d ? d->index : -2) << ": " << (d ? d->a : 0) << " materialized vs " << (d ? d->b : 0));
  CHECK(!d);
}

interp::BufferData floats(std::vector<float> v) {
  auto s = std::make_shared<interp::Storage>(dtypes::float32, static_cast<int64_t>(v.size()));
  std::memcpy(s->bytes.data(), v.data(), v.size() * sizeof(float));
  return interp::BufferData{dtypes::float32, s, nullptr};
}

}  // namespace

TEST_CASE("tinygrad's arange window is folded without materializing it", "[virtual]") {
  SECTION("int32 ones: 1..n, as materialized") {
    Tensor t = window_fold(Tensor::ones({300}, dtypes::int32), 300, Ops::ADD);
    std::vector<int32_t> got = elements<int32_t>(run(t, 0));
    for (int32_t i = 0; i < 300; ++i) CHECK(got[static_cast<size_t>(i)] == i + 1);
    same_both_ways(t);
  }
  SECTION("a window of 2*10^10 elements: stored it is over the limit, folded it is 1..n") {
    const int64_t n = 100000;
    Tensor t = window_fold(Tensor::ones({n}, dtypes::int32), n, Ops::ADD);
    std::vector<int32_t> got = elements<int32_t>(run(t, int64_t{1} << 22));  // the default
    bool all = true;
    for (int64_t i = 0; i < n; ++i) all = all && got[static_cast<size_t>(i)] == i + 1;
    CHECK(all);
    CHECK_THAT(error_of([&] { run(t, -1); }), Catch::Contains("over the limit of 2^32 stored elements"));
  }
  SECTION("float sums: exact ones in closed form, inexact ones term by term") {
    for (double c : {1.0, 0.25, 3.0, 0.1, -1.7e-3, 1e30}) {
      INFO("c = " << c);
      same_both_ways(window_fold(Tensor::full({257}, c, dtypes::float32), 257, Ops::ADD));
      same_both_ways(window_fold(Tensor::full({130}, c, dtypes::float64), 130, Ops::ADD));
    }
    std::vector<float> got = elements<float>(run(window_fold(Tensor::full({3000}, 0.5, dtypes::float32), 3000, Ops::ADD), 0));
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == 0.5f * static_cast<float>(i + 1));
  }
  SECTION("integer sums and products wrap modulo 2^bits") {
    std::vector<int8_t> s8 = elements<int8_t>(run(window_fold(Tensor::full({300}, 100, dtypes::int8), 300, Ops::ADD), 0));
    for (int i = 0; i < 300; ++i) CHECK(s8[static_cast<size_t>(i)] == static_cast<int8_t>(static_cast<uint8_t>((100 * (i + 1)) & 0xff)));
    std::vector<uint32_t> p = elements<uint32_t>(run(window_fold(Tensor::full({100}, 3, dtypes::uint32), 100, Ops::MUL), 0));
    uint32_t all = 1;  // row i holds 99-i padding zeros: only the last row's product is not 0
    for (int i = 0; i < 100; ++i) all *= 3u;
    for (int i = 0; i < 99; ++i) CHECK(p[static_cast<size_t>(i)] == 0);
    CHECK(p[99] == all);
    same_both_ways(window_fold(Tensor::full({300}, 100, dtypes::int8), 300, Ops::ADD));
    same_both_ways(window_fold(Tensor::full({100}, 3, dtypes::uint32), 100, Ops::MUL));
    same_both_ways(window_fold(Tensor::full({100}, 7, dtypes::int64), 100, Ops::MAX, true));
  }
  SECTION("real data: strided reads of the leaf, flipped, MAX with NaN") {
    std::vector<float> x(200);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 0.37f) * 100.0f;
    x[77] = std::nanf("");
    interp::BufferMap in{{"x", floats(x)}};
    Tensor t = Tensor::empty({200}, dtypes::float32, "x");
    same_both_ways(window_fold(t, 200, Ops::ADD), in);
    same_both_ways(window_fold(t * 2.0f + 1.0f, 200, Ops::MAX, true), in);
    same_both_ways(window_fold(t, 200, Ops::MUL, true), in);
  }
}

TEST_CASE("a leaf read at one element per run: what is computed from it follows the element", "[virtual]") {
  // Row i of (x*2+1) broadcast along 64 columns, padded with 3 zero columns on each side: every
  // run reads one element of x (or the fill), so the fold keeps the ALU's value from run to run
  // only while the element read is the same one. Row sums are 64*(2x+1), exact for these x.
  std::vector<float> x(300);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 13) - 6.0f;
  x[5] = x[4];  // equal values at different elements
  interp::BufferMap in{{"x", floats(x)}};
  Tensor xs = Tensor::empty({300}, dtypes::float32, "x");
  Tensor rows = (xs.reshape({300, 1}).expand({300, 64}) * 2.0f + 1.0f).pad({std::pair<Dim, Dim>{0, 0}, std::pair<Dim, Dim>{3, 3}});
  Tensor t(UOp::make(Ops::REDUCE_AXIS, dtypes::float32, {rows.uop()}, Arg(ArgTuple{Arg(Ops::ADD), Arg(ArgTuple{Arg(int64_t{1})})})));
  std::vector<float> got = elements<float>(run(t, 0, in));
  REQUIRE(got.size() == x.size());
  for (size_t i = 0; i < x.size(); ++i) CHECK(got[i] == 64.0f * (2.0f * x[i] + 1.0f));
  same_both_ways(t, in);
}

TEST_CASE("a float32 count stops at 2^24, folded in closed form or not", "[virtual]") {
  // 2^24 + 1 is not a float32: 2^24 + 1 rounds to 2^24 (ties to even), so the sequential sum of
  // 2^24 + 5 ones is 2^24.
  const int64_t n = (int64_t{1} << 24) + 5;
  Tensor ones = Tensor::full({1}, 1.0, dtypes::float32).expand({n});
  Tensor t(UOp::make(Ops::REDUCE_AXIS, dtypes::float32, {(ones * Tensor::full({n}, 1.0, dtypes::float32)).uop()},
                     Arg(ArgTuple{Arg(Ops::ADD), Arg(ArgTuple{Arg(int64_t{0})})})));
  CHECK(elements<float>(run(t, 0)).at(0) == 16777216.0f);
}

TEST_CASE("a window over a buffer given no data is the same error both ways", "[virtual]") {
  Tensor t = window_fold(Tensor::empty({50}, dtypes::float32, "never_given"), 50, Ops::ADD);
  std::string folded = error_of([&] { run(t, 0); }), stored = error_of([&] { run(t, -1); });
  CHECK_THAT(folded, Catch::Contains("was given no data"));
  CHECK(folded == stored);
}

TEST_CASE("an element that fails fails folded too, though the fold never reads it", "[virtual]") {
  // 3^-1 has no int32 value (S2.1): materialized, the POW fails on the element the SHRINK drops;
  // folded, the POW is evaluated whole (can_fail), so it fails the same way.
  auto e = std::make_shared<interp::Storage>(dtypes::int32, 4);
  const int32_t exps[4] = {2, 1, 0, -1};
  std::memcpy(e->bytes.data(), exps, sizeof exps);
  interp::BufferMap in{{"e", interp::BufferData{dtypes::int32, e, nullptr}}};
  Tensor p(UOp::make(Ops::POW, dtypes::int32, {Tensor::full({4}, 3, dtypes::int32).uop(), Tensor::empty({4}, dtypes::int32, "e").uop()}));
  Tensor x = p.shrink({std::pair<Dim, Dim>{0, 3}});
  Tensor t(UOp::make(Ops::REDUCE_AXIS, dtypes::int32, {x.uop()}, Arg(ArgTuple{Arg(Ops::ADD), Arg(ArgTuple{Arg(int64_t{0})})})));
  std::string folded = error_of([&] { run(t, 0, in); }), stored = error_of([&] { run(t, -1, in); });
  CHECK_THAT(stored, Catch::Contains("negative exponent -1"));
  CHECK(folded == stored);
}
