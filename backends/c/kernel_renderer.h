// The kernel renderer's class, shared by its source files (not part of the API: render.h):
//   render.cpp       values, statements, placement of each statement in the loop nest;
//   ops.cpp          the C of each value op in its dtype;
//   unroll.cpp       loops the pass unroll marks, unrolled (tcc);
//   folds.cpp        the fold GROUPs the pass interchange marks, as tcc's vector calls;
//   tiles.cpp        ... and as cc's register tiles;
//   offsets.cpp      the index arithmetic those two make, simplified and numbered;
//   transposes.cpp   an END marked transpose8 (kernel-opt pass transposes): one ow_transpose8_u32;
//   parallel.cpp     cc's two-thread kernels: the safety analysis and the split.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kernel_abi.h"
#include "opt/loop_shapes.h"
#include "render.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/may_fail.h"
#include "uop/text.h"
#include "uop/verify.h"

namespace ow::backend::detail {

inline bool is32(DType d) { return d.scalar == Scalar::Int32 || d.scalar == Scalar::Uint32 || d.scalar == Scalar::Float32; }
// int8, uint8, int16, uint16: C computes them as int, so results are cast back to their width.
inline bool narrow_int(DType d) { return d.is_int() && d.itemsize() < 4; }

struct Scope {
  UOp range;           // null for the function body
  int id;
  std::string header;  // "for (...) {"
  std::vector<std::string> lines;
  std::optional<LoopForm> form = std::nullopt;  // written unrolled (args.h)
  std::set<int> pointers = {};                  // unroll-pointers: the buffers its accesses read through pointers
};

class KernelRenderer {
 public:
  // `name`: the C function's (empty: the KERNEL's name as an identifier); `linkage`: "" or "static ".
  KernelRenderer(UOp kernel, const RenderOptions& opts, std::string name = "", std::string linkage = "")
      : kernel_(kernel), opts_(opts), name_(std::move(name)), linkage_(std::move(linkage)) {}
  RenderedKernel run();

 private:
  UOp kernel_;
  RenderOptions opts_;
  std::string name_, linkage_;
  Printed printed_;
  size_t own_nodes_ = 0;  // the kernel's own nodes come first in printed_ (adopt adds more)
  std::map<long long, std::string> fail_nodes_;  // RenderedKernel::fail_nodes
  std::unordered_map<const UOpNode*, int> uses_;
  // Nodes analyze_node has seen, with the height of their chain of inlinable nodes (an upper
  // bound on name_deep_chains's depth: names given while rendering only shorten chains).
  std::unordered_map<const UOpNode*, int> analyzed_;
  std::vector<Scope> stack_;
  int next_scope_ = 0;
  std::unordered_map<const UOpNode*, std::pair<std::string, int>> named_;  // name, scope id
  std::unordered_map<const UOpNode*, int> checked_;  // INDEX -> scope id of its bounds check
  std::unordered_map<const UOpNode*, std::string> range_names_;  // name_ranges(): i, j, k, ...
  void name_ranges();
  std::set<std::string> taken_range_names_;
  std::vector<DType> params_;
  PreludeParts parts_;  // what the kernel's nodes need of the prelude (analyze_node)
  std::vector<UOp> vars_;
  // Values whose evaluation may raise an error or read memory (LOADs, may_fail's nodes, and
  // everything computed from them): they are never hoisted out of a loop that may run zero
  // times (the interpreter would not evaluate them at all).
  std::unordered_set<const UOpNode*> touchy_;
  // Registers (DEFINE_REG, by number), declared zeroed at the top of the function, and the values
  // computed from their contents: placed at the statement that uses them, never hoisted, and
  // named for that statement only (store() forgets the names in stmt_named_).
  std::map<int64_t, UOp> regs_;
  std::unordered_set<const UOpNode*> reads_reg_;
  std::vector<const UOpNode*> stmt_named_;
  int stores_ = 0;  // stores rendered so far: names a register value's local per statement
  bool jam_rows_ = false;  // a "jam" fold (rows blocked without tiles): ask GCC to unroll-and-jam this kernel

  [[noreturn]] void fail(UOp u, const std::string& msg) const {
    throw Error(msg + " (at " + printed_.line(u) + ")");
  }
  std::string num(UOp u) const { return std::to_string(printed_.number.at(u.get())); }
  // The statement reporting an error at u (kernel_abi.h); the runner names u by its line.
  std::string fail_at(abi::Kind kind, UOp u, const std::string& value) {
    size_t n = printed_.number.at(u.get());
    if (n < own_nodes_) fail_nodes_[static_cast<long long>(n)] = printed_.line(u);
    return abi::fail_statement(kind, n, value);
  }
  int depth() const { return static_cast<int>(stack_.size()) - 1; }
  void emit(int level, std::string line) { stack_[static_cast<size_t>(level)].lines.push_back(std::move(line)); }

