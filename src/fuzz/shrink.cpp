// The shrinker of ow fuzz (see generate.h): greedy, graph-level delta debugging. Every candidate
// is a whole new graph (nodes are interned, so "replacing" a node rebuilds its users); it is kept
// when it is cheaper, verifies and still shows the finding.
#include <algorithm>
#include <set>
#include <unordered_map>

#include "fuzz/generate.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/pattern.h"
#include "uop/verify.h"

namespace ow::fuzz {

namespace {

using Map = std::unordered_map<const UOpNode*, UOp>;

bool static_shape_of(UOp u, std::vector<int64_t>& out) {
  if (u->shape.kind != ShapeInfo::Kind::Shaped) return false;
  out.clear();
  for (UOp d : u->shape.dims) {
    if (d->op != Ops::CONST) return false;
    out.push_back(static_cast<int64_t>(d.const_value()));
  }
  return true;
}

bool same_shape(UOp a, UOp b) {
  if (a->shape.kind != b->shape.kind) return false;
  if (a->shape.kind == ShapeInfo::Kind::Invalid) return false;
  return a->shape.dims == b->shape.dims;
}

// CONST reshaped to ones and expanded to the shape (what Tensor::full builds).
UOp constant_like(UOp u, double v) {
  std::vector<int64_t> s;
  UOp c = UOp::cnst(u->dtype, v);
  if (u->shape.kind == ShapeInfo::Kind::Unshaped) return c;
  if (!static_shape_of(u, s)) return UOp();
  std::vector<UOp> ones{c}, full{};
  for (size_t i = 0; i < s.size(); ++i) ones.push_back(UOp::index(1));
  UOp r = UOp::make(Ops::RESHAPE, u->dtype, ones);
  if (s.empty()) return r;
  bool all_one = std::all_of(s.begin(), s.end(), [](int64_t x) { return x == 1; });
  if (all_one) return r;
  std::vector<UOp> ex{r};
  for (int64_t x : s) ex.push_back(UOp::index(x));
  return UOp::make(Ops::EXPAND, u->dtype, ex);
}

bool is_constant_form(UOp u) {
  while (u->op == Ops::EXPAND || u->op == Ops::RESHAPE) u = u->src[0];
  return u->op == Ops::CONST;
}

// Every index CONST equal to `from` becomes `to`; buffers seen through a static RESHAPE are
// resized to the reshape's new element count.
UOp rescale(UOp root, int64_t from, int64_t to) {
  Map done;
  for (UOp u : toposort(root)) {
    if (u->op == Ops::CONST && u->dtype == dtypes::index && static_cast<int64_t>(u.const_value()) == from) {
      done[u.get()] = UOp::index(to);
      continue;
    }
    std::vector<UOp> src;
    bool changed = false;
    for (UOp s : u->src) {
      UOp n = done.at(s.get());
      changed = changed || n != s;
      src.push_back(n);
    }
    if (u->op == Ops::RESHAPE && u->src[0]->op == Ops::BUFFER && changed) {
      int64_t n = 1;
      bool stat = true;
      for (size_t i = 1; i < src.size(); ++i) {
        if (src[i]->op != Ops::CONST) stat = false;
        else n *= static_cast<int64_t>(src[i].const_value());
      }
      if (stat) {
        const ArgTuple& t = *u->src[0]->arg.tuple();
        src[0] = UOp::make(Ops::BUFFER, u->src[0]->dtype, {}, Arg(ArgTuple{t[0], Arg(n)}));
      }
    }
    done[u.get()] = changed ? u.replace_src(src) : u;
  }
  return done.at(root.get());
}

std::vector<UOp> candidates(UOp root) {
  std::vector<UOp> out;
  auto add = [&](UOp c) {
    if (c && c != root) out.push_back(c);
  };
  // 1. fewer outputs
  if (root->op == Ops::SINK && root->src.size() > 1) {
    const ArgTuple* names = root->arg.tuple();
    for (size_t i = 0; i < root->src.size(); ++i) {
      std::vector<UOp> src;
      ArgTuple n;
      for (size_t j = 0; j < root->src.size(); ++j)
        if (j != i) {
          src.push_back(root->src[j]);
          if (names && j < names->size()) n.push_back((*names)[j]);
        }
      add(UOp::sink(src, names ? Arg(n) : Arg()));
    }
  }
  // 2. an output by any shaped sub-expression of it (verify rejects those with free ranges)
  if (root->op == Ops::SINK)
    for (size_t i = 0; i < root->src.size(); ++i)
      for (UOp d : toposort(root->src[i]))
        if (d != root->src[i] && !d->dtype.is_void() && d->dtype != dtypes::index && d->shape.kind == ShapeInfo::Kind::Shaped &&
            d->op != Ops::CONST && d->op != Ops::BUFFER) {
          std::vector<UOp> src = root->src;
          src[i] = d;
          add(root.replace_src(src));
        }
  std::vector<UOp> order = toposort(root);
  std::reverse(order.begin(), order.end());  // users first: big subtrees go first
  for (UOp u : order) {
    if (u == root || u->dtype.is_void() || u->dtype == dtypes::index) continue;
    if (u->op == Ops::BUFFER || u->op == Ops::RANGE || u->op == Ops::CONST) continue;
    // 3. a node by one of its sources of the same shape and dtype
    std::set<const UOpNode*> seen;
    for (UOp s : u->src)
      if (s->dtype == u->dtype && same_shape(s, u) && seen.insert(s.get()).second) add(substitute(root, {{u, s}}));
    // 4. a value by a constant
    if (!is_constant_form(u) && !(u->op == Ops::RESHAPE && u->src[0]->op == Ops::BUFFER)) {
      for (double v : {0.0, 1.0})
        if (UOp c = constant_like(u, v)) add(substitute(root, {{u, c}}));  // none for a shape with a range dim
    }
  }
  // 5. smaller sizes
  std::set<int64_t> values;
  for (UOp u : toposort(root))
    if (u->op == Ops::CONST && u->dtype == dtypes::index) {
      int64_t v = static_cast<int64_t>(u.const_value());
      if (v >= 2 && v <= 100000) values.insert(v);
    }
  for (auto it = values.rbegin(); it != values.rend(); ++it) {
    add(rescale(root, *it, *it - 1));
    if (*it > 2) add(rescale(root, *it, (*it + 1) / 2));
    add(rescale(root, *it, 1));
  }
  return out;
}

}  // namespace

size_t graph_cost(UOp root) {
  size_t nodes = 0, elems = 0, consts = 0;
  for (UOp u : toposort(root)) {
    ++nodes;
    if (u->op == Ops::BUFFER) elems += static_cast<size_t>(buffer_size(u));
    if (u->op == Ops::CONST && u->dtype == dtypes::index) consts += static_cast<size_t>(std::clamp<int64_t>(static_cast<int64_t>(u.const_value()), 0, 1000));
  }
  return nodes * 4096 + elems * 4 + consts;
}

UOp shrink(UOp root, const Predicate& still, ShrinkStats* stats, int max_tries) {
  ShrinkStats st;
  st.nodes_before = toposort(root).size();
  size_t cost = graph_cost(root);
  bool progress = true;
  while (progress && st.tries < max_tries) {
    progress = false;
    for (UOp c : candidates(root)) {
      if (st.tries >= max_tries) break;
      size_t cc = graph_cost(c);
      if (cc >= cost) continue;
      if (!verify(c).empty()) continue;
      ++st.tries;
      bool keep = false;
      try {
        keep = still(c);
      } catch (const InternalError&) {
        throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
      } catch (const Error&) {
        keep = false;
      }
      if (!keep) continue;
      ++st.accepted;
      root = c;
      cost = cc;
      progress = true;
      break;
    }
  }
  st.nodes_after = toposort(root).size();
  if (stats) *stats = st;
  return root;
}

}  // namespace ow::fuzz
