// The effects a value depends on, parsed into statements (program.h).
#include "grad/program.h"

#include <algorithm>

#include "grad/gradient.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/pattern.h"
#include "uop/pinned_reads.h"
#include "uop/scan_form.h"
#include "uop/shape.h"
#include "uop/text.h"
#include "uop/verify.h"

namespace ow::grad {

// ---------------- names ----------------

Namer::Namer(UOp root) {
  int64_t deepest = 0;
  for (UOp u : toposort(root)) {
    if (u->op == Ops::BUFFER) used_.insert(buffer_name(u));
    if (u->op == Ops::RANGE)
      for (const Arg& a : *u->arg.tuple())
        if (a.is<int64_t>()) deepest = std::max(deepest, std::abs(a.as<int64_t>()));
  }
  next_range_ = -(deepest + 1000);  // printed m<n>, far from the graph's own and from lowering's (1000, 1001, ...)
}

UOp Namer::buffer(const std::string& prefix, DType dt, int64_t size) {
  std::string name;
  do name = "_" + prefix + std::to_string(next_buffer_++);
  while (!used_.insert(name).second);
  return UOp::make(Ops::BUFFER, dt, {}, Arg(ArgTuple{Arg(name), Arg(size)}));
}

UOp Namer::range(UOp extent) { return UOp::range(extent, next_range_--, AxisType::OUTER); }

// ---------------- reads and effects ----------------


bool is_read(UOp u) {
  for (; u->op != Ops::BUFFER; u = u->src[0])
    if (u->op != Ops::RESHAPE && u->op != Ops::PERMUTE && u->op != Ops::SHRINK && u->op != Ops::FLIP && u->op != Ops::AFTER) return false;
  return true;
}

bool is_writable_read(UOp u) {
  for (; u->op != Ops::BUFFER; u = u->src[0]) {
    if (u->op == Ops::RESHAPE && (u->src[0]->op == Ops::BUFFER || (u->src[0]->op == Ops::AFTER && base_buffer(u->src[0]) && is_read(u->src[0])))) continue;  // of the whole buffer: contiguous
    if (u->op != Ops::PERMUTE && u->op != Ops::SHRINK && u->op != Ops::FLIP && u->op != Ops::AFTER) return false;
  }
  return true;
}

void for_each_store(const std::vector<Stmt>& stmts, const std::function<void(const Stmt&, const std::vector<const Stmt*>&)>& f) {
  std::vector<const Stmt*> loops;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (s.kind == Stmt::Kind::Store) return f(s, loops);
    if (s.kind == Stmt::Kind::Loop) loops.push_back(&s);
    for (const Stmt& b : s.body) walk(b);
    if (s.kind == Stmt::Kind::Loop) loops.pop_back();
  };
  for (const Stmt& s : stmts) walk(s);
}

// ---------------- parsing ----------------

namespace {

[[noreturn]] void refuse(UOp at, NotDifferentiable::Reason reason, const std::string& why) {
  throw NotDifferentiable(reason, why + " (at " + number_graph(at).line(at) + ")");
}

UOp group(std::vector<UOp> steps) { return UOp::make(Ops::GROUP, dtypes::void_, std::move(steps)); }

UOp outer_twin(UOp r) {
  if (range_axis(r) == AxisType::OUTER) return r;
  ArgTuple t = *r->arg.tuple();
  t.back() = Arg(AxisType::OUTER);
  return r.with_arg(Arg(t));
}

class Parser {
 public:
  // An effect a variable depends on is fixed, unless another variable lies strictly below it:
  // then a path from that variable to the loss runs through the effect, and reverse mode must
  // follow it (fuzz seed 3248: t = tgt.assign(3 x) and x, both of one loss).
  Parser(const std::vector<UOp>& before, Namer& names) : names_(names) {
    std::set<const UOpNode*> vars, above;  // above: a variable is strictly below it
    for (UOp b : before) vars.insert(b.get());
    for (UOp b : before)
      for (UOp u : toposort(b)) {
        bool a = false;
        for (UOp s : u->src) a = a || vars.count(s.get()) || above.count(s.get());
        if (a) above.insert(u.get());
        if (is_effect(u->op) && !above.count(u.get())) fixed_.insert(u.get());
      }
  }

  Program run(UOp value) {
    bound_ = free_ranges(value);
    deps_of(value, {});
    return Program{std::move(out_), std::move(replace_)};
  }

 private:
  Namer& names_;
  std::set<const UOpNode*> fixed_, seen_;
  std::vector<Stmt> out_;
  std::vector<std::pair<UOp, UOp>> replace_;
  std::vector<UOp> bound_;  // the loss's own free ranges: the program runs once per binding of them

