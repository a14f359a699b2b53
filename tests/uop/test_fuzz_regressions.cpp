// Fuzzer regressions and hostile inputs for the .uop reader.
//
// Every input in tests/fuzz/regressions/ (reproducers from tools/fuzz.sh) and tests/fuzz/seeds/
// must either parse and verify, or throw ow::Error: never crash, never throw anything else. A
// graph that verifies must survive the print -> parse -> print round trip unchanged. The inline
// cases below are hand-written nasty inputs that must be rejected with an ow::Error. Files are
// checked in a forked child, so a crashing reproducer fails its own check, not the executable.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "uop/error.h"
#include "uop/text.h"
#include "uop/verify.h"

namespace fs = std::filesystem;

namespace {

fs::path source_dir() {
  const char* root = std::getenv("OW_SOURCE_DIR");
  if (root && *root) return root;
  // Run by hand from the repository root without meson's environment.
  return fs::current_path();
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Documentation and placeholders that live next to the inputs.
bool is_input_file(const fs::directory_entry& e) {
  if (!e.is_regular_file()) return false;
  std::string name = e.path().filename().string();
  return !(name.empty() || name[0] == '.' || name.rfind("README", 0) == 0 || e.path().extension() == ".md");
}

std::vector<fs::path> inputs_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (is_input_file(e)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

enum class Outcome { Rejected, Accepted };

// parse + verify; on success, the round trip must hold. Anything but ow::Error propagates
// (and fails the test); a crash takes the whole test binary down, which meson reports.
Outcome check_input(const std::string& text, const std::string& name) {
  ow::ParsedGraph g;
  try {
    g = ow::parse_graph(text, name);
    ow::verify_parsed(g);
  } catch (const ow::Error&) {
    return Outcome::Rejected;
  }
  const std::string printed = ow::print_graph(g.root);
  ow::ParsedGraph again = ow::parse_graph(printed, name + " (printed)");
  CHECK(again.root == g.root);
  CHECK(ow::print_graph(again.root) == printed);
  CHECK_NOTHROW(ow::verify_parsed(again));
  return Outcome::Accepted;
}

// parse + verify must throw ow::Error (and nothing else).
void require_rejected(const std::string& text) {
  CHECK_THROWS_AS(
      [&] {
        ow::ParsedGraph g = ow::parse_graph(text, "<nasty>");
        ow::verify_parsed(g);
      }(),
      ow::Error);
}

std::string chain(int n) {  // %0 = 1, %i = %i-1 + %0: a graph n nodes deep
  std::string s = "%0 = CONST index () 1\n";
  for (int i = 1; i < n; ++i)
    s += "%" + std::to_string(i) + " = ADD index (%" + std::to_string(i - 1) + ", %0)\n";
  return s;
}

// What a child process found checking one file; see check_file_isolated.
enum Verdict { kOk = 0, kRoundTrip = 3, kOtherException = 4 };

// The reader's verdict on one file, computed in a forked child so that an input that crashes
// (the point of a regression file until its bug is fixed) fails only its own check instead of
// taking down every test in this executable.
std::string check_file_isolated(const fs::path& f) {
  std::string text = slurp(f);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) return std::string("fork failed: ") + std::strerror(errno);
  if (pid == 0) {
    // Catch2's fatal-signal handlers were inherited: a crash here must kill this child, not
    // print a second test report from it.
    for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGILL, SIGBUS, SIGTRAP}) std::signal(sig, SIG_DFL);
    int verdict = kOk;
    try {
      ow::ParsedGraph g;
      bool ok = true;
      try {
        g = ow::parse_graph(text, f.filename().string());
        ow::verify_parsed(g);
      } catch (const ow::Error&) {
        ok = false;
      }
      if (ok) {
        const std::string printed = ow::print_graph(g.root);
        ow::ParsedGraph again = ow::parse_graph(printed, "<printed>");
        if (again.root != g.root || ow::print_graph(again.root) != printed) verdict = kRoundTrip;
        ow::verify_parsed(again);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", f.string().c_str(), e.what());
      verdict = kOtherException;
    } catch (...) {
      verdict = kOtherException;
    }
    std::fflush(nullptr);
    _exit(verdict);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return std::string("waitpid failed: ") + std::strerror(errno);
  if (WIFSIGNALED(status)) return std::string("crashed with signal ") + strsignal(WTERMSIG(status));
  switch (WEXITSTATUS(status)) {
    case kOk: return "";
    case kRoundTrip: return "verified, but print(parse(print(g))) != print(g)";
    case kOtherException: return "threw an exception that is not an ow::Error (message above)";
    default: return "exited with status " + std::to_string(WEXITSTATUS(status)) + " (a sanitizer report?)";
  }
}

}  // namespace

TEST_CASE("fuzz regressions and seeds never crash the reader", "[fuzz]") {
  fs::path root = source_dir();
  INFO("OW_SOURCE_DIR=" << root.string());
  REQUIRE(fs::is_directory(root / "tests" / "fuzz"));
  std::vector<fs::path> files = inputs_in(root / "tests" / "fuzz" / "regressions");
  std::vector<fs::path> seeds = inputs_in(root / "tests" / "fuzz" / "seeds");
  files.insert(files.end(), seeds.begin(), seeds.end());
  for (const fs::path& f : files) {
    INFO("input " << f.string());
    CHECK(check_file_isolated(f) == "");
  }
}

TEST_CASE("NUL bytes are rejected, not truncated", "[fuzz]") {
  using namespace std::string_literals;
  require_rejected("\0"s);
  require_rejected("%0 = CONST index () 1\0\n"s);
  require_rejected("%0 = CONST index () 1\n\0%1 = SINK void (%0)\n"s);
  require_rejected("%0 = CONST index () \"a\0b\"\n"s);
  require_rejected("%0\0 = CONST index () 1\n"s);
}

TEST_CASE("bytes 0x80-0xff are rejected", "[fuzz]") {
  require_rejected("\xff");
  require_rejected("\xff\xfe\xfd\n");
  require_rejected("%0 = CONST\xff index () 1\n");
  require_rejected("%0 = CONST index\xc3\xa9 () 1\n");
  require_rejected("%\xff = CONST index () 1\n");
  require_rejected("%0 = CONST index () 1 \x80\n");
}

TEST_CASE("deeply nested tuples are rejected without deep recursion", "[fuzz]") {
  for (int depth : {33, 100, 100000}) {
    INFO("depth " << depth);
    std::string open(static_cast<size_t>(depth), '(');
    std::string close;
    for (int i = 0; i < depth; ++i) close += ",)";
    require_rejected("%0 = CONST index () " + open + "1" + close + "\n");
    require_rejected("%0 = CONST index () " + open + "\n");  // and unterminated
  }
}

TEST_CASE("integers that do not fit in 64 bits are rejected", "[fuzz]") {
  require_rejected("%0 = CONST index () 9223372036854775808\n");
  require_rejected("%0 = CONST index () -9223372036854775809\n");
  require_rejected("%0 = CONST index () 99999999999999999999999999999999999999\n");
  require_rejected("%0 = CONST index () " + std::string(100000, '9') + "\n");
  require_rejected("%0 = CONST float64 () 1e99999\n");
  require_rejected("%0 = BUFFER float32*99999999999999999999 () (\"x\", 1)\n");
}

TEST_CASE("very long lines are rejected with an error, not a hang", "[fuzz]") {
  require_rejected("%0 = CONST index () 1" + std::string(1 << 20, ' ') + "x\n");
  require_rejected("%" + std::string(1 << 20, 'a') + " = NOT_AN_OP index () 1\n");
  require_rejected("%0 = " + std::string(1 << 20, 'A') + " index () 1\n");
  require_rejected("%0 = CONST index () \"" + std::string(1 << 20, 'x') + "\n");  // unterminated string
  std::string srcs = "%0 = CONST index () 1\n%1 = ADD index (";
  for (int i = 0; i < 100000; ++i) srcs += "%0, ";
  require_rejected(srcs + "\n");  // source list never closed
}

TEST_CASE("other malformed inputs are rejected", "[fuzz]") {
  require_rejected("");
  require_rejected("\n\n   \n");
  require_rejected("# only a comment\n");
  require_rejected("%0 = ADD index (%0, %0)\n");                                // self cycle
  require_rejected("%0 = CONST index () 1\n%0 = CONST index () 2\n");           // redefinition
  require_rejected("%0 = CONST index () 1\n%1 = CONST index () 2\n");           // dead line
  require_rejected("%0 = CONST index () 1\n%1 = ADD index (%0, %9)\n");         // undefined
  require_rejected("%0 = CONST index () \"\\q\"\n");                            // bad escape
  require_rejected("%0 = CONST index () \"\\x4\"\n");                           // short \x escape
  require_rejected("%0 = CONST index () (1)\n");                                // 1-tuple without comma
  require_rejected("%0 = CONST index () 1 tag=\n");                             // empty tag
  require_rejected("%0 = CONST notatype () 1\n");
  require_rejected("%0 = CONST float32** () 1\n");
  require_rejected("%0 = CONST float32*-1 () 1\n");
  require_rejected("%0 = CONST index () Ops.NOPE\n");
  require_rejected("%0 = CONST index () AxisType.\n");
  require_rejected("%0 = CONST index () 1.2.3\n");
  require_rejected("%0 = CONST index () 0x10\n");
  require_rejected("%0 = CONST index ()");                                      // no arg for a CONST
  require_rejected("%0 = ADD float32 ()\n");                                    // verifier: arity
}

TEST_CASE("long dependency chains are handled without recursion", "[fuzz]") {
  // Either outcome is fine; what matters is no stack overflow and a clean round trip.
  for (int n : {2, 1000, 50000}) {
    INFO("chain of " << n);
    CHECK_NOTHROW(check_input(chain(n), "<chain>"));
  }
}
