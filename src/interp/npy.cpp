#include "interp/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "interp/dispatch.h"

namespace ow::interp {

namespace {

struct Descr {
  const char* text;
  DType dtype;
};
const Descr kDescrs[] = {{"<f4", dtypes::float32}, {"<f8", dtypes::float64}, {"<i4", dtypes::int32},
                         {"<i8", dtypes::int64},   {"|b1", dtypes::bool_},   {"|u1", dtypes::bool_}};

std::string field(const std::string& header, const std::string& key, const std::string& path) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) throw Error(path + ": .npy header has no '" + key + "'");
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) throw Error(path + ": malformed .npy header");
  size_t s = header.find_first_not_of(' ', colon + 1);
  size_t e = header[s] == '(' ? header.find(')', s) + 1 : header.find_first_of(",}", s);
  if (s == std::string::npos || e == std::string::npos || e == 0) throw Error(path + ": malformed .npy header");
  return header.substr(s, e - s);
}

}  // namespace

NpyArray load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open .npy file");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (all.size() < 10 || all.compare(0, 6, "\x93NUMPY") != 0) throw Error(path + ": not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(all[6]);
  size_t hlen_size = major == 1 ? 2 : 4;
  if (major < 1 || major > 3 || all.size() < 8 + hlen_size) throw Error(path + ": unsupported .npy version " + std::to_string(major));
  size_t hlen = 0;
  for (size_t i = 0; i < hlen_size; ++i) hlen |= static_cast<size_t>(static_cast<unsigned char>(all[8 + i])) << (8 * i);
  size_t start = 8 + hlen_size;
  if (start + hlen > all.size()) throw Error(path + ": truncated .npy header");
  std::string header = all.substr(start, hlen);
  std::string descr = field(header, "descr", path);
  if (field(header, "fortran_order", path).find("True") != std::string::npos)
    throw Error(path + ": Fortran-order arrays are not supported (save np.ascontiguousarray(a))");
  NpyArray out;
  bool known = false;
  for (const Descr& d : kDescrs)
    if (descr == std::string("'") + d.text + "'") {
      out.dtype = d.dtype;
      known = true;
    }
  if (!known) throw Error(path + ": unsupported .npy dtype " + descr + " (use float32, float64, int32, int64 or bool)");
  std::string shape = field(header, "shape", path);
  std::stringstream ss(shape.substr(1, shape.size() - 2));
  int64_t n = 1;
  for (std::string tok; std::getline(ss, tok, ',');) {
    if (tok.find_first_not_of(' ') == std::string::npos) continue;
    int64_t d = std::stoll(tok);
    if (d < 0 || d > (int64_t{1} << 32)) throw Error(path + ": bad dimension in .npy shape " + shape);
    out.shape.push_back(d);
    n *= d;
    if (n > (int64_t{1} << 32)) throw Error(path + ": .npy array is larger than 2^32 elements");
  }
  size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(out.dtype.itemsize());
  if (all.size() - start - hlen < bytes) throw Error(path + ": truncated .npy data (" + std::to_string(all.size() - start - hlen) + " of " + std::to_string(bytes) + " bytes)");
  out.data = std::make_shared<Storage>(out.dtype, n);
  std::memcpy(out.data->bytes.data(), all.data() + start + hlen, bytes);
  if (out.dtype.is_bool())
    for (int64_t i = 0; i < n; ++i) out.data->as<uint8_t>()[i] = out.data->as<uint8_t>()[i] != 0;
  return out;
}

std::string npy_bytes(const Value& v_raw) {
  Value v = contiguous(v_raw);
  const char* descr = nullptr;
  for (const Descr& d : kDescrs)
    if (d.dtype == v.dtype && !descr) descr = d.text;
  if (v.dtype.is_index()) descr = "<i8";
  if (!descr) throw Error("cannot save dtype " + to_string(v.dtype) + " as .npy");
  std::string shape = "(";
  for (size_t i = 0; i < v.shape().size(); ++i) shape += std::to_string(v.shape()[i]) + (v.shape().size() == 1 ? "," : i + 1 < v.shape().size() ? ", " : "");
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(v.data->bytes.data()), static_cast<size_t>(v.numel()) * static_cast<size_t>(v.dtype.itemsize()));
  return out;
}

void save_npy(const std::string& path, const Value& v) {
  std::ofstream out(path, std::ios::binary);
  out << npy_bytes(v);
  if (!out) throw Error(path + ": cannot write .npy file");
}

}  // namespace ow::interp
