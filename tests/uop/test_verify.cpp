// The verifier: one test per rule id, each on a minimal bad graph, plus valid graphs.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "uop/error.h"
#include "uop/text.h"
#include "uop/verify.h"

using namespace ow;

namespace {

UOp idx(int64_t v) { return UOp::index(v); }
UOp i32(int64_t v) { return UOp::int_const(dtypes::int32, v); }
UOp f32(double v) { return UOp::cnst(dtypes::float32, v); }

UOp buffer(const std::string& name, int64_t size, DType d = dtypes::float32) {
  return UOp::make(Ops::BUFFER, d, {}, Arg(ArgTuple{Arg(name), Arg(size)}));
}

UOp reshape(UOp x, const std::vector<UOp>& dims) {
  std::vector<UOp> src{x};
  src.insert(src.end(), dims.begin(), dims.end());
  return UOp::make(Ops::RESHAPE, x->dtype, src);
}

// The scan-with-assign example, built in C++.
UOp scan_graph() {
  UOp three = idx(3), zero = idx(0), one = idx(1), ten = idx(10);
  UOp a = UOp::range(three, -1, AxisType::OUTER);
  UOp vec = reshape(buffer("vec", 10), {one, ten});
  UOp out = reshape(buffer("out", 30), {three, one, ten});
  UOp y = reshape(vec, {one, one, ten});
  UOp hi1 = (three - a) - one;
  UOp ypad = UOp::make(Ops::PAD, dtypes::float32, {y, a, hi1, zero, zero, zero, zero});
  UOp sum = ypad.reduce({a}, Ops::ADD);
  UOp assign = UOp::make(Ops::ASSIGN, dtypes::float32, {out, sum});
  return UOp::sink({assign}, Arg(ArgTuple{Arg("out")}));
}

VerifyIssue first_issue(UOp root, bool strict = false) {
  VerifyOptions o;
  o.strict = strict;
  auto issues = verify(root, o);
  REQUIRE_FALSE(issues.empty());
  return issues.front();
}

// Asserts the first problem's rule, a phrase of its message and the node it names.
void expect_issue(UOp root, const std::string& rule, const std::string& phrase, UOp node, bool strict = false) {
  VerifyIssue i = first_issue(root, strict);
  INFO("message: " << i.message);
  CHECK(i.rule == rule);
  CHECK_THAT(i.message, Catch::Contains(phrase));
  CHECK(i.node == node);
}

UOp kernel_global(DType d = dtypes::float32.pointer(10)) { return UOp::make(Ops::DEFINE_GLOBAL, d, {}, Arg(0)); }

}  // namespace

// ---------------------------------------------------------------- valid graphs

TEST_CASE("verify: the scan-with-assign example has no issues", "[verify]") {
  CHECK(verify(scan_graph()).empty());
  VerifyOptions strict;
  strict.strict = true;
  CHECK(verify(scan_graph(), strict).empty());
  CHECK_NOTHROW(verify_or_throw(scan_graph()));
}

TEST_CASE("verify: a kernel-level store loop has no issues", "[verify]") {
  UOp g = kernel_global();
  UOp r = UOp::range(10, 0);
  UOp st = g.index({r}).store(UOp::cnst(dtypes::float32, 1.0));
  CHECK(verify(st.end({r})).empty());
}

TEST_CASE("verify_or_throw names the rule and the printed node", "[verify]") {
  UOp bad = UOp::make(Ops::ADD, dtypes::int32, {i32(1)});
  CHECK_THROWS_AS(verify_or_throw(bad), Error);
  CHECK_THROWS_WITH(verify_or_throw(bad), Catch::Contains("src.count") && Catch::Contains("%1 = ADD int32 (%0)"));
}

// ---------------------------------------------------------------- one test per rule id

TEST_CASE("verify rule src.count: ADD with one source", "[verify][rule]") {
  UOp bad = UOp::make(Ops::ADD, dtypes::int32, {i32(1)});
  expect_issue(bad, "src.count", "ADD takes 2 source(s), got 1", bad);
}

TEST_CASE("verify rule src.count: CONST with a source", "[verify][rule]") {
  UOp bad = UOp::make(Ops::CONST, dtypes::int32, {i32(1)}, Arg(2));
  expect_issue(bad, "src.count", "CONST takes 0 source(s), got 1", bad);
}

