#include "backends/compiler.h"

#include <chrono>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "uop/error.h"

namespace ow::backend {

// Defined in tcc/tcc_compiler.cpp and cc/cc_compiler.cpp.
std::unique_ptr<Compiler> make_tcc_compiler();
std::unique_ptr<Compiler> make_cc_compiler();

Library::~Library() = default;
Compiler::~Compiler() = default;

std::uint64_t fnv1a64(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string number_lines(const std::string& s) {
  std::string out;
  int line = 1;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    std::string n = std::to_string(line++);
    out += std::string(n.size() < 4 ? 4 - n.size() : 0, ' ') + n + " | " + s.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

namespace {

// The process-wide compile cache: hash of the key -> the (key, library) pairs with that hash. The
// key is the full text (compiler name, options, source), compared on every hit, so a hash
// collision costs a compile, never a wrong library. (Exact text: a lookup happens at every run of
// an unprepared program; cc's disk cache, consulted only to compile, is keyed by code_of.)
struct Entry {
  std::string key;
  std::shared_ptr<const Library> lib;
};

struct Cache {
  std::mutex mutex;
  std::unordered_map<std::uint64_t, std::vector<Entry>> map;
};

Cache& cache() {
  static Cache c;
  return c;
}

const Entry* find(Cache& c, std::uint64_t h, const std::string& key) {
  auto it = c.map.find(h);
  if (it == c.map.end()) return nullptr;
  for (const Entry& e : it->second)
    if (e.key.size() == key.size() && e.key == key) return &e;
  return nullptr;
}

}  // namespace

std::shared_ptr<const Library> Compiler::compile(const std::string& c_source) {
  std::string key = name() + '\0' + options() + '\0' + c_source;
  std::uint64_t h = fnv1a64(key) ^ (static_cast<std::uint64_t>(key.size()) * 0x9e3779b97f4a7c15ull);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (const Entry* e = find(c, h, key)) {
      ++cache_hits_;
      return e->lib;
    }
  }
  // Compile outside the lock: cc compiles take a while and may run in parallel. Two threads
  // compiling the same new source both compile; the first to finish wins.
  auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<const Library> lib = compile_uncached(c_source);
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard<std::mutex> lock(c.mutex);
  ++compiles_;
  compile_seconds_ += dt;
  if (const Entry* e = find(c, h, key)) return e->lib;
  c.map[h].push_back(Entry{std::move(key), lib});
  return lib;
}

CompileStats Compiler::stats() const {
  std::lock_guard<std::mutex> lock(cache().mutex);
  CompileStats s;
  s.compiles = compiles_;
  s.cache_hits = cache_hits_;
  s.compile_seconds = compile_seconds_;
  return s;
}

std::unique_ptr<Compiler> make_compiler(const std::string& name) {
  if (name == "tcc") return make_tcc_compiler();
  if (name == "cc") return make_cc_compiler();
  throw Error("unknown C backend compiler '" + name + "' (expected 'tcc' or 'cc')");
}

}  // namespace ow::backend
