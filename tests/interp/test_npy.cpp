// .npy files read from disk (load_npy: the header, then the data straight into the storage) must
// give exactly what the in-memory reader (parse_npy: element by element) gives for the same
// bytes, errors included; and save_npy writes exactly npy_bytes.
#include <catch2/catch.hpp>

#include "child_process.h"
#include "test_support.h"

#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "interp/npy.h"

using namespace ow;
using namespace ow::interp;
namespace fs = std::filesystem;

namespace {

// A file as numpy writes it (format `version`, header padded to 64) around `raw` data.
std::string npy(const std::string& descr, const std::string& shape, const std::string& raw, int version = 1, const std::string& order = "False") {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
  size_t len_size = version == 1 ? 2 : 4, total = 8 + len_size + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  for (size_t i = 0; i < len_size; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + raw;
}

template <class T> std::string bytes_of(std::initializer_list<T> xs) {
  std::string s;
  for (T x : xs) s.append(reinterpret_cast<const char*>(&x), sizeof x);
  return s;
}

std::string reversed_each(const std::string& raw, size_t size) {
  std::string s = raw;
  for (size_t i = 0; i + size <= s.size(); i += size) std::reverse(s.begin() + static_cast<long>(i), s.begin() + static_cast<long>(i + size));
  return s;
}

// What reading gives, as text: the error, or descr, dtype, shape and the storage's bytes.
std::string outcome(const std::function<NpyArray()>& read) {
  try {
    NpyArray a = read();
    std::string s = a.descr + " " + to_string(a.dtype) + " (";
    for (int64_t d : a.shape) s += std::to_string(d) + ",";
    const auto* b = std::as_const(*a.data).bytes.data();
    return s + ") " + std::string(reinterpret_cast<const char*>(b), std::as_const(*a.data).bytes.size());
  } catch (const Error& e) {
    return std::string("error: ") + e.what();
  }
}

std::vector<std::pair<std::string, std::string>> files() {
  std::string f4 = bytes_of<float>({1.5f, -0.0f, 3e38f, -7.25f, 1e-45f, 2.0f});
  std::string f8 = bytes_of<double>({1.5, -0.0, 1e308, -7.25, 5e-324, 2.0});
  std::string i4 = bytes_of<int32_t>({1, -2, 2147483647, -2147483647 - 1, 0, 5});
  std::string i8 = bytes_of<int64_t>({1, -2, INT64_MAX, INT64_MIN, 0, 5});
  std::string snan4 = bytes_of<uint32_t>({0x7f800001u, 0x7fc00001u, 0xff800005u, 0x7f800000u, 0xffbfffffu, 0x3f800000u});
  std::string snan8 = bytes_of<uint64_t>({0x7ff0000000000001ull, 0x7ff8000000000001ull, 0xfff0000000000000ull, 1, 2, 3});
  std::string b1("\x00\x01\x02\xff\x01\x00", 6);
  std::vector<std::pair<std::string, std::string>> v = {
      {"f4", npy("<f4", "(2, 3)", f4)}, {"f4 v2", npy("<f4", "(6,)", f4, 2)}, {"f4 v3", npy("<f4", "(3, 2)", f4, 3)},
      {"f4 native", npy("=f4", "(6,)", f4)}, {"f4 big", npy(">f4", "(6,)", reversed_each(f4, 4))}, {"f4 snan", npy("<f4", "(6,)", snan4)},
      {"f8", npy("<f8", "(2, 3)", f8)}, {"f8 big", npy(">f8", "(6,)", reversed_each(f8, 8))}, {"f8 snan", npy("<f8", "(6,)", snan8)},
      {"i4", npy("<i4", "(6,)", i4)}, {"i4 big", npy(">i4", "(6,)", reversed_each(i4, 4))}, {"i8", npy("<i8", "(2, 3)", i8)},
      {"i8 big", npy(">i8", "(6,)", reversed_each(i8, 8))}, {"i2", npy("<i2", "(6,)", i4.substr(0, 12))}, {"i1", npy("|i1", "(6,)", b1)},
      {"u1", npy("|u1", "(6,)", b1)}, {"u2 big", npy(">u2", "(3,)", b1)}, {"u4", npy("<u4", "(6,)", i4)}, {"u8", npy("<u8", "(2,)", bytes_of<uint64_t>({7, 1ull << 62}))},
      {"u8 top bit", npy("<u8", "(2,)", bytes_of<uint64_t>({7, 1ull << 63}))}, {"b1", npy("|b1", "(2, 3)", b1)},
      {"0-d", npy("<f8", "()", f8.substr(0, 8))}, {"empty", npy("<f4", "(0, 3)", "")}, {"trailing data", npy("<f4", "(2,)", f4)},
      {"no magic", "hello world, not numpy"}, {"short", std::string("\x93NUMPY\x01", 7)}, {"nothing", ""},
      {"version 4", npy("<f4", "(6,)", f4, 4)}, {"fortran", npy("<f4", "(2, 3)", f4, 1, "True")}, {"complex", npy("<c8", "(3,)", f4)},
      {"half", npy("<f2", "(6,)", f4)}, {"negative dim", npy("<f4", "(-1,)", f4)}, {"huge", npy("<f4", "(65536, 65536, 2)", f4)},
      {"truncated data", npy("<f4", "(7,)", f4)}, {"truncated header", npy("<f4", "(6,)", f4).substr(0, 40)},
      {"no descr", npy("<f4", "(6,)", f4).replace(11, 7, "'xyzab'")}, {"no shape", npy("<f4", "(6,)", f4).replace(48, 7, "'sha'  ")},
  };
  return v;
}

}  // namespace

TEST_CASE("load_npy (straight into the storage) reads every file as parse_npy does, errors included") {
  TempDir tmp;
  for (const auto& file : files()) {
    const std::string& name = file.first;
    const std::string& bytes = file.second;  // not a structured binding: clang 14 cannot capture one
    INFO(name);
    fs::path p = tmp / "a.npy";
    std::ofstream(p, std::ios::binary) << bytes;
    std::string path = p.string();
    CHECK(outcome([&] { return load_npy(path); }) == outcome([&] { return parse_npy(bytes, path); }));
  }
}

// float32 is read bit for bit, on both paths: a signaling NaN stays signaling (it once went
// through double, which quiets it).
TEST_CASE("load_npy: float32 NaN payloads are kept bit for bit, bools become 0/1") {
  TempDir tmp;
  fs::path p = tmp / "a.npy";
  std::ofstream(p, std::ios::binary) << npy("<f4", "(3,)", bytes_of<uint32_t>({0x7f800001u, 0xff800005u, 0x7fc00000u}));
  NpyArray a = load_npy(p.string());
  uint32_t got[3];
  std::memcpy(got, std::as_const(*a.data).bytes.data(), 12);
  CHECK(got[0] == 0x7f800001u);
  CHECK(got[1] == 0xff800005u);
  CHECK(got[2] == 0x7fc00000u);
  std::ofstream(p, std::ios::binary) << npy("|b1", "(3,)", std::string("\x00\x02\x01", 3));
  a = load_npy(p.string());
  CHECK(std::string(reinterpret_cast<const char*>(std::as_const(*a.data).bytes.data()), 3) == std::string("\x00\x01\x01", 3));
}

TEST_CASE("load_npy reads a file that is not a regular one (a pipe) to its end") {
  TempDir tmp;
  fs::path fifo = tmp / "pipe.npy";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  std::string bytes = npy("<f8", "(2,)", bytes_of<double>({1.0, 2.0}));
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << bytes; });
  std::string got = outcome([&] { return load_npy(fifo.string()); });
  writer.join();
  CHECK(got == outcome([&] { return parse_npy(bytes, fifo.string()); }));
  CHECK(outcome([] { return load_npy("/dev/null"); }) == "error: /dev/null: not a .npy file (bad magic)");
}

