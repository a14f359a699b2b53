// ow step (the debugger) and ow run --trace=json, run as child processes (binary in $OW_BIN).
#include <catch2/catch.hpp>

#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "interp/npy.h"
#include "child_process.h"
#include "uop/text.h"

using namespace ow;
namespace fs = std::filesystem;

namespace {

fs::path source_dir() {
  const char* root = std::getenv("OW_SOURCE_DIR");
  REQUIRE(root != nullptr);
  return root;
}

struct Scan {
  std::string uop, vec, mats;
};
Scan scan_files() {
  fs::path r = source_dir() / "reference";
  return {(r / "cases" / "scan_with_assign.uop").string(), (r / "expected" / "scan_with_assign" / "in_vec.npy").string(),
          (r / "expected" / "scan_with_assign" / "in_mats.npy").string()};
}

// Runs `ow step ARGS` with the script on stdin.
Result step_session(const std::vector<std::string>& args, const std::string& script) {
  TempDir tmp;
  spit(tmp / "script", script);
  std::vector<std::string> all{"step"};
  all.insert(all.end(), args.begin(), args.end());
  return run_prog(ow_bin(), all, (tmp / "script").string());
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream ss(s);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

// Every element of the first array printed after the line `after` (numpy's layout: from the
// line whose text starts with '[' to its matching ']'), flat and row-major; "poison" is NaN.
std::vector<double> printed_values(const std::string& transcript, const std::string& after) {
  std::vector<std::string> ls = lines_of(transcript);
  auto it = std::find(ls.begin(), ls.end(), after);
  REQUIRE(it != ls.end());
  while (it != ls.end() && it->find_first_not_of(' ') != std::string::npos && (*it)[it->find_first_not_of(' ')] != '[') ++it;
  REQUIRE(it != ls.end());
  std::vector<double> v;
  int depth = 0;
  for (; it != ls.end(); ++it) {
    std::string line = *it;
    for (char& c : line) {
      depth += c == '[' ? 1 : c == ']' ? -1 : 0;
      if (c == '[' || c == ']') c = ' ';
    }
    std::istringstream ss(line);
    for (std::string tok; ss >> tok;) v.push_back(tok == "poison" ? NAN : std::stod(tok));
    if (depth == 0) return v;
  }
  FAIL("an unterminated array after '" << after << "' in:\n" << transcript);
  return {};
}

// Row k (of `width` elements) of the first array printed after `after`.
std::vector<double> printed_row(const std::string& transcript, const std::string& after, int64_t k, int64_t width = 10) {
  std::vector<double> all = printed_values(transcript, after);
  REQUIRE(static_cast<int64_t>(all.size()) >= (k + 1) * width);
  return std::vector<double>(all.begin() + k * width, all.begin() + (k + 1) * width);
}

// A small strict JSON parser (objects, arrays, strings, numbers, true/false/null): enough to
// check that every --trace=json line is one valid object and to read its keys.
struct Json {
  explicit Json(const std::string& text) : s(text) {}
  const std::string& s;
  size_t i = 0;
  std::vector<std::string> top_keys;
  int depth = 0;
  void ws() { while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i; }
  bool lit(const char* w) {
    size_t n = std::strlen(w);
    if (s.compare(i, n, w) != 0) return false;
    i += n;
    return true;
  }
  bool string(std::string* out = nullptr) {
    if (i >= s.size() || s[i] != '"') return false;
    ++i;
    std::string v;
    while (i < s.size() && s[i] != '"') {
      if (static_cast<unsigned char>(s[i]) < 0x20) return false;
      if (s[i] == '\\') {
        if (++i >= s.size() || std::string("\"\\/bfnrtu").find(s[i]) == std::string::npos) return false;
        if (s[i] == 'u') i += 4;
      } else v += s[i];
      ++i;
    }
    if (i >= s.size()) return false;
    ++i;
    if (out) *out = v;
    return true;
  }
  bool number() {
    static const std::regex re(R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)");
    std::smatch m;
    std::string rest = s.substr(i);
    if (!std::regex_search(rest, m, re, std::regex_constants::match_continuous)) return false;
    i += static_cast<size_t>(m.length(0));
    return true;
  }
  bool value() {
    ws();
    if (i >= s.size()) return false;
    if (s[i] == '{') return object();
    if (s[i] == '[') {
      ++i;
      ws();
      if (i < s.size() && s[i] == ']') return ++i, true;
      while (true) {
        if (!value()) return false;
        ws();
        if (i < s.size() && s[i] == ',') { ++i; continue; }
        if (i < s.size() && s[i] == ']') return ++i, true;
        return false;
      }
    }
    if (s[i] == '"') return string();
    if (lit("true") || lit("false") || lit("null")) return true;
    return number();
  }
  bool object() {
    ++i;
    ++depth;
    ws();
    if (i < s.size() && s[i] == '}') return ++i, --depth, true;
    while (true) {
      ws();
      std::string key;
      if (!string(&key)) return false;
      if (depth == 1) top_keys.push_back(key);
      ws();
      if (i >= s.size() || s[i] != ':') return false;
      ++i;
      if (!value()) return false;
      ws();
      if (i < s.size() && s[i] == ',') { ++i; continue; }
      if (i < s.size() && s[i] == '}') return ++i, --depth, true;
      return false;
    }
  }
  bool whole_object() {
    ws();
    if (i >= s.size() || s[i] != '{' || !object()) return false;
    ws();
    return i == s.size();
  }
};

}  // namespace

TEST_CASE("ow step: break on a range binding in the scan, print the partially written output") {
  Scan f = scan_files();
  Result r = step_session({f.uop, "--in", "vec=" + f.vec, "--in", "mats=" + f.mats}, "break m1=2\ncontinue\nwhere\nprint out\nquit\n");
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.err.empty());
  // The transcript echoes every command and stops where asked.
  CHECK(r.out.find("(ow) break m1=2\nbreakpoint 1: m1=2\n") != std::string::npos);
  CHECK(std::regex_search(r.out, std::regex(R"(stopped after %\d+ [A-Z_]+ .* with m1=2 \(step \d+\) \[breakpoint 1: m1=2\])")));
  CHECK(std::regex_search(r.out, std::regex(R"(\(ow\) where\nbindings: m1=2\npath: %37 SINK > %36 ASSIGN > .* > %5 RANGE\n)")));
  CHECK(r.out.find("buffer out (30 elements, shown as (3, 1, 10)):") != std::string::npos);
  CHECK(r.out.find("poison: 10 elements (uninitialized), first at [2, 0, 0]") != std::string::npos);

