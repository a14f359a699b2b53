#include "interp/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

#include "interp/dispatch.h"
#include "uop/floats.h"

namespace ow::interp {

namespace {

struct Descr {
  const char* text;
  DType dtype;
};
// What we write (and read without conversion). bfloat16 and the fp8s have no numpy dtype: their
// files hold the raw bits in a structured dtype of one field named after the dtype, which numpy
// reads as it is (np.load(f)['bfloat16'] are the bits as uint16).
const Descr kDescrs[] = {{"'<f4'", dtypes::float32}, {"'<f8'", dtypes::float64}, {"'<i4'", dtypes::int32}, {"'<i8'", dtypes::int64},
                         {"'<u4'", dtypes::uint32},  {"'<u8'", dtypes::uint64},  {"'|b1'", dtypes::bool_}, {"'<f2'", dtypes::float16},
                         {"'|i1'", dtypes::int8},    {"'|u1'", dtypes::uint8},   {"'<i2'", dtypes::int16}, {"'<u2'", dtypes::uint16},
                         {"[('bfloat16', '<u2')]", dtypes::bfloat16}, {"[('fp8e4m3', '|u1')]", dtypes::fp8e4m3}, {"[('fp8e5m2', '|u1')]", dtypes::fp8e5m2}};

// A file's element type: kind 'f', 'i', 'u' or 'b', size in bytes, byte order; `bits_of` a
// narrow float whose raw bits the file holds (kind 'u').
struct FileType {
  char kind = 0;
  int size = 0;
  bool big_endian = false;
  DType bits_of;
};

// [('bfloat16', '<u2')]: the bits of that dtype, in either byte order.
std::optional<FileType> bits_type(const std::string& descr) {
  for (DType d : {dtypes::bfloat16, dtypes::fp8e4m3, dtypes::fp8e5m2}) {
    std::string name = to_string(d), size = std::to_string(d.itemsize());
    for (const char* order : d.itemsize() == 1 ? std::vector<const char*>{"|", "<", ">", "="} : std::vector<const char*>{"<", ">", "="})
      if (descr == "[('" + name + "', '" + order + "u" + size + "')]") return FileType{'u', d.itemsize(), *order == '>', d};
  }
  return std::nullopt;
}

FileType file_type(const std::string& descr, const std::string& path) {
  if (auto t = bits_type(descr)) return *t;
  // descr is quoted: '<f4'
  std::string d = descr.size() >= 2 ? descr.substr(1, descr.size() - 2) : descr;
  FileType t;
  if (descr[0] == '\'' && d.size() >= 3 && std::string("<>|=").find(d[0]) != std::string::npos) {
    t.big_endian = d[0] == '>';
    t.kind = d[1];
    t.size = std::atoi(d.c_str() + 2);
  }
  bool ok = (t.kind == 'f' && (t.size == 2 || t.size == 4 || t.size == 8)) || ((t.kind == 'i' || t.kind == 'u') && (t.size == 1 || t.size == 2 || t.size == 4 || t.size == 8)) ||
            (t.kind == 'b' && t.size == 1);
  if (!ok)
    throw Error(path + ": unsupported .npy dtype " + descr +
                " (supported: floats of 2, 4 or 8 bytes, integers, bool, and the bits of bfloat16/fp8e4m3/fp8e5m2 as [('bfloat16', '<u2')], [('fp8e4m3', '|u1')], [('fp8e5m2', '|u1')]; convert with a.astype(np.float32))");
  return t;
}

// Copies one element of a file's data into `dst` in our (little-endian) byte order: every
// element is stored as the file's own dtype (storage_dtype), bits untouched (a float's signaling
// NaN stays one).
void read_element(const unsigned char* p, const FileType& t, unsigned char* dst) {
  for (int k = 0; k < t.size; ++k) dst[k] = p[t.big_endian ? t.size - 1 - k : k];
}

// The storage dtype a file's data is read into: the file's own (conversion to the buffer's
// dtype is npy_as's, exactly or not at all).
DType storage_dtype(const FileType& t) {
  if (t.bits_of != dtypes::void_) return t.bits_of;
  if (t.kind == 'f') return t.size == 2 ? dtypes::float16 : t.size == 4 ? dtypes::float32 : dtypes::float64;
  if (t.kind == 'b') return dtypes::bool_;
  const DType ints[] = {dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64}, uints[] = {dtypes::uint8, dtypes::uint16, dtypes::uint32, dtypes::uint64};
  int k = t.size == 1 ? 0 : t.size == 2 ? 1 : t.size == 4 ? 2 : 3;
  return t.kind == 'i' ? ints[k] : uints[k];
}

std::string field(const std::string& header, const std::string& key, const std::string& path) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) throw Error(path + ": .npy header has no '" + key + "'");
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) throw Error(path + ": malformed .npy header");
  size_t s = header.find_first_not_of(' ', colon + 1);
  size_t e = header[s] == '(' ? header.find(')', s) + 1 : header[s] == '[' ? header.find(']', s) + 1 : header.find_first_of(",}", s);
  if (s == std::string::npos || e == std::string::npos || e == 0) throw Error(path + ": malformed .npy header");
  return header.substr(s, e - s);
}

}  // namespace

