// The value printer (src/interp/format.h) against numpy's own str() of the same arrays
// (reference/format/make_format.py wrote each .npy and the .txt numpy printed for it).
#include <catch2/catch.hpp>

#include <filesystem>

#include "interp/format.h"
#include "interp/npy.h"
#include "test_support.h"

using namespace ow;
using namespace ow::interp;
using namespace ow::dtypes;

namespace {
Value from_npy(const std::filesystem::path& p) {
  NpyArray a = load_npy(p.string());
  Value v;
  v.dtype = a.dtype;
  v.view = View::contiguous(a.shape);
  v.data = a.data;
  return v;
}
}  // namespace

TEST_CASE("format_array prints every reference array exactly as numpy does", "[format]") {
  auto dir = test::source_root() / "reference" / "format";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".npy") continue;
    auto txt = entry.path();
    txt.replace_extension(".txt");
    std::string want = test::slurp(txt);
    INFO(entry.path().filename().string());
    CHECK(format_array(from_npy(entry.path())) + "\n" == want);
    ++checked;
  }
  CHECK(checked == 21);
}

TEST_CASE("format_array shows poison, honours --full and --precision", "[format]") {
  Value v = alloc(float32, {2, 2});
  for (int i = 0; i < 4; ++i) v.data->as<float>()[i] = 0.5f * static_cast<float>(i);
  v.poison = std::make_shared<Storage>(bool_, 4);
  v.poison->as<uint8_t>()[1] = 1;
  CHECK(format_array(v) == "[[   0.  poison]\n [   1.     1.5]]");
  CHECK(format_header(v) == "float32 (2, 2), 1 of 4 elements poison");

  Value third = scalar(float64, 1.0 / 3.0, false);
  FormatOptions o;
  o.precision = 3;
  CHECK(format_array(third, o) == "0.333");
  CHECK(format_element(1.0 / 3.0, float64, 3) == "0.333");

  Value long_v = alloc(int32, {1001});
  CHECK(format_array(long_v).find("...") != std::string::npos);
  o = {};
  o.full = true;
  std::string full = format_array(long_v, o);
  CHECK(full.find("...") == std::string::npos);
  CHECK(std::count(full.begin(), full.end(), '0') == 1001);
}