  // The prefix products, computed independently in double from the .npy inputs.
  interp::NpyArray vec = interp::load_npy(f.vec), mats = interp::load_npy(f.mats);
  REQUIRE(vec.data->size == 10);
  REQUIRE(mats.data->size == 300);
  const float* v = vec.data->as<float>();
  const float* m = mats.data->as<float>();
  std::vector<double> row(v, v + 10);
  for (int k = 0; k < 2; ++k) {  // out[k] = vec @ M0 @ ... @ Mk, M_k = mats[k] (10 x 10, row-major)
    std::vector<double> next(10, 0.0);
    for (int i = 0; i < 10; ++i)
      for (int j = 0; j < 10; ++j) next[i] += row[j] * m[k * 100 + j * 10 + i];
    row = next;
    std::vector<double> got = printed_row(r.out, "(ow) print out", k);
    REQUIRE(got.size() == 10);
    // The interpreter computes in float32 (one rounding per multiply and add, 10-term dot
    // products, chained twice): the error is a few units of float32's 2^-24 relative precision
    // times the magnitude of the terms. 1e-5 of (1 + |value|) is far above that rounding noise
    // and far below any real mistake (a wrong row or matrix changes values by O(1)).
    for (int i = 0; i < 10; ++i) CHECK(std::abs(got[i] - next[i]) <= 1e-5 * (1.0 + std::abs(next[i])));
  }
  // Row 2 is written by the iteration that has just started: still uninitialized.
  std::vector<double> third = printed_row(r.out, "(ow) print out", 2);
  REQUIRE(third.size() == 10);
  for (double x : third) CHECK(std::isnan(x));
  CHECK(r.out.find("   [[     poison      poison      poison      poison      poison\n          poison      poison      poison      poison      poison]]]\n") != std::string::npos);
}