TEST_CASE("verify rule src.count: PERMUTE with size sources", "[verify][rule]") {
  UOp t = buffer("t", 6);
  UOp bad = UOp::make(Ops::PERMUTE, dtypes::float32, {t, idx(0)}, Arg(ArgTuple{Arg(0)}));
  expect_issue(bad, "src.count", "takes its axes in the arg", bad);
}

TEST_CASE("verify rule arg: ALU op with an arg", "[verify][rule]") {
  UOp bad = UOp::make(Ops::ADD, dtypes::int32, {i32(1), i32(2)}, Arg(5));
  expect_issue(bad, "arg", "ADD takes no arg, got 5", bad);
}

TEST_CASE("verify rule arg: RESHAPE with an arg", "[verify][rule]") {
  UOp bad = UOp::make(Ops::RESHAPE, dtypes::float32, {buffer("t", 6), idx(6)}, Arg(ArgTuple{Arg(6)}));
  expect_issue(bad, "arg", "RESHAPE takes its sizes as sources, not an arg", bad);
}

TEST_CASE("verify rule const.arg: float arg on an int32 CONST", "[verify][rule]") {
  UOp bad = UOp::make(Ops::CONST, dtypes::int32, {}, Arg(1.5));
  expect_issue(bad, "const.arg", "CONST int32 needs a integer arg, got 1.5", bad);
}

TEST_CASE("verify rule const.arg: int32 CONST out of range", "[verify][rule]") {
  UOp bad = UOp::make(Ops::CONST, dtypes::int32, {}, Arg(int64_t{1} << 40));
  expect_issue(bad, "const.arg", "value 1099511627776 does not fit int32", bad);
}

TEST_CASE("verify rule const.arg: int arg on a float CONST", "[verify][rule]") {
  UOp bad = UOp::make(Ops::CONST, dtypes::float32, {}, Arg(1));
  expect_issue(bad, "const.arg", "needs a float (with '.') arg, got 1", bad);
}

TEST_CASE("verify rule const.arg: an unsigned CONST holds its bits, read either way", "[verify][rule]") {
  UOp big = UOp::make(Ops::CONST, dtypes::uint32, {}, Arg(int64_t{1} << 32));
  expect_issue(big, "const.arg", "value 4294967296 does not fit uint32 (-2^31 .. 2^32-1, taken modulo 2^32)", big);
  CHECK(verify(UOp::make(Ops::CONST, dtypes::uint32, {}, Arg(int64_t{4294967295}))).empty());
  CHECK(verify(UOp::make(Ops::CONST, dtypes::uint32, {}, Arg(int64_t{-1}))).empty());  // 2^32 - 1, as tinygrad writes it
  CHECK(verify(UOp::make(Ops::CONST, dtypes::uint64, {}, Arg(int64_t{-1}))).empty());  // 2^64 - 1
  CHECK(UOp::int_const(dtypes::uint32, -1)->arg.as<int64_t>() == 4294967295);       // built ones are canonical
  CHECK(UOp::cnst(dtypes::uint64, 0x1p63)->arg.as<int64_t>() == INT64_MIN);
  CHECK(UOp::make(Ops::CONST, dtypes::uint32, {}, Arg(int64_t{-1})).vmin() == 4294967295);
}

TEST_CASE("verify rule bitcast.size and bitcast.dtype", "[verify][rule]") {
  UOp x = buffer("x", 4);
  UOp wide = UOp::make(Ops::BITCAST, dtypes::uint64, {x});
  expect_issue(wide, "bitcast.size", "BITCAST from float32 (4 bytes) to uint64 (8 bytes) changes the size of an element", wide);
  UOp from_index = UOp::make(Ops::BITCAST, dtypes::float64, {idx(3)});
  expect_issue(from_index, "bitcast.dtype", "BITCAST between numeric dtypes only", from_index);
  CHECK(verify(UOp::make(Ops::BITCAST, dtypes::uint32, {x})).empty());
  CHECK(verify(UOp::make(Ops::BITCAST, dtypes::int64, {buffer("y", 2, dtypes::float64)})).empty());
}

TEST_CASE("verify rule alu.dtype: THREEFRY on uint64 only; var.dtype: variables are signed", "[verify][rule]") {
  UOp a = buffer("a", 2, dtypes::uint32);
  UOp bad = UOp::make(Ops::THREEFRY, dtypes::uint32, {a, a});
  expect_issue(bad, "alu.dtype", "THREEFRY needs uint64 operands, got uint32", bad);
  UOp b = buffer("b", 2, dtypes::uint64);
  CHECK(verify(UOp::make(Ops::THREEFRY, dtypes::uint64, {b, b})).empty());
  UOp var = UOp::variable("n", 0, 3, dtypes::uint32);
  expect_issue(var, "var.dtype", "DEFINE_VAR must have a signed integer dtype (int32, int64, index), got uint32", var);
}

