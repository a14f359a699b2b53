// The .uop text format: round trips (reference cases and built graphs) and malformed inputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "uop/error.h"
#include "uop/text.h"

using namespace ow;
namespace fs = std::filesystem;

namespace {

UOp idx(int64_t v) { return UOp::index(v); }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> reference_cases() {
  const char* root = std::getenv("OW_SOURCE_DIR");
  REQUIRE(root != nullptr);
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(root) / "reference" / "cases"))
    if (e.is_regular_file() && e.path().extension() == ".uop") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The error a text produces, from parse_graph or else from verify_parsed. The test fails if the
// text is accepted, or if line, column or message differ.
void expect_error(const std::string& text, int line, int col, const std::string& substring) {
  INFO("input: " << (text.size() > 200 ? text.substr(0, 200) + "..." : text));
  try {
    ParsedGraph g = parse_graph(text, "t.uop");
    verify_parsed(g);
  } catch (const ParseError& e) {
    INFO("error: " << e.what());
    CHECK(e.file == "t.uop");
    CHECK(e.line == line);
    CHECK(e.col == col);
    CHECK_THAT(e.message, Catch::Contains(substring));
    CHECK(std::string(e.what()) ==
          "t.uop:" + std::to_string(e.line) + ":" + std::to_string(e.col) + ": " + e.message);
    return;
  }
  FAIL("the input was accepted");
}

const char* kScan =
    "%three = CONST index () 3\n"
    "%a = RANGE index (%three) (-1, AxisType.OUTER)\n"
    "%zero = CONST index () 0\n"
    "%one = CONST index () 1\n"
    "%ten = CONST index () 10\n"
    "%vecbuf = BUFFER float32 () (\"vec\", 10)\n"
    "%vec = RESHAPE float32 (%vecbuf, %one, %ten)\n"
    "%outbuf = BUFFER float32 () (\"out\", 30)\n"
    "%out = RESHAPE float32 (%outbuf, %three, %one, %ten)\n"
    "%y = RESHAPE float32 (%vec, %one, %one, %ten)\n"
    "%hi = SUB index (%three, %a)\n"
    "%hi1 = SUB index (%hi, %one)\n"
    "%ypad = PAD float32 (%y, %a, %hi1, %zero, %zero, %zero, %zero)\n"
    "%sum = REDUCE float32 (%ypad, %a) Ops.ADD\n"
    "%assign = ASSIGN float32 (%out, %sum)\n"
    "%sink = SINK void (%assign) (\"out\",)\n";

// The same graph, built in C++.
UOp scan_graph() {
  auto buffer = [](const char* name, int64_t n) {
    return UOp::make(Ops::BUFFER, dtypes::float32, {}, Arg(ArgTuple{Arg(name), Arg(n)}));
  };
  auto reshape = [](UOp x, std::vector<UOp> dims) {
    dims.insert(dims.begin(), x);
    return UOp::make(Ops::RESHAPE, x->dtype, dims);
  };
  UOp three = idx(3), zero = idx(0), one = idx(1), ten = idx(10);
  UOp a = UOp::range(three, -1, AxisType::OUTER);
  UOp vec = reshape(buffer("vec", 10), {one, ten});
  UOp out = reshape(buffer("out", 30), {three, one, ten});
  UOp y = reshape(vec, {one, one, ten});
  UOp ypad = UOp::make(Ops::PAD, dtypes::float32, {y, a, (three - a) - one, zero, zero, zero, zero});
  UOp assign = UOp::make(Ops::ASSIGN, dtypes::float32, {out, ypad.reduce({a}, Ops::ADD)});
  return UOp::sink({assign}, Arg(ArgTuple{Arg("out")}));
}

}  // namespace

// ---------------------------------------------------------------- round trips

TEST_CASE("text: every reference case prints back byte for byte", "[text][roundtrip]") {
  auto cases = reference_cases();
  REQUIRE(cases.size() >= 1);
  for (const fs::path& p : cases) {
    INFO("case: " << p.string());
    std::string text = slurp(p);
    ParsedGraph g = parse_graph(text, p.string());
    CHECK(print_graph(g.root) == text);
    CHECK(parse_graph(print_graph(g.root)).root == g.root);
  }
}

