// Small helpers shared by the test files: where the source tree is, reading a file, the
// message of the ow::Error a piece of code throws, and an environment variable set for a scope.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "uop/error.h"

namespace ow::test {

inline std::filesystem::path source_root() {
  const char* root = std::getenv("OW_SOURCE_DIR");
  return root ? std::filesystem::path(root) : std::filesystem::current_path();
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The message of the ow::Error f throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Sets an environment variable for one scope, restoring what was there.
struct EnvVar {
  std::string name, old;
  bool had;
  EnvVar(const char* n, const char* v) : name(n), had(std::getenv(n) != nullptr) {
    if (had) old = std::getenv(n);
    setenv(n, v, 1);
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;
  ~EnvVar() { had ? setenv(name.c_str(), old.c_str(), 1) : unsetenv(name.c_str()); }
};

}  // namespace ow::test