TEST_CASE("verify rule range.dtype: int32 RANGE", "[verify][rule]") {
  UOp bad = UOp::make(Ops::RANGE, dtypes::int32, {i32(3)}, Arg(ArgTuple{Arg(0), Arg(AxisType::LOOP)}));
  expect_issue(bad, "range.dtype", "RANGE must be index, got int32", bad);
}

TEST_CASE("verify rule range.dtype: index RANGE with an int32 end", "[verify][rule]") {
  UOp bad = UOp::make(Ops::RANGE, dtypes::index, {i32(3)}, Arg(ArgTuple{Arg(0), Arg(AxisType::LOOP)}));
  expect_issue(bad, "range.dtype", "RANGE end must be index, got int32", bad);
}

TEST_CASE("verify rule range.arg: RANGE without an axis type", "[verify][rule]") {
  UOp bad = UOp::make(Ops::RANGE, dtypes::index, {idx(3)}, Arg(ArgTuple{Arg(0), Arg(1)}));
  expect_issue(bad, "range.arg", "RANGE arg must be (id, sub_id..., AxisType.X)", bad);
}

TEST_CASE("verify rule range.end: negative end", "[verify][rule]") {
  UOp bad = UOp::range(-1, 0);
  expect_issue(UOp::sink({bad.end({bad})}), "range.end", "RANGE end -1 can be negative", bad);
}

TEST_CASE("verify rule range.end: end that depends on another range", "[verify][rule]") {
  UOp outer = UOp::range(3, 0);
  UOp inner = UOp::range(outer + 1, 1);
  UOp st = kernel_global().index({inner}).store(f32(0.0));
  expect_issue(st.end({inner, outer}), "range.end", "RANGE end depends on another range", inner);
}

TEST_CASE("verify rule var.dtype: float DEFINE_VAR", "[verify][rule]") {
  UOp bad = UOp::make(Ops::DEFINE_VAR, dtypes::float32, {}, Arg(ArgTuple{Arg("n"), Arg(0), Arg(5)}));
  expect_issue(bad, "var.dtype", "DEFINE_VAR must have a signed integer dtype (int32, int64, index), got float32", bad);
}

TEST_CASE("verify rule var.arg: lo > hi", "[verify][rule]") {
  UOp bad = UOp::variable("n", 5, 1);
  expect_issue(bad, "var.arg", "DEFINE_VAR has lo > hi", bad);
}

TEST_CASE("verify rule var.arg: missing name", "[verify][rule]") {
  UOp bad = UOp::make(Ops::DEFINE_VAR, dtypes::index, {}, Arg(ArgTuple{Arg(0), Arg(5)}));
  expect_issue(bad, "var.arg", "DEFINE_VAR arg must be (\"name\", lo, hi)", bad);
}

TEST_CASE("verify rule bind.src: BIND of a non-variable", "[verify][rule]") {
  UOp bad = UOp::make(Ops::BIND, dtypes::index, {idx(3), idx(3)});
  expect_issue(bad, "bind.src", "BIND's first source must be a DEFINE_VAR, got CONST", bad);
}

TEST_CASE("verify rule bind.dtype: index variable bound to an int32 value", "[verify][rule]") {
  UOp v = UOp::variable("n", 0, 5);
  UOp bad = UOp::make(Ops::BIND, dtypes::index, {v, i32(3)});
  expect_issue(bad, "bind.dtype", "BIND of a index variable to a int32 value", bad);
}

TEST_CASE("verify rule bind.bounds: value outside the variable's range", "[verify][rule]") {
  UOp bad = UOp::variable("n", 1, 5).bind(idx(9));
  expect_issue(bad, "bind.bounds", "bound value 9 ranges over [9, 9], outside the variable's [1, 5]", bad);
}

TEST_CASE("verify rule alu.dtype: operands of different dtypes", "[verify][rule]") {
  UOp bad = UOp::make(Ops::ADD, dtypes::int32, {i32(1), idx(1)});
  expect_issue(bad, "alu.dtype", "ADD operands differ in dtype: int32 vs index", bad);
}