TEST_CASE("text: every reference case passes the verifier", "[text][roundtrip]") {
  for (const fs::path& p : reference_cases()) {
    INFO("case: " << p.string());
    ParsedGraph g = parse_graph(slurp(p), p.string());
    CHECK_NOTHROW(verify_parsed(g));
  }
}

TEST_CASE("text: the hand-written scan example parses to the C++-built graph", "[text][roundtrip]") {
  ParsedGraph g = parse_graph(kScan);
  CHECK(g.root == scan_graph());
  CHECK_NOTHROW(verify_parsed(g));
}

TEST_CASE("text: a C++-built graph round-trips to the same node", "[text][roundtrip]") {
  UOp g = scan_graph();
  std::string text = print_graph(g);
  ParsedGraph back = parse_graph(text);
  CHECK(back.root == g);
  CHECK(print_graph(back.root) == text);
}

TEST_CASE("text: exact printed form of a small graph", "[text][print]") {
  UOp r = UOp::range(10, -1);
  UOp g = UOp::sink({r + 1}, Arg(ArgTuple{Arg("o")}));
  CHECK(print_graph(g) ==
        "%0 = CONST index () 10\n"
        "%1 = RANGE index (%0) (-1, AxisType.LOOP)  # range m1\n"
        "%2 = CONST index () 1\n"
        "%3 = ADD index (%1, %2)\n"
        "%4 = SINK void (%3) (\"o\",)\n");
}

TEST_CASE("text: shaped nodes print their shape as a comment", "[text][print]") {
  UOp b = UOp::make(Ops::BUFFER, dtypes::float32, {}, Arg(ArgTuple{Arg("x"), Arg(6)}));
  UOp r = UOp::make(Ops::RESHAPE, dtypes::float32, {b, idx(2), idx(3)});
  CHECK(print_graph(r) ==
        "%0 = BUFFER float32 () (\"x\", 6)  # shape (6,)\n"
        "%1 = CONST index () 2\n"
        "%2 = CONST index () 3\n"
        "%3 = RESHAPE float32 (%0, %1, %2)  # shape (2, 3)\n");
}

TEST_CASE("text: special args and tags round-trip", "[text][roundtrip]") {
  double inf = std::numeric_limits<double>::infinity();
  std::vector<UOp> srcs{
      UOp::cnst(dtypes::float64, std::numeric_limits<double>::quiet_NaN()),
      UOp::cnst(dtypes::float64, -0.0),
      UOp::cnst(dtypes::float64, inf),
      UOp::cnst(dtypes::float32, -inf),
      UOp::cnst(dtypes::float64, 1e30),
      UOp::cnst(dtypes::float64, 0.1),
      UOp::cnst(dtypes::float32, 0.1),
      UOp::cnst(dtypes::float64, 5e-324),
      UOp::cnst(dtypes::float64, 123456789.0),
      UOp::cnst(dtypes::bool_, 1),
      UOp::int_const(dtypes::int64, std::numeric_limits<int64_t>::min()),
      UOp::int_const(dtypes::int32, std::numeric_limits<int32_t>::min()),
      UOp::make(Ops::BUFFER, dtypes::float32, {}, Arg(ArgTuple{Arg(std::string("q\"b\\s\nn\x01\x7f\xc3\xa9", 11)), Arg(4)})),
      UOp::make(Ops::NOOP, dtypes::void_, {}, Arg(ArgTuple{}), Arg("tagged")),
      UOp::make(Ops::NOOP, dtypes::void_, {}, {}, Arg(ArgTuple{Arg(1), Arg(ArgTuple{Arg(Ops::MAX), Arg(AxisType::UPCAST)})})),
      UOp::make(Ops::NOOP, dtypes::int32, {}, Arg(ArgTuple{Arg(ArgTuple{Arg(ArgTuple{})}), Arg(false)})),
  };
  UOp g = UOp::sink(srcs);
  std::string text = print_graph(g);
  INFO(text);
  CHECK(parse_graph(text).root == g);
  CHECK(text.find("%0 = CONST float64 () nan\n") != std::string::npos);
  CHECK(text.find("CONST float64 () -0.0\n") != std::string::npos);
  CHECK(text.find("CONST float64 () 1e+30\n") != std::string::npos);
  CHECK(text.find("CONST float32 () -inf\n") != std::string::npos);
  CHECK(text.find("CONST float64 () 123456789.0\n") != std::string::npos);
  CHECK(text.find("(\"q\\\"b\\\\s\\nn\\x01\\x7f\xc3\xa9\", 4)") != std::string::npos);
  CHECK(text.find("NOOP void () () tag=\"tagged\"\n") != std::string::npos);
  CHECK(text.find("NOOP void () tag=(1, (Ops.MAX, AxisType.UPCAST))\n") != std::string::npos);
  CHECK(text.find("NOOP int32 () (((),), false)\n") != std::string::npos);
}

