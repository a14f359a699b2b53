#include "uop/verify.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "uop/args.h"
#include "uop/shape.h"
#include "uop/symbolic.h"
#include "uop/error.h"
#include "uop/text.h"

namespace ow {

namespace {

struct Problem {
  std::string rule, message;
};
using Check = std::optional<Problem>;

Check fail(std::string rule, std::string message) { return Problem{std::move(rule), std::move(message)}; }

std::string dt(DType d) { return to_string(d); }

// An arg as quoted in a message, cut so a huge arg still gives a one-line error.
std::string arg_text(const Arg& a) {
  std::string t = to_string(a);
  return t.size() > 60 ? t.substr(0, 57) + "..." : t;
}

Check count(UOp u, size_t lo, size_t hi) {
  size_t n = u->src.size();
  if (n >= lo && n <= hi) return std::nullopt;
  std::string want = lo == hi ? std::to_string(lo) : hi == SIZE_MAX ? "at least " + std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
  return fail("src.count", std::string(op_name(u->op)) + " takes " + want + " source(s), got " + std::to_string(n));
}

Check no_arg(UOp u) {
  if (u->arg.none()) return std::nullopt;
  return fail("arg", std::string(op_name(u->op)) + " takes no arg, got " + arg_text(u->arg));
}

bool is_value(DType d) { return !d.ptr && !d.is_void(); }

Check check_const(UOp u) {
  if (auto e = count(u, 0, 0)) return e;
  const Arg& a = u->arg;
  bool ok = u->dtype.is_bool() ? a.is<bool>() : u->dtype.is_int() ? a.is<int64_t>() : u->dtype.is_float() ? a.is<double>() : false;
  if (!ok) return fail("const.arg", "CONST " + dt(u->dtype) + " needs a " + (u->dtype.is_bool() ? "bool" : u->dtype.is_int() ? "integer" : u->dtype.is_float() ? "float (with '.')" : "value dtype") + " arg, got " + arg_text(a));
  if (!u->dtype.is_int() || u->dtype.itemsize() == 8) return std::nullopt;
  int64_t v = a.as<int64_t>();
  auto [lo, hi] = int_limits(u->dtype);
  if (u->dtype.is_signed_int() && (v < lo || v > hi)) return fail("const.arg", "value " + std::to_string(v) + " does not fit " + dt(u->dtype));
  // An unsigned CONST holds its value modulo 2^bits, its bits read unsigned or as two's complement
  // (tinygrad writes uint32 2^32 - 1 as -1; a uint64 above 2^63 - 1 can only be written that way).
  std::string bits = std::to_string(8 * u->dtype.itemsize());
  if (u->dtype.is_unsigned() && (v < -(hi / 2) - 1 || v > hi))
    return fail("const.arg", "value " + std::to_string(v) + " does not fit " + dt(u->dtype) + " (-2^" + std::to_string(8 * u->dtype.itemsize() - 1) + " .. 2^" + bits + "-1, taken modulo 2^" + bits + ")");
  return std::nullopt;
}

Check check_range(UOp u) {
  if (auto e = count(u, 1, SIZE_MAX)) return e;
  if (!u->dtype.is_index()) return fail("range.dtype", "RANGE must be index, got " + dt(u->dtype));
  if (u->src[0]->dtype != u->dtype) return fail("range.dtype", "RANGE end must be " + dt(u->dtype) + ", got " + dt(u->src[0]->dtype));
  const ArgTuple* t = u->arg.tuple();
  bool ok = t && t->size() >= 2 && t->back().is<AxisType>() &&
            std::all_of(t->begin(), t->end() - 1, [](const Arg& x) { return x.is<int64_t>(); });
  if (!ok) return fail("range.arg", "RANGE arg must be (id, sub_id..., AxisType.X) with integer ids, got " + arg_text(u->arg));
  if (u->src[0].vmin() < 0) return fail("range.end", "RANGE end " + render_expr(u->src[0]) + " can be negative");
  return std::nullopt;
}

Check check_define_var(UOp u) {
  if (auto e = count(u, 0, 0)) return e;
  if (!u->dtype.is_signed_int()) return fail("var.dtype", "DEFINE_VAR must have a signed integer dtype (int32, int64, index), got " + dt(u->dtype));
  const ArgTuple* t = u->arg.tuple();
  if (!t || t->size() != 3 || !(*t)[0].is<std::string>() || !(*t)[1].is<int64_t>() || !(*t)[2].is<int64_t>())
    return fail("var.arg", "DEFINE_VAR arg must be (\"name\", lo, hi), got " + arg_text(u->arg));
  if ((*t)[1].as<int64_t>() > (*t)[2].as<int64_t>()) return fail("var.arg", "DEFINE_VAR has lo > hi in " + arg_text(u->arg));
  return std::nullopt;
}

Check check_bind(UOp u) {
  if (auto e = count(u, 2, 2)) return e;
  if (auto e = no_arg(u)) return e;
  UOp var = u->src[0], val = u->src[1];
  if (var->op != Ops::DEFINE_VAR) return fail("bind.src", "BIND's first source must be a DEFINE_VAR, got " + std::string(op_name(var->op)));
  if (val->dtype != var->dtype || u->dtype != var->dtype) return fail("bind.dtype", "BIND of a " + dt(var->dtype) + " variable to a " + dt(val->dtype) + " value");
  if (val.vmin() < var.vmin() || val.vmax() > var.vmax())
    return fail("bind.bounds", "bound value " + render_expr(val) + " ranges over [" + std::to_string(val.vmin()) + ", " + std::to_string(val.vmax()) +
                                   "], outside the variable's [" + std::to_string(var.vmin()) + ", " + std::to_string(var.vmax()) + "]");
  return std::nullopt;
}

Check check_alu(UOp u) {
  int arity = alu_arity(u->op);
  if (auto e = count(u, static_cast<size_t>(arity), static_cast<size_t>(arity))) return e;
  if (auto e = no_arg(u)) return e;
  const auto& s = u->src;
  for (UOp x : s)
    if (!is_value(x->dtype)) return fail("alu.dtype", std::string(op_name(u->op)) + " operand has non-value dtype " + dt(x->dtype));
  if (u->op == Ops::WHERE) {
    if (!s[0]->dtype.is_bool()) return fail("alu.dtype", "WHERE condition must be bool, got " + dt(s[0]->dtype));
    if (s[1]->dtype != s[2]->dtype || u->dtype != s[1]->dtype)
      return fail("alu.dtype", "WHERE branches and result must share a dtype: " + dt(s[1]->dtype) + ", " + dt(s[2]->dtype) + " -> " + dt(u->dtype));
    return std::nullopt;
  }
  for (UOp x : s)
    if (x->dtype != s[0]->dtype) return fail("alu.dtype", std::string(op_name(u->op)) + " operands differ in dtype: " + dt(s[0]->dtype) + " vs " + dt(x->dtype));
  DType in = s[0]->dtype;
  DType want = is_comparison(u->op) ? dtypes::bool_ : in;
  if (u->dtype != want) return fail("alu.dtype", std::string(op_name(u->op)) + " of " + dt(in) + " must be " + dt(want) + ", got " + dt(u->dtype));
  switch (u->op) {
    case Ops::POW:  // floats, and integers (S2.1: a^b modulo 2^bits, b >= 0)
      if (in.is_bool()) return fail("alu.dtype", "POW needs a float or integer dtype, got " + dt(in));
      break;
    case Ops::EXP2: case Ops::LOG2: case Ops::SIN: case Ops::SQRT: case Ops::RECIPROCAL: case Ops::FDIV:
      if (!in.is_float()) return fail("alu.dtype", std::string(op_name(u->op)) + " needs a float dtype, got " + dt(in));
      break;
    case Ops::IDIV: case Ops::MOD: case Ops::SHL: case Ops::SHR:
      if (!in.is_int()) return fail("alu.dtype", std::string(op_name(u->op)) + " needs an integer dtype, got " + dt(in));
      break;
    case Ops::AND: case Ops::OR: case Ops::XOR:
      if (in.is_float()) return fail("alu.dtype", std::string(op_name(u->op)) + " needs an integer or bool dtype, got " + dt(in));
      break;
    case Ops::THREEFRY:
      if (in != dtypes::uint64) return fail("alu.dtype", "THREEFRY needs uint64 operands, got " + dt(in));
      break;
    default: break;
  }
  return std::nullopt;
}

// BITCAST reinterprets the bits, so both sides must be numbers of one size (bool and index have
// no bit layout of their own).
Check check_bitcast(UOp u) {
  if (auto e = count(u, 1, 1)) return e;
  if (auto e = no_arg(u)) return e;
  DType from = u->src[0]->dtype, to = u->dtype;
  auto numeric = [](DType d) { return d.is_float() || (d.is_int() && !d.is_index()); };
  if (!numeric(from) || !numeric(to)) return fail("bitcast.dtype", "BITCAST between numeric dtypes only (not bool, index or pointers): " + dt(from) + " -> " + dt(to));
  if (from.itemsize() != to.itemsize())
    return fail("bitcast.size", "BITCAST from " + dt(from) + " (" + std::to_string(from.itemsize()) + " bytes) to " + dt(to) + " (" + std::to_string(to.itemsize()) + " bytes) changes the size of an element");
  return std::nullopt;
}

Check check_reduce(UOp u) {
  if (auto e = count(u, 2, SIZE_MAX)) return e;
  const Ops* op = u->arg.get_if<Ops>();
  if (!op || (*op != Ops::ADD && *op != Ops::MUL && *op != Ops::MAX))
    return fail("reduce.arg", std::string(op_name(u->op)) + " arg must be Ops.ADD, Ops.MUL or Ops.MAX, got " + arg_text(u->arg));
  if (u->dtype != u->src[0]->dtype) return fail("reduce.dtype", std::string(op_name(u->op)) + " must keep its source's dtype " + dt(u->src[0]->dtype));
  for (size_t i = 1; i < u->src.size(); ++i)
    if (u->src[i]->op != Ops::RANGE) return fail("reduce.src", std::string(op_name(u->op)) + " source " + std::to_string(i) + " must be a RANGE, got " + std::string(op_name(u->src[i]->op)));
  return std::nullopt;
}

Check check_reduce_axis(UOp u) {
  if (auto e = count(u, 1, 1)) return e;
  const ArgTuple* t = u->arg.tuple();
  if (!t || t->size() != 2 || !(*t)[0].is<Ops>()) return fail("reduce.arg", "REDUCE_AXIS arg must be (Ops.X, (axes...)), got " + arg_text(u->arg));
  Ops op = (*t)[0].as<Ops>();
  if (op != Ops::ADD && op != Ops::MUL && op != Ops::MAX) return fail("reduce.arg", "REDUCE_AXIS op must be ADD, MUL or MAX");
  if (u->dtype != u->src[0]->dtype) return fail("reduce.dtype", "REDUCE_AXIS must keep its source's dtype");
  return std::nullopt;
}

Check same_dtype_as_src0(UOp u) {
  if (u->dtype != u->src[0]->dtype)
    return fail("dtype", std::string(op_name(u->op)) + " must have its first source's dtype " + dt(u->src[0]->dtype) + ", got " + dt(u->dtype));
  return std::nullopt;
}

Check check_movement(UOp u) {
  if (auto e = count(u, 1, SIZE_MAX)) return e;
  if (auto e = same_dtype_as_src0(u)) return e;
  bool arg_op = u->op == Ops::PERMUTE || u->op == Ops::FLIP;
  if (arg_op && u->src.size() != 1) return fail("src.count", std::string(op_name(u->op)) + " takes its axes in the arg, not as sources");
  if (!arg_op && !u->arg.none()) return fail("arg", std::string(op_name(u->op)) + " takes its sizes as sources, not an arg");
  for (size_t i = 1; i < u->src.size(); ++i)
    if (!u->src[i]->dtype.is_index()) return fail("movement.dtype", std::string(op_name(u->op)) + " size operand " + std::to_string(i) + " must be index, got " + dt(u->src[i]->dtype));
  return std::nullopt;
}

Check check_buffer(UOp u) {
  if (auto e = count(u, 0, 0)) return e;
  const ArgTuple* t = u->arg.tuple();
  if (!t || t->size() != 2 || !(*t)[0].is<std::string>() || !(*t)[1].is<int64_t>())
    return fail("buffer.arg", "BUFFER arg must be (\"name\", size), got " + arg_text(u->arg));
  if ((*t)[0].as<std::string>().empty()) return fail("buffer.arg", "BUFFER name is empty");
  int64_t n = (*t)[1].as<int64_t>();
  if (n < 0 || n > kMaxElements) return fail("buffer.size", "BUFFER size " + std::to_string(n) + " is outside [0, 2^32]");
  if (!is_value(u->dtype)) return fail("buffer.dtype", "BUFFER needs a value dtype, got " + dt(u->dtype));
  return std::nullopt;
}

Check check_sink(UOp u) {
  if (!u->dtype.is_void()) return fail("dtype", "SINK must be void");
  if (u->arg.none()) return std::nullopt;
  const ArgTuple* t = u->arg.tuple();
  if (!t || t->size() != u->src.size() || !std::all_of(t->begin(), t->end(), [](const Arg& a) { return a.is<std::string>(); }))
    return fail("sink.names", "SINK arg must be one output name per source, got " + arg_text(u->arg));
  std::set<std::string> seen;
  for (const Arg& a : *t)
    if (!seen.insert(a.as<std::string>()).second) return fail("sink.names", "output name \"" + a.as<std::string>() + "\" is used twice");
  return std::nullopt;
}

}  // namespace

std::optional<std::string> unwritable_target(UOp target) {
  for (UOp t = target; t->op != Ops::BUFFER; t = t->src[0]) {
    if (t->op == Ops::EXPAND) return "cannot write through an EXPAND: several elements would share one memory slot";
    if ((t->op != Ops::AFTER && !is_movement(t->op)) || t->src.empty())
      return "a STORE/ASSIGN target must be a buffer seen through RESHAPE/SHRINK/PERMUTE/FLIP/PAD/AFTER, not " + std::string(op_name(t->op));
  }
  return std::nullopt;
}

namespace {

Check check_effect(UOp u) {
  switch (u->op) {
    case Ops::STORE:
    case Ops::ASSIGN: {
      if (auto e = count(u, 2, 2)) return e;
      DType target = u->src[0]->dtype.base(), value = u->src[1]->dtype;
      if (target != value) return fail("store.dtype", std::string(op_name(u->op)) + " of a " + dt(value) + " value into a " + dt(target) + " target");
      if (u->op == Ops::STORE && !u->dtype.is_void()) return fail("dtype", "STORE must be void");
      if (!u->src[0]->dtype.ptr)
        if (std::optional<std::string> why = unwritable_target(u->src[0])) return fail("store.target", *why);
      if (u->op == Ops::ASSIGN) return same_dtype_as_src0(u);
      return std::nullopt;
    }
    case Ops::LOAD:
      if (auto e = count(u, 1, 1)) return e;
      if (!u->src[0]->dtype.ptr) return fail("load.src", "LOAD needs a pointer (INDEX of a DEFINE_GLOBAL), got " + dt(u->src[0]->dtype));
      if (u->dtype != u->src[0]->dtype.base()) return fail("dtype", "LOAD must produce " + dt(u->src[0]->dtype.base()));
      return std::nullopt;
    case Ops::INDEX:
      // INDEX(x, i...) or INDEX(x, i..., gate): index operands, then an optional bool gate. A
      // pointer INDEX has one linear index; a tensor-level one has one per axis (none for a 0-d x).
      if (auto e = count(u, u->dtype.ptr ? 2 : 1, SIZE_MAX)) return e;
      for (size_t i = 1; i < u->src.size(); ++i) {
        bool gate = i + 1 == u->src.size() && (i > 1 || !u->dtype.ptr) && u->src[i]->dtype.is_bool();
        if (!gate && !u->src[i]->dtype.is_index())
          return fail("index.dtype", "INDEX operand " + std::to_string(i) + " must be index" + (i + 1 == u->src.size() && i > 1 ? " (or a bool gate)" : "") + ", got " + dt(u->src[i]->dtype));
      }
      return same_dtype_as_src0(u);
    case Ops::END:
      if (auto e = count(u, 2, SIZE_MAX)) return e;
      for (size_t i = 1; i < u->src.size(); ++i)
        if (u->src[i]->op != Ops::RANGE) return fail("end.src", "END source " + std::to_string(i) + " must be a RANGE, got " + std::string(op_name(u->src[i]->op)));
      return std::nullopt;
    case Ops::AFTER:
      if (auto e = count(u, 1, SIZE_MAX)) return e;
      return same_dtype_as_src0(u);
    default:
      return std::nullopt;
  }
}

Check check_node(UOp u) {
  Ops op = u->op;
  if (op == Ops::CONST) return check_const(u);
  if (op == Ops::RANGE) return check_range(u);
  if (op == Ops::DEFINE_VAR) return check_define_var(u);
  if (op == Ops::BIND) return check_bind(u);
  if (is_alu(op)) return check_alu(u);
  if (op == Ops::REDUCE || op == Ops::REDUCE_BACKWARD) return check_reduce(u);
  if (op == Ops::REDUCE_AXIS) return check_reduce_axis(u);
  if (is_movement(op)) return check_movement(u);
  if (op == Ops::BUFFER) return check_buffer(u);
  if (op == Ops::SINK) return check_sink(u);
  switch (op) {
    case Ops::CAST:
      if (auto e = count(u, 1, 1)) return e;
      if (!is_value(u->dtype) || !is_value(u->src[0]->dtype)) return fail("cast.dtype", "CAST between value dtypes only: " + dt(u->src[0]->dtype) + " -> " + dt(u->dtype));
      return std::nullopt;
    case Ops::BITCAST: return check_bitcast(u);
    case Ops::CONTIGUOUS: case Ops::CONTIGUOUS_BACKWARD: case Ops::DETACH:
      if (auto e = count(u, 1, 1)) return e;
      return same_dtype_as_src0(u);
    case Ops::DEFINE_GLOBAL:
      if (auto e = count(u, 0, 0)) return e;
      if (!u->dtype.ptr) return fail("define_global.dtype", "DEFINE_GLOBAL needs a pointer dtype such as float32*10, got " + dt(u->dtype));
      if (!u->arg.is<int64_t>() || u->arg.as<int64_t>() < 0) return fail("define_global.arg", "DEFINE_GLOBAL arg must be its parameter slot (an integer >= 0)");
      return std::nullopt;
    case Ops::DEFINE_REG:
      if (auto e = count(u, 0, 0)) return e;
      if (!u->dtype.ptr || u->dtype.size < 1) return fail("define_reg.dtype", "DEFINE_REG needs a pointer dtype with its element count, such as float32*8, got " + dt(u->dtype));
      if (!u->arg.is<int64_t>() || u->arg.as<int64_t>() < 0) return fail("define_reg.arg", "DEFINE_REG arg must be its register number (an integer >= 0)");
      return std::nullopt;
    case Ops::STORE: case Ops::ASSIGN: case Ops::LOAD: case Ops::INDEX: case Ops::END: case Ops::AFTER:
      return check_effect(u);
    case Ops::GRADIENT:
      if (auto e = count(u, 2, 2)) return e;
      if (u->src[0]->dtype.is_void() || !u->src[0]->dtype.is_float())
        return fail("gradient.loss", "GRADIENT's loss must be a float value, got " + dt(u->src[0]->dtype));
      if (!u->src[1]->dtype.is_float()) return fail("gradient.x", "GRADIENT is taken with respect to a float value, got " + dt(u->src[1]->dtype));
      if (u->dtype != u->src[1]->dtype) return fail("dtype", "GRADIENT must have its variable's dtype " + dt(u->src[1]->dtype) + ", got " + dt(u->dtype));
      return std::nullopt;
    case Ops::BUFFERIZE:
      if (auto e = count(u, 1, SIZE_MAX)) return e;
      for (size_t i = 1; i < u->src.size(); ++i)
        if (u->src[i]->op != Ops::RANGE) return fail("bufferize.src", "BUFFERIZE source " + std::to_string(i) + " must be a RANGE, got " + std::string(op_name(u->src[i]->op)));
      return same_dtype_as_src0(u);
    default:
      return std::nullopt;  // structural ops of later stages carry no rule yet
  }
}

}  // namespace

// Free ranges of a node being built, from its sources' (see SEMANTICS: scope); sorted by address.
std::vector<const UOpNode*> free_ranges_of_new_node(const UOpNode& n) {
  std::vector<const UOpNode*> out;
  for (UOp s : n.src) {
    std::vector<const UOpNode*> merged;
    std::set_union(out.begin(), out.end(), s->free.begin(), s->free.end(), std::back_inserter(merged));
    out.swap(merged);
  }
  if (n.op == Ops::RANGE) out.insert(std::lower_bound(out.begin(), out.end(), &n), &n);
  std::vector<const UOpNode*> closed;
  if (n.op == Ops::REDUCE || n.op == Ops::END || n.op == Ops::BUFFERIZE)
    for (size_t i = 1; i < n.src.size(); ++i) closed.push_back(n.src[i].get());
  if (n.shape.kind == ShapeInfo::Kind::Shaped)
    for (UOp d : n.shape.dims)
      if (d->op == Ops::RANGE) closed.push_back(d.get());
  for (const UOpNode* c : closed) {
    auto it = std::lower_bound(out.begin(), out.end(), c);
    if (it != out.end() && *it == c) out.erase(it);
  }
  return out;
}

// Kept sorted by address (merging is then linear), but handed out in an order that does not
// depend on where the allocator put the nodes: by structural hash, then creation order. Names of
// temporaries and the order of loops follow this order, so the same graph lowers to the same
// text in every process.
std::vector<UOp> free_ranges(UOp u) {
  std::vector<UOp> out;
  for (const UOpNode* r : u->free) out.emplace_back(r);
  std::sort(out.begin(), out.end(), StableLess());
  return out;
}

bool has_free_range(UOp u, UOp r) { return std::binary_search(u->free.begin(), u->free.end(), r.get()); }

void require_valid(UOp root) {
  auto issues = verify(root);
  if (!issues.empty())
    throw Error("invalid graph: " + issues[0].rule + ": " + issues[0].message + " (at " + number_graph(root).line(issues[0].node) + ")");
}

std::vector<VerifyIssue> verify(UOp root, const VerifyOptions& opts) {
  std::vector<VerifyIssue> issues;
  std::map<std::string, UOp> buffers;
  for (UOp u : toposort(root)) {
    if (auto p = check_node(u)) {
      issues.push_back({u, p->rule, p->message});
      continue;
    }
    if (u->shape.kind == ShapeInfo::Kind::Invalid && u->shape.error != "a source has an invalid shape") {
      issues.push_back({u, "shape", u->shape.error});
      continue;
    }
    if (u->op == Ops::BUFFER) {
      const std::string& name = buffer_name(u);
      auto [it, fresh] = buffers.emplace(name, u);
      if (!fresh) issues.push_back({u, "buffer.name", "buffer \"" + name + "\" is declared twice with different dtype or size"});
    }
    if (u->op == Ops::RANGE && !u->src[0]->free.empty())
      issues.push_back({u, "range.end", "RANGE end depends on another range"});
    if (opts.strict && u->op == Ops::REDUCE) {
      const std::vector<const UOpNode*>& body = u->src[0]->free;
      for (size_t i = 1; i < u->src.size(); ++i)
        if (!std::binary_search(body.begin(), body.end(), u->src[i].get()))
          issues.push_back({u, "reduce.unused", "REDUCE over range " + range_name(u->src[i]) + " that its value does not depend on (strict)"});
    }
  }
  const std::vector<const UOpNode*>& open = root->free;
  if (!open.empty()) {
    std::string names;
    for (const UOpNode* r : open) names += (names.empty() ? "" : ", ") + range_name(UOp(r));
    issues.push_back({root, "scope", "range(s) " + names + " used outside their scope: still free at the graph's root (close them with REDUCE, END or a range dimension)"});
  }
  return issues;
}

}  // namespace ow