TEST_CASE("verify rule alu.dtype: comparison that is not bool", "[verify][rule]") {
  UOp bad = UOp::make(Ops::CMPLT, dtypes::int32, {i32(1), i32(2)});
  expect_issue(bad, "alu.dtype", "CMPLT of int32 must be bool, got int32", bad);
}

TEST_CASE("verify rule alu.dtype: result dtype differs from the operands", "[verify][rule]") {
  UOp bad = UOp::make(Ops::MUL, dtypes::float32, {i32(1), i32(2)});
  expect_issue(bad, "alu.dtype", "MUL of int32 must be int32, got float32", bad);
}

TEST_CASE("verify rule alu.dtype: WHERE with a non-bool condition", "[verify][rule]") {
  UOp bad = UOp::make(Ops::WHERE, dtypes::float32, {i32(1), f32(1.0), f32(2.0)});
  expect_issue(bad, "alu.dtype", "WHERE condition must be bool, got int32", bad);
}

TEST_CASE("verify rule alu.dtype: WHERE with branches of different dtypes", "[verify][rule]") {
  UOp c = UOp::cnst(dtypes::bool_, 1);
  UOp bad = UOp::make(Ops::WHERE, dtypes::float32, {c, f32(1.0), i32(2)});
  expect_issue(bad, "alu.dtype", "WHERE branches and result must share a dtype: float32, int32 -> float32", bad);
}

TEST_CASE("verify rule alu.dtype: transcendental op on integers", "[verify][rule]") {
  UOp bad = UOp::make(Ops::EXP2, dtypes::int32, {i32(1)});
  expect_issue(bad, "alu.dtype", "EXP2 needs a float dtype, got int32", bad);
}

TEST_CASE("verify rule alu.dtype: integer division of floats", "[verify][rule]") {
  UOp bad = UOp::make(Ops::IDIV, dtypes::float32, {f32(1.0), f32(2.0)});
  expect_issue(bad, "alu.dtype", "IDIV needs an integer dtype, got float32", bad);
}

TEST_CASE("verify rule alu.dtype: bitwise op on floats", "[verify][rule]") {
  UOp bad = UOp::make(Ops::AND, dtypes::float32, {f32(1.0), f32(2.0)});
  expect_issue(bad, "alu.dtype", "AND needs an integer or bool dtype, got float32", bad);
}

TEST_CASE("verify rule alu.dtype: pointer operand", "[verify][rule]") {
  UOp g = kernel_global();
  UOp bad = UOp::make(Ops::ADD, g->dtype, {g, g});
  expect_issue(bad, "alu.dtype", "ADD operand has non-value dtype float32*10", bad);
}

TEST_CASE("verify rule reduce.arg: REDUCE with Ops.SUB", "[verify][rule]") {
  UOp r = UOp::range(4, 0);
  UOp bad = UOp::make(Ops::REDUCE, dtypes::index, {r, r}, Arg(Ops::SUB));
  expect_issue(bad, "reduce.arg", "REDUCE arg must be Ops.ADD, Ops.MUL or Ops.MAX, got Ops.SUB", bad);
}

TEST_CASE("verify rule reduce.arg: REDUCE_AXIS with a bad arg", "[verify][rule]") {
  UOp t = buffer("t", 6);
  UOp bad = UOp::make(Ops::REDUCE_AXIS, dtypes::float32, {t}, Arg(Ops::ADD));
  expect_issue(bad, "reduce.arg", "REDUCE_AXIS arg must be (Ops.X, (axes...)), got Ops.ADD", bad);
}

TEST_CASE("verify rule reduce.dtype: REDUCE that changes the dtype", "[verify][rule]") {
  UOp r = UOp::range(4, 0);
  UOp bad = UOp::make(Ops::REDUCE, dtypes::float32, {r, r}, Arg(Ops::ADD));
  expect_issue(bad, "reduce.dtype", "REDUCE must keep its source's dtype index", bad);
}

TEST_CASE("verify rule reduce.src: REDUCE over a non-RANGE", "[verify][rule]") {
  UOp bad = UOp::make(Ops::REDUCE, dtypes::float32, {f32(1.0), idx(3)}, Arg(Ops::ADD));
  expect_issue(bad, "reduce.src", "REDUCE source 1 must be a RANGE, got CONST", bad);
}