// BUG (src/uop/arg.cpp format_double / parse.cpp named): a NaN with the sign bit set (what
// 0.0/0.0 yields on x86) prints as "nan" like the positive NaN, so parsing it back gives a
// different interned node. Args compare bitwise, so both NaNs are distinct nodes.
TEST_CASE("text: a negative NaN constant round-trips to the same node", "[text][roundtrip]") {
  double neg_nan = -std::numeric_limits<double>::quiet_NaN();
  REQUIRE(std::signbit(neg_nan));
  UOp c = UOp::cnst(dtypes::float64, neg_nan);
  CHECK(parse_graph(print_graph(c)).root == c);
}

// BUG (src/uop/parse.cpp statement, verify.cpp check_const): UOp::cnst rounds float32 constants
// to float32, but the parser builds `CONST float32 () 0.1` with the double 0.1 as its arg and the
// verifier accepts it, so the same constant is two different nodes depending on where it came
// from (the C++-built one prints as 0.10000000149011612). Either the parser should round or the
// verifier should reject a float32 CONST whose value is not a float32.
TEST_CASE("text: a float32 CONST from text is the float32-rounded node", "[text]") {
  ParsedGraph g = parse_graph("%a = CONST float32 () 0.1\n");
  bool rounded = g.root == UOp::cnst(dtypes::float32, 0.1);
  bool rejected = !verify(g.root).empty();
  CHECK((rounded || rejected));
}

TEST_CASE("text: names, spacing, comments and CRLF do not matter", "[text][roundtrip]") {
  std::string messy =
      "# a hand-written graph\r\n"
      "\r\n"
      "   %ten   =  CONST\tindex ( )   10   # ten\r\n"
      "%r.0 = RANGE index ( %ten ) ( -1 , AxisType.LOOP , )\r\n"
      "%ten_again = CONST index () 10\r\n"
      "%out = ADD index (%r.0,%ten_again)\r\n";
  ParsedGraph g = parse_graph(messy);
  UOp r = UOp::range(10, -1);
  CHECK(g.root == r + 10);
  CHECK(print_graph(g.root) ==
        "%0 = CONST index () 10\n"
        "%1 = RANGE index (%0) (-1, AxisType.LOOP)  # range m1\n"
        "%2 = ADD index (%1, %0)\n");
  // identical lines intern to one node, located at its first definition
  const Loc& loc = g.where.at(idx(10).get());
  CHECK(loc.line == 3);
  CHECK(loc.col == 4);
  CHECK(loc.name == "ten");
}

TEST_CASE("text: string escapes are decoded", "[text]") {
  ParsedGraph g = parse_graph("%b = BUFFER float32 () (\"a\\\"b\\\\c\\nd\\x41\", 4)\n");
  const ArgTuple* t = g.root->arg.tuple();
  REQUIRE(t != nullptr);
  CHECK((*t)[0] == Arg("a\"b\\c\nd" "A"));
}

