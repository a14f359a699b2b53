// C renderer for kernel asts. ABI (see render.h):
//   int <name>(void** bufs, const long long* vars, long long* err)
// returns 0, or an error kind after filling err[0..2] = {kind, node number, bad index}.
//
// Exactness (reference/SEMANTICS.md S2.1, LOWERING.md): every node is one C operation in its
// dtype, so each op rounds once; REDUCE is one accumulator folded in row-major order of its
// ranges; integer ADD/SUB/MUL/NEG go through unsigned arithmetic unless the node's bounds prove
// they cannot overflow; MAX, float->int casts, IDIV/MOD and bitcasts use the prelude's helpers,
// which copy the interpreter (src/interp/kernels.cpp, dispatch.h). The compiler must not contract
// a*b+c (cc: -ffp-contract=off; tcc never does).
//
// Placement: a statement goes in the outermost loop where all ranges it depends on are bound
// (Scope stack below); a value used once at its own loop level is inlined into its user.
#include "render.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "uop/error.h"
#include "uop/pattern.h"
#include "uop/text.h"

namespace ow::backend {

namespace {

const char* const kPrelude = R"C(/* outerworld kernel: no headers, the C library functions it may call are declared here */
float exp2f(float); double exp2(double); float log2f(float); double log2(double);
float sinf(float); double sin(double); float sqrtf(float); double sqrt(double);
float powf(float, float); double pow(double, double); float truncf(float); double trunc(double);
float fmodf(float, float); double fmod(double, double);
static inline float ow_f32_bits(unsigned int b) { union { unsigned int u; float f; } x; x.u = b; return x.f; }
static inline double ow_f64_bits(unsigned long long b) { union { unsigned long long u; double f; } x; x.u = b; return x.f; }
static inline int ow_f32_as_i32(float v) { union { float f; int i; } x; x.f = v; return x.i; }
static inline float ow_i32_as_f32(int v) { union { int i; float f; } x; x.i = v; return x.f; }
static inline long long ow_f64_as_i64(double v) { union { double f; long long i; } x; x.f = v; return x.i; }
static inline double ow_i64_as_f64(long long v) { union { long long i; double f; } x; x.i = v; return x.f; }
/* MAX: NaN if either operand is NaN, else a > b ? a : b (so max(+0, -0) is -0) */
static inline float ow_max_f32(float a, float b) { if (a != a || b != b) return ow_f32_bits(0x7fc00000u); return a > b ? a : b; }
static inline double ow_max_f64(double a, double b) { if (a != a || b != b) return ow_f64_bits(0x7ff8000000000000ull); return a > b ? a : b; }
static inline int ow_max_i32(int a, int b) { return a > b ? a : b; }
static inline long long ow_max_i64(long long a, long long b) { return a > b ? a : b; }
static inline unsigned char ow_max_u8(unsigned char a, unsigned char b) { return a > b ? a : b; }
/* float -> int: truncate, saturate at the limits, NaN -> 0 */
static inline int ow_f32_to_i32(float x) { if (x != x) return 0; if (x <= (float)(-2147483647 - 1)) return -2147483647 - 1; if (x >= (float)2147483647) return 2147483647; return (int)x; }
static inline int ow_f64_to_i32(double x) { if (x != x) return 0; if (x <= (double)(-2147483647 - 1)) return -2147483647 - 1; if (x >= (double)2147483647) return 2147483647; return (int)x; }
static inline long long ow_f32_to_i64(float x) { if (x != x) return 0; if (x <= (float)(-9223372036854775807LL - 1)) return -9223372036854775807LL - 1; if (x >= (float)9223372036854775807LL) return 9223372036854775807LL; return (long long)x; }
static inline long long ow_f64_to_i64(double x) { if (x != x) return 0; if (x <= (double)(-9223372036854775807LL - 1)) return -9223372036854775807LL - 1; if (x >= (double)9223372036854775807LL) return 9223372036854775807LL; return (long long)x; }
/* IDIV/MOD by a nonzero divisor (zero is checked before): MIN / -1 wraps, MIN % -1 is 0 */
static inline int ow_idiv_i32(int a, int b) { return b == -1 ? (int)-(unsigned)a : a / b; }
static inline long long ow_idiv_i64(long long a, long long b) { return b == -1 ? (long long)-(unsigned long long)a : a / b; }
static inline int ow_mod_i32(int a, int b) { return b == -1 ? 0 : a % b; }
static inline long long ow_mod_i64(long long a, long long b) { return b == -1 ? 0 : a % b; }
static inline int ow_fail(long long* err, long long kind, long long node, long long value) { err[0] = kind; err[1] = node; err[2] = value; return (int)kind; }
)C";

// s with every character outside [A-Za-z0-9_] replaced by '_'.
std::string word_chars(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return out;
}

bool is32(DType d) { return d.scalar == Scalar::Int32 || d.scalar == Scalar::Float32; }

struct Scope {
  UOp range;           // null for the function body
  int id;
  std::string header;  // "for (...) {"
  std::vector<std::string> lines;
};

class KernelRenderer {
 public:
  KernelRenderer(UOp kernel, const RenderOptions& opts) : kernel_(kernel), opts_(opts) {}
  RenderedKernel run();

 private:
  UOp kernel_;
  RenderOptions opts_;
  Printed printed_;
  std::unordered_map<const UOpNode*, int> uses_;
  std::unordered_map<const UOpNode*, std::vector<const UOpNode*>> free_;  // free ranges, sorted
  std::vector<Scope> stack_;
  int next_scope_ = 0;
  std::unordered_map<const UOpNode*, std::pair<std::string, int>> named_;  // name, scope id
  std::unordered_map<const UOpNode*, int> checked_;  // INDEX -> scope id of its bounds check
  std::unordered_map<const UOpNode*, std::string> range_names_;
  std::set<std::string> taken_range_names_;
  std::vector<DType> params_;
  std::vector<UOp> vars_;
  // Values whose evaluation may raise an error or read memory (LOADs, integer IDIV/MOD by a
  // divisor that may be 0, and everything computed from them): they are never hoisted out of a
  // loop that may run zero times (the interpreter would not evaluate them at all).
  std::unordered_set<const UOpNode*> touchy_;