TEST_CASE("verify rule movement.dtype: int32 size operand", "[verify][rule]") {
  UOp bad = UOp::make(Ops::RESHAPE, dtypes::float32, {buffer("t", 10), i32(10)});
  expect_issue(bad, "movement.dtype", "RESHAPE size operand 1 must be index, got int32", bad);
}

TEST_CASE("verify rule buffer.arg: BUFFER without a size", "[verify][rule]") {
  UOp bad = UOp::make(Ops::BUFFER, dtypes::float32, {}, Arg(ArgTuple{Arg("t")}));
  expect_issue(bad, "buffer.arg", "BUFFER arg must be (\"name\", size), got (\"t\",)", bad);
}

TEST_CASE("verify rule buffer.arg: BUFFER with an empty name", "[verify][rule]") {
  UOp bad = buffer("", 4);
  expect_issue(bad, "buffer.arg", "BUFFER name is empty", bad);
}

TEST_CASE("verify rule buffer.size: negative size", "[verify][rule]") {
  UOp bad = buffer("t", -1);
  expect_issue(bad, "buffer.size", "BUFFER size -1 is outside [0, 2^32]", bad);
}

TEST_CASE("verify rule buffer.size: more than 2^32 elements", "[verify][rule]") {
  UOp bad = buffer("t", (int64_t{1} << 32) + 1);
  expect_issue(bad, "buffer.size", "BUFFER size 4294967297 is outside [0, 2^32]", bad);
}

TEST_CASE("verify rule buffer.dtype: void BUFFER", "[verify][rule]") {
  UOp bad = buffer("t", 4, dtypes::void_);
  expect_issue(bad, "buffer.dtype", "BUFFER needs a value dtype, got void", bad);
}

TEST_CASE("verify rule buffer.name: one name for two different buffers", "[verify][rule]") {
  UOp b1 = buffer("x", 4), b2 = buffer("x", 5);
  expect_issue(UOp::sink({b1, b2}), "buffer.name", "buffer \"x\" is declared twice", b2);
}

TEST_CASE("verify rule sink.names: one name for two sources", "[verify][rule]") {
  UOp s = UOp::sink({buffer("a", 4), buffer("b", 4)}, Arg(ArgTuple{Arg("o")}));
  expect_issue(s, "sink.names", "SINK arg must be one output name per source, got (\"o\",)", s);
}

TEST_CASE("verify rule sink.names: duplicate output name", "[verify][rule]") {
  UOp s = UOp::sink({buffer("a", 4), buffer("b", 4)}, Arg(ArgTuple{Arg("o"), Arg("o")}));
  expect_issue(s, "sink.names", "output name \"o\" is used twice", s);
}

TEST_CASE("verify rule cast.dtype: CAST to void", "[verify][rule]") {
  UOp bad = UOp::make(Ops::CAST, dtypes::void_, {i32(1)});
  expect_issue(bad, "cast.dtype", "CAST between value dtypes only: int32 -> void", bad);
}

TEST_CASE("verify rule define_global.dtype: non-pointer DEFINE_GLOBAL", "[verify][rule]") {
  UOp bad = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32, {}, Arg(0));
  expect_issue(bad, "define_global.dtype", "DEFINE_GLOBAL needs a pointer dtype such as float32*10, got float32", bad);
}

TEST_CASE("verify rule define_global.arg: negative slot", "[verify][rule]") {
  UOp bad = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.pointer(10), {}, Arg(-1));
  expect_issue(bad, "define_global.arg", "parameter slot", bad);
}

TEST_CASE("verify rule store.dtype: storing an int32 into a float32 buffer", "[verify][rule]") {
  UOp target = kernel_global().index({idx(0)});
  UOp bad = target.store(i32(1));
  expect_issue(bad, "store.dtype", "STORE of a int32 value into a float32 target", bad);
}

TEST_CASE("verify rule store.dtype: ASSIGN of a different dtype", "[verify][rule]") {
  UOp bad = UOp::make(Ops::ASSIGN, dtypes::float32, {buffer("o", 4), buffer("i", 4, dtypes::int32)});
  expect_issue(bad, "store.dtype", "ASSIGN of a int32 value into a float32 target", bad);
}

