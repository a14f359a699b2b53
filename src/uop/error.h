// User-facing errors. Every problem with a user's graph or file is an ow::Error (never an
// assert or abort); a broken invariant of outerworld itself is an InternalError.
#pragma once
#include <stdexcept>
#include <string>

namespace ow {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A problem at a place in a text file; what() is "file:line:col: message".
struct ParseError : Error {
  ParseError(const std::string& file, int line, int col, const std::string& message)
      : Error(file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + message),
        file(file), line(line), col(col), message(message) {}
  std::string file;
  int line, col;
  std::string message;
};

// A bug in outerworld, not in the user's input: an invariant that should always hold did not.
struct InternalError : std::logic_error {
  explicit InternalError(const std::string& what) : std::logic_error("internal error: " + what + " (please report)") {}
};

}  // namespace ow
