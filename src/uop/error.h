// The kinds of failure, as types. Every problem with a user's graph or file is an ow::Error
// (never an assert or abort); what the compiled path does not handle yet, a budget running out
// and a read of uninitialized memory are Errors of their own type, so tools (ow fuzz, the
// report, ow serve) act on the type, never on message text. A broken invariant of outerworld
// itself is an InternalError: not the user's fault, and reported as a bug.
#pragma once
#include <stdexcept>
#include <string>

namespace ow {

// What kind of failure an Error is, from its type (each type says its own, Error::kind).
enum class ErrorKind {
  User,               // a problem with the user's graph, file or request: an Error of no more specific type
  Unsupported,        // Unsupported: a limit of the compiled path
  NotDifferentiable,  // grad::NotDifferentiable: a GRADIENT outerworld refuses to define
  Uninitialized,      // UninitializedRead
  Budget,             // BudgetExceeded
  Internal,           // InternalError: a bug in outerworld
};

// The kind's one name, wherever a kind is named: ow serve's "kind" (reference/SERVE.md),
// Python's outerworld.Error.kind, ow fuzz's categories.
constexpr const char* kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::User: return "user";
    case ErrorKind::Unsupported: return "unsupported";
    case ErrorKind::NotDifferentiable: return "not-differentiable";
    case ErrorKind::Uninitialized: return "uninitialized";
    case ErrorKind::Budget: return "budget";
    case ErrorKind::Internal: return "internal";
  }
  return "user";
}

struct Error : std::runtime_error {
  explicit Error(const std::string& message) : std::runtime_error(message), text_(message) {}
  const char* what() const noexcept override { return text_.c_str(); }
  virtual ErrorKind kind() const noexcept { return ErrorKind::User; }

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
// `reason` says which limit, the same for every graph that meets it (the message names the
// node and buffers), so refusals are counted by it.
struct Unsupported : Error {
  enum class Reason {
    EmptyDimension,         // an empty tensor that an effect still reaches
    SymbolicShape,          // a scan, OUTER reduce or STORE target of symbolic shape
    UnshapedValue,          // a scan, OUTER reduce or output of an unshaped (scalar) value
    InvalidShape,           // an index into a value whose shape is invalid once its ranges are bound
    MixedBufferVersions,    // a kernel reads a buffer after two different sets of its writes
    RunOnceInLoop,          // a kernel run once but reached inside a host loop after a use of its buffer
    UnorderedWrites,        // two steps write a buffer with no order between them
    ReadWriteCycle,         // steps that each read a buffer the other writes
    EffectInOuterFold,      // an effect inside an OUTER fold that runs in only some of its iterations
    OuterInsideLoop,        // an OUTER loop inside a non-OUTER range
    DependentCollect,       // an effect or OUTER fold in a collecting EXPAND over a range it depends on
    ReadAfterLoopEffect,    // a parallel END's value reads a buffer an effect inside the loop writes
  };
  Unsupported(Reason reason, const std::string& what) : Error(what + " (not supported by the compiled path yet)"), reason(reason) {}
  ErrorKind kind() const noexcept override { return ErrorKind::Unsupported; }
  Reason reason;
};

// The reason as a short stable name ("empty-dimension"), for summaries and machine output.
constexpr const char* reason_name(Unsupported::Reason r) {
  using R = Unsupported::Reason;
  switch (r) {
    case R::EmptyDimension: return "empty-dimension";
    case R::SymbolicShape: return "symbolic-shape";
    case R::UnshapedValue: return "unshaped-value";
    case R::InvalidShape: return "invalid-shape";
    case R::MixedBufferVersions: return "mixed-buffer-versions";
    case R::RunOnceInLoop: return "run-once-in-loop";
    case R::UnorderedWrites: return "unordered-writes";
    case R::ReadWriteCycle: return "read-write-cycle";
    case R::EffectInOuterFold: return "effect-in-outer-fold";
    case R::OuterInsideLoop: return "outer-inside-loop";
    case R::DependentCollect: return "dependent-collect";
    case R::ReadAfterLoopEffect: return "read-after-loop-effect";
  }
  return "unknown";
}

// --max-steps or --max-memory ran out.
struct BudgetExceeded : Error {
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::Budget; }
};

// An output depends on memory nothing initialized (Tensor.empty, a buffer given no data).
struct UninitializedRead : Error {
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::Uninitialized; }
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
// An Error like the others, so a site that reports any failure catches one type; a site that
// handles only the user's errors lets it through (`catch (const InternalError&) { throw; }`
// first), and `ow` reports it as a bug (exit 2, the graph saved for the report).
struct InternalError : Error {
  explicit InternalError(const std::string& what) : Error("internal error: " + what + " (please report)") {}
  ErrorKind kind() const noexcept override { return ErrorKind::Internal; }
};

}  // namespace ow