// x.assign(x + 1) written as ASSIGN(previous ASSIGN, ...): the interpreter refused it at run time,
// while the compiled tiers lowered it (through a scheduler that took 2^n steps for n of them) and
// returned a result: now every backend refuses it up front, naming the node.
TEST_CASE("verify rule store.target: an ASSIGN into an ASSIGN, a STORE through an EXPAND", "[verify][rule]") {
  UOp x = buffer("x", 4);
  UOp first = UOp::make(Ops::ASSIGN, dtypes::float32, {x, x});
  UOp bad = UOp::make(Ops::ASSIGN, dtypes::float32, {first, first});
  expect_issue(bad, "store.target", "a STORE/ASSIGN target must be a buffer seen through RESHAPE/SHRINK/PERMUTE/FLIP/PAD/AFTER, not ASSIGN", bad);
  UOp one = buffer("one", 1);
  UOp wide = UOp::make(Ops::EXPAND, dtypes::float32, {one, UOp::index(4)});
  UOp through = UOp::make(Ops::ASSIGN, dtypes::float32, {wide, x});
  expect_issue(through, "store.target", "cannot write through an EXPAND", through);
  CHECK(verify(UOp::make(Ops::ASSIGN, dtypes::float32, {x.after({first}), x})).empty());  // x after the first: memory
}

TEST_CASE("verify rule load.src: LOAD of a value", "[verify][rule]") {
  UOp bad = UOp::make(Ops::LOAD, dtypes::float32, {f32(1.0)});
  expect_issue(bad, "load.src", "LOAD needs a pointer (INDEX of a DEFINE_GLOBAL), got float32", bad);
}

TEST_CASE("verify rule index.dtype: int32 index operand", "[verify][rule]") {
  UOp bad = kernel_global().index({i32(0)});
  expect_issue(bad, "index.dtype", "INDEX operand 1 must be index, got int32", bad);
}

TEST_CASE("verify rule end.src: END of a non-RANGE", "[verify][rule]") {
  UOp st = kernel_global().index({idx(0)}).store(f32(1.0));
  UOp bad = st.end({idx(3)});
  expect_issue(bad, "end.src", "END source 1 must be a RANGE, got CONST", bad);
}

TEST_CASE("verify rule dtype: non-void SINK", "[verify][rule]") {
  UOp bad = UOp::make(Ops::SINK, dtypes::float32, {f32(1.0)});
  expect_issue(bad, "dtype", "SINK must be void", bad);
}

TEST_CASE("verify rule dtype: CONTIGUOUS that changes the dtype", "[verify][rule]") {
  UOp bad = UOp::make(Ops::CONTIGUOUS, dtypes::int32, {buffer("t", 4)});
  expect_issue(bad, "dtype", "CONTIGUOUS must have its first source's dtype float32, got int32", bad);
}

TEST_CASE("verify rule dtype: STORE that is not void", "[verify][rule]") {
  UOp target = kernel_global().index({idx(0)});
  UOp bad = UOp::make(Ops::STORE, dtypes::float32, {target, f32(1.0)});
  expect_issue(bad, "dtype", "STORE must be void", bad);
}

TEST_CASE("verify rule dtype: LOAD of the wrong dtype", "[verify][rule]") {
  UOp target = kernel_global().index({idx(0)});
  UOp bad = UOp::make(Ops::LOAD, dtypes::int32, {target});
  expect_issue(bad, "dtype", "LOAD must produce float32", bad);
}

TEST_CASE("verify rule shape: RESHAPE that changes the element count", "[verify][rule]") {
  UOp bad = reshape(buffer("t", 10), {idx(7)});
  expect_issue(bad, "shape", "element count changes: (10,) -> (7,)", bad);
}

TEST_CASE("verify rule shape: only the node where the shape broke is reported", "[verify][rule]") {
  UOp bad = reshape(buffer("t", 10), {idx(7)});
  UOp user = bad + f32(1.0);
  auto issues = verify(user);
  REQUIRE(issues.size() == 1);
  CHECK(issues[0].node == bad);
}

TEST_CASE("verify rule scope: a range used outside any REDUCE/END", "[verify][rule]") {
  UOp a = UOp::range(3, 0);
  UOp root = a + 1;
  expect_issue(root, "scope", "range(s) 0 used outside their scope", root);
}

TEST_CASE("verify rule scope: names every free range", "[verify][rule]") {
  UOp a = UOp::range(3, -1), b = UOp::range(4, 2, AxisType::LOOP, {0});
  UOp root = UOp::sink({a + b});
  auto issues = verify(root);
  REQUIRE(issues.size() == 1);
  CHECK(issues[0].rule == "scope");
  CHECK(issues[0].node == root);
  CHECK_THAT(issues[0].message, Catch::Contains("m1") && Catch::Contains("2_0"));
}