TEST_CASE("text: 32 nested tuples are accepted", "[text]") {
  std::string arg = std::string(32, '(') + "1";
  for (int i = 0; i < 32; ++i) arg += ",)";
  ParsedGraph g = parse_graph("%a = NOOP void () " + arg + "\n");
  const Arg* a = &g.root->arg;
  int depth = 0;
  while (const ArgTuple* t = a->tuple()) {
    REQUIRE(t->size() == 1);
    a = &(*t)[0];
    ++depth;
  }
  CHECK(depth == 32);
  CHECK(*a == Arg(1));
}

// ---------------------------------------------------------------- malformed inputs

TEST_CASE("parse error: truncated line inside the source list", "[text][error]") {
  expect_error("%a = CONST index () 1\n%b = ADD index (%a,\n", 2, 20, "expected a node reference like %3, found end of line");
}

TEST_CASE("parse error: truncated line at end of file", "[text][error]") {
  expect_error("%a = CONST index", 1, 17, "expected '(' starting the source list, found end of file");
}

TEST_CASE("parse error: missing '='", "[text][error]") {
  expect_error("%a CONST index () 1\n", 1, 4, "expected '=', found 'C'");
}

TEST_CASE("parse error: missing name after '%'", "[text][error]") {
  expect_error("% = CONST index () 1\n", 1, 2, "expected a name after '%'");
}

TEST_CASE("parse error: unknown op", "[text][error]") {
  expect_error("%a = FOO index () 1\n", 1, 6, "unknown op 'FOO'");
}

TEST_CASE("parse error: unknown op on an indented line after comments", "[text][error]") {
  expect_error("# header\n\n%a = CONST index () 1\n   %b = BAR index (%a)\n", 4, 9, "unknown op 'BAR'");
}

TEST_CASE("parse error: unknown dtype", "[text][error]") {
  expect_error("%a = CONST float128 () 1\n", 1, 12, "unknown dtype 'float128'");
}

TEST_CASE("parse error: bad pointer dtype", "[text][error]") {
  expect_error("%g = DEFINE_GLOBAL float32*x () 0\n", 1, 20, "unknown dtype 'float32*x'");
}

TEST_CASE("parse error: missing source list", "[text][error]") {
  expect_error("%a = CONST index 1\n", 1, 18, "expected '(' starting the source list, found '1'");
}

TEST_CASE("parse error: missing comma in the source list", "[text][error]") {
  expect_error("%a = CONST index () 1\n%b = ADD index (%a %a)\n", 2, 20, "expected ',' or ')' in the source list, found '%'");
}

TEST_CASE("parse error: undefined reference", "[text][error]") {
  expect_error("%a = CONST index () 1\n%b = NEG index (%zz)\n", 2, 17, "undefined reference %zz");
}

TEST_CASE("parse error: forward reference (would be a cycle)", "[text][error]") {
  expect_error("%a = NEG index (%b)\n%b = CONST index () 1\n", 1, 17, "%b is used before its definition on line 2");
}

TEST_CASE("parse error: self reference", "[text][error]") {
  expect_error("%a = NEG index (%a)\n", 1, 17, "%a refers to itself");
}

TEST_CASE("parse error: duplicate name", "[text][error]") {
  expect_error("%a = CONST index () 1\n%a = CONST index () 2\n", 2, 1, "%a is already defined at line 1");
}

TEST_CASE("parse error: unterminated string", "[text][error]") {
  expect_error("%b = BUFFER float32 () (\"x, 10)\n", 1, 32, "unterminated string");
}

TEST_CASE("parse error: bad escape in a string", "[text][error]") {
  expect_error("%b = BUFFER float32 () (\"a\\qb\", 10)\n", 1, 28, "unknown escape in a string");
}

TEST_CASE("parse error: incomplete hex escape in a string", "[text][error]") {
  expect_error("%b = BUFFER float32 () (\"a\\x4g\", 10)\n", 1, 28, "unknown escape in a string");
}

TEST_CASE("parse error: control character in a string", "[text][error]") {
  expect_error("%b = BUFFER float32 () (\"a\tb\", 10)\n", 1, 27, "control character in a string");
}

