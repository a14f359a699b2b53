// The compile layer of the C backends (DESIGN §4): a Compiler turns one C translation unit (as
// rendered by backends/c) into a Library whose functions can be called in-process.
//
//   auto cc = ow::backend::make_compiler("tcc");       // or "cc"
//   auto lib = cc->compile("float f(float x) { return x * 2.0f; }");
//   auto f = reinterpret_cast<float (*)(float)>(lib->symbol("f"));
//
// Generated sources include no headers: they declare the C library functions they call
// (`float exp2f(float);`). Compiled libraries are cached for the process lifetime by source and
// options, so compiling the same source twice returns the same Library.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace ow::backend {

// A compiled translation unit, loaded and ready to call. Stays valid as long as it is held (the
// compile cache holds every library it returns until the process exits).
class Library {
 public:
  virtual ~Library();
  // The address of a function (or object) the source defines; ow::Error if there is none.
  virtual void* symbol(const std::string& name) const = 0;
};

// Counters for benchmarks: how many sources a compiler really compiled, how many compile() calls
// the cache answered, and the wall time spent in real compiles.
struct CompileStats {
  std::uint64_t compiles = 0;
  std::uint64_t cache_hits = 0;
  double compile_seconds = 0;
};

class Compiler {
 public:
  virtual ~Compiler();
  virtual std::string name() const = 0;

  // Compiles a whole C translation unit. Cached by (name(), options(), source) for the process
  // lifetime, across Compiler objects, thread-safe. A compile error is an ow::Error that quotes
  // the compiler's message and the numbered source.
  std::shared_ptr<const Library> compile(const std::string& c_source);

  // This compiler's counters (its own compile() calls only).
  CompileStats stats() const;

 protected:
  // What else decides the compiled code (the compiler command and flags): part of the cache key.
  virtual std::string options() const { return ""; }
  virtual std::shared_ptr<const Library> compile_uncached(const std::string& src) = 0;

 private:
  mutable std::uint64_t compiles_ = 0, cache_hits_ = 0;
  mutable double compile_seconds_ = 0;
};

// "tcc" (libtcc, in-process, fast to compile) or "cc" (the system C compiler + dlopen, optimized
// code). Anything else is an ow::Error listing both.
std::unique_ptr<Compiler> make_compiler(const std::string& name);

// Helpers shared by the implementations.
// FNV-1a 64 of s.
std::uint64_t fnv1a64(const std::string& s);
// s with each line prefixed by its 1-based number ("  12 | ..."), for error messages.
std::string number_lines(const std::string& s);

}  // namespace ow::backend