  void analyze(UOp ast);
  void analyze_node(UOp u);
  std::string ctype(DType d, UOp at) const;
  int level(UOp u) const;
  int scope_level(int id) const;
  std::string val(UOp u, int user_level, bool force_name = false);
  // val recurses through the sources it inlines; a statement's value whose chain of inlined
  // nodes is deeper than kInlineDepth gets a named local every kInlineDepth levels first, from
  // the bottom up, so that recursion stays shallow at any graph depth.
  static constexpr int kInlineDepth = 128;
  int val_depth_ = 0;
  void name_deep_chains(UOp u, int user_level);
  bool placeable(UOp u) const;
  std::string expr(UOp u, int level);
  std::string literal(UOp u) const;
  std::string range_var(UOp r);
  std::string c_var(UOp v) const { return "var_" + c_identifier(var_name(v)); }  // the C local holding a variable
  std::string use_var(UOp v);
  void open(UOp r, std::optional<LoopForm> form = std::nullopt);
  void close();
  // The open loop over r when it is written unroll-pointers (its accesses b[r] are b_at[r_u]).
  Scope* pointer_loop(UOp r);
  std::string identity(UOp u, Ops op) const;
  std::string reduce(UOp u, int level);
  // A fold GROUP marked tiles, axpy or gemv (args.h) in its loops END(END(GROUP, j), k...): its
  // registers and each one's term; fold_at checks the form (InternalError) or gives none for
  // other statements and under bounds checks (the vector code does not check).
  struct FoldTerm : opt::AxpyTerm {
    std::string ahead;  // the array holding s for each k, when fill_tiles computes it ahead
  };
  struct Fold {
    FoldForm form;
    UOp j;
    std::vector<UOp> ks, regs;
    std::vector<FoldTerm> terms;
  };
  std::optional<Fold> fold_at(UOp end) const;
  void vector_fold(const Fold& f);
  void gemv(const Fold& f);
  std::string offset_at(UOp idx, UOp j, std::vector<std::pair<UOp, UOp>> at);
  void fill_tiles(const Fold& f);  // tiles.cpp
  std::vector<FoldTerm> scalars_ahead(const Fold& f);
  void tile_loop(const Fold& f, int64_t start, int64_t count, int nvec);
  std::string reg_name(UOp define_reg) const { return "reg" + std::to_string(define_reg->arg.as<int64_t>()); }
  std::map<std::vector<const UOpNode*>, std::pair<UOp, std::vector<UOp>>> simplified_;  // key -> (result, key's nodes)
  using At = std::vector<std::pair<UOp, UOp>>;  // a substitution: node -> node
  UOp simplified_at(UOp x, const At& at);
  void simplify_ahead(const std::vector<std::pair<UOp, At>>& items);
  void adopt(UOp root);
  // The nodes under `root` for which known() is false, in toposort(root)'s order. The known nodes
  // must be closed under sources (analysis and numbering always take whole graphs), so skipping
  // their subgraphs leaves the order of the others unchanged.
  template <class Known>
  static std::vector<UOp> fresh_nodes(UOp root, const Known& known) {
    std::vector<UOp> order;
    if (known(root.get())) return order;
    std::unordered_set<const UOpNode*> seen{root.get()};
    std::vector<std::pair<UOp, size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto& [u, next] = stack.back();
      if (next < u->src.size()) {
        UOp c = u->src[next++];
        if (!known(c.get()) && seen.insert(c.get()).second) stack.emplace_back(c, 0);
        continue;
      }
      order.push_back(u);
      stack.pop_back();
    }
    return order;
  }
  void statement(UOp top);
  void transpose8(UOp end);  // transposes.cpp: its tile loops (the outer ones are open)
  struct Access {
    std::string gate, at;  // "" or the C of the gate; "b0[lin]"
  };
  Access access(UOp idx, int level);  // its bounds check emitted
  void store(UOp st);
  std::string binop(Ops op, DType d, const std::string& a, const std::string& b, bool may_wrap, UOp at);
  std::string alu(UOp u, int level);
  std::string int_alu(UOp u, int level, std::vector<std::string>& s, UOp den, bool safe_den);
  std::string narrow_float_op(Ops op, DType n, std::vector<std::string> s, UOp at);
  std::string cast(UOp u, const std::string& x);
  std::string narrow_float_cast(UOp u, const std::string& x);
  std::string float_to_int(DType from, DType to, const std::string& x, UOp at) const;
  std::string shift(UOp u, int level, const std::string& a, const std::string& b);
  static std::string suffix(DType d);
  bool may_wrap(UOp u) const;
};

// A kernel for two threads (kernel_threads, opt pass `threads`) as cc's C: each half of its
// statements a static function, and an entry that runs them on two threads (parallel.cpp).
RenderedKernel render_threaded(UOp kernel, const RenderOptions& opts, const std::string& name);

}  // namespace ow::backend::detail
