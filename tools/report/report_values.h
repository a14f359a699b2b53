// The values `ow report` shows for a clicked node: one per range binding ("m1=0", "m1=1", ...),
// captured from the interpreter's on_step hook while it evaluates a stage's graph, printed with
// interp::format_array. Capped so the page stays small: the first kMaxBindings bindings of each
// node and kMaxChars of printed values in all; what was left out is counted and said on the page.
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "interp/interp.h"
#include "json/json.h"
#include "uop/text.h"

namespace ow::cli {

class ValueRecorder {
 public:
  static constexpr size_t kMaxBindings = 64;        // bindings recorded per node
  static constexpr size_t kMaxChars = 1'000'000;    // printed value text per stage, in all

  explicit ValueRecorder(UOp root);
  void on_step(const interp::Step& s);
  // {"N": {"bindings": [["m1=0", "[1. 2.]"], ...], "more": evaluations not recorded}, ...}
  void write(Json& j) const;

 private:
  struct NodeValues {
    std::vector<std::pair<std::string, std::string>> bindings;  // in evaluation order
    size_t more = 0;
  };
  Printed numbered_;
  std::unordered_map<const UOpNode*, std::vector<const UOpNode*>> ranges_;  // the ranges a node reads
  std::map<size_t, NodeValues> values_;
  size_t chars_ = 0;

  std::string binding_key(UOp u, const std::vector<std::pair<UOp, int64_t>>& bindings) const;
};

}  // namespace ow::cli