TEST_CASE("ow step: break poison stops at the first node that reads uninitialized memory") {
  TempDir tmp;
  spit(tmp / "leak.uop",
       "%0 = CONST float32 () 1.5\n"
       "%1 = CONST float32 () 2.0\n"
       "%2 = ADD float32 (%0, %1)\n"
       "%3 = BUFFER float32 () (\"_x\", 4)\n"
       "%4 = MUL float32 (%2, %3)\n"
       "%5 = SINK void (%4) (\"out\",)\n");
  Result r = step_session({(tmp / "leak.uop").string()}, "break poison\ncontinue\nprint %3\ncontinue\nwhere\ncontinue\nquit\n");
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("breakpoint 1: poison\n") != std::string::npos);
  // (the graph is written in ow print's numbering). The clean CONSTs and ADD run first; the
  // first poisoned value is the read of the buffer given no data, then the MUL it leaks into.
  CHECK(r.out.find("stopped after %3 BUFFER float32 (4,) with no ranges bound (step 4) [breakpoint 1: poison]") != std::string::npos);
  CHECK(r.out.find("  value: poison: 4 of 4 elements") != std::string::npos);
  CHECK(r.out.find("poison: 4 elements (uninitialized), first at [0]") != std::string::npos);
  CHECK(std::regex_search(r.out, std::regex(R"(stopped after %4 MUL float32 \(4,\) .*\[breakpoint 1: poison\])")));
  CHECK(r.out.find("path: %5 SINK > %4 MUL\n") != std::string::npos);
  // Then the evaluation fails as ow run would, and the session still ends cleanly.
  CHECK(r.out.find("evaluation failed: output 'out' reads uninitialized memory") != std::string::npos);
  CHECK(r.out.find("(ow) quit") != std::string::npos);
}