TEST_CASE("parse error: integer overflow", "[text][error]") {
  expect_error("%a = CONST index () 99999999999999999999\n", 1, 21, "integer '99999999999999999999' does not fit in 64 bits");
}

TEST_CASE("parse error: malformed integer", "[text][error]") {
  expect_error("%a = CONST index () 12abc\n", 1, 21, "malformed number '12abc'");
  expect_error("%a = CONST index () -\n", 1, 21, "malformed number '-'");
}

// BUG (src/uop/parse.cpp, Parser::number): float errors are reported at the end of the number
// (column 28 here) while integer errors, and every other token error, point at its start.
TEST_CASE("parse error: malformed float points at the number", "[text][error]") {
  expect_error("%a = CONST float32 () 1.2.3\n", 1, 23, "malformed number '1.2.3'");
  expect_error("%a = CONST float64 () 1e999\n", 1, 23, "number '1e999' is out of range for float64");
}

TEST_CASE("parse error: malformed float is reported on its line", "[text][error]") {
  try {
    parse_graph("%a = CONST float32 () 1.2.3\n", "t.uop");
    FAIL("accepted");
  } catch (const ParseError& e) {
    CHECK(e.line == 1);
    CHECK_THAT(e.message, Catch::Contains("malformed number '1.2.3'"));
  }
}

TEST_CASE("parse error: one-element tuple without trailing comma", "[text][error]") {
  expect_error("%a = CONST index () (1)\n", 1, 23, "a one-element tuple needs a trailing comma");
}

TEST_CASE("parse error: tuple nested deeper than 32", "[text][error]") {
  expect_error("%a = CONST index () " + std::string(40, '(') + "\n", 1, 54, "arg nested deeper than 32 tuples");
  std::string arg33 = std::string(33, '(') + "1";
  for (int i = 0; i < 33; ++i) arg33 += ",)";
  expect_error("%a = NOOP void () " + arg33 + "\n", 1, 52, "arg nested deeper than 32 tuples");
}

TEST_CASE("parse error: unknown name in arg", "[text][error]") {
  expect_error("%a = CONST index () foo\n", 1, 21, "unknown name 'foo' in an arg");
  expect_error("%a = CONST index () Ops.FOO\n", 1, 21, "unknown name 'Ops.FOO' in an arg");
}

TEST_CASE("parse error: tag without a value", "[text][error]") {
  expect_error("%a = CONST index () 1 tag=", 1, 27, "expected an arg");
}

TEST_CASE("parse error: trailing garbage", "[text][error]") {
  expect_error("%a = CONST index () 1 2\n", 1, 23, "expected end of line, found '2'");
}

TEST_CASE("parse error: empty file", "[text][error]") {
  expect_error("", 1, 1, "empty graph");
}

TEST_CASE("parse error: only comments and blank lines", "[text][error]") {
  expect_error("# one\n   # two\n\n", 1, 1, "empty graph");
}

TEST_CASE("parse error: unreachable (dead) line", "[text][error]") {
  expect_error("%a = CONST index () 1\n%b = CONST index () 2\n", 1, 1, "%a is not used by the root");
}

TEST_CASE("parse error: the earliest dead line is reported", "[text][error]") {
  expect_error("%a = CONST index () 1\n  %b = CONST index () 2\n%c = CONST index () 3\n%d = NEG index (%c)\n", 1, 1,
               "%a is not used by the root");
  expect_error("%r = CONST index () 5\n  %b = CONST index () 2\n%c = NEG index (%r)\n", 2, 3, "%b is not used by the root");
}

TEST_CASE("parse error: the scan example with its unused %first line", "[text][error]") {
  std::string text = kScan;
  std::string first = "%first = CMPEQ bool (%a, %zero)\n";
  text.insert(text.find("%y = "), first);
  expect_error(text, 10, 1, "%first is not used by the root");
}

TEST_CASE("parse error: random binary bytes", "[text][error]") {
  expect_error(std::string("\x01\x02\xff\xfe\x00\x80", 6), 1, 1, "found byte 0x01");
  expect_error(std::string("\xff\xd8\xff\xe0", 4), 1, 1, "found byte 0xff");
  expect_error(std::string("%a = CONST index () 1\n%\x00", 24), 2, 2, "expected a name after '%'");
}