TEST_CASE("verify rule scope: REDUCE and END close their ranges", "[verify][rule]") {
  UOp a = UOp::range(3, 0);
  CHECK(verify(a.reduce({a}, Ops::ADD)).empty());
  CHECK(free_ranges(a + 1) == std::vector<UOp>{a});
  CHECK(free_ranges(a.reduce({a}, Ops::ADD)).empty());
}

TEST_CASE("verify rule reduce.unused: only reported with strict", "[verify][rule]") {
  UOp r = UOp::range(3, 0);
  UOp red = f32(1.0).reduce({r}, Ops::ADD);
  CHECK(verify(red).empty());
  expect_issue(red, "reduce.unused", "REDUCE over range 0 that its value does not depend on", red, true);
}

TEST_CASE("verify reports every problem in topological order", "[verify]") {
  UOp bad1 = UOp::make(Ops::ADD, dtypes::int32, {i32(1)});
  UOp bad2 = UOp::make(Ops::MUL, dtypes::int32, {bad1, i32(2)}, Arg(1));
  auto issues = verify(bad2);
  REQUIRE(issues.size() == 2);
  CHECK(issues[0].node == bad1);
  CHECK(issues[0].rule == "src.count");
  CHECK(issues[1].node == bad2);
  CHECK(issues[1].rule == "arg");
}

// ---------------------------------------------------------------- the kernel grammar (verify_kernel)

namespace {

// KERNEL (SINK(END(STORE(out[r], value(in[r])), r)), out, in) ("k0",)
UOp copy_kernel(const std::function<UOp(UOp)>& value) {
  UOp r = UOp::range(10, 0, AxisType::LOOP);
  UOp out = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.pointer(10), {}, Arg(0));
  UOp in = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.pointer(10), {}, Arg(1));
  UOp ast = UOp::sink({out.index({r}).store(value(in.index({r}).load())).end({r})});
  return UOp::make(Ops::KERNEL, dtypes::void_, {ast, buffer("out", 10), buffer("in", 10)}, Arg(ArgTuple{Arg("k0")}));
}

}  // namespace

TEST_CASE("verify_kernel: a well-formed kernel passes", "[verify][kernel]") {
  CHECK_NOTHROW(verify_kernel(copy_kernel([](UOp x) { return x; })));
}

TEST_CASE("verify_kernel: a tensor-level op left in a kernel is an InternalError naming the node", "[verify][kernel]") {
  UOp k = copy_kernel([](UOp x) { return UOp::make(Ops::CONTIGUOUS, dtypes::float32, {x}); });
  CHECK_THROWS_AS(verify_kernel(k), InternalError);
  CHECK_THROWS_WITH(verify_kernel(k), Catch::Contains("kernel k0") && Catch::Contains("CONTIGUOUS is not a kernel-level op") &&
                                          Catch::Contains("= CONTIGUOUS float32 (%"));
}

TEST_CASE("verify_kernel: a DEFINE_GLOBAL slot without a buffer source is an InternalError", "[verify][kernel]") {
  UOp k = copy_kernel([](UOp x) { return x; });
  std::vector<UOp> src(k->src.begin(), k->src.end() - 1);  // drop the buffer of slot 1
  UOp bad = UOp::make(Ops::KERNEL, dtypes::void_, src, k->arg);
  CHECK_THROWS_WITH(verify_kernel(bad), Catch::Contains("slot names no buffer") && Catch::Contains("= DEFINE_GLOBAL float32*10 () 1"));
}

// Kernelize once ordered a kernel's read after the LOOP range the kernel itself iterates
// (../shared/repro/check_passes_loop_fold.uop): free at the host, so ow check --passes could not
// evaluate that stage, while the compiled path ignored it. Only a host loop's OUTER range may be
// a dependency there, bare or in an anchor.
TEST_CASE("verify_kernel: a buffer ordered after a non-OUTER range is an InternalError naming the range", "[verify][kernel]") {
  UOp k = copy_kernel([](UOp x) { return x; });
  auto with_in = [&](UOp in) {
    std::vector<UOp> src(k->src.begin(), k->src.end());
    src[2] = in;
    return UOp::make(Ops::KERNEL, dtypes::void_, src, k->arg);
  };
  UOp loop = UOp::range(9, 1, AxisType::LOOP), outer = UOp::range(9, 2, AxisType::OUTER);
  UOp in = k->src[2];
  UOp effect = UOp::sink({});
  CHECK_NOTHROW(verify_kernel(with_in(in.after({outer}))));
  CHECK_NOTHROW(verify_kernel(with_in(in.after({UOp::index(0).after({effect, outer})}))));
  for (UOp bad : {in.after({loop}), in.after({UOp::index(0).after({effect, loop})}), in.after({outer}).after({loop})}) {
    CHECK_THROWS_AS(verify_kernel(with_in(bad)), InternalError);
    CHECK_THROWS_WITH(verify_kernel(with_in(bad)), Catch::Contains("kernel k0") && Catch::Contains("ordered after a LOOP range") &&
                                                       Catch::Contains("= RANGE index (%"));
  }
}