TEST_CASE("ow run --trace=json: one valid JSON object per evaluation step") {
  Scan f = scan_files();
  TempDir tmp;
  Result r = run_ow({"run", f.uop, "--in", "vec=" + f.vec, "--in", "mats=" + f.mats, "--trace=json", "--trace-out", (tmp / "trace.jsonl").string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.err.empty());
  std::vector<std::string> ls = lines_of(slurp(tmp / "trace.jsonl"));

  // The number of on_step calls of the same evaluation, in process.
  ParsedGraph g = parse_graph(slurp(f.uop), f.uop);
  interp::BufferMap buffers;
  for (auto [name, path] : {std::pair{"vec", f.vec}, std::pair{"mats", f.mats}}) {
    interp::NpyArray a = interp::load_npy(path);
    buffers[name] = interp::BufferData{a.dtype, a.data, nullptr};
  }
  size_t calls = 0;
  interp::Options o;
  o.on_step = [&](const interp::Step&) { ++calls; };
  interp::run(g.root, buffers, o);
  REQUIRE(calls > 0);
  CHECK(ls.size() == calls);

  const std::vector<std::string> keys{"step", "node", "op", "dtype", "shape", "bindings", "count", "poison", "min", "max", "mean"};
  bool saw_binding = false, saw_poison = false;
  for (size_t k = 0; k < ls.size(); ++k) {
    INFO("line " << k + 1 << ": " << ls[k]);
    Json j{ls[k]};
    REQUIRE(j.whole_object());
    CHECK(j.top_keys == keys);
    CHECK(ls[k].rfind("{\"step\":" + std::to_string(k + 1) + ",\"node\":\"%", 0) == 0);
    saw_binding = saw_binding || ls[k].find("\"bindings\":{\"m1\":2}") != std::string::npos;
    saw_poison = saw_poison || std::regex_search(ls[k], std::regex(R"("poison":[1-9])"));
  }
  CHECK(saw_binding);
  CHECK(saw_poison);  // the scan reads out[max(m1-1, 0)] at m1 = 0: uninitialized, then discarded

  // Plain --trace keeps its text form, one line per step, on stderr.
  Result t = run_ow({"run", f.uop, "--in", "vec=" + f.vec, "--in", "mats=" + f.mats, "--trace"});
  REQUIRE(t.rc == 0);
  CHECK(lines_of(t.err).size() == calls);
  CHECK(t.err.rfind("[", 0) == 0);
  CHECK(run_ow({"run", f.uop, "--trace=xml"}).rc == 1);
}

TEST_CASE("ow step: bad commands are explained, quit exits 0") {
  Scan f = scan_files();
  std::vector<std::string> args{f.uop, "--in", "vec=" + f.vec, "--in", "mats=" + f.mats};
  Result r = step_session(args,
                          "frobnicate\nbreak %9999\nbreak zz=1\nbreak m1=x\nbreak wat\nprint\nprint nosuch\nprint %5\n"
                          "finish\nwhere\ngraph\nstep now\nbreak divergence\ndelete 7\nhelp\nquit\n");
  INFO(r.out << r.err);
  REQUIRE(r.rc == 1);  // a script in which commands failed (the session still ran to its end)
  CHECK(r.out.find("(ow) quit\nthe script had 10 failed commands: exit status 1\n") != std::string::npos);
  for (const char* msg : {"unknown command 'frobnicate' (type help for the list)", "break: no node %9999 (the graph has %0 .. %37",
                          "break: no range named 'zz' (ranges: m1)", "break: 'x' is not an integer", "break: expected %N, %NAME, an output name, RANGE=VALUE, poison or divergence, got 'wat'",
                          "print takes %N", "print: no node or buffer named 'nosuch'", "%5 RANGE has not been evaluated yet",
                          "finish: not inside a loop", "evaluation not started", "graph: no current node", "step takes no argument",
                          "break divergence: needs --lowered", "delete: no breakpoint 7", "break RANGE=VALUE"})
    CHECK(r.out.find(msg) != std::string::npos);
  CHECK(r.out.find("evaluation finished") == std::string::npos);  // quit before it ran

  // step / next / finish / graph move as documented.
  Result s = step_session(args, "break m1=1\ncontinue\ngraph\nfinish\nnext\ncontinue\nprint out\nstep\nquit\n");
  INFO(s.out);
  REQUIRE(s.rc == 0);
  CHECK(s.out.find("<- current") != std::string::npos);
  CHECK(std::regex_search(s.out, std::regex(R"(\(ow\) finish\nstopped after %\d+ [A-Z_]+ .* with no ranges bound)")));
  CHECK(s.out.find("evaluation finished after") != std::string::npos);
  CHECK(s.out.find("the evaluation has finished") != std::string::npos);
  CHECK(s.out.find("poison: 0") == std::string::npos);

  // End of input quits too.
  Result e = step_session(args, "step\n");
  CHECK(e.rc == 0);
  CHECK(e.out.find("end of input: quitting") != std::string::npos);

  // --lowered: kernel launches are the steps; the checked run finds no divergence.
  Result l = step_session({f.uop, "--lowered", "--in", "vec=" + f.vec, "--in", "mats=" + f.mats}, "break divergence\nbreak poison\nstep\nwhere\ncontinue\nquit\n");
  INFO(l.out << l.err);
  REQUIRE(l.rc == 1);  // break poison is refused with --lowered: a failed command
  CHECK(l.out.find("break divergence: a checked run found none") != std::string::npos);
  CHECK(l.out.find("break poison: not available with --lowered") != std::string::npos);
  CHECK(std::regex_search(l.out, std::regex(R"(stopped after %\d+ KERNEL \w+ \(launch 1\))")));
  CHECK(l.out.find("evaluation finished after") != std::string::npos);
}

namespace {

// A loop of n OUTER iterations summing its index, in the file's own names (%i, %x, %total),
// ow print's numbering being %0 .. %4 (%1 the range m1, %3 the REDUCE, output "sum").
std::string sum_loop(const std::string& n) {
  return "%n = CONST index () " + n + "\n"
         "%i = RANGE index (%n) (-1, AxisType.OUTER)\n"
         "%x = CAST float32 (%i)\n"
         "%total = REDUCE float32 (%x, %i) Ops.ADD\n"
         "%y = SINK void (%total) (\"sum\",)\n";
}

// `ow step` on a pseudo-terminal, as a person at a terminal runs it. Every read has a deadline,
// so a session that stops answering fails the test instead of hanging it; the child is killed
// at the end whatever happened.
class PtySession {
 public:
  PtySession(const std::vector<std::string>& args, const std::string& home) {
    std::vector<std::string> all{ow_bin(), "step"};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<std::string> env{"HOME=" + home, "TERM=xterm"};
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "HOME=", 5) != 0 && std::strncmp(*e, "TERM=", 5) != 0) env.push_back(*e);
    std::vector<char*> argv, envp;  // built before fork: the child only execs
    for (std::string& a : all) argv.push_back(a.data());
    for (std::string& e : env) envp.push_back(e.data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    winsize ws{};
    ws.ws_row = 40;
    ws.ws_col = 200;
    pid_ = forkpty(&fd_, nullptr, nullptr, &ws);
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
  }
  ~PtySession() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }

  void send(const std::string& keys) { REQUIRE(write(fd_, keys.data(), keys.size()) == static_cast<ssize_t>(keys.size())); }

  // Reads until `text` appears after the previous match; returns false at the deadline.
  bool wait_for(const std::string& text, double seconds = 20) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (true) {
      size_t at = seen_.find(text, mark_);
      if (at != std::string::npos) {
        mark_ = at + text.size();
        return true;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0 || !read_some(static_cast<int>(left))) return false;
    }
  }

  // The exit status, or -1 if the child has not exited within the time.
  int exit_status(double seconds = 20) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      read_some(50);  // keep the pty drained so the child never blocks on output
    }
    return -1;
  }

  // wait_for, failing the test (with the transcript so far) at the deadline.
  void expect(const std::string& text, double seconds = 20) {
    bool found = wait_for(text, seconds);
    INFO("waited for: " << text << "\ntranscript:\n" << seen_);
    REQUIRE(found);
  }

  const std::string& transcript() const { return seen_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string seen_;
  size_t mark_ = 0;

  bool read_some(int ms) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return ms < 100;  // a short wait (exit_status's) may find nothing
    char buf[4096];
    ssize_t n = read(fd_, buf, sizeof buf);
    if (n <= 0) return false;  // EIO: the child closed the terminal
    seen_.append(buf, static_cast<size_t>(n));
    return true;
  }
};

}  // namespace

