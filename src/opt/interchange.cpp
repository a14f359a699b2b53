// Kernel-opt pass `interchange` (tcc and cc): the reduce interchange, with row blocking. A store
// nest whose REDUCEs interchange_reduces names (loop_shapes.h: a matmul's, x @ W) folds each
// REDUCE as an array of accumulators over its innermost range j, held in a register, so that the
// inner loop walks j (contiguous in every load that depends on j) instead of the REDUCE's range k:
//   END(STORE(out[.., j], f(REDUCE(x(i, j, k), k...))), ..., i, j)
//   -> END(GROUP(END(GROUP(STORE(acc[j], id)), j),                                   (each REDUCE)
//                END(END(GROUP(STORE(acc[j], acc[j] OP x(i, j, k))), j), k...),
//                END(GROUP(STORE(out[.., j], f(acc[j]))), j)), ..., i)
// Rows: B rows i = B*ib + u fill their accumulators in the same passes over k (one accumulator
// per row, in the fold GROUP), so a value that does not depend on i (a row of b) is loaded once
// for B rows. B = 4 (a power of 2 dividing i's extent); when every fold is acc + s * b[off + j]
// (axpy_term: a matmul's, which cc folds in register tiles), up to 14 rows within 128 KiB of
// accumulators, the rows left over one more block. The fold GROUP is marked with how the C
// backend writes it (args.h): "tiles" (cc), "axpy" or "gemv" (tcc's vector calls), "jam" (cc:
// blocked rows without tiles, for GCC's unroll-and-jam).
// Each accumulator folds the same terms in the same order from the same identity, and
// block_size's conditions make the order of the stores free: results are bit-identical.
// A kernel's nests reuse its registers: each nest writes an accumulator before reading it.
#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "opt/loop_shapes.h"
#include "opt/opt.h"
#include "uop/args.h"
#include "uop/scan_form.h"
#include "uop/symbolic.h"
#include "uop/verify.h"

namespace ow::opt {

namespace {

constexpr int kRows = 4;                        // rows blocked to share loads
constexpr int kTileRows = 14;                   // rows of cc's register tiles: 14 x 2 vectors
constexpr int64_t kMaxBlockBytes = 128 * 1024;  // the accumulators of a block of tiled rows

UOp group(std::vector<UOp> stmts, Arg mark = Arg()) { return UOp::make(Ops::GROUP, dtypes::void_, std::move(stmts), std::move(mark)); }

UOp end_of(UOp body, std::vector<UOp> ranges) {
  if (ranges.empty()) return body;
  ranges.insert(ranges.begin(), body);
  return UOp::make(Ops::END, dtypes::void_, std::move(ranges));
}

// The registers of one kernel: the nests of its statements run one after another and each
// writes an accumulator before it reads it, so the n-th accumulator of a dtype and size is the
// same register in every nest.
class Registers {
 public:
  explicit Registers(UOp ast) {
    for (UOp u : toposort(ast))
      if (u->op == Ops::DEFINE_REG) {
        next_ = std::max(next_, u->arg.as<int64_t>() + 1);
        bytes_ += u->dtype.size * static_cast<int64_t>(u->dtype.itemsize());
      }
  }
  // Does a nest whose accumulators need `extra` more bytes fit the kernel's budget?
  bool fits(int64_t extra) const { return bytes_ + extra <= kMaxRegisterBytes; }
  // The k-th register of `count` elements of dtype d in a nest (k counted per dtype and count).
  UOp get(DType d, int64_t count, int k) {
    UOp& r = regs_[{static_cast<int>(d.scalar), count, k}];
    if (!r) {
      r = UOp::make(Ops::DEFINE_REG, DType(d.scalar, true, count), {}, Arg(next_++));
      bytes_ += count * static_cast<int64_t>(d.itemsize());
    }
    return r;
  }
  // The bytes a nest with `n` accumulators of `count` elements of each dtype adds to the kernel's
  // registers (those it can reuse cost nothing).
  int64_t more_bytes(const std::map<Scalar, int>& n, int64_t count) const {
    int64_t more = 0;
    for (auto [scalar, want] : n) {
      int have = 0;
      for (auto& [key, reg] : regs_) have += std::get<0>(key) == static_cast<int>(scalar) && std::get<1>(key) == count;
      more += std::max(0, want - have) * count * static_cast<int64_t>(DType(scalar).itemsize());
    }
    return more;
  }

