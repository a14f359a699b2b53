// Kernel optimization (reference/LOWERING.md, "Kernel optimization"): passes from a lowered
// program's KERNELs to faster KERNELs that compute the same, each a rule table over one kernel,
// chosen per target compiler. Like the lowering passes they end in a graph the interpreter
// evaluates, so `ow check --passes` checks them too; `ow lower` lists, skips and prints them.
#pragma once
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "uop/pattern.h"
#include "uop/uop.h"

namespace ow::opt {

// The compiler the C of a kernel is written for: what pays differs (tcc never unrolls or
// vectorizes; cc has register tiles and a second core).
enum class Target { tcc, cc };
std::string_view target_name(Target t);

struct Options {
  Target target = Target::cc;
  int threads = 1;            // 2: cc may run a big, provably parallel kernel on two threads
  bool bounds_check = false;  // the kernels check their accesses (an error stops a kernel early)
  std::set<std::string> skip;  // passes not to run
};

// OW_THREADS: 1 (serial kernels) or 2, the default. Anything else is an ow::Error.
int threads_setting();

// The options a run for `t` uses: cc's threads from OW_THREADS, tcc's kernels always serial.
Options options_for(Target t, bool bounds_check = false, std::set<std::string> skip = {});

struct Pass {
  std::string name;
  std::string what;  // one line for ow lower --list
  std::vector<Target> targets;  // the compilers it optimizes for
  const PatternMatcher& (*rules)();  // its rules read the Options from the rewrite's context
};

// The passes, in order: threads, transposes, columns, interchange, unroll.
const std::vector<Pass>& passes();

// One pass over every KERNEL of `root` (a lowered program, or a lone KERNEL): the pass's rules
// rewrite each kernel, verified (verify_kernel) when they changed it; `on_fire` sees every firing
// (ow explain).
UOp run_pass(const Pass& p, UOp root, const Options& o, const std::function<void(const Rule&, UOp, UOp)>& on_fire = {});

// Every pass for o.target not in o.skip, in order, over every KERNEL of `root`, in one walk of
// the program; each kernel the passes changed is verified once, after the last.
UOp optimize(UOp root, const Options& o);

// A rule's result for KERNEL k: k with each top-level statement s of its ast replaced by
// f(s), or null (no change) when f changes none.
UOp with_statements(UOp k, const std::function<UOp(UOp)>& f);

// The pass rule tables (one file each).
const PatternMatcher& threads_rules();
const PatternMatcher& transposes_rules();
const PatternMatcher& columns_rules();
const PatternMatcher& interchange_rules();
const PatternMatcher& unroll_rules();

}  // namespace ow::opt