TEST_CASE("ow step at a terminal: history, Enter repeats, Tab completes, Ctrl-C stops a long continue") {
  TempDir tmp;
  spit(tmp / "long.uop", sum_loop("1000000000"));  // 10^9 iterations: minutes, never reached here
  PtySession t({(tmp / "long.uop").string()}, tmp.path.string());
  t.expect("evaluation not started");
  t.expect("(ow) ");

  // Enter on an empty line repeats step.
  t.send("step\r");
  t.expect("stopped after %0 CONST index () with no ranges bound (step 1)");
  t.expect("(ow) ");
  t.send("\r");
  t.expect("stopped after %1 RANGE index () with m1=0 (step 2)");
  t.expect("(ow) ");

  // Up recalls the previous command (the line is redrawn with it), Enter runs it again.
  t.send("where\r");
  t.expect("path: %4 SINK > %3 REDUCE > %2 CAST > %1 RANGE\r\n");
  t.expect("(ow) ");
  t.send("\x1b[A");
  t.expect("(ow) where");
  t.send("\r");
  t.expect("path: %4 SINK > %3 REDUCE > %2 CAST > %1 RANGE\r\n");
  t.expect("(ow) ");

  // Tab completes a command, then a node by the file's own name.
  t.send("bre\t");
  t.expect("(ow) break ");
  t.send("%to\t");
  t.expect("(ow) break %total ");
  t.send("\r");
  t.expect("breakpoint 1: %3 REDUCE (%total)");
  t.expect("(ow) ");

  // continue runs the 10^9 iterations; Ctrl-C stops it inside the loop and the session goes
  // on. (A Ctrl-C that arrives before the terminal is back in cooked mode is read by the next
  // prompt as a key instead, so it is sent again until the run stops.)
  t.send("cont\t\r");
  t.expect("(ow) continue ");
  bool stopped = false;
  for (int i = 0; i < 20 && !stopped; ++i) {
    t.send("\x03");
    stopped = t.wait_for("[interrupted (Ctrl-C)]", 1);
  }
  INFO("transcript:\n" << t.transcript());
  REQUIRE(stopped);
  t.expect("(ow) ");
  t.send("print %x\r");
  t.expect("%x (%2) CAST, as evaluated at step ");
  t.expect("(ow) ");

  // Ctrl-C at the prompt abandons the line typed so far.
  t.send("garbage\x03");
  t.expect("^C");
  t.send("quit\r");
  int rc = t.exit_status();
  const std::string& out = t.transcript();
  INFO("transcript:\n" << out);
  CHECK(rc == 0);
  // The stop was inside the loop, not at the breakpoint after it.
  CHECK(std::regex_search(out, std::regex(R"(stopped after %\d \w+ \w+ \(\) with m1=\d+ \(step \d+\) \[interrupted \(Ctrl-C\)\])")));
  CHECK(out.find("unknown command") == std::string::npos);  // neither "garbage" nor an escape sequence ran
  CHECK(out.find("^[[A") == std::string::npos);
  // History is kept in ~/.ow_history for the next session.
  std::string history = slurp(tmp / ".ow_history");
  CHECK(history == "step\nwhere\nbreak %total\ncontinue\nprint %x\nquit\n");
}

