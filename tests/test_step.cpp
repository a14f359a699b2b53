// ow step (the debugger) and ow run --trace=json, run as child processes (binary in $OW_BIN).
#include <catch2/catch.hpp>

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

// The values printed on the row line that starts with `label` (e.g. "  [1, 0, 0:10]") after the
// line `after`; "poison" elements come back as NaN.
std::vector<double> printed_row(const std::string& transcript, const std::string& after, const std::string& label) {
  std::vector<std::string> ls = lines_of(transcript);
  auto start = std::find(ls.begin(), ls.end(), after);
  REQUIRE(start != ls.end());
  for (auto it = start; it != ls.end(); ++it)
    if (it->rfind(label, 0) == 0) {
      std::istringstream ss(it->substr(label.size()));
      std::vector<double> v;
      for (std::string tok; ss >> tok;) v.push_back(tok == "poison" ? NAN : std::stod(tok));
      return v;
    }
  FAIL("no line starting with '" << label << "' after '" << after << "' in:\n" << transcript);
  return {};
}

// A small strict JSON parser (objects, arrays, strings, numbers, true/false/null): enough to
// check that every --trace=json line is one valid object and to read its keys.
struct Json {
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
    std::vector<double> got = printed_row(r.out, "(ow) print out", "  [" + std::to_string(k) + ", 0, 0:10]");
    REQUIRE(got.size() == 10);
    // The interpreter computes in float32 (one rounding per multiply and add, 10-term dot
    // products, chained twice): the error is a few units of float32's 2^-24 relative precision
    // times the magnitude of the terms. 1e-5 of (1 + |value|) is far above that rounding noise
    // and far below any real mistake (a wrong row or matrix changes values by O(1)).
    for (int i = 0; i < 10; ++i) CHECK(std::abs(got[i] - next[i]) <= 1e-5 * (1.0 + std::abs(next[i])));
  }
  // Row 2 is written by the iteration that has just started: still uninitialized.
  std::vector<double> third = printed_row(r.out, "(ow) print out", "  [2, 0, 0:10]");
  REQUIRE(third.size() == 10);
  for (double x : third) CHECK(std::isnan(x));
  CHECK(r.out.find("[2, 0, 0:10] poison poison") != std::string::npos);
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
  REQUIRE(r.rc == 0);
  for (const char* msg : {"unknown command 'frobnicate' (type help for the list)", "break: no node %9999 (the graph has %0 .. %37",
                          "break: no range named 'zz' (ranges: m1)", "break: 'x' is not an integer", "break: expected %N, RANGE=VALUE, poison or divergence, got 'wat'",
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
  REQUIRE(l.rc == 0);
  CHECK(l.out.find("break divergence: a checked run found none") != std::string::npos);
  CHECK(l.out.find("break poison: not available with --lowered") != std::string::npos);
  CHECK(std::regex_search(l.out, std::regex(R"(stopped after %\d+ KERNEL \w+ \(launch 1\))")));
  CHECK(l.out.find("evaluation finished after") != std::string::npos);
}
