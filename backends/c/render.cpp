// C renderer for kernel asts. ABI (see render.h):
//   int <name>(void** bufs, const long long* vars, long long* err)
// returns 0, or an error kind after filling err[] as kernel_abi.h defines.
//
// Exactness (reference/SEMANTICS.md S2.1, LOWERING.md): every node is one C operation in its
// dtype, so each op rounds once (the C of each op: ops.cpp); REDUCE is one accumulator folded in
// row-major order of its ranges. The compiler must not contract a*b+c (cc: -ffp-contract=off;
// tcc never does).
//
// Placement: a statement goes in the outermost loop where all ranges it depends on are bound
// (the Scope stack, kernel_renderer.h); a value used once at its own loop level is inlined into
// its user. The loop shapes chosen for speed are the kernel-opt passes' (src/opt); what is left
// here is how some of their forms are written: tcc's unrolled loops (unroll.cpp), vector folds
// (folds.cpp, tiles.cpp) and transposes (transposes.cpp).
#include "render.h"
#include "kernel_renderer.h"
#include "prelude.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "uop/error.h"
#include "uop/floats.h"
#include "uop/pattern.h"
#include "uop/text.h"

namespace ow::backend {

namespace {

// s with every character outside [A-Za-z0-9_] replaced by '_'.
std::string word_chars(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return out;
}

// What val spells by itself rather than as an expression of its sources: the end of an inlined chain.
bool spelled(UOp n) {
  return n->op == Ops::CONST || n->op == Ops::DEFINE_VAR || n->op == Ops::RANGE || n->op == Ops::BIND || n->dtype.ptr || n->dtype.is_void();
}

}  // namespace

namespace detail {

std::string KernelRenderer::ctype(DType d, UOp at) const {
  if (d.ptr) fail(at, "a pointer is not a value in the C backend");
  switch (d.scalar) {
    case Scalar::Bool: case Scalar::Uint8: case Scalar::Fp8e4m3: case Scalar::Fp8e5m2: return "unsigned char";  // fp8s: their bits
    case Scalar::Int8: return "signed char";
    case Scalar::Int16: return "short";
    case Scalar::Uint16: case Scalar::Float16: case Scalar::BFloat16: return "unsigned short";  // float16, bfloat16: their bits
    case Scalar::Int32: return "int";
    case Scalar::Int64: case Scalar::Index: return "long long";
    case Scalar::Uint32: return "unsigned int";
    case Scalar::Uint64: return "unsigned long long";
    case Scalar::Float32: return "float";
    case Scalar::Float64: return "double";
    default: fail(at, "the C backend has no values of dtype " + to_string(d));
  }
}

void KernelRenderer::analyze(UOp ast) {
  for (UOp u : fresh_nodes(ast, [&](const UOpNode* n) { return analyzed_.count(n) > 0; })) analyze_node(u);
}

// Uses, touchiness, registers and buffer slots of u (its sources analyzed already). Its free
// ranges are the node's own (UOpNode::free: a kernel's nodes are scalars, so only REDUCE and END
// close ranges).
void KernelRenderer::analyze_node(UOp u) {
  int height = 0;
  for (UOp s : u->src) {
    ++uses_[s.get()];
    if (auto it = analyzed_.find(s.get()); it != analyzed_.end()) height = std::max(height, it->second);
  }
  analyzed_[u.get()] = spelled(u) ? 0 : height + 1;
  parts_.narrow = parts_.narrow || u->dtype.base().is_narrow_float();
  parts_.threefry = parts_.threefry || u->op == Ops::THREEFRY;
  bool touchy = u->op == Ops::LOAD || may_fail(u, opts_.bounds_check);
  bool reads_reg = u->op == Ops::LOAD && u->src.at(0)->src.at(0)->op == Ops::DEFINE_REG;
  for (UOp s : u->src) {
    touchy = touchy || touchy_.count(s.get()) > 0;
    reads_reg = reads_reg || reads_reg_.count(s.get()) > 0;
  }
  if (touchy) touchy_.insert(u.get());
  if (reads_reg) reads_reg_.insert(u.get());
  if (u->op == Ops::DEFINE_REG) {
    const int64_t* n = u->arg.get_if<int64_t>();
    if (!n || !u->dtype.ptr || u->dtype.size < 1) fail(u, "DEFINE_REG needs a pointer dtype with its size and a number >= 0");
    ctype(u->dtype.base(), u);
    if (!regs_.emplace(*n, u).second && regs_.at(*n) != u) fail(u, "two registers are numbered " + std::to_string(*n));
  }
  if (u->op == Ops::DEFINE_GLOBAL) {
    const int64_t* slot = u->arg.get_if<int64_t>();
    if (!slot || *slot < 0 || !u->dtype.ptr) fail(u, "DEFINE_GLOBAL needs a pointer dtype and a slot >= 0");
    size_t k = static_cast<size_t>(*slot);
    if (k + 1 >= kernel_->src.size() || kernel_->src[k + 1]->op == Ops::BIND) fail(u, "the KERNEL has no buffer for slot " + std::to_string(k));
    if (params_.size() <= k) params_.resize(k + 1, dtypes::void_);
    if (params_[k] != dtypes::void_ && params_[k] != u->dtype) fail(u, "slot " + std::to_string(k) + " is defined with two dtypes");
    ctype(u->dtype.base(), u);
    params_[k] = u->dtype;
  }
}

// Position in the scope stack of the innermost range u depends on (0: the function body).
int KernelRenderer::level(UOp u) const {
  int lv = 0;
  for (const UOpNode* r : u->free) {
    int at = -1;
    for (size_t i = 1; i < stack_.size(); ++i)
      if (stack_[i].range.get() == r) at = static_cast<int>(i);
    if (at < 0) fail(u, "range " + range_name(UOp(r)) + " is used outside its loop");
    lv = std::max(lv, at);
  }
  return lv;
}

// A variable becomes a C parameter when a value uses it (not when it only names a BIND).
std::string KernelRenderer::use_var(UOp u) {
  if (std::find(vars_.begin(), vars_.end(), u) != vars_.end()) return c_var(u);
  const ArgTuple* t = u->arg.tuple();
  if (!t || t->empty() || !(*t)[0].is<std::string>()) fail(u, "DEFINE_VAR needs a (\"name\", lo, hi) arg");
  for (UOp v : vars_)
    if (c_var(v) == c_var(u)) fail(u, "two variables render as " + c_var(u));
  ctype(u->dtype, u);
  vars_.push_back(u);
  return c_var(u);
}

int KernelRenderer::scope_level(int id) const {
  for (size_t i = 0; i < stack_.size(); ++i)
    if (stack_[i].id == id) return static_cast<int>(i);
  return -1;
}

// Loop variables read like hand-written C: i, j, k, ... for the kernel's ranges in the order of
// their ids (each loop header names its range as `ow print` does), so a range keeps its letter
// wherever it appears.
std::string KernelRenderer::range_var(UOp r) {
  if (range_names_.empty()) name_ranges();
  auto it = range_names_.find(r.get());
  if (it == range_names_.end()) throw InternalError("render: range " + range_name(r) + " is not in the kernel being rendered");
  return it->second;
}

void KernelRenderer::name_ranges() {
  static const char* const kLetters[] = {"i", "j", "k", "l", "p", "q", "s", "t", "u"};
  std::vector<UOp> ranges;
  for (UOp u : toposort(kernel_->src[0]))
    if (u->op == Ops::RANGE) ranges.push_back(u);
  std::stable_sort(ranges.begin(), ranges.end(), [](UOp a, UOp b) { return a->arg.tuple()->at(0).as<int64_t>() < b->arg.tuple()->at(0).as<int64_t>(); });
  for (size_t i = 0; i < ranges.size(); ++i) {
    std::string n = i < std::size(kLetters) ? kLetters[i] : "r" + std::to_string(i);
    const ArgTuple& arg = *ranges[i]->arg.tuple();  // (id, sub-id..., axis): a block range's last sub-id is -B
    if (const int64_t* b = arg.size() > 2 ? arg[arg.size() - 2].get_if<int64_t>() : nullptr; b && *b < 0 && *b > -1000) n += "_" + std::to_string(-*b);
    taken_range_names_.insert(n);
    range_names_[ranges[i].get()] = n;
  }
}

// The C expression for value u, used by a statement at user_level. Values used more than once,
// values placed outside the user's loop and accumulators get a named local.
std::string KernelRenderer::val(UOp u, int user_level, bool force_name) {
  bool statement = val_depth_++ == 0;  // called by a statement, not by val for a source
  struct Leave {
    int& depth;
    ~Leave() { --depth; }
  } leave{val_depth_};
  if (statement) name_deep_chains(u, user_level);
  switch (u->op) {
    case Ops::CONST: return literal(u);
    case Ops::DEFINE_VAR: return use_var(u);
    case Ops::BIND: return val(u->src.at(1), user_level, force_name);  // a bound variable is its value
    case Ops::RANGE:
      level(u);  // fails unless its loop is open
      if (pointer_loop(u)) throw InternalError("a loop marked unroll-pointers uses its range other than as an access's index (at " + printed_.line(u) + ")");
      return range_var(u);
    default: break;
  }
  if (auto it = named_.find(u.get()); it != named_.end()) {
    if (scope_level(it->second.second) >= 0) return it->second.first;
    named_.erase(it);
  }
  int lv = level(u);
  // Hoisting a LOAD or a division out of a loop that may run zero times would evaluate it
  // where the interpreter does not: keep it inside the innermost such loop around its user.
  if (touchy_.count(u.get()))
    for (int s = std::min(user_level, depth()); s > lv; --s)
      if (stack_[static_cast<size_t>(s)].range->src.at(0).vmin() < 1) {
        lv = s;
        break;
      }
  bool reads_reg = reads_reg_.count(u.get()) > 0;
  if (reads_reg) lv = std::max(lv, std::min(user_level, depth()));  // the statement's values, in its order
  if (u->op == Ops::REDUCE) return reduce(u, lv);
  std::string e = expr(u, lv);
  // (A value read from a register is inlined: its uses may lie in other statements, which read
  // other contents.)
  if (!force_name && (uses_[u.get()] <= 1 || reads_reg) && lv == user_level) return e;
  std::string name = "v" + num(u) + (reads_reg ? "_" + std::to_string(stores_) : "");  // one per statement
  emit(lv, ctype(u->dtype, u) + " " + name + " = " + e + ";");
  named_[u.get()] = {name, stack_[static_cast<size_t>(lv)].id};
  if (reads_reg) stmt_named_.push_back(u.get());
  return name;
}

bool KernelRenderer::placeable(UOp u) const {
  for (const UOpNode* r : u->free)
    if (std::none_of(stack_.begin() + 1, stack_.end(), [&](const Scope& s) { return s.range.get() == r; })) return false;
  return true;
}

// Inline depth: 0 for what val names or spells by itself, else 1 + its deepest source's. Only a
// value whose chain is that deep without the names given so far can need it (analyze_node's
// height), so other values' C is untouched and costs no walk.
void KernelRenderer::name_deep_chains(UOp u, int user_level) {
  if (auto it = analyzed_.find(u.get()); it != analyzed_.end() && it->second < kInlineDepth) return;
  std::unordered_map<const UOpNode*, int> inline_depth;
  for (UOp n : toposort(u)) {
    int d = 0;
    for (UOp s : n->src)
      if (auto it = inline_depth.find(s.get()); it != inline_depth.end()) d = std::max(d, it->second);
    int here = spelled(n) || named_.count(n.get()) ? 0 : d + 1;
    if (here >= kInlineDepth && n != u && placeable(n)) {
      val(n, user_level, true);
      here = 0;
    }
    inline_depth[n.get()] = here;
  }
}

std::string KernelRenderer::literal(UOp u) const {
  DType d = u->dtype;
  ctype(d, u);
  auto paren = [](const std::string& s) { return s[0] == '-' ? "(" + s + ")" : s; };
  if (d.is_bool()) return u.const_value() != 0 ? "1" : "0";
  if (d.is_int()) {
    const int64_t* p = u->arg.get_if<int64_t>();
    if (!p) fail(u, "an integer CONST needs an integer arg");
    if (d.scalar == Scalar::Uint32) return std::to_string(static_cast<uint32_t>(*p)) + "u";
    if (d.scalar == Scalar::Uint64) return std::to_string(static_cast<uint64_t>(*p)) + "ull";
    if (d.scalar == Scalar::Int32) return *p == INT32_MIN ? "(-2147483647 - 1)" : paren(std::to_string(*p));
    if (narrow_int(d)) return "((" + ctype(d, u) + ")" + paren(std::to_string(wrap_int(d, static_cast<uint64_t>(*p)))) + ")";
    return *p == INT64_MIN ? "(-9223372036854775807LL - 1)" : paren(std::to_string(*p) + "LL");
  }
  double v = u.const_value();
  if (d.is_narrow_float()) return "((" + ctype(d, u) + ")" + std::to_string(fp::from_double(fp::format_of(d), v)) + ")";
  bool f32 = d.scalar == Scalar::Float32;
  if (std::isnan(v) || std::isinf(v)) {
    bool neg = std::signbit(v);
    if (f32) return std::string("ow_f32_bits(") + (std::isnan(v) ? (neg ? "0xffc00000u" : "0x7fc00000u") : (neg ? "0xff800000u" : "0x7f800000u")) + ")";
    return std::string("ow_f64_bits(") + (std::isnan(v) ? (neg ? "0xfff8000000000000ull" : "0x7ff8000000000000ull") : (neg ? "0xfff0000000000000ull" : "0x7ff0000000000000ull")) + ")";
  }
  return paren(f32 ? format_float32(v) + "f" : format_double(v));
}

// Opens a loop over r, written in `form` when marked (unroll.cpp). Under bounds checks the
// pointer form is written as plain copies: the checks name the range.
void KernelRenderer::open(UOp r, std::optional<LoopForm> form) {
  if (r->op != Ops::RANGE) fail(r, "loops run over RANGEs only");
  if (form == LoopForm::unroll_pointers && opts_.bounds_check) form = LoopForm::unroll;
  for (const Scope& s : stack_)
    if (s.range == r) fail(r, "range " + range_name(r) + " is bound twice");
  std::string ext = val(r->src.at(0), depth());
  std::string v = range_var(r);
  stack_.push_back({r, next_scope_++, "for (long long " + v + " = 0; " + v + " < " + ext + "; " + v + "++) {  // range " + range_name(r), {}, form});
}

// The C literal of the identity of REDUCE u's op (checked here).
std::string KernelRenderer::identity(UOp u, Ops op) const {
  if (op != Ops::ADD && op != Ops::MUL && op != Ops::MAX) fail(u, "REDUCE needs Ops.ADD, Ops.MUL or Ops.MAX");
  if (u->src.size() < 2) fail(u, "REDUCE needs at least one range");
  DType d = u->dtype;
  ctype(d, u);
  if (d.is_narrow_float()) {  // the bits of 0, 1, and -inf (fp8e4m3, without infinities: the lowest finite value)
    const fp::Format& f = fp::format_of(d);
    uint32_t bits = op == Ops::ADD ? 0 : op == Ops::MUL ? fp::from_int(f, 1) : f.sign_bit() | (f.has_inf ? f.inf_bits() : f.max_finite_bits());
    return "((" + ctype(d, u) + ")" + std::to_string(bits) + ")";
  }
  if (narrow_int(d) && op == Ops::MAX) return std::to_string(int_limits(d).first);
  if (op == Ops::ADD) return d.is_float() ? (is32(d) ? "0.0f" : "0.0") : "0";
  if (op == Ops::MUL) return d.is_float() ? (is32(d) ? "1.0f" : "1.0") : "1";
  if (d.is_float()) return is32(d) ? "ow_f32_bits(0xff800000u)" : "ow_f64_bits(0xfff0000000000000ull)";
  return d.is_bool() || d.is_unsigned() ? "0" : d.scalar == Scalar::Int32 ? "(-2147483647 - 1)" : "(-9223372036854775807LL - 1)";
}

// acc = identity; for (ranges, row-major) { acc = acc OP x; } placed at `level` (loops of the
// current statement that the REDUCE does not depend on are set aside meanwhile).
std::string KernelRenderer::reduce(UOp u, int lv) {
  const Ops* op = u->arg.get_if<Ops>();
  if (!op) fail(u, "REDUCE needs Ops.ADD, Ops.MUL or Ops.MAX");
  std::string ident = identity(u, *op);
  DType d = u->dtype;
  std::string ty = ctype(d, u), acc = "acc" + num(u);
  emit(lv, ty + " " + acc + " = " + ident + ";");
  std::vector<Scope> aside(std::make_move_iterator(stack_.begin() + lv + 1), std::make_move_iterator(stack_.end()));
  stack_.resize(static_cast<size_t>(lv) + 1);
  for (size_t i = 1; i < u->src.size(); ++i) open(u->src[i]);
  int outer_depth = std::exchange(val_depth_, 0);  // its body is a statement of its own loops
  std::string x = val(u->src[0], depth());
  val_depth_ = outer_depth;
  emit(depth(), acc + " = " + binop(*op, d, acc, x, true, u) + ";");
  for (size_t i = 1; i < u->src.size(); ++i) close();
  for (Scope& s : aside) stack_.push_back(std::move(s));
  named_[u.get()] = {acc, stack_[static_cast<size_t>(lv)].id};
  return acc;
}

KernelRenderer::Access KernelRenderer::access(UOp idx, int lv) {
  bool reg = idx->op == Ops::INDEX && idx->src.size() == 2 && idx->src[0]->op == Ops::DEFINE_REG;
  if (!reg && (idx->op != Ops::INDEX || idx->src.size() < 2 || idx->src.size() > 3 || idx->src[0]->op != Ops::DEFINE_GLOBAL))
    fail(idx, "LOAD/STORE need INDEX(DEFINE_GLOBAL, linear[, gate]) or INDEX(DEFINE_REG, linear)");
  UOp g = idx->src[0];
  std::string ptr = (reg ? "reg" : "b") + std::to_string(g->arg.as<int64_t>());
  bool check = opts_.bounds_check;
  UOp li = idx->src[1];
  Scope* unrolled = reg ? nullptr : pointer_loop(li);  // b[r] is b_at[r_u] (never under bounds checks: open())
  std::string lin = unrolled ? range_var(li) + "_u" : val(li, lv, check);
  std::string gate = idx->src.size() == 3 ? val(idx->src[2], lv, check) : "";
  // (a register's index is in bounds when its range says so: the passes index them by ranges)
  bool proven = (li.is_const() || reg) && li.vmin() >= 0 && li.vmax() < g->dtype.size;
  if (auto it = checked_.find(idx.get()); it != checked_.end() && scope_level(it->second) >= 0) proven = true;
  if (unrolled) {
    unrolled->pointers.insert(static_cast<int>(g->arg.as<int64_t>()));
    ptr += "_at";
  } else if (check && !proven) {
    if (!reads_reg_.count(idx.get())) checked_[idx.get()] = stack_[static_cast<size_t>(lv)].id;  // (another statement reads other contents)
    if (g->dtype.size < 0) fail(g, "bounds_check needs the buffer size in the pointer dtype (float32*N)");
    std::string cond = lin + " < 0 || " + lin + " >= " + std::to_string(g->dtype.size);
    if (!gate.empty()) cond = gate + " && (" + cond + ")";
    emit(lv, "if (" + cond + ") " + fail_at(abi::kOutOfBounds, idx, lin));
  }
  return {gate, ptr + "[" + lin + "]"};
}

// A statement of the kernel grammar (verify_kernel): STORE; END, its loops (the innermost
// unrolled when marked, unroll.cpp; transpose8's two as one call, transposes.cpp; a marked
// fold's as vector code, folds.cpp); GROUP, its statements in order. Walked with a stack: nesting
// costs no C++ recursion. Under bounds checks a transpose8 END is plain loops (checked accesses).
void KernelRenderer::statement(UOp top) {
  std::vector<std::pair<UOp, size_t>> todo{{top, 0}};  // (statement, next source to render)
  while (!todo.empty()) {
    UOp u = todo.back().first;
    size_t next = todo.back().second++;
    if (u->op == Ops::STORE) {
      store(u);
      todo.pop_back();
    } else if (next == 0 && loop_form(u) == LoopForm::transpose8 && !opts_.bounds_check) {
      for (size_t i = 1; i + 2 < u->src.size(); ++i) open(u->src[i]);
      transpose8(u);
      for (size_t i = 1; i + 2 < u->src.size(); ++i) close();
      todo.pop_back();
    } else if (std::optional<Fold> f = next == 0 ? fold_at(u) : std::nullopt) {
      vector_fold(*f);
      todo.pop_back();
    } else if (u->op == Ops::END && next == 0) {
      std::optional<LoopForm> form = loop_form(u) == LoopForm::transpose8 ? std::nullopt : loop_form(u);
      for (size_t i = 1; i < u->src.size(); ++i) open(u->src[i], i + 1 == u->src.size() ? form : std::nullopt);
      todo.push_back({u->src.at(0), 0});
    } else if (u->op == Ops::END) {
      for (size_t i = 1; i < u->src.size(); ++i) close();
      todo.pop_back();
    } else if (u->op == Ops::GROUP) {
      jam_rows_ = jam_rows_ || fold_form(u) == FoldForm::jam;
      if (next < u->src.size()) todo.push_back({u->src[next], 0});
      else todo.pop_back();
    } else {
      fail(u, "a kernel's statements are STOREs, ENDs and GROUPs");
    }
  }
}

void KernelRenderer::store(UOp st) {
  if (st->op != Ops::STORE || st->src.size() != 2) fail(st, "a kernel ast stores with STORE(INDEX, value) (under END)");
  std::string v = val(st->src[1], depth());
  Access a = access(st->src[0], depth());
  emit(depth(), (a.gate.empty() ? "" : "if (" + a.gate + ") ") + a.at + " = " + v + ";");
  for (const UOpNode* n : stmt_named_) named_.erase(n);  // the next statement may see other contents
  stmt_named_.clear();
  ++stores_;
}

std::string KernelRenderer::expr(UOp u, int lv) {
  switch (u->op) {
    case Ops::LOAD: {
      if (u->src.size() != 1) fail(u, "LOAD needs one source");
      ctype(u->dtype, u);
      Access a = access(u->src[0], lv);
      return a.gate.empty() ? a.at : "(" + a.gate + " ? " + a.at + " : 0)";
    }
    case Ops::CAST: case Ops::BITCAST: return cast(u, val(u->src.at(0), lv));
    default:
      if (is_alu(u->op)) return alu(u, lv);
      fail(u, std::string(op_name(u->op)) + " is not a value the C backend can render");
  }
}

RenderedKernel KernelRenderer::run() {
  if (kernel_->op != Ops::KERNEL || kernel_->src.empty() || kernel_->src[0]->op != Ops::SINK)
    throw Error("render_kernel needs KERNEL void (SINK ast, buf..., BIND...), got " + print_graph(kernel_));
  printed_ = number_graph(kernel_);
  own_nodes_ = printed_.order.size();
  RenderedKernel out;
  const Arg& a = kernel_->arg;
  const std::string* nm = a.get_if<std::string>();
  if (const ArgTuple* t = a.tuple(); t && !t->empty()) nm = (*t)[0].get_if<std::string>();
  if (!nm || nm->empty()) fail(kernel_, "KERNEL needs a name arg (\"k1\",)");
  out.name = out.own_name = name_.empty() ? c_identifier(*nm) : name_;
  UOp ast = kernel_->src[0];
  uses_.reserve(own_nodes_);  // (the vector folds add only their offsets' few nodes)
  analyzed_.reserve(own_nodes_);
  analyze(ast);
  stack_.push_back({UOp(), next_scope_++, "", {}});
  for (UOp st : ast->src) statement(st);
  std::string src;
  // GCC's loop unroll-and-jam (an -O3 pass) takes a row-blocked matmul from 3.3 to 1.9 ms at
  // 512^3; for the whole program (-O3) it makes vector-times-matrix kernels ten times slower, so
  // it is asked for here, per kernel. It never reorders the additions into one accumulator.
  if (jam_rows_ && opts_.target == Target::cc) src += "__attribute__((optimize(\"loop-unroll-and-jam\")))\n";
  src += linkage_ + "int " + out.name + "(void** bufs, const long long* vars, long long* err) {\n";
  for (size_t k = 0; k < params_.size(); ++k) {
    if (params_[k] == dtypes::void_) continue;
    std::string ty = ctype(params_[k].base(), kernel_), i = std::to_string(k);
    src += "  " + ty + "* restrict b" + i + " = (" + ty + "*)bufs[" + i + "];\n";
  }
  for (size_t j = 0; j < vars_.size(); ++j)
    src += "  " + ctype(vars_[j]->dtype, vars_[j]) + " " + c_var(vars_[j]) + " = vars[" + std::to_string(j) + "];\n";
  for (auto& [n, r] : regs_)  // zero at each launch (LOWERING.md)
    src += "  " + ctype(r->dtype.base(), r) + " " + reg_name(r) + "[" + std::to_string(r->dtype.size) + "] = {0};\n";
  src += "  (void)bufs;\n  (void)vars;\n  (void)err;\n";
  for (const std::string& l : stack_[0].lines) src += "  " + l + "\n";
  src += "  return 0;\n}\n";
  out.parts = parts_;
  out.source = prelude(opts_.target, parts_) + src;
  out.function = std::move(src);
  out.params = params_;
  for (UOp v : vars_) out.vars.push_back(var_name(v));
  out.fail_nodes = std::move(fail_nodes_);
  return out;
}

}  // namespace detail

std::string c_identifier(const std::string& s) {
  std::string out = word_chars(s);
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

RenderedKernel render_kernel(UOp kernel, const RenderOptions& opts, const std::string& name) {
  if (kernel->op == Ops::KERNEL && kernel_threads(kernel) == 2 && opts.target == Target::cc) return detail::render_threaded(kernel, opts, name);
  return detail::KernelRenderer(kernel, opts, name).run();
}

}  // namespace ow::backend