  // The statements x depends on, added before whoever asks. `nested`: statements of the bodies
  // being parsed (they are not dependencies but parts).
  void deps_of(UOp x, const std::set<const UOpNode*>& nested) {
    for (UOp n : toposort(x)) {
      std::vector<UOp> found;
      if (n->op == Ops::AFTER)
        for (size_t i = 1; i < n->src.size(); ++i)
          if (is_effect(n->src[i]->op) && !nested.count(n->src[i].get())) found.push_back(n->src[i]);
      if (n->op == Ops::ASSIGN && !nested.count(n.get())) found.push_back(n);
      if (found.empty()) continue;
      // A runner under a loop of the program (an END) or of a value (a REDUCE, a collect) runs
      // its effects in every iteration: the program has no statement for that.
      for (UOp r : free_ranges(n))
        if (std::find(bound_.begin(), bound_.end(), r) == bound_.end())
          refuse(n, NotDifferentiable::Reason::EffectInLoopValue, "an effect run in every iteration of a loop by a node inside the loop's values is not differentiated");
      for (UOp e : found) add(e, nested);
    }
  }

  void add(UOp e, const std::set<const UOpNode*>& nested) {
    if (fixed_.count(e.get()) || !seen_.insert(e.get()).second) return;
    if (e->op == Ops::ASSIGN) e = explicit_assign(e);
    std::set<const UOpNode*> mine = nested;
    structure(e, mine);
    deps_of(e, mine);
    out_.push_back(parse(e));
  }

  // The statements an effect is made of (not those its values depend on).
  void structure(UOp e, std::set<const UOpNode*>& parts) {
    parts.insert(e.get());
    if (e->op == Ops::END) structure(e->src[0], parts);
    if (e->op == Ops::GROUP)
      for (UOp m : e->src) structure(m, parts);
  }

  Stmt parse(UOp e) {
    switch (e->op) {
      case Ops::STORE: return Stmt{Stmt::Kind::Store, e, e->src[0], e->src[1], {}, true, {}};
      case Ops::GROUP: {
        Stmt s{Stmt::Kind::Seq, e, {}, {}, {}, true, {}};
        for (UOp m : e->src) s.body.push_back(parse(m));
        return s;
      }
      case Ops::END: {
        if (std::any_of(e->src.begin() + 1, e->src.end(), [](UOp r) { return r->src[0]->op == Ops::CONST && r->src[0].const_value() == 0; }))
          return Stmt{Stmt::Kind::Seq, e, {}, {}, {}, true, {}};  // a loop without iterations does nothing
        Stmt s{Stmt::Kind::Loop, e, {}, {}, {e->src.begin() + 1, e->src.end()}, true, {}};
        s.sequential = std::all_of(s.ranges.begin(), s.ranges.end(), [](UOp r) { return range_axis(r) == AxisType::OUTER; });
        if (!s.sequential && reads_after_inner_write(e->src[0]))  // fuzz 820925: the backward would see the write
          refuse(e, NotDifferentiable::Reason::ReadAfterLoopEffect, "a parallel END whose stored value reads a buffer after an effect inside the loop writes it (S5.3 pins the read to the loop's start) is not differentiated");
        s.body.push_back(parse(e->src[0]));
        return s;
      }
      default: refuse(e, NotDifferentiable::Reason::NoRule, std::string("no gradient through a ") + std::string(op_name(e->op)) + " effect");
    }
  }

  // An ASSIGN is a store of its value; an assign scan, its explicit loop (S6.1). The ASSIGN is
  // replaced in the graph by AFTER(target, those effects), which means the same.
  UOp explicit_assign(UOp a) {
    UOp target = a->src[0], value = a->src[1];
    bool scan = value->op == Ops::REDUCE && std::any_of(value->src.begin() + 1, value->src.end(), [](UOp r) { return range_axis(r) == AxisType::OUTER; });
    UOp effects;
    if (!scan) {
      effects = target.store(value);
    } else {
      std::vector<std::pair<UOp, UOp>> twins;
      std::vector<UOp> ranges;
      for (size_t i = 1; i < value->src.size(); ++i) {
        ranges.push_back(outer_twin(value->src[i]));
        if (ranges.back() != value->src[i]) twins.push_back({value->src[i], ranges.back()});
      }
      UOp x = twins.empty() ? value->src[0] : substitute(value->src[0], twins);
      auto static_dims_of = [&](UOp like) {
        auto d = like->shape.kind == ShapeInfo::Kind::Shaped ? static_dims(like->shape.dims) : std::nullopt;
        if (!d) refuse(a, NotDifferentiable::Reason::SymbolicShape, "an assign scan of a symbolic or unshaped target");
        return *d;
      };
      ScanForm f = assign_scan_form(target, value->arg.as<Ops>(), x, [&](const std::string& prefix, DType dt) {
        std::vector<int64_t> d = static_dims_of(target);
        int64_t n = 1;
        std::vector<UOp> src{UOp()};
        for (int64_t k : d) n *= k, src.push_back(UOp::index(k));
        src[0] = names_.buffer(prefix, dt, n);
        return UOp::make(Ops::RESHAPE, dt, src);
      });
      effects = group({f.init, f.body.end(ranges), f.finish});
    }
    replace_.push_back({a, target.after({effects})});
    seen_.insert(effects.get());
    return effects;
  }
};

}  // namespace

Program program_of(UOp value, const std::vector<UOp>& before, Namer& names) { return Parser(before, names).run(value); }

}  // namespace ow::grad
