// Declarative rewriting: a Pat (tinygrad's UPat) describes a subgraph, a Rule pairs it with a
// replacement function, and a PatternMatcher is an ordered rule table; tables compose with `+`.
// graph_rewrite applies a table to a whole graph until nothing fires.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace ow {

class Pat {
 public:
  static Pat any(std::string name = "");                       // anything
  static Pat var(std::string name) { return any(std::move(name)); }
  static Pat cvar(std::string name);                           // any CONST
  static Pat cnst(double value);                               // a CONST equal to value
  static Pat op(Ops op, std::vector<Pat> src, std::string name = "");  // exactly these sources
  static Pat ops(std::vector<Ops> ops, std::string name = "");         // any sources

  Pat named(std::string name) const;
  Pat where_dtype(std::function<bool(DType)> pred) const;   // extra condition on the dtype
  Pat any_len() const;                                      // src list is a prefix

  bool match(UOp u, std::vector<std::pair<std::string, UOp>>& bound) const;  // the first way
  // Offers every way the pattern matches u to k, until k returns true (then returns true).
  bool match_each(UOp u, std::vector<std::pair<std::string, UOp>>& bound,
                  const std::function<bool(std::vector<std::pair<std::string, UOp>>&)>& k) const;
  // The root ops this pattern can match (empty: any op); lets a table index its rules.
  const std::vector<Ops>& root_ops() const;

 private:
  struct Data;
  std::shared_ptr<const Data> d_;
};

Pat operator+(Pat a, Pat b);
Pat operator*(Pat a, Pat b);
Pat operator-(Pat a, Pat b);

// What a rule's function sees: the matched node, the named captures and the rewrite context.
struct Match {
  UOp node;
  std::vector<std::pair<std::string, UOp>> bound;
  void* ctx = nullptr;
  UOp operator[](const std::string& name) const;
  template <class T> T& context() const { return *static_cast<T*>(ctx); }
};

// A replacement returns the new node, or a null UOp when the rule does not apply after all.
using RewriteFn = std::function<UOp(const Match&)>;

struct Rule {
  std::string name;
  Pat pat;
  RewriteFn fn;
};

class PatternMatcher {
 public:
  PatternMatcher() = default;
  PatternMatcher(std::vector<Rule> rules);  // NOLINT: tables are written as brace lists
  PatternMatcher operator+(const PatternMatcher& o) const;

  struct Fired {
    UOp result;
    const Rule* rule;  // points into this matcher: valid while the matcher lives
  };
  // The first rule (in table order) with a way of matching u for which its function returns a
  // node different from u.
  std::optional<Fired> rewrite(UOp u, void* ctx = nullptr) const;
  const std::vector<Rule>& rules() const { return rules_; }

 private:
  void index();
  std::vector<Rule> rules_;
  std::vector<std::vector<size_t>> by_op_;  // rule indices per root op (plus wildcard rules)
};

struct RewriteOptions {
  bool bottom_up = false;     // try rules on a node before rewriting its sources
  size_t max_steps = 1000000; // rule firings allowed before we call it a loop
  std::string name = "rewrite";
  void* ctx = nullptr;
  // Called for every firing: (rule, node before, node after). Used by tracing tools.
  std::function<void(const Rule&, UOp, UOp)> on_fire;
};

// Rewrites the graph under root to a fixed point of the table. Throws ow::Error naming the
// rewrite, the last rule and node when max_steps is exceeded.
UOp graph_rewrite(UOp root, const PatternMatcher& pm, const RewriteOptions& opts = {});

// Replaces nodes by identity (no rules): every occurrence of a key becomes its value.
UOp substitute(UOp root, const std::vector<std::pair<UOp, UOp>>& map);

// root with range r replaced by v where r is free: only the nodes that depend on r are visited
// and rebuilt (a copy of a loop body for one value of its range costs what changes, not the
// whole body), and a REDUCE or END that binds r keeps it. `also`: more replacements, of nodes
// that depend on r (others are not visited, so not replaced).
UOp substitute_range(UOp root, UOp r, UOp v, const std::vector<std::pair<UOp, UOp>>& also = {});

}  // namespace ow