TEST_CASE("save_npy writes exactly npy_bytes, from contiguous, strided, broadcast and empty values") {
  TempDir tmp;
  Value base = alloc(dtypes::float32, {2, 3});
  for (int i = 0; i < 6; ++i) base.data->as<float>()[i] = static_cast<float>(i) - 2.5f;
  Value b1 = alloc(dtypes::bool_, {3});
  b1.data->as<uint8_t>()[1] = 1;
  std::vector<Value> values = {base, permute_view(base, {1, 0}), shrink_view(base, {{1, 2}, {0, 3}}), flip_view(base, {true, false}),
                               expand_view(shrink_view(base, {{0, 1}, {0, 3}}), {4, 3}), scalar(dtypes::float64, 0.1), alloc(dtypes::int32, {0, 5}), b1,
                               alloc(dtypes::index, {2})};
  for (const Value& v : values) {
    fs::path p = tmp / "out.npy";
    save_npy(p.string(), v);
    std::string file = ow::test::slurp(p);
    CHECK(file == npy_bytes(v));
    CHECK(file == npy_bytes(contiguous(v)));
    NpyArray back = parse_npy(file, p.string());
    CHECK(back.shape == v.shape());
    CHECK(std::memcmp(std::as_const(*back.data).bytes.data(), std::as_const(*contiguous(v).data).bytes.data(), std::as_const(*back.data).bytes.size()) == 0);
  }
  CHECK(ow::test::error_of([&] { save_npy((tmp / "no" / "such" / "dir.npy").string(), base); }) == (tmp / "no" / "such" / "dir.npy").string() + ": cannot write .npy file");
}