 private:
  int64_t next_ = 0, bytes_ = 0;
  std::map<std::tuple<int, int64_t, int>, UOp> regs_;
};

// One block of rows of an interchanged nest: REDUCE p of row u is rows[p][u].
struct Block {
  std::vector<UOp> stores;               // the nest's STORE in each row
  std::vector<std::vector<UOp>> rows;    // per REDUCE, its copy in each row
};

// Distinct nodes, in order (a REDUCE that does not depend on the row is one node in every row:
// one accumulator, folded once).
std::vector<UOp> distinct(const std::vector<UOp>& xs) {
  std::vector<UOp> out;
  for (UOp x : xs)
    if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  return out;
}

class Interchange {
 public:
  Interchange(UOp ast, UOp end, std::vector<UOp> reds, const Options& o, Registers& regs)
      : ast_(ast), end_(end), reds_(std::move(reds)), o_(o), regs_(regs), j_(end->src.back()), n_(*const_extent(j_)) {}

  // The nest interchanged, or null when its accumulators do not fit the kernel's registers.
  UOp run() {
    UOp st = end_->src[0];
    if (!fits(1)) return UOp();
    if (end_->src.size() < 3) return block_statements(Block{{st}, rows_of_one()});
    size_t pos = end_->src.size() - 2;  // i, the range just outside j
    UOp i = end_->src[pos];
    std::vector<UOp> outer(end_->src.begin() + 1, end_->src.begin() + static_cast<std::ptrdiff_t>(pos));
    bool tiled = std::all_of(reds_.begin(), reds_.end(), [&](UOp r) { return vector_folds({r}); });
    int64_t row_bytes = 0;
    for (UOp r : reds_) row_bytes += n_ * static_cast<int64_t>(r->dtype.itemsize());
    int block = block_size(ast_, end_, pos, reds_, kRows, true, o_.bounds_check);
    if (tiled && o_.target == Target::cc) {  // tcc's vector calls: 4 rows at a time (faster there)
      int most = static_cast<int>(std::clamp<int64_t>(kMaxBlockBytes / std::max<int64_t>(row_bytes, 1), 1, kTileRows));
      block = block_size(ast_, end_, pos, reds_, most, false, o_.bounds_check);
    }
    while (block > 1 && !fits(block)) block /= 2;  // (what divides the rows still does, and uneven blocks may be any size)
    jam_ = !tiled && block > 1 && o_.target == Target::cc;
    if (block == 1) return end_of(block_statements(Block{{st}, rows_of_one()}), with(outer, i));
    int64_t rows = *const_extent(i), full = rows / block * block;
    std::vector<UOp> parts;
    if (full > 0) {
      UOp ib = block_range(i, block);
      parts.push_back(end_of(block_statements(in_block(i, ib * block, block)), {ib}));
    }
    if (full < rows) parts.push_back(block_statements(in_block(i, UOp::index(full), static_cast<int>(rows - full))));
    return end_of(parts.size() == 1 ? parts[0] : group(std::move(parts)), outer);
  }


 private:
  UOp ast_, end_;  // the kernel's ast (block_size reads its stores); the nest
  std::vector<UOp> reds_;
  const Options& o_;
  Registers& regs_;
  UOp j_;
  int64_t n_;
  bool jam_ = false;

  static std::vector<UOp> with(std::vector<UOp> xs, UOp x) {
    xs.push_back(x);
    return xs;
  }

  std::vector<std::vector<UOp>> rows_of_one() const {
    std::vector<std::vector<UOp>> rows;
    for (UOp r : reds_) rows.push_back({r});
    return rows;
  }

  // Do a block of `block` rows' accumulators fit the kernel's registers? (Counting one per row
  // and REDUCE: a REDUCE the same in every row needs only one.)
  bool fits(int block) const {
    std::map<Scalar, int> n;
    for (UOp r : reds_) n[r->dtype.scalar] += block;
    return regs_.fits(regs_.more_bytes(n, n_));
  }

