// The default JIT: libtcc compiles the source in-process into memory (about a millisecond for a
// kernel). The generated code includes no headers and TCC runs with -nostdlib (no libtcc1.a, no
// crt files, no libc): every outside function it may call is handed to TCC here with
// tcc_add_symbol, so nothing of TCC's needs to be installed at run time.
#include <libtcc.h>
#include <math.h>
#include <string.h>

#include <cstdint>
#include <limits>
#include <mutex>

#include "backends/compiler.h"
#include "backends/tcc/vector_loops.h"
#include "uop/error.h"

namespace ow::backend {
namespace {

// libtcc (0.9.27) keeps global state (a lock set up lazily, error/include state): compile, relocate
// and delete one state at a time. A namespace-scope mutex is constant-initialized, so it is valid
// even while the compile cache is destroyed at exit.
std::mutex tcc_mutex;

// The libtcc1 helpers TCC 0.9.27 calls on x86_64 for conversions between floating point and
// unsigned 64-bit integers (signed ones are inline instructions). Out of range (undefined in C) they
// saturate, NaN gives 0; the C renderer saturates casts itself (SEMANTICS S2.1), so only in-range
// values reach these.
template <class F>
std::uint64_t fix_unsigned(F x) {
  if (!(x > F(0))) return 0;  // also NaN
  if (x >= F(18446744073709551616.0)) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(x);
}
std::uint64_t fixunssfdi(float x) { return fix_unsigned(x); }
std::uint64_t fixunsdfdi(double x) { return fix_unsigned(x); }
float floatundisf(std::uint64_t x) { return static_cast<float>(x); }
double floatundidf(std::uint64_t x) { return static_cast<double>(x); }

struct Symbol {
  const char* name;
  const void* address;
};

// The address of f, of the overload whose type is Sig: fn<float(float)>(::expf).
template <class Sig>
const void* fn(Sig* f) {
  return reinterpret_cast<const void*>(f);
}

// A C math function in both widths: float (name##f) and double (name), one or two arguments.
#define OW_MATH1(name) {#name "f", fn<float(float)>(::name##f)}, {#name, fn<double(double)>(::name)}
#define OW_MATH2(name) {#name "f", fn<float(float, float)>(::name##f)}, {#name, fn<double(double, double)>(::name)}

// Everything generated code may call. Each one is what the interpreter calls (SEMANTICS S2.1:
// "the C library's function in the dtype").
const Symbol symbols[] = {
    {"__fixunssfdi", fn(fixunssfdi)},
    {"__fixunsdfdi", fn(fixunsdfdi)},
    {"__floatundisf", fn(floatundisf)},
    {"__floatundidf", fn(floatundidf)},
    {"memset", fn<void*(void*, int, size_t)>(::memset)},
    {"memcpy", fn<void*(void*, const void*, size_t)>(::memcpy)},
    {"memmove", fn<void*(void*, const void*, size_t)>(::memmove)},
    OW_MATH1(exp), OW_MATH1(exp2), OW_MATH1(log), OW_MATH1(log2), OW_MATH1(sin), OW_MATH1(cos), OW_MATH1(sqrt),
    OW_MATH1(fabs), OW_MATH1(floor), OW_MATH1(ceil), OW_MATH1(trunc),
    OW_MATH2(pow), OW_MATH2(fmax), OW_MATH2(fmin),
};

#undef OW_MATH1
#undef OW_MATH2

void on_error(void* opaque, const char* msg) {
  std::string& out = *static_cast<std::string*>(opaque);
  out += msg;
  out += '\n';
}

void ignore_error(void*, const char*) {}

class TccLibrary final : public Library {
 public:
  explicit TccLibrary(TCCState* s) : s_(s) {}
  ~TccLibrary() override {
    std::lock_guard<std::mutex> lock(tcc_mutex);
    tcc_delete(s_);
  }
  void* symbol(const std::string& name) const override {
    void* p;
    {
      std::lock_guard<std::mutex> lock(tcc_mutex);
      p = tcc_get_symbol(s_, name.c_str());
    }
    if (!p) throw Error("tcc: the compiled C source defines no symbol '" + name + "'");
    return p;
  }

 private:
  TCCState* s_;
};

class TccCompiler final : public Compiler {
 public:
  std::string name() const override { return "tcc"; }

 protected:
  std::string options() const override { return "-nostdlib"; }

  std::shared_ptr<const Library> compile_uncached(const std::string& src) override {
    std::lock_guard<std::mutex> lock(tcc_mutex);
    TCCState* s = tcc_new();
    if (!s) throw Error("tcc: tcc_new failed (out of memory?)");
    std::string errors;
    // Owns s until the library does; errors must outlive every libtcc call on s.
    struct Guard {
      TCCState* s;
      ~Guard() {
        if (s) tcc_delete(s);
      }
    } guard{s};
    tcc_set_error_func(s, &errors, on_error);
    tcc_set_options(s, "-nostdlib");
    tcc_set_output_type(s, TCC_OUTPUT_MEMORY);
    auto fail = [&](const char* what) {
      return Error(std::string("tcc: ") + what + " the generated C source:\n" + errors +
                   "the source:\n" + number_lines(src));
    };
    if (tcc_compile_string(s, src.c_str()) == -1) throw fail("cannot compile");
    for (const Symbol& sym : symbols) tcc_add_symbol(s, sym.name, sym.address);
    // Vectorized loops (vector_loops.h), the build for this CPU: the C written for tcc calls them.
    const VectorLoops& v = vector_loops();
    for (Symbol sym : {Symbol{"ow_axpy_f32", fn(v.axpy_f32)}, Symbol{"ow_axpy_f64", fn(v.axpy_f64)}, Symbol{"ow_gemv_f32", fn(v.gemv_f32)},
                       Symbol{"ow_gemv_f64", fn(v.gemv_f64)}, Symbol{"ow_transpose8_u32", fn(v.transpose8_u32)}})
      tcc_add_symbol(s, sym.name, sym.address);
    if (tcc_relocate(s, TCC_RELOCATE_AUTO) < 0) throw fail("cannot link");
    // `errors` dies here: later messages (there should be none) are dropped, not sent to stderr.
    tcc_set_error_func(s, nullptr, ignore_error);
    auto lib = std::make_shared<TccLibrary>(s);
    guard.s = nullptr;
    return lib;
  }
};

}  // namespace

std::unique_ptr<Compiler> make_tcc_compiler() { return std::make_unique<TccCompiler>(); }

}  // namespace ow::backend
