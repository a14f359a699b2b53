// Where a graph or a lowered program runs: the one list of backends, with the one way to read a
// backend's name (from a command line, a request, an environment variable) and to print it.
#pragma once
#include <initializer_list>
#include <string>
#include <string_view>

#include "opt/opt.h"

namespace ow::backend {

enum class Backend {
  Interp,  // the reference interpreter (kernel by kernel for a lowered program)
  Tcc,     // kernels rendered to C and compiled by libtcc in-process
  Cc,      // ... by the system C compiler into a shared object
  Check,   // a compiled tier and the interpreter in lockstep (RunOptions::compiler says which)
  Auto,    // tcc at once, cc once compiled in the background (tiered.h)
};

inline constexpr std::initializer_list<Backend> kAllBackends = {Backend::Interp, Backend::Tcc, Backend::Cc, Backend::Check, Backend::Auto};
inline constexpr std::initializer_list<Backend> kCompilers = {Backend::Tcc, Backend::Cc};  // the compiled tiers

std::string_view backend_name(Backend b);  // "interp", "tcc", "cc", "check", "auto"
// The backend named `name`, one of `allowed`; else an ow::Error "`what` must be interp, tcc, ...,
// got 'NAME'" (what: "--backend", "compiler", ...).
Backend parse_backend(std::string_view name, std::string_view what = "backend", std::initializer_list<Backend> allowed = kAllBackends);
// The compiler whose C a compiled tier (Tcc or Cc) runs.
inline opt::Target target_of(Backend compiler) { return compiler == Backend::Tcc ? opt::Target::tcc : opt::Target::cc; }
// The compiler named `name` ("tcc" or "cc"), as the target its C is written for; else an ow::Error.
inline opt::Target target_named(std::string_view name, std::string_view what = "compiler") { return target_of(parse_backend(name, what, kCompilers)); }

}  // namespace ow::backend