// Registers (DEFINE_REG): numbered apart, small enough for the C stack, read by statements only.
TEST_CASE("verify_kernel: registers are numbered apart, bounded, and read outside REDUCEs and extents", "[verify][kernel]") {
  UOp r = UOp::range(10, 0, AxisType::LOOP), k = UOp::range(4, 1, AxisType::REDUCE);
  UOp out = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.pointer(10), {}, Arg(0));
  auto reg = [](int64_t n, int64_t size) { return UOp::make(Ops::DEFINE_REG, dtypes::float32.pointer(size), {}, Arg(n)); };
  auto kernel_of = [&](std::vector<UOp> stmts) {
    return UOp::make(Ops::KERNEL, dtypes::void_, {UOp::sink(std::move(stmts)), buffer("out", 10)}, Arg(ArgTuple{Arg("k0")}));
  };
  UOp acc = reg(0, 2).index({UOp::index(1)});
  UOp fine = UOp::make(Ops::GROUP, dtypes::void_, {acc.store(acc.load() + UOp::cnst(dtypes::float32, 1)), out.index({r}).store(acc.load())}).end({r});
  CHECK_NOTHROW(verify_kernel(kernel_of({fine})));
  // Two registers with one number.
  UOp other = reg(0, 3).index({UOp::index(0)});
  CHECK_THROWS_WITH(verify_kernel(kernel_of({fine, other.store(UOp::cnst(dtypes::float32, 0))})), Catch::Contains("same number"));
  // Over kMaxRegisterBytes: 65537 float32 elements are 262148 bytes.
  UOp big = reg(1, 65537).index({UOp::index(0)});
  CHECK_THROWS_WITH(verify_kernel(kernel_of({big.store(UOp::cnst(dtypes::float32, 0))})), Catch::Contains("at most 262144 bytes"));
  // A register read inside a REDUCE's body.
  UOp folded = (acc.load() + UOp::cnst(dtypes::float32, 1)).reduce({k}, Ops::ADD);
  CHECK_THROWS_AS(verify_kernel(kernel_of({out.index({r}).store(folded).end({r})})), InternalError);
  CHECK_THROWS_WITH(verify_kernel(kernel_of({out.index({r}).store(folded).end({r})})), Catch::Contains("REDUCE's body reads a register"));
  // A register indexed with a gate.
  UOp gated = UOp::make(Ops::INDEX, dtypes::float32.pointer(2), {reg(0, 2), UOp::index(0), UOp::cnst(dtypes::bool_, 1)});
  CHECK_THROWS_WITH(verify_kernel(kernel_of({gated.store(UOp::cnst(dtypes::float32, 0))})), Catch::Contains("INDEX(DEFINE_REG, linear)"));
}

// One base, one kind per type, one name per kind (uop/error.h): a catch of ow::Error sees an
// InternalError too, and every tool names the kind by kind_name (ow serve's "kind", ow fuzz).
TEST_CASE("errors: an InternalError is an ow::Error of kind internal; each type names its kind once", "[errors]") {
  try {
    throw InternalError("a broken invariant");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Internal);
    CHECK(std::string(e.what()) == "internal error: a broken invariant (please report)");
  }
  CHECK(std::string(kind_name(Error("x").kind())) == "user");
  CHECK(std::string(kind_name(Unsupported(Unsupported::Reason::EmptyDimension, "x").kind())) == "unsupported");
  CHECK(std::string(kind_name(BudgetExceeded("x").kind())) == "budget");
  CHECK(std::string(kind_name(UninitializedRead("x").kind())) == "uninitialized");
  CHECK(std::string(kind_name(ErrorKind::NotDifferentiable)) == "not-differentiable");
  CHECK(std::string(kind_name(InternalError("x").kind())) == "internal");
}