namespace {

// What an .npy file says before its data: parsed from `head` (its first bytes, through the header
// when the file is that long), checked against the file's `size`.
struct Header {
  NpyArray out;  // descr, dtype, shape; no data yet
  FileType type;
  int64_t n = 1;
  size_t data_at = 0, bytes = 0;
};

Header read_header(const std::string& all, size_t size, const std::string& path) {
  if (size < 10 || all.compare(0, 6, "\x93NUMPY") != 0) throw Error(path + ": not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(all[6]);
  size_t hlen_size = major == 1 ? 2 : 4;
  if (major < 1 || major > 3 || size < 8 + hlen_size) throw Error(path + ": unsupported .npy version " + std::to_string(major));
  size_t hlen = 0;
  for (size_t i = 0; i < hlen_size; ++i) hlen |= static_cast<size_t>(static_cast<unsigned char>(all[8 + i])) << (8 * i);
  size_t start = 8 + hlen_size;
  if (start + hlen > size) throw Error(path + ": truncated .npy header");
  std::string header = all.substr(start, hlen);
  std::string descr = field(header, "descr", path);
  if (field(header, "fortran_order", path).find("True") != std::string::npos)
    throw Error(path + ": Fortran-order arrays are not supported (save np.ascontiguousarray(a))");
  Header h;
  NpyArray& out = h.out;
  out.descr = descr;
  FileType type = file_type(descr, path);
  out.dtype = storage_dtype(type);
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
  size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(type.size);
  if (size - start - hlen < bytes) throw Error(path + ": truncated .npy data (" + std::to_string(size - start - hlen) + " of " + std::to_string(bytes) + " bytes)");
  h.type = type;
  h.n = n;
  h.data_at = start + hlen;
  h.bytes = bytes;
  return h;
}

}  // namespace

namespace {

// Reads `n` bytes at `offset` into `dst`; throws naming the file when it has fewer.
void read_at(int fd, void* dst, size_t n, size_t offset, const std::string& path) {
  auto* p = static_cast<char*>(dst);
  for (size_t done = 0; done < n;) {
    ssize_t r = pread(fd, p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw Error(path + ": cannot read .npy file (" + std::strerror(errno) + ")");
    if (r == 0) throw Error(path + ": truncated .npy data (the file shrank while it was read)");
    done += static_cast<size_t>(r);
  }
}

// Layouts whose bytes are the storage's bytes on this (little-endian) machine: read straight in.
bool raw_layout(const FileType& t) {
  return !t.big_endian;
}

// What parse_npy's element-wise path does to such data beyond copying: bools become 0/1.
void finish_raw(Storage& s, const FileType& t) {
  if (t.kind != 'b') return;
  uint8_t* p = s.as<uint8_t>();
  for (int64_t i = 0; i < s.size; ++i) p[i] = p[i] != 0;
}

// The whole of a file that is not a regular one (a pipe: its size is unknown until read).
std::string read_stream(int fd, const std::string& path) {
  std::string all;
  char buf[1 << 16];
  for (ssize_t r; (r = read(fd, buf, sizeof buf)) != 0;) {
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw Error(path + ": cannot read .npy file (" + std::strerror(errno) + ")");
    all.append(buf, static_cast<size_t>(r));
  }
  return all;
}

}  // namespace

// The header, then the data with one read straight into the array's storage (no copy of the
// file in memory, no element loop) where the file's layout is the storage's; other layouts
// read the file with one read and convert element by element (parse_npy).
NpyArray load_npy(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(path + ": is a directory, not an .npy file");
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open .npy file (" + std::strerror(errno) + ")");
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return parse_npy(read_stream(fd, path), path);
  size_t size = static_cast<size_t>(st.st_size);
  std::string head(std::min<size_t>(size, 12), '\0');
  read_at(fd, head.data(), head.size(), 0, path);
  size_t end = head.size();  // through the header, if the prefix says where that is
  if (head.size() >= 10 && head.compare(0, 6, "\x93NUMPY") == 0) {
    size_t hlen_size = head[6] == 1 ? 2 : 4, hlen = 0;
    for (size_t i = 0; i < hlen_size && 8 + i < head.size(); ++i) hlen |= static_cast<size_t>(static_cast<unsigned char>(head[8 + i])) << (8 * i);
    end = std::min(size, 8 + hlen_size + hlen);
  }
  if (end > head.size()) {
    size_t have = head.size();
    head.resize(end);
    read_at(fd, head.data() + have, end - have, have, path);
  }
  Header h = read_header(head, size, path);
  if (!raw_layout(h.type)) {
    std::string all(size, '\0');
    read_at(fd, all.data(), size, 0, path);
    return parse_npy(all, path);
  }
  NpyArray out = std::move(h.out);
  out.data = std::make_shared<Storage>(out.dtype, h.n);
  read_at(fd, out.data->bytes.data(), h.bytes, h.data_at, path);
  finish_raw(*out.data, h.type);
  return out;
}

NpyArray parse_npy(const std::string& all, const std::string& path) {
  Header h = read_header(all, all.size(), path);
  NpyArray out = std::move(h.out);
  FileType type = h.type;
  int64_t n = h.n;
  const auto* src = reinterpret_cast<const unsigned char*>(all.data() + h.data_at);
  out.data = std::make_shared<Storage>(out.dtype, n);
  for (int64_t i = 0; i < n; ++i) read_element(src + i * type.size, type, out.data->bytes.data() + i * type.size);
  finish_raw(*out.data, type);
  return out;
}

namespace {
long double exact_element(const Storage& s, int64_t i) {
  return dispatch(s.dtype, [&](auto tag) -> long double {
    using T = typename decltype(tag)::type;
    if constexpr (is_narrow_float_v<T>) return static_cast<float>(s.as<T>()[i]);
    else return static_cast<long double>(s.as<T>()[i]);
  });
}

// Writes x as element i of s; false when the dtype cannot hold x exactly. (long double holds
// every int64, uint64 and double exactly, so the comparisons below are exact.)
bool store_exact(Storage& s, int64_t i, long double x) {
  bool nan = x != x;
  if (s.dtype.is_bool()) {
    s.as<uint8_t>()[i] = x != 0;
    return x == 0 || x == 1;
  }
  return dispatch(s.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_float_v<T>) {
      T v = static_cast<T>(static_cast<double>(x));  // a value exact in T is exact in double
      s.as<T>()[i] = v;
      return nan || static_cast<long double>(static_cast<double>(v)) == x;
    } else {
      auto [lo, hi] = std::pair<long double, long double>(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
      if (nan || x != std::trunc(x) || x < lo || x > hi) return false;
      s.as<T>()[i] = static_cast<T>(x);
      return true;
    }
  });
}

std::string numpy_name(DType d) {
  if (d.is_bool()) return "np.bool_";
  if (d.is_index()) return "np.int64";
  if (d == dtypes::bfloat16 || d == dtypes::fp8e4m3 || d == dtypes::fp8e5m2) return "np.float32) for a float32 buffer, or save the bits of a " + to_string(d) + " as np.dtype([('" + to_string(d) + "', '<u" + std::to_string(d.itemsize()) + "')]";
  return "np." + to_string(d);
}
}  // namespace

StoragePtr npy_as(const NpyArray& a, DType to, const std::string& path, const std::string& buffer) {
  if (a.dtype == to || (to.is_index() && a.dtype == dtypes::int64)) return a.data;
  auto out = std::make_shared<Storage>(to, a.data->size);
  for (int64_t i = 0; i < a.data->size; ++i) {
    long double x = exact_element(*a.data, i);
    if (store_exact(*out, i, x)) continue;
    char value[64];
    bool integral = x == std::trunc(x) && std::fabs(x) < 0x1p64L;  // all 20 digits of a 64-bit integer
    std::snprintf(value, sizeof value, integral ? "%.0Lf" : "%.17Lg", x);
    throw Error(path + ": " + a.descr + " data for " + to_string(to) + " buffer '" + buffer + "' does not convert exactly (element " + std::to_string(i) + ": " + value +
                "); if rounding is meant, convert it yourself: np.save(path, a.astype(" + numpy_name(to) + "))");
  }
  return out;
}

namespace {

// The file's bytes before its data: magic, version, header length and header.
std::string npy_header(const Value& v) {
  const char* descr = nullptr;
  for (const Descr& d : kDescrs)
    if (d.dtype == v.dtype && !descr) descr = d.text;
  if (v.dtype.is_index()) descr = "'<i8'";
  if (!descr) throw Error("cannot save dtype " + to_string(v.dtype) + " as .npy");
  std::string shape = "(";
  for (size_t i = 0; i < v.shape().size(); ++i) shape += std::to_string(v.shape()[i]) + (v.shape().size() == 1 ? "," : i + 1 < v.shape().size() ? ", " : "");
  shape += ")";
  std::string header = std::string("{'descr': ") + descr + ", 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  return out;
}

// v's data bytes, row-major: v's own storage when its view is contiguous, else a copy's.
std::pair<const char*, size_t> data_bytes(const Value& v, Value& keep) {
  const Value& c = v.view.is_contiguous() ? v : (keep = contiguous(v));
  size_t item = static_cast<size_t>(c.dtype.itemsize());
  return {reinterpret_cast<const char*>(std::as_const(*c.data).bytes.data()) + static_cast<size_t>(c.view.offset) * item, static_cast<size_t>(c.numel()) * item};
}

// Writes every iovec; writev may write less than asked, then it goes on from there.
bool write_all(int fd, iovec* iov, int count) {
  while (count > 0) {
    ssize_t w = writev(fd, iov, count);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    size_t left = static_cast<size_t>(w);
    for (; count > 0 && left >= iov->iov_len; ++iov, --count) left -= iov->iov_len;
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return true;
}

}  // namespace

std::string npy_bytes(const Value& v) {
  Value keep;
  auto [data, n] = data_bytes(v, keep);
  return npy_header(v).append(data, n);
}

// Header and data with one writev from where the data lie (no copy of the file in memory).
void save_npy(const std::string& path, const Value& v) {
  std::string header = npy_header(v);
  Value keep;
  auto [data, n] = data_bytes(v, keep);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw Error(path + ": cannot write .npy file");
  iovec iov[2] = {{header.data(), header.size()}, {const_cast<char*>(data), n}};
  bool ok = write_all(fd, iov, 2);
  if (close(fd) != 0 || !ok) throw Error(path + ": cannot write .npy file");
}

}  // namespace ow::interp