TEST_CASE("ow step: the file's node names and output names, where's full path, restart") {
  TempDir tmp;
  spit(tmp / "sum.uop", sum_loop("5"));
  std::string file = (tmp / "sum.uop").string();

  // break and print by the file's names and by the output's name; %NAME=VALUE for its range.
  Result r = step_session({file}, "print sum\nbreak %i=3\nbreak %total\ncontinue\nprint %x\ncontinue\ncontinue\nprint sum\nwhere %x\nquit\n");
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("(ow) print sum\nsum (%3) REDUCE has not been evaluated yet\n") != std::string::npos);
  CHECK(r.out.find("breakpoint 1: m1=3 (%i=3)\n") != std::string::npos);
  CHECK(r.out.find("breakpoint 2: %3 REDUCE (%total)\n") != std::string::npos);
  CHECK(r.out.find("stopped after %1 RANGE index () with m1=3 (step 8) [breakpoint 1: m1=3 (%i=3)]") != std::string::npos);
  CHECK(r.out.find("%x (%2) CAST, as evaluated at step 7 with m1=2:\n") != std::string::npos);
  CHECK(r.out.find("stopped after %3 REDUCE float32 () with no ranges bound (step 12) [breakpoint 2: %3 REDUCE (%total)]") != std::string::npos);
  CHECK(r.out.find("(ow) print sum\noutput sum (%3 REDUCE), as the evaluation returned it:\n") != std::string::npos);
  CHECK(r.out.find("min=10 max=10 mean=10") != std::string::npos);  // 0 + 1 + 2 + 3 + 4
  CHECK(r.out.find("(ow) where %x\npath: %4 SINK > %3 REDUCE > %2 CAST\n") != std::string::npos);

  // A file numbered in another order than ow print: %N is ow print's (as the session shows),
  // said once at the start; the file's numbers beyond the graph's are still its names.
  spit(tmp / "renumbered.uop",
       "%10 = CONST index () 5\n%3 = RANGE index (%10) (-1, AxisType.OUTER)\n%7 = CAST float32 (%3)\n"
       "%2 = REDUCE float32 (%7, %3) Ops.ADD\n%1 = SINK void (%2) (\"sum\",)\n");
  Result n = step_session({(tmp / "renumbered.uop").string()}, "break %2\nbreak %10\nbreak %3=1\nbreak %1=1\nquit\n");
  INFO(n.out);
  CHECK(n.rc == 1);
  CHECK(n.out.find("note: this file numbers its nodes in another order than `ow print`") != std::string::npos);
  CHECK(n.out.find("breakpoint 1: %2 CAST\n") != std::string::npos);
  CHECK(n.out.find("breakpoint 2: %0 CONST (%10)\n") != std::string::npos);
  CHECK(n.out.find("error: break: %3 is %3 REDUCE, not a RANGE\n") != std::string::npos);
  CHECK(n.out.find("breakpoint 3: m1=1 (%1=1)\n") != std::string::npos);
  CHECK(r.out.find("note:") == std::string::npos);  // sum.uop's names are not numbers

  // where lists every node from the root to the current one: each next node is a source of
  // the one before (the scan's REDUCE, PAD and MUL were once skipped).
  Scan f = scan_files();
  Result w = step_session({f.uop, "--in", "vec=" + f.vec, "--in", "mats=" + f.mats}, "break m1=2\ncontinue\nstep\nstep\nwhere\nquit\n");
  INFO(w.out);
  REQUIRE(w.rc == 0);
  std::smatch m;
  REQUIRE(std::regex_search(w.out, m, std::regex(R"(\(ow\) where\nbindings: m1=2\npath: (.*)\n)")));
  Printed p = number_graph(parse_graph(slurp(f.uop), f.uop).root);
  std::vector<UOp> path;
  std::istringstream ss(m[1].str());
  for (std::string tok; ss >> tok;)
    if (tok[0] == '%') path.push_back(p.order.at(std::stoul(tok.substr(1))));
  REQUIRE(path.size() >= 10);
  CHECK(path.front() == p.order.back());  // the root
  CHECK(std::regex_search(w.out, std::regex(R"(stopped after %0 BUFFER .*\(step 59\))")));
  CHECK(path.back() == p.order[0]);  // the current node
  for (size_t i = 1; i < path.size(); ++i) {
    INFO(p.name(path[i - 1]) << " > " << p.name(path[i]));
    const auto& src = path[i - 1]->src;
    CHECK(std::find(src.begin(), src.end(), path[i]) != src.end());
  }

  // restart: from the start with the inputs as given (the scan writes `out` in place) and the
  // same breakpoints; also after the evaluation has finished.
  Result s = step_session({f.uop, "--in", "vec=" + f.vec, "--in", "mats=" + f.mats},
                          "break m1=1\ncontinue\nprint out\ncontinue\nrestart\nprint out\ndelete\nrestart\nrestart\nquit\n");
  INFO(s.out);
  REQUIRE(s.rc == 0);
  std::string stop = "[breakpoint 1: m1=1]";
  size_t first = s.out.find(stop), again = s.out.find(stop, first + 1);
  REQUIRE(again != std::string::npos);
  CHECK(s.out.find("restarting: evaluation from the start with the same inputs (1 breakpoint)\nstopped after") != std::string::npos);
  CHECK(std::regex_search(s.out, std::regex(R"(stopped after %5 RANGE index \(\) with m1=1 \(step (\d+)\) \[breakpoint 1: m1=1\][^]*restarting[^]*m1=1 \(step \1\))")));
  // Row 1 is poison again after the restart, as at the first stop.
  std::vector<double> row1 = printed_row(s.out.substr(again), "(ow) print out", 1);
  REQUIRE(row1.size() == 10);
  for (double x : row1) CHECK(std::isnan(x));
  // Without breakpoints, restart runs to the end; after the end it runs again.
  CHECK(s.out.find("(ow) restart\nrestarting: evaluation from the start with the same inputs (0 breakpoints)\nevaluation finished after") != std::string::npos);
  size_t ends = 0;
  for (size_t at = s.out.find("evaluation finished"); at != std::string::npos; at = s.out.find("evaluation finished", at + 1)) ++ends;
  CHECK(ends == 3);

  // A script with an unknown command: the rest still runs, the error is printed, ow exits 1.
  Result u = step_session({file}, "frobnicate\nbreak %nosuch\ncontinue\nquit\n");
  INFO(u.out);
  CHECK(u.rc == 1);
  CHECK(u.out.find("(ow) frobnicate\nerror: unknown command 'frobnicate' (type help for the list)\n") != std::string::npos);
  CHECK(u.out.find("error: break: no node %nosuch (the graph has %0 .. %4 as numbered by ow print FILE, the file's own %names, and the outputs sum)") != std::string::npos);
  CHECK(u.out.find("evaluation finished after 12 steps") != std::string::npos);
  CHECK(u.out.find("the script had 2 failed commands: exit status 1\n") != std::string::npos);
}