  // Is every fold of these accumulators acc + s * b[off + j] (loop_shapes.h)?
  bool vector_folds(const std::vector<UOp>& accs) const {
    for (UOp a : accs)
      if (!axpy_term(*a->arg.get_if<Ops>(), a->dtype, a->src[0], j_, o_.bounds_check)) return false;
    return true;
  }

  // The block of `count` rows from `start`: i -> start + u in the store and in each REDUCE.
  Block in_block(UOp i, UOp start, int count) const {
    Block b;
    b.rows.resize(reds_.size());
    for (int u = 0; u < count; ++u) {
      UOp row = u ? start + u : start;
      b.stores.push_back(substitute_range(end_->src[0], i, row));
      for (size_t p = 0; p < reds_.size(); ++p) b.rows[p].push_back(substitute_range(reds_[p], i, row));
    }
    return b;
  }

  // Each REDUCE's accumulators filled, then the j loop of the block's stores.
  UOp block_statements(const Block& b) {
    std::vector<UOp> stmts;
    std::vector<std::pair<UOp, UOp>> acc_of;  // each row's REDUCE -> its accumulator at j
    std::map<Scalar, int> used;                // accumulators per dtype so far
    for (size_t p = 0; p < reds_.size(); ++p) {
      UOp r = reds_[p];
      Ops op = *r->arg.get_if<Ops>();
      std::vector<UOp> accs = distinct(b.rows[p]), init, folds;
      for (UOp a : accs) {
        UOp at = regs_.get(r->dtype, n_, used[r->dtype.scalar]++).index({j_});
        init.push_back(at.store(reduce_identity(op, r->dtype)));
        folds.push_back(at.store(UOp::make(op, r->dtype, {at.load(), a->src[0]})));
        acc_of.push_back({a, at.load()});
      }
      stmts.push_back(end_of(group(std::move(init)), {j_}));
      std::vector<UOp> ks(r->src.begin() + 1, r->src.end());
      stmts.push_back(end_of(end_of(group(std::move(folds), fold_mark(accs, ks)), {j_}), ks));
    }
    std::vector<UOp> stores;
    for (UOp s : b.stores) stores.push_back(substitute(s, acc_of));
    stmts.push_back(end_of(group(std::move(stores)), {j_}));
    return group(std::move(stmts));
  }

  // How the C backend writes the fold of `accs` over ranges `ks` (args.h).
  Arg fold_mark(const std::vector<UOp>& accs, const std::vector<UOp>& ks) const {
    if (!vector_folds(accs)) return jam_ ? fold_arg(FoldForm::jam) : Arg();
    if (o_.target == Target::cc) return fold_arg(FoldForm::tiles);
    const int64_t* m = ks.size() == 1 ? const_extent(ks[0]) : nullptr;
    if (m && *m >= 1 && *m * static_cast<int64_t>(accs.size()) <= kMaxGemvFactors) {
      auto term = [&](UOp a) { return axpy_term(*a->arg.get_if<Ops>(), a->dtype, a->src[0], j_, o_.bounds_check)->idx; };
      bool shared = std::all_of(accs.begin(), accs.end(), [&](UOp a) { return term(a) == term(accs[0]); });  // one b for every row
      if (shared && coefficient(term(accs[0])->src[1], ks[0])) return fold_arg(FoldForm::gemv);
    }
    return fold_arg(FoldForm::axpy);
  }
};

UOp interchange_nests(const Match& m) {
  const Options& o = m.context<Options>();
  UOp ast = m.node->src[0];
  std::optional<Registers> regs;  // found when a first nest is interchanged
  return with_statements(m.node, [&](UOp s) {
    std::vector<UOp> reds = interchange_reduces(s, o.bounds_check);
    if (reds.empty()) return s;
    if (!regs) regs.emplace(ast);
    UOp out = Interchange(ast, s, std::move(reds), o, *regs).run();
    return out ? out : s;
  });
}

}  // namespace

const PatternMatcher& interchange_rules() {
  static const PatternMatcher pm({{"a store nest folding REDUCEs over a contiguous inner range folds arrays of accumulators, rows blocked", Pat::ops({Ops::KERNEL}),
                                   interchange_nests}});
  return pm;
}

}  // namespace ow::opt
