#include "backends/backend.h"

#include "uop/error.h"

namespace ow::backend {

std::string_view backend_name(Backend b) {
  switch (b) {
    case Backend::Interp: return "interp";
    case Backend::Tcc: return "tcc";
    case Backend::Cc: return "cc";
    case Backend::Check: return "check";
    case Backend::Auto: return "auto";
  }
  return "?";
}

Backend parse_backend(std::string_view name, std::string_view what, std::initializer_list<Backend> allowed) {
  std::string list;
  size_t i = 0;
  for (Backend b : allowed) {
    if (backend_name(b) == name) return b;
    list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + std::string(backend_name(b));
    ++i;
  }
  throw Error(std::string(what) + " must be " + list + ", got '" + std::string(name) + "'");
}

}  // namespace ow::backend
