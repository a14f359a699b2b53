// The kinds of failure, as types. Every problem with a user's graph or file is an ow::Error
// (never an assert or abort); what the compiled path does not handle yet, a budget running out
// and a read of uninitialized memory are Errors of their own type, so tools (ow fuzz, the
// report, ow serve) act on the type, never on message text. A broken invariant of outerworld
// itself is an InternalError: not the user's fault, and reported as a bug.
#pragma once
#include <stdexcept>
#include <string>

namespace ow {

struct Error : std::runtime_error {
  explicit Error(const std::string& message) : std::runtime_error(message), text_(message) {}
  const char* what() const noexcept override { return text_.c_str(); }

  // Where it happened ("\n  at %3 = ADD ...\n  with m1=2"), added once by the innermost frame
  // that knows; the error keeps its type on the way out (catch by reference, add, rethrow).
  bool located() const { return located_; }
  void locate(const std::string& where) {
    if (located_) return;
    text_ += where;
    located_ = true;
  }

 private:
  std::string text_;
  bool located_ = false;
};

// A graph that is valid but that the compiled path (lowering, C backends) does not handle yet;
// the interpreter defines its meaning, so this is a limit of outerworld, not the user's error.
struct Unsupported : Error {
  explicit Unsupported(const std::string& what) : Error(what + " (not supported by the compiled path yet)") {}
};

// --max-steps or --max-memory ran out.
struct BudgetExceeded : Error {
  using Error::Error;
};

// An output depends on memory nothing initialized (Tensor.empty, a buffer given no data).
struct UninitializedRead : Error {
  using Error::Error;
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