TEST_CASE("parse error: a 10 MB line fails with a short message", "[text][error]") {
  std::string big = "%a = CONST index () " + std::string(10 * 1024 * 1024, '7') + "\n";
  expect_error(big, 1, 21, "does not fit in 64 bits");
  try {
    parse_graph(big);
  } catch (const ParseError& e) {
    CHECK(e.message.size() < 200);
  }
}

// BUG (src/uop/parse.cpp, Parser::statement and sources): unknown op, unknown dtype, undefined
// reference and duplicate-name messages quote the whole token, so a 10 MB token gives a 10 MB
// error message (and a 10 MB line on the CLI's stderr). Numbers and arg names are cut at 40.
TEST_CASE("parse error: a 10 MB op name gives a short message", "[text][error]") {
  std::string big = "%a = " + std::string(10 * 1024 * 1024, 'X') + " index () 1\n";
  try {
    parse_graph(big);
    FAIL("accepted");
  } catch (const ParseError& e) {
    CHECK(e.line == 1);
    CHECK(e.col == 6);
    CHECK_THAT(e.message, Catch::Contains("unknown op"));
    CHECK(e.message.size() < 200);
  }
}

TEST_CASE("verify error: wrong arity is reported at that node's line", "[text][error][verify]") {
  expect_error("%a = CONST index () 1\n%b = ADD index (%a)\n", 2, 1,
               "src.count: ADD takes 2 source(s), got 1 (in %b = ADD index (%a))");
}

TEST_CASE("verify error: position of an indented node", "[text][error][verify]") {
  expect_error("%a = CONST index () 1\n  %b = ADD index (%a)   # comment\n", 2, 3, "(in %b = ADD index (%a))");
}

TEST_CASE("verify error: wrong dtype", "[text][error][verify]") {
  expect_error("%a = CONST index () 1\n%b = CONST int32 () 2\n%c = ADD index (%a, %b)\n", 3, 1,
               "alu.dtype: ADD operands differ in dtype: index vs int32");
}

TEST_CASE("verify error: wrong const arg", "[text][error][verify]") {
  expect_error("%a = CONST float32 () 1\n", 1, 1, "const.arg: CONST float32 needs a float (with '.') arg, got 1");
}

TEST_CASE("verify error: scope", "[text][error][verify]") {
  expect_error("%n = CONST index () 3\n%r = RANGE index (%n) (0, AxisType.LOOP)\n%s = ADD index (%r, %n)\n", 3, 1,
               "scope: range(s) 0 used outside their scope");
}

TEST_CASE("verify error: sink names", "[text][error][verify]") {
  expect_error("%a = BUFFER float32 () (\"x\", 4)\n%s = SINK void (%a) (\"o\", \"p\")\n", 2, 1,
               "sink.names: SINK arg must be one output name per source");
}

TEST_CASE("verify error: invalid shape", "[text][error][verify]") {
  expect_error("%b = BUFFER float32 () (\"x\", 10)\n%n = CONST index () 7\n%r = RESHAPE float32 (%b, %n)\n", 3, 1,
               "shape: element count changes: (10,) -> (7,)");
}

TEST_CASE("verify error: strict mode rejects a reduce over an unused range", "[text][error][verify]") {
  std::string text =
      "%one = CONST float32 () 1.0\n"
      "%n = CONST index () 3\n"
      "%r = RANGE index (%n) (0, AxisType.REDUCE)\n"
      "%s = REDUCE float32 (%one, %r) Ops.ADD\n";
  ParsedGraph g = parse_graph(text, "t.uop");
  CHECK_NOTHROW(verify_parsed(g));
  VerifyOptions strict;
  strict.strict = true;
  try {
    verify_parsed(g, strict);
    FAIL("accepted in strict mode");
  } catch (const ParseError& e) {
    CHECK(e.line == 4);
    CHECK(e.col == 1);
    CHECK_THAT(e.message, Catch::StartsWith("reduce.unused: "));
  }
}
