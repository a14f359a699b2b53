// Poison masks keep a count of their set elements (Storage::nonzero) so the interpreter answers
// "is any of this buffer poison?" in O(1) per read. These tests compare every O(1) answer with a
// brute-force scan after random slice writes through random views.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <utility>

#include "interp/value.h"

using namespace ow;
using namespace ow::interp;

namespace {

int64_t brute_count(const Storage& s) {
  int64_t n = 0;
  for (int64_t i = 0; i < s.size; ++i) n += s.as<uint8_t>()[i] != 0;
  return n;
}

bool brute_any(const Value& v, const StoragePtr& mask) {
  for (int64_t f = 0; f < v.numel(); ++f)
    if (std::as_const(*mask).as<uint8_t>()[v.view.offset_of(unflatten(v.shape(), f))]) return true;
  return false;
}

// A random view of a (4, 5, 6) contiguous value: permuted, flipped and shrunk, sometimes whole.
Value random_view(const Value& base, std::mt19937& rng) {
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  Value v = reshape_view(base, {4, 5, 6});
  std::vector<int64_t> perm{0, 1, 2};
  std::shuffle(perm.begin(), perm.end(), rng);
  v = permute_view(v, perm);
  v = flip_view(v, {pick(2) == 0, pick(2) == 0, pick(2) == 0});
  if (pick(4) == 0) return v;  // the whole storage
  std::vector<std::pair<int64_t, int64_t>> b;
  for (int64_t n : v.shape()) {
    int64_t lo = pick(n), hi = lo + 1 + pick(n - lo);
    b.push_back({lo, hi});
  }
  return shrink_view(v, b);
}

Value random_mask_value(const std::vector<int64_t>& shape, std::mt19937& rng, int density) {
  Value v = alloc(dtypes::float32, shape);
  v.poison = std::make_shared<Storage>(dtypes::bool_, v.numel());
  for (int64_t i = 0; i < v.numel(); ++i) v.poison->as<uint8_t>()[i] = static_cast<int>(rng() % 100) < density;
  return v;
}

}  // namespace

TEST_CASE("poison counts: slice writes keep a buffer mask's count equal to a full rescan") {
  std::mt19937 rng(12345);
  for (int round = 0; round < 20; ++round) {
    Value buf = random_mask_value({120}, rng, 50);
    REQUIRE(buf.poison->nonzero() == brute_count(*buf.poison));  // counted once
    for (int step = 0; step < 60; ++step) {
      Value place = random_view(buf, rng);
      int kind = static_cast<int>(rng() % 3);  // clean source, poisoned source, unshaped scalar
      Value src = kind == 2 ? scalar(dtypes::float32, 1.0) : kind == 1 ? random_mask_value(place.shape(), rng, 30) : alloc(dtypes::float32, place.shape());
      write_through(place, src);
      REQUIRE(place.poison == buf.poison);
      REQUIRE(buf.poison->nonzero_if_known() >= 0);  // kept, not forgotten
      CHECK(buf.poison->nonzero_if_known() == brute_count(*buf.poison));
      Value probe = random_view(buf, rng);
      CHECK(mask_any(probe, buf.poison) == brute_any(probe, buf.poison));
      CHECK(mask_any(buf, buf.poison) == (brute_count(*buf.poison) > 0));
    }
  }
}

TEST_CASE("poison counts: whole-storage views use the count; broadcast and partial views scan") {
  std::mt19937 rng(7);
  Value v = random_mask_value({24}, rng, 0);
  v.poison->as<uint8_t>()[17] = 1;
  Value grid = reshape_view(v, {4, 6});
  for (const Value& w : {grid, permute_view(grid, {1, 0}), flip_view(grid, {true, false}), flip_view(permute_view(grid, {1, 0}), {true, true})})
    CHECK(mask_any(w, v.poison));
  CHECK(v.poison->nonzero_if_known() == 1);
  Value row = shrink_view(grid, {{0, 1}, {0, 6}});  // row 0 is clean
  CHECK_FALSE(mask_any(row, v.poison));
  CHECK(mask_any(expand_view(shrink_view(grid, {{2, 3}, {0, 6}}), {5, 6}), v.poison));  // row 2 holds element 17, broadcast
  CHECK_FALSE(mask_any(expand_view(row, {5, 6}), v.poison));
  CHECK(mask_count(grid, v.poison) == 1);
  Value empty = shrink_view(grid, {{1, 1}, {0, 6}});
  CHECK_FALSE(mask_any(empty, v.poison));
}

TEST_CASE("poison counts: writable access forgets the count, copies and set_mask_element keep it") {
  Storage s(dtypes::bool_, 10);
  CHECK(s.nonzero_if_known() == -1);  // a fresh storage may still be filled through bytes.data()
  CHECK(s.nonzero() == 0);
  s.set_mask_element(3, true);
  s.set_mask_element(3, true);
  s.set_mask_element(4, true);
  CHECK(s.nonzero_if_known() == 2);
  s.set_mask_element(3, false);
  CHECK(s.nonzero_if_known() == 1);
  Storage copy(s);
  CHECK(copy.nonzero_if_known() == 1);
  s.as<uint8_t>()[0] = 1;  // a write through as<T>() the count cannot follow
  CHECK(s.nonzero_if_known() == -1);
  CHECK(s.nonzero() == 2);
  CHECK(copy.nonzero_if_known() == 1);
}

TEST_CASE("poison counts: a buffer's mask count after writes through a non-injective view is recounted, not guessed") {
  Value dst = alloc(dtypes::float32, {6});
  dst.poison = std::make_shared<Storage>(dtypes::bool_, 6);
  std::fill(dst.poison->as<uint8_t>(), dst.poison->as<uint8_t>() + 6, uint8_t{1});
  REQUIRE(dst.poison->nonzero() == 6);
  // A stride-0 view over element 2 (never a STORE target; write_through must still stay exact).
  Value bcast = dst;
  bcast.view.shape = {3};
  bcast.view.strides = {0};
  bcast.view.offset = 2;
  write_through(bcast, alloc(dtypes::float32, {3}));
  CHECK(dst.poison->nonzero() == brute_count(*dst.poison));
  CHECK(dst.poison->nonzero() == 5);
}