  [[noreturn]] void fail(UOp u, const std::string& msg) const {
    throw Error(msg + " (at " + printed_.line(u) + ")");
  }
  std::string num(UOp u) const { return std::to_string(printed_.number.at(u.get())); }
  int depth() const { return static_cast<int>(stack_.size()) - 1; }
  void emit(int level, std::string line) { stack_[static_cast<size_t>(level)].lines.push_back(std::move(line)); }

  void analyze(UOp ast);
  std::string ctype(DType d, UOp at) const;
  int level(UOp u) const;
  int scope_level(int id) const;
  std::string val(UOp u, int user_level, bool force_name = false);
  std::string expr(UOp u, int level);
  std::string literal(UOp u) const;
  std::string range_var(UOp r);
  std::string var_name(UOp v) const { return "var_" + c_identifier(v->arg.tuple()->at(0).as<std::string>()); }
  std::string use_var(UOp v);
  void open(UOp r);
  void close(bool unroll = false);
  bool depends(UOp u, UOp r) const { return std::binary_search(free_.at(u.get()).begin(), free_.at(u.get()).end(), r.get()); }
  std::optional<int64_t> coefficient(UOp u, UOp r) const;
  bool unsafe_div(UOp u) const;
  bool may_fail(UOp u) const;
  std::string identity(UOp u, Ops op) const;
  std::string reduce(UOp u, int level);
  std::vector<UOp> interchangeable(UOp end);
  void interchange(UOp end, const std::vector<UOp>& reds);
  std::vector<UOp> reduces_of(UOp value, UOp j) const;
  int block_size(UOp end, size_t pos, const std::vector<UOp>& reds) const;
  UOp open_block(UOp end, size_t pos, int block);
  std::vector<UOp> in_block(UOp x, UOp r, UOp rb, int block);
  bool column_blocked(UOp end);
  void number_new(UOp root);
  std::string access(UOp idx, int level);  // "b0[lin]" plus its gate, bounds check emitted
  void store(UOp st);
  std::string binop(Ops op, DType d, const std::string& a, const std::string& b, bool may_wrap, UOp at);
  std::string alu(UOp u, int level);
  std::string cast(UOp u, const std::string& x);
  bool may_wrap(UOp u) const;
};

std::string KernelRenderer::ctype(DType d, UOp at) const {
  if (d.ptr) fail(at, "a pointer is not a value in the C backend");
  switch (d.scalar) {
    case Scalar::Bool: return "unsigned char";
    case Scalar::Int32: return "int";
    case Scalar::Int64: case Scalar::Index: return "long long";
    case Scalar::Float32: return "float";
    case Scalar::Float64: return "double";
    case Scalar::Float16: fail(at, "float16 is not supported by the C backend");
    default: fail(at, "the C backend has no values of dtype " + to_string(d));
  }
}

void KernelRenderer::analyze(UOp ast) {
  for (UOp u : toposort(ast)) {
    if (free_.count(u.get())) continue;  // analyzed before (blocking adds graphs that share nodes)
    std::vector<const UOpNode*> fr;
    for (UOp s : u->src) {
      ++uses_[s.get()];
      const auto& f = free_.at(s.get());
      fr.insert(fr.end(), f.begin(), f.end());
    }
    if (u->op == Ops::RANGE) fr.push_back(u.get());
    if (u->op == Ops::REDUCE || u->op == Ops::END)
      for (size_t i = 1; i < u->src.size(); ++i) fr.erase(std::remove(fr.begin(), fr.end(), u->src[i].get()), fr.end());
    std::sort(fr.begin(), fr.end());
    fr.erase(std::unique(fr.begin(), fr.end()), fr.end());
    free_[u.get()] = std::move(fr);
    bool touchy = u->op == Ops::LOAD || unsafe_div(u);
    for (UOp s : u->src) touchy = touchy || touchy_.count(s.get()) > 0;
    if (touchy) touchy_.insert(u.get());
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
}

// Position in the scope stack of the innermost range u depends on (0: the function body).
int KernelRenderer::level(UOp u) const {
  int lv = 0;
  for (const UOpNode* r : free_.at(u.get())) {
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
  if (std::find(vars_.begin(), vars_.end(), u) != vars_.end()) return var_name(u);
  const ArgTuple* t = u->arg.tuple();
  if (!t || t->empty() || !(*t)[0].is<std::string>()) fail(u, "DEFINE_VAR needs a (\"name\", lo, hi) arg");
  for (UOp v : vars_)
    if (var_name(v) == var_name(u)) fail(u, "two variables render as " + var_name(u));
  ctype(u->dtype, u);
  vars_.push_back(u);
  return var_name(u);
}

int KernelRenderer::scope_level(int id) const {
  for (size_t i = 0; i < stack_.size(); ++i)
    if (stack_[i].id == id) return static_cast<int>(i);
  return -1;
}

std::string KernelRenderer::range_var(UOp r) {
  auto it = range_names_.find(r.get());
  if (it != range_names_.end()) return it->second;
  std::string n = "r_" + word_chars(range_name(r));
  if (!taken_range_names_.insert(n).second) n += "_" + num(r);
  taken_range_names_.insert(n);
  return range_names_[r.get()] = n;
}

// The C expression for value u, used by a statement at user_level. Values used more than once,
// values placed outside the user's loop and accumulators get a named local.
std::string KernelRenderer::val(UOp u, int user_level, bool force_name) {
  switch (u->op) {
    case Ops::CONST: return literal(u);
    case Ops::DEFINE_VAR: return use_var(u);
    case Ops::BIND: return val(u->src.at(1), user_level, force_name);  // a bound variable is its value
    case Ops::RANGE:
      level(u);  // fails unless its loop is open
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
  if (u->op == Ops::REDUCE) return reduce(u, lv);
  std::string e = expr(u, lv);
  if (!force_name && uses_[u.get()] <= 1 && lv == user_level) return e;
  std::string name = "v" + num(u);
  emit(lv, ctype(u->dtype, u) + " " + name + " = " + e + ";");
  named_[u.get()] = {name, stack_[static_cast<size_t>(lv)].id};
  return name;
}

std::string KernelRenderer::literal(UOp u) const {
  DType d = u->dtype;
  ctype(d, u);
  auto paren = [](const std::string& s) { return s[0] == '-' ? "(" + s + ")" : s; };
  if (d.is_bool()) return u.const_value() != 0 ? "1" : "0";
  if (d.is_int()) {
    const int64_t* p = u->arg.get_if<int64_t>();
    if (!p) fail(u, "an integer CONST needs an integer arg");
    if (d.scalar == Scalar::Int32) return *p == INT32_MIN ? "(-2147483647 - 1)" : paren(std::to_string(*p));
    return *p == INT64_MIN ? "(-9223372036854775807LL - 1)" : paren(std::to_string(*p) + "LL");
  }
  double v = u.const_value();
  bool f32 = d.scalar == Scalar::Float32;
  if (std::isnan(v) || std::isinf(v)) {
    bool neg = std::signbit(v);
    if (f32) return std::string("ow_f32_bits(") + (std::isnan(v) ? (neg ? "0xffc00000u" : "0x7fc00000u") : (neg ? "0xff800000u" : "0x7f800000u")) + ")";
    return std::string("ow_f64_bits(") + (std::isnan(v) ? (neg ? "0xfff8000000000000ull" : "0x7ff8000000000000ull") : (neg ? "0xfff0000000000000ull" : "0x7ff0000000000000ull")) + ")";
  }
  return paren(f32 ? format_float32(v) + "f" : format_double(v));
}

void KernelRenderer::open(UOp r) {
  if (r->op != Ops::RANGE) fail(r, "loops run over RANGEs only");
  for (const Scope& s : stack_)
    if (s.range == r) fail(r, "range " + range_name(r) + " is bound twice");
  std::string ext = val(r->src.at(0), depth());
  std::string v = range_var(r);
  stack_.push_back({r, next_scope_++, "for (long long " + v + " = 0; " + v + " < " + ext + "; " + v + "++) {", {}});
}

namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Does `line` use the identifier `v` (as a whole word)?
bool mentions(const std::string& line, const std::string& v) {
  for (size_t at = line.find(v); at != std::string::npos; at = line.find(v, at + 1))
    if ((at == 0 || !ident_char(line[at - 1])) && (at + v.size() == line.size() || !ident_char(line[at + v.size()]))) return true;
  return false;
}

// `line` with every access b<k>[v] at exactly the loop variable rewritten to b<k>_at[u]; the
// slots k found are added to `slots`.
std::string pointer_accesses(const std::string& line, const std::string& v, int u, std::set<int>& slots) {
  std::string out, key = "[" + v + "]";
  size_t from = 0;
  for (size_t at = line.find(key); at != std::string::npos; at = line.find(key, at + 1)) {
    size_t d = at;
    while (d > 0 && std::isdigit(static_cast<unsigned char>(line[d - 1]))) --d;
    if (d == at || d == 0 || line[d - 1] != 'b' || (d >= 2 && ident_char(line[d - 2]))) continue;
    slots.insert(std::stoi(line.substr(d, at - d)));
    out += line.substr(from, at - from) + "_at[" + std::to_string(u) + "]";
    from = at + key.size();
  }
  return out + line.substr(from);
}

}  // namespace

// unroll: for tcc, which keeps every variable in memory, recomputes every address from scratch
// and never unrolls. A loop with a constant extent >= 8 and a short body is also rendered for
// tcc (#ifdef __TINYC__) unrolled by 8 with a remainder loop; iterations still run in order.
// When the body uses the loop variable only in accesses b<k>[v], those go through pointers set
// once per 8 iterations (b<k>_at = b<k> + v): about 1.5x faster elementwise loops under tcc.
void KernelRenderer::close(bool unroll) {
  Scope s = std::move(stack_.back());
  stack_.pop_back();
  const int64_t* ext = s.range && !s.range->src.empty() && s.range->src[0].is_const() ? s.range->src[0]->arg.get_if<int64_t>() : nullptr;
  constexpr size_t kMaxUnrolledLines = 24;  // keeps tcc's compile time and the source readable
  if (!unroll || !ext || *ext < 8 || s.lines.size() > kMaxUnrolledLines) {
    emit(depth(), s.header);
    for (std::string& l : s.lines) emit(depth(), "  " + l);
    emit(depth(), "}");
    return;
  }
  std::string v = range_var(s.range), v8 = v + "_8", n = std::to_string(*ext), n8 = std::to_string(*ext / 8 * 8);
  std::set<int> slots;
  std::vector<std::vector<std::string>> copies(8);
  bool direct = true;  // every use of v is an access b<k>[v]
  for (int u = 0; u < 8; ++u)
    for (const std::string& l : s.lines) {
      copies[u].push_back(pointer_accesses(l, v, u, slots));
      direct = direct && !mentions(copies[u].back(), v);
    }
  emit(depth(), "#ifdef __TINYC__");
  emit(depth(), "for (long long " + v8 + " = 0; " + v8 + " < " + n8 + "LL; " + v8 + " += 8) {");
  for (int k : slots)
    if (direct) {
      std::string b = "b" + std::to_string(k), ty = ctype(params_.at(static_cast<size_t>(k)).base(), kernel_);
      emit(depth(), "  " + ty + "* restrict " + b + "_at = " + b + " + " + v8 + ";");
    }
  bool braces = !direct || s.lines.size() > 1;  // a block per copy keeps its names apart
  for (int u = 0; u < 8; ++u) {
    if (braces) emit(depth(), "  {");
    if (!direct) emit(depth(), "    long long " + v + " = " + v8 + (u ? " + " + std::to_string(u) : "") + ";");
    for (const std::string& l : direct ? copies[u] : s.lines) emit(depth(), (braces ? "    " : "  ") + l);
    if (braces) emit(depth(), "  }");
  }
  emit(depth(), "}");
  if (n8 != n) {
    emit(depth(), "for (long long " + v + " = " + n8 + "LL; " + v + " < " + n + "LL; " + v + "++) {");
    for (const std::string& l : s.lines) emit(depth(), "  " + l);
    emit(depth(), "}");
  }
  emit(depth(), "#else");
  emit(depth(), s.header);
  for (std::string& l : s.lines) emit(depth(), "  " + l);
  emit(depth(), "}");
  emit(depth(), "#endif");
}

// The C literal of the identity of REDUCE u's op (checked here).
std::string KernelRenderer::identity(UOp u, Ops op) const {
  if (op != Ops::ADD && op != Ops::MUL && op != Ops::MAX) fail(u, "REDUCE needs Ops.ADD, Ops.MUL or Ops.MAX");
  if (u->src.size() < 2) fail(u, "REDUCE needs at least one range");
  DType d = u->dtype;
  ctype(d, u);
  if (op == Ops::ADD) return d.is_float() ? (is32(d) ? "0.0f" : "0.0") : "0";
  if (op == Ops::MUL) return d.is_float() ? (is32(d) ? "1.0f" : "1.0") : "1";
  if (d.is_float()) return is32(d) ? "ow_f32_bits(0xff800000u)" : "ow_f64_bits(0xfff0000000000000ull)";
  return d.is_bool() ? "0" : d.scalar == Scalar::Int32 ? "(-2147483647 - 1)" : "(-9223372036854775807LL - 1)";
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
  std::string x = val(u->src[0], depth());
  emit(depth(), acc + " = " + binop(*op, d, acc, x, true, u) + ";");
  for (size_t i = 1; i < u->src.size(); ++i) close();
  for (Scope& s : aside) stack_.push_back(std::move(s));
  named_[u.get()] = {acc, stack_[static_cast<size_t>(lv)].id};
  return acc;
}

// ---- reduce interchange ----
//
// A store nest `for (i...) for (j) { acc = id; for (k...) acc = acc OP x(i, j, k); out = f(acc); }`
// is rendered as
//   for (i...) { T acc[N]; for (j) acc[j] = id; for (k...) { <k-only values>; for (j) acc[j] = acc[j] OP x; }
//                for (j) out = f(acc[j]); }
// Each acc[j] folds the same terms in the same order from the same identity, so the result is
// bit-identical; the inner j loop walks x's loads contiguously and is vectorizable. Conditions
// (otherwise the plain rendering): j is the innermost store range with a constant extent
// 1..kMaxAccElems; every REDUCE the stored value reaches that depends on j (the others are
// rendered as usual) has no REDUCE in its body, reduce ranges whose extents do not depend on j,
// nothing in its body that may fail (so the first error, if any, is the same one as in loop
// order: it can only come from f, evaluated in j order as before), and every LOAD in its body
// that depends on j is contiguous in j (coefficient 1; a row sum would become a strided walk).

constexpr int64_t kMaxAccElems = 4096;
constexpr int64_t kMaxAccBytes = 64 * 1024;  // all accumulator arrays of one store nest

// The coefficient c of range r in index expression u = c*r + (terms without r); nullopt when u is
// not of that form (or it overflows).
std::optional<int64_t> KernelRenderer::coefficient(UOp u, UOp r) const {
  if (!depends(u, r)) return 0;
  if (u == r) return 1;
  auto both = [&](bool sub) -> std::optional<int64_t> {
    auto a = coefficient(u->src[0], r), b = coefficient(u->src[1], r);
    int64_t c;
    if (!a || !b || (sub ? __builtin_sub_overflow(*a, *b, &c) : __builtin_add_overflow(*a, *b, &c))) return std::nullopt;
    return c;
  };
  switch (u->op) {
    case Ops::ADD: return both(false);
    case Ops::SUB: return both(true);
    case Ops::NEG: {
      auto a = coefficient(u->src[0], r);
      if (!a || *a == INT64_MIN) return std::nullopt;
      return -*a;
    }
    case Ops::MUL:
      for (int s = 0; s < 2; ++s) {
        UOp k = u->src[static_cast<size_t>(s)], x = u->src[static_cast<size_t>(1 - s)];
        if (!k.is_const() || !k->arg.get_if<int64_t>()) continue;
        auto a = coefficient(x, r);
        int64_t c;
        if (!a || __builtin_mul_overflow(*a, *k->arg.get_if<int64_t>(), &c)) return std::nullopt;
        return c;
      }
      return std::nullopt;
    default: return std::nullopt;
  }
}

// An integer IDIV/MOD whose divisor may be zero (the C checks it and fails).
bool KernelRenderer::unsafe_div(UOp u) const {
  if ((u->op != Ops::IDIV && u->op != Ops::MOD) || u->src.size() != 2 || !u->src[0]->dtype.is_int()) return false;
  UOp den = u->src[1];
  return !den.is_const() && !(den.vmin() > 0 || den.vmax() < -1);
}

// u itself may raise an error in the rendered C (a division check, or a bounds check that the
// index bounds do not prove unnecessary).
bool KernelRenderer::may_fail(UOp u) const {
  if (unsafe_div(u)) return true;
  if (!opts_.bounds_check || u->op != Ops::LOAD) return false;
  UOp idx = u->src.at(0);
  if (idx->op != Ops::INDEX || idx->src.size() < 2) return true;
  int64_t size = idx->src[0]->dtype.size;
  return !(size >= 0 && idx->src[1].vmin() >= 0 && idx->src[1].vmax() < size);
}

// The REDUCEs of END(STORE, ...) to render as accumulator arrays, or none when the interchange
// does not apply (see above).
std::vector<UOp> KernelRenderer::interchangeable(UOp end) {
  if (end->src.size() < 2 || end->src[0]->op != Ops::STORE || end->src[0]->src.size() != 2) return {};
  UOp j = end->src.back();
  if (j->op != Ops::RANGE || j->src.empty() || !j->src[0].is_const() || !j->src[0]->arg.get_if<int64_t>()) return {};
  int64_t n = *j->src[0]->arg.get_if<int64_t>();
  if (n < 1 || n > kMaxAccElems) return {};
  for (size_t i = 1; i + 1 < end->src.size(); ++i)
    if (end->src[i] == j) return {};
  std::vector<UOp> reds = reduces_of(end->src[0]->src[1], j);
  int64_t bytes = 0;
  for (UOp r : reds) {
    const Ops* op = r->arg.get_if<Ops>();
    if (!op || r->src.size() < 2 || r->dtype.ptr) return {};
    bytes += n * static_cast<int64_t>(r->dtype.itemsize());
    for (size_t s = 1; s < r->src.size(); ++s)
      if (r->src[s]->op != Ops::RANGE || r->src[s] == j || r->src[s]->src.empty() || depends(r->src[s]->src[0], j)) return {};
    for (UOp u : toposort(r->src[0])) {
      if (u->op == Ops::REDUCE || may_fail(u)) return {};
      if (u->op == Ops::LOAD && u->src.size() == 1 && u->src[0]->op == Ops::INDEX && u->src[0]->src.size() >= 2 &&
          depends(u->src[0]->src[1], j) && coefficient(u->src[0]->src[1], j) != 1)
        return {};
    }
  }
  if (bytes > kMaxAccBytes) return {};
  return reds;
}

// The REDUCEs that depend on j reached from `value` through non-REDUCE nodes, in first-visit order.
std::vector<UOp> KernelRenderer::reduces_of(UOp value, UOp j) const {
  std::vector<UOp> reds, todo{value};
  std::unordered_set<const UOpNode*> seen;
  while (!todo.empty()) {
    UOp u = todo.back();
    todo.pop_back();
    if (!seen.insert(u.get()).second || !depends(u, j)) continue;
    if (u->op == Ops::REDUCE) {
      reds.push_back(u);
      continue;
    }
    for (size_t s = u->src.size(); s-- > 0;) todo.push_back(u->src[s]);
  }
  return reds;
}

// ---- blocking: B iterations of one store range rendered together ----
//
// Rows (an interchanged nest, the range i just outside j): the accumulator arrays of B rows
// i = B*ib + u, u < B, fill in one pass over the reduce ranges, so a value that does not depend
// on i (a row of b in a matmul) is loaded once for B rows (2x for cc's 512^3 matmul).
// Columns (a plain nest whose stored value folds REDUCEs over j, its innermost range, e.g.
// x @ W.T where the interchange would walk W with a stride): the B scalar accumulators of
// j = B*jb + u fold in one pass, sharing the loads that do not depend on j, and their B chains
// of additions run side by side instead of one after another (about 2x for a matvec on cc).
// Each accumulator still folds the same terms in the same order: results are bit-identical.
// B is 8 for columns, 4 for rows (or 4, 2 when the extent allows), else there is no blocking. Conditions: nothing in the
// nest may fail (the first error would change); the reduce ranges do not depend on the blocked
// range; the nest loads no buffer the kernel stores to (iterations now interleave); the store is
// ungated, in bounds, and writes a distinct element for every binding of the blocked range and
// those inside it (index = c*r + sum c_q*q + rest with |c| > sum |c_q|*(extent(q) - 1)), so the
// order of the writes does not matter.

int KernelRenderer::block_size(UOp end, size_t pos, const std::vector<UOp>& reds) const {
  UOp r = end->src[pos], st = end->src[0], idx = st->src[0];
  auto extent = [](UOp q) { return q->src.at(0).is_const() ? q->src[0]->arg.get_if<int64_t>() : nullptr; };
  const int64_t* e = extent(r);
  bool column = pos + 1 == end->src.size();  // more chains side by side: 8 columns
  int block = !e || *e < 2 ? 1 : *e % 8 == 0 && column ? 8 : *e % 4 == 0 ? 4 : *e % 2 == 0 ? 2 : 1;
  if (block == 1 || idx->op != Ops::INDEX || idx->src.size() != 2) return 1;
  for (UOp red : reds)
    for (size_t s = 1; s < red->src.size(); ++s)
      if (depends(red->src[s], r)) return 1;
  auto c = coefficient(idx->src[1], r);
  if (!c || *c == 0 || *c == INT64_MIN) return 1;
  int64_t spread = 0;  // how far the ranges inside r move the index
  for (size_t q = pos + 1; q < end->src.size(); ++q) {
    auto cq = coefficient(idx->src[1], end->src[q]);
    const int64_t* nq = extent(end->src[q]);
    if (!cq || !nq || *cq == INT64_MIN || std::abs(*cq) > (INT64_MAX / 4) / std::max<int64_t>(*nq, 1)) return 1;
    spread += std::abs(*cq) * (*nq - 1);
  }
  if (std::abs(*c) <= spread) return 1;
  int64_t size = idx->src[0]->dtype.size;
  if (opts_.bounds_check && !(size >= 0 && idx->src[1].vmin() >= 0 && idx->src[1].vmax() < size)) return 1;
  std::set<const UOpNode*> written;
  for (UOp u : toposort(kernel_->src[0]))
    if (u->op == Ops::STORE && !u->src.empty() && !u->src[0]->src.empty()) written.insert(u->src[0]->src[0].get());
  for (UOp u : toposort(st)) {
    if (may_fail(u)) return 1;
    if (u->op == Ops::LOAD && !u->src.empty() && !u->src[0]->src.empty() && written.count(u->src[0]->src[0].get())) return 1;
  }
  return block;
}

// Opens the loop over blocks of end->src[pos] (named like it, with the block size appended).
UOp KernelRenderer::open_block(UOp end, size_t pos, int block) {
  UOp r = end->src[pos];
  const ArgTuple& arg = *r->arg.tuple();
  std::vector<int64_t> sub;
  for (size_t k = 1; k + 1 < arg.size(); ++k) sub.push_back(arg[k].as<int64_t>());
  sub.push_back(-block);  // a name no range of the lowering uses
  UOp rb = UOp::range(*r->src[0]->arg.get_if<int64_t>() / block, arg[0].as<int64_t>(), range_axis(r), sub);
  range_names_[rb.get()] = range_var(r) + "_" + std::to_string(block);
  open(rb);
  return rb;
}

// x for each iteration of the block: r -> block*rb + u. New nodes are analyzed and numbered.
std::vector<UOp> KernelRenderer::in_block(UOp x, UOp r, UOp rb, int block) {
  std::vector<UOp> out;
  for (int u = 0; u < block; ++u) {
    UOp xu = substitute(x, {{r, u ? rb * block + u : rb * block}});
    analyze(xu);
    number_new(xu);
    out.push_back(xu);
  }
  return out;
}

// Nodes made while rendering (blocking) get numbers after the kernel's own.
void KernelRenderer::number_new(UOp root) {
  for (UOp u : toposort(root))
    if (printed_.number.emplace(u.get(), printed_.order.size()).second) printed_.order.push_back(u);
}

// Distinct nodes, in order (a REDUCE that does not depend on the blocked range is one node in
// every iteration of the block: one accumulator, folded once).
std::vector<UOp> distinct(const std::vector<UOp>& xs) {
  std::vector<UOp> out;
  for (UOp x : xs)
    if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  return out;
}

bool KernelRenderer::column_blocked(UOp end) {
  if (end->src.size() < 2 || end->src[0]->op != Ops::STORE || end->src[0]->src.size() != 2) return false;
  size_t pos = end->src.size() - 1;
  UOp j = end->src[pos];
  std::vector<UOp> reds = reduces_of(end->src[0]->src[1], j);
  if (reds.empty()) return false;
  for (UOp r : reds) {
    if (!r->arg.get_if<Ops>() || r->src.size() < 2 || r->dtype.ptr) return false;
    for (UOp u : toposort(r->src[0]))
      if (u->op == Ops::REDUCE) return false;
  }
  int block = block_size(end, pos, reds);
  if (block == 1) return false;
  for (size_t i = 1; i < pos; ++i) open(end->src[i]);
  UOp jb = open_block(end, pos, block);
  std::vector<UOp> stores = in_block(end->src[0], j, jb, block);
  int lv = depth();
  for (UOp r : reds) {
    Ops op = *r->arg.get_if<Ops>();
    std::vector<UOp> accs;
    for (UOp ru : in_block(r, j, jb, block)) accs.push_back(ru);
    accs = distinct(accs);
    for (UOp a : accs) emit(lv, ctype(r->dtype, r) + " acc" + num(a) + " = " + identity(r, op) + ";");
    for (size_t s = 1; s < r->src.size(); ++s) open(r->src[s]);
    for (UOp a : accs) {
      std::string acc = "acc" + num(a), x = val(a->src[0], depth());
      emit(depth(), acc + " = " + binop(op, r->dtype, acc, x, true, r) + ";");
    }
    for (size_t s = 1; s < r->src.size(); ++s) close(s == 1);
    for (UOp a : accs) named_[a.get()] = {"acc" + num(a), stack_[static_cast<size_t>(lv)].id};
  }
  for (UOp st : stores) store(st);
  close();
  for (size_t i = 1; i < pos; ++i) close();
  return true;
}

void KernelRenderer::interchange(UOp end, const std::vector<UOp>& reds) {
  UOp j = end->src.back();
  size_t pos = end->src.size() - 2;  // i, the range just outside j
  int block = end->src.size() < 3 ? 1 : block_size(end, pos, reds);
  size_t outer = block > 1 ? pos : pos + 1;  // end->src[1..outer) open as usual
  for (size_t i = 1; i < outer; ++i) open(end->src[i]);
  std::vector<UOp> stores{end->src[0]};
  std::vector<std::vector<UOp>> rows;  // rows[p]: REDUCE p in each row of the block
  for (UOp r : reds) rows.push_back({r});
  if (block > 1) {
    UOp i = end->src[pos], ib = open_block(end, pos, block);
    stores = in_block(end->src[0], i, ib, block);
    for (size_t p = 0; p < reds.size(); ++p) rows[p] = in_block(reds[p], i, ib, block);
  }
  int lv = depth();
  std::string jv = range_var(j), n = std::to_string(*j->src[0]->arg.get_if<int64_t>());
  for (size_t p = 0; p < reds.size(); ++p) {
    UOp r = reds[p];
    Ops op = *r->arg.get_if<Ops>();
    std::string ident = identity(r, op);
    std::vector<UOp> accs = distinct(rows[p]);
    std::vector<std::string> at;
    for (UOp d : accs) {
      std::string acc = "acc" + num(d);
      at.push_back(acc + "[" + jv + "]");
      emit(lv, ctype(r->dtype, r) + " " + acc + "[" + n + "];");
    }
    open(j);
    for (const std::string& a : at) emit(depth(), a + " = " + ident + ";");
    close();
    for (size_t s = 1; s < r->src.size(); ++s) open(r->src[s]);
    open(j);
    for (size_t u = 0; u < accs.size(); ++u) {
      std::string x = val(accs[u]->src[0], depth());
      emit(depth(), at[u] + " = " + binop(op, r->dtype, at[u], x, true, r) + ";");
    }
    close(true);
    for (size_t s = 1; s < r->src.size(); ++s) close();
    for (size_t u = 0; u < accs.size(); ++u) named_[accs[u].get()] = {at[u], stack_[static_cast<size_t>(lv)].id};
  }
  open(j);
  for (UOp st : stores) store(st);
  close();
  for (size_t i = 1; i < end->src.size() - 1; ++i) close();
}

std::string KernelRenderer::access(UOp idx, int lv) {
  if (idx->op != Ops::INDEX || idx->src.size() < 2 || idx->src.size() > 3 || idx->src[0]->op != Ops::DEFINE_GLOBAL)
    fail(idx, "LOAD/STORE need INDEX(DEFINE_GLOBAL, linear[, gate])");
  UOp g = idx->src[0];
  std::string ptr = "b" + std::to_string(g->arg.as<int64_t>());
  bool check = opts_.bounds_check;
  std::string lin = val(idx->src[1], lv, check);
  std::string gate = idx->src.size() == 3 ? val(idx->src[2], lv, check) : "";
  UOp li = idx->src[1];
  bool proven = li.is_const() && li.vmin() >= 0 && li.vmin() < g->dtype.size;
  if (auto it = checked_.find(idx.get()); it != checked_.end() && scope_level(it->second) >= 0) proven = true;
  if (check && !proven) {
    checked_[idx.get()] = stack_[static_cast<size_t>(lv)].id;
    if (g->dtype.size < 0) fail(g, "bounds_check needs the buffer size in the pointer dtype (float32*N)");
    std::string cond = lin + " < 0 || " + lin + " >= " + std::to_string(g->dtype.size);
    if (!gate.empty()) cond = gate + " && (" + cond + ")";
    emit(lv, "if (" + cond + ") return ow_fail(err, 2, " + num(idx) + ", " + lin + ");");
  }
  std::string at = ptr + "[" + lin + "]";
  return gate.empty() ? at : gate + "\x1f" + at;  // the caller splits gate and access
}

void KernelRenderer::store(UOp st) {
  if (st->op != Ops::STORE || st->src.size() != 2) fail(st, "a kernel ast stores with STORE(INDEX, value) (under END)");
  std::string v = val(st->src[1], depth());
  std::string a = access(st->src[0], depth());
  size_t sep = a.find('\x1f');
  if (sep == std::string::npos) emit(depth(), a + " = " + v + ";");
  else emit(depth(), "if (" + a.substr(0, sep) + ") " + a.substr(sep + 1) + " = " + v + ";");
}

bool KernelRenderer::may_wrap(UOp u) const {
  DType d = u->dtype;
  if (!d.is_int()) return false;
  int64_t lo = d.scalar == Scalar::Int32 ? INT32_MIN : INT64_MIN, hi = d.scalar == Scalar::Int32 ? INT32_MAX : INT64_MAX;
  return !(u.vmin() > lo && u.vmax() < hi);
}

std::string KernelRenderer::binop(Ops op, DType d, const std::string& a, const std::string& b, bool wrap, UOp at) {
  const char* sym = op == Ops::ADD ? "+" : op == Ops::SUB ? "-" : "*";
  std::string suf = d.is_bool() ? "u8" : std::string(d.is_float() ? "f" : "i") + (is32(d) ? "32" : "64");
  switch (op) {
    case Ops::ADD: case Ops::SUB: case Ops::MUL:
      if (d.is_bool()) return "(" + a + (op == Ops::ADD ? " | " : op == Ops::SUB ? " ^ " : " & ") + b + ")";
      if (d.is_int() && wrap) {
        std::string un = is32(d) ? "(unsigned)" : "(unsigned long long)";
        return "(" + ctype(d, at) + ")(" + un + a + " " + sym + " " + un + b + ")";
      }
      return "(" + a + " " + sym + " " + b + ")";
    case Ops::MAX: return "ow_max_" + suf + "(" + a + ", " + b + ")";
    default: fail(at, std::string("no C rendering of ") + std::string(op_name(op)));
  }
}

std::string KernelRenderer::alu(UOp u, int lv) {
  Ops op = u->op;
  DType d = u->dtype, sd = u->src.at(op == Ops::WHERE ? 1 : 0)->dtype;
  if (u->src.size() != static_cast<size_t>(alu_arity(op))) fail(u, "wrong number of sources");
  ctype(d, u);
  ctype(sd, u);
  bool isdiv = (op == Ops::IDIV || op == Ops::MOD) && sd.is_int();
  UOp den = isdiv ? u->src[1] : UOp();
  bool safe_den = isdiv && (den.vmin() > 0 || den.vmax() < -1);
  std::vector<std::string> s;
  for (size_t i = 0; i < u->src.size(); ++i) s.push_back(val(u->src[i], lv, isdiv && i == 1 && !safe_den && !den.is_const()));
  auto fl = [&](const char* f32, const char* f64) {
    if (!sd.is_float()) fail(u, std::string(op_name(op)) + " needs a float dtype in the C backend");
    std::string args = s[0];
    for (size_t i = 1; i < s.size(); ++i) args += ", " + s[i];
    return std::string(is32(sd) ? f32 : f64) + "(" + args + ")";
  };
  std::string sfx = is32(sd) ? "_i32" : "_i64";
  switch (op) {
    case Ops::ADD: case Ops::SUB: case Ops::MUL: case Ops::MAX: return binop(op, d, s[0], s[1], may_wrap(u), u);
    case Ops::MULACC: {
      UOp m = u->src[0].alu(Ops::MUL, {u->src[1]});
      return binop(Ops::ADD, d, binop(Ops::MUL, d, s[0], s[1], may_wrap(m), u), s[2], may_wrap(u), u);
    }
    case Ops::NEG:
      if (d.is_bool()) return s[0];
      if (d.is_int() && may_wrap(u)) return "(" + ctype(d, u) + ")-(" + (is32(d) ? "unsigned" : "unsigned long long") + ")" + s[0];
      return "(-" + s[0] + ")";
    case Ops::CMPLT: return "(" + s[0] + " < " + s[1] + ")";
    case Ops::CMPNE: return "(" + s[0] + " != " + s[1] + ")";
    case Ops::CMPEQ: return "(" + s[0] + " == " + s[1] + ")";
    case Ops::AND: case Ops::OR: case Ops::XOR:
      if (sd.is_float()) fail(u, "bitwise ops need an integer or bool dtype");
      return "(" + s[0] + (op == Ops::AND ? " & " : op == Ops::OR ? " | " : " ^ ") + s[1] + ")";
    case Ops::WHERE: return "(" + s[0] + " ? " + s[1] + " : " + s[2] + ")";
    case Ops::FDIV: fl("", ""); return "(" + s[0] + " / " + s[1] + ")";
    case Ops::RECIPROCAL: fl("", ""); return std::string(is32(sd) ? "(1.0f / " : "(1.0 / ") + s[0] + ")";
    case Ops::EXP2: return fl("exp2f", "exp2");
    case Ops::LOG2: return fl("log2f", "log2");
    case Ops::SIN: return fl("sinf", "sin");
    case Ops::SQRT: return fl("sqrtf", "sqrt");
    case Ops::POW: return fl("powf", "pow");
    case Ops::TRUNC: return sd.is_float() ? fl("truncf", "trunc") : s[0];
    case Ops::IDIV: case Ops::MOD:
      if (sd.is_float()) return op == Ops::MOD ? fl("fmodf", "fmod") : (is32(sd) ? "truncf(" : "trunc(") + s[0] + " / " + s[1] + ")";
      if (!sd.is_int()) fail(u, std::string(op_name(op)) + " on bool is not supported by the C backend");
      if (den.is_const() && den.const_value() == 0) fail(u, "integer division by a constant zero");
      if (!safe_den && !den.is_const()) emit(lv, "if (" + s[1] + " == 0) return ow_fail(err, 1, " + num(u) + ", 0);");
      if (safe_den) return "(" + s[0] + (op == Ops::IDIV ? " / " : " % ") + s[1] + ")";
      return (op == Ops::IDIV ? "ow_idiv" : "ow_mod") + sfx + "(" + s[0] + ", " + s[1] + ")";
    default: fail(u, std::string(op_name(op)) + " is not supported by the C backend");
  }
}

std::string KernelRenderer::cast(UOp u, const std::string& x) {
  DType to = u->dtype, from = u->src.at(0)->dtype;
  std::string ty = ctype(to, u);
  ctype(from, u);
  if (to == from) return x;
  if (u->op == Ops::BITCAST) {
    if (to.itemsize() != from.itemsize() || to.is_bool()) fail(u, "BITCAST between " + to_string(from) + " and " + to_string(to));
    if (from.is_float() == to.is_float()) return "((" + ty + ")" + x + ")";
    if (from.is_float()) return std::string(is32(from) ? "ow_f32_as_i32(" : "ow_f64_as_i64(") + x + ")";
    return std::string(is32(to) ? "ow_i32_as_f32(" : "ow_i64_as_f64(") + x + ")";
  }
  if (to.is_bool()) return "(" + x + " != 0)";
  if (from.is_float() && to.is_int()) return std::string("ow_") + (is32(from) ? "f32" : "f64") + "_to_" + (is32(to) ? "i32" : "i64") + "(" + x + ")";
  return "((" + ty + ")" + x + ")";
}

std::string KernelRenderer::expr(UOp u, int lv) {
  switch (u->op) {
    case Ops::LOAD: {
      if (u->src.size() != 1) fail(u, "LOAD needs one source");
      ctype(u->dtype, u);
      std::string a = access(u->src[0], lv);
      size_t sep = a.find('\x1f');
      return sep == std::string::npos ? a : "(" + a.substr(0, sep) + " ? " + a.substr(sep + 1) + " : 0)";
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
  RenderedKernel out;
  const Arg& a = kernel_->arg;
  const std::string* nm = a.get_if<std::string>();
  if (const ArgTuple* t = a.tuple(); t && !t->empty()) nm = (*t)[0].get_if<std::string>();
  if (!nm || nm->empty()) fail(kernel_, "KERNEL needs a name arg (\"k1\",)");
  out.name = c_identifier(*nm);
  UOp ast = kernel_->src[0];
  analyze(ast);
  stack_.push_back({UOp(), next_scope_++, "", {}});
  for (UOp st : ast->src) {
    if (st->op == Ops::END) {
      if (std::vector<UOp> reds = interchangeable(st); !reds.empty()) {
        interchange(st, reds);
        continue;
      }
      if (column_blocked(st)) continue;
      for (size_t i = 1; i < st->src.size(); ++i) open(st->src[i]);
      store(st->src.at(0));
      for (size_t i = 1; i < st->src.size(); ++i) close(i == 1);  // the innermost loop: unrolled for tcc
    } else {
      store(st);
    }
  }
  std::string src = kPrelude;
  src += "\nint " + out.name + "(void** bufs, const long long* vars, long long* err) {\n";
  for (size_t k = 0; k < params_.size(); ++k) {
    if (params_[k] == dtypes::void_) continue;
    std::string ty = ctype(params_[k].base(), kernel_), i = std::to_string(k);
    src += "  " + ty + "* restrict b" + i + " = (" + ty + "*)bufs[" + i + "];\n";
  }
  for (size_t j = 0; j < vars_.size(); ++j)
    src += "  " + ctype(vars_[j]->dtype, vars_[j]) + " " + var_name(vars_[j]) + " = vars[" + std::to_string(j) + "];\n";
  src += "  (void)bufs;\n  (void)vars;\n  (void)err;\n";
  for (const std::string& l : stack_[0].lines) src += "  " + l + "\n";
  src += "  return 0;\n}\n";
  out.source = std::move(src);
  out.params = params_;
  for (UOp v : vars_) out.vars.push_back(v->arg.tuple()->at(0).as<std::string>());
  return out;
}

// ---- render_program ----

std::string host_expr(UOp u) {
  auto bin = [&](const char* s) { return "(" + host_expr(u->src[0]) + s + host_expr(u->src[1]) + ")"; };
  switch (u->op) {
    case Ops::CONST: return to_string(u->arg);
    case Ops::RANGE: return range_name(u);
    case Ops::DEFINE_VAR: return u->arg.tuple() && u->arg.tuple()->at(0).is<std::string>() ? u->arg.tuple()->at(0).as<std::string>() : "?";
    case Ops::ADD: return bin(" + ");
    case Ops::SUB: return bin(" - ");
    case Ops::MUL: return bin(" * ");
    case Ops::IDIV: return bin(" // ");
    case Ops::MOD: return bin(" % ");
    default: return std::string(op_name(u->op)) + "(...)";
  }
}

std::string buffer_name(UOp b) {
  while (b->op != Ops::BUFFER && !b->src.empty()) b = b->src[0];
  if (const ArgTuple* t = b->arg.tuple(); b->op == Ops::BUFFER && t && !t->empty() && (*t)[0].is<std::string>()) return (*t)[0].as<std::string>();
  return std::string(op_name(b->op));
}

void program_steps(UOp u, int indent, std::set<const UOpNode*>& seen, std::string& out) {
  std::string pad(static_cast<size_t>(indent) * 2, ' ');
  switch (u->op) {
    case Ops::KERNEL: {
      const ArgTuple* t = u->arg.tuple();
      std::string name = t && !t->empty() && (*t)[0].is<std::string>() ? (*t)[0].as<std::string>() : "kernel";
      std::string bufs, binds;
      for (size_t i = 1; i < u->src.size(); ++i) {
        UOp s = u->src[i];
        if (s->op == Ops::BIND) binds += (binds.empty() ? "" : ", ") + host_expr(s->src[0]) + "=" + host_expr(s->src[1]);
        else bufs += (bufs.empty() ? "" : ", ") + buffer_name(s);
      }
      out += pad + name + "(" + bufs + (binds.empty() ? "" : "; " + binds) + ")\n";
      return;
    }
    case Ops::END:
      for (size_t i = 1; i < u->src.size(); ++i)
        out += std::string(static_cast<size_t>(indent + static_cast<int>(i) - 1) * 2, ' ') + "for " + range_name(u->src[i]) + " in 0.." + host_expr(u->src[i]->src.at(0)) + ":\n";
      program_steps(u->src.at(0), indent + static_cast<int>(u->src.size()) - 1, seen, out);
      return;
    case Ops::GROUP: case Ops::SINK: case Ops::AFTER:
      if (!seen.insert(u.get()).second) return;
      for (size_t i = u->op == Ops::AFTER ? 1 : 0; i < u->src.size(); ++i) program_steps(u->src[i], indent, seen, out);
      return;
    default:
      return;  // views and buffers launch nothing
  }
}

}  // namespace

std::string c_identifier(const std::string& s) {
  std::string out = word_chars(s);
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

RenderedKernel render_kernel(UOp kernel, const RenderOptions& opts) { return KernelRenderer(kernel, opts).run(); }

std::string render_program(UOp program) {
  std::string out;
  std::set<const UOpNode*> seen;
  program_steps(program, 0, seen, out);
  return out;
}

}  // namespace ow::backend
