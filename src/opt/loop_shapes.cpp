// The loop shapes that keep a store nest's results (loop_shapes.h).
#include "opt/loop_shapes.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <set>

#include "uop/args.h"
#include "uop/may_fail.h"
#include "uop/symbolic.h"
#include "uop/verify.h"

namespace ow::opt {

const int64_t* const_extent(UOp r) { return r->src.at(0).is_const() ? r->src[0]->arg.get_if<int64_t>() : nullptr; }

int block_size(UOp ast, UOp end, size_t pos, const std::vector<UOp>& reds, int most, bool divides, bool bounds_check) {
  UOp r = end->src[pos], st = end->src[0], idx = st->src[0];
  const int64_t* e = const_extent(r);
  int block = !e || *e < 2 ? 1 : most;
  if (divides)
    while (block > 1 && *e % block != 0) block /= 2;
  else if (block > 1)  // blocks as even as they can be, the last one of the rows left over
    block = static_cast<int>((*e + (*e + most - 1) / most - 1) / ((*e + most - 1) / most));
  if (block == 1 || idx->op != Ops::INDEX || idx->src.size() != 2) return 1;
  for (UOp red : reds)
    for (size_t s = 1; s < red->src.size(); ++s)
      if (has_free_range(red->src[s], r)) return 1;
  auto c = coefficient(idx->src[1], r);
  if (!c || *c == 0 || *c == INT64_MIN) return 1;
  int64_t spread = 0;  // how far the ranges inside r move the index
  for (size_t q = pos + 1; q < end->src.size(); ++q) {
    auto cq = coefficient(idx->src[1], end->src[q]);
    const int64_t* nq = const_extent(end->src[q]);
    if (!cq || !nq || *cq == INT64_MIN || std::abs(*cq) > (INT64_MAX / 4) / std::max<int64_t>(*nq, 1)) return 1;
    spread += std::abs(*cq) * (*nq - 1);
  }
  if (std::abs(*c) <= spread) return 1;
  int64_t size = idx->src[0]->dtype.size;
  if (bounds_check && !(size >= 0 && idx->src[1].vmin() >= 0 && idx->src[1].vmax() < size)) return 1;
  std::set<const UOpNode*> written;
  for (UOp u : toposort(ast))
    if (u->op == Ops::STORE && !u->src.empty() && !u->src[0]->src.empty()) written.insert(u->src[0]->src[0].get());
  for (UOp u : toposort(st)) {
    if (may_fail(u, bounds_check)) return 1;
    if (u->op == Ops::LOAD && !u->src.empty() && !u->src[0]->src.empty() && written.count(u->src[0]->src[0].get())) return 1;
  }
  return block;
}

namespace {

// A range like r (its id, axis and sub-ids, then `more` appended to the sub-ids) over `extent`.
UOp named_after(UOp r, int64_t extent, std::initializer_list<int64_t> more) {
  const ArgTuple& arg = *r->arg.tuple();  // (id, sub-id..., axis)
  std::vector<int64_t> sub;
  for (size_t k = 1; k + 1 < arg.size(); ++k) sub.push_back(arg[k].as<int64_t>());
  sub.insert(sub.end(), more);
  return UOp::range(extent, arg[0].as<int64_t>(), range_axis(r), sub);
}

}  // namespace

UOp block_range(UOp r, int block) { return named_after(r, *const_extent(r) / block, {-block}); }

UOp lane_range(UOp r, int block) { return named_after(r, block, {-block, 0}); }

std::vector<UOp> reduces_over(UOp value, UOp j) {
  std::vector<UOp> reds, todo{value};
  std::set<const UOpNode*> seen;
  while (!todo.empty()) {
    UOp u = todo.back();
    todo.pop_back();
    if (!seen.insert(u.get()).second || !has_free_range(u, j)) continue;
    if (u->op == Ops::REDUCE) {
      reds.push_back(u);
      continue;
    }
    for (size_t s = u->src.size(); s-- > 0;) todo.push_back(u->src[s]);
  }
  return reds;
}

std::optional<AxpyTerm> axpy_term(Ops op, DType d, UOp x, UOp j, bool bounds_check) {
  if (op != Ops::ADD || bounds_check) return std::nullopt;
  if (!(d.scalar == Scalar::Float32 || d.scalar == Scalar::Float64) || x->op != Ops::MUL || x->dtype != d) return std::nullopt;
  bool first = has_free_range(x->src[0], j);
  UOp ld = x->src[first ? 0 : 1], s = x->src[first ? 1 : 0];
  if (has_free_range(s, j) || ld->op != Ops::LOAD || ld->dtype != d || ld->src.size() != 1) return std::nullopt;
  UOp idx = ld->src[0];
  if (idx->op != Ops::INDEX || idx->src.size() != 2 || idx->src[0]->op != Ops::DEFINE_GLOBAL || coefficient(idx->src[1], j) != 1) return std::nullopt;
  return AxpyTerm{s, idx, first};
}

bool store_nest(UOp end) {
  return end->op == Ops::END && end->src.size() >= 2 && end->src[0]->op == Ops::STORE && end->src[0]->src.size() == 2;
}

bool interchangeable(UOp end, const std::vector<UOp>& reds, bool bounds_check) {
  UOp j = end->src.back();
  const int64_t* n = j->op == Ops::RANGE ? const_extent(j) : nullptr;
  if (reds.empty() || !n || *n < 1 || *n > kMaxAccElems) return false;
  for (size_t i = 1; i + 1 < end->src.size(); ++i)
    if (end->src[i] == j) return false;
  int64_t bytes = 0;
  for (UOp r : reds) {
    if (!r->arg.get_if<Ops>() || r->src.size() < 2 || r->dtype.ptr) return false;
    bytes += *n * static_cast<int64_t>(r->dtype.itemsize());
    for (size_t s = 1; s < r->src.size(); ++s)
      if (r->src[s]->op != Ops::RANGE || r->src[s] == j || r->src[s]->src.empty() || has_free_range(r->src[s]->src[0], j)) return false;
    for (UOp u : toposort(r->src[0])) {
      if (u->op == Ops::REDUCE || may_fail(u, bounds_check)) return false;
      if (u->op == Ops::LOAD && u->src.size() == 1 && u->src[0]->op == Ops::INDEX && u->src[0]->src.size() >= 2 &&
          has_free_range(u->src[0]->src[1], j) && coefficient(u->src[0]->src[1], j) != 1)
        return false;
    }
  }
  return bytes <= kMaxAccBytes;
}

std::vector<UOp> interchange_reduces(UOp end, bool bounds_check) {
  if (!store_nest(end)) return {};
  std::vector<UOp> reds = reduces_over(end->src[0]->src[1], end->src.back());
  return interchangeable(end, reds, bounds_check) ? reds : std::vector<UOp>{};
}

}  // namespace ow::opt
