// Running Graphviz `dot -Tsvg` as a child process: one place for `ow dot --svg` and `ow report`
// (which lays out several graphs at once under a deadline).
#pragma once
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace ow::cli {

// Pictures with more boxes than this get the fast layout: straight edges and fewer
// crossing-minimisation rounds (spline routing dominates dot's time on large graphs).
constexpr size_t kFastLayoutBoxes = 300;

bool graphviz_installed();

struct DotJob {
  std::string in, out;  // temporary DOT input and SVG output
  pid_t pid = -1;       // -1: not started
};

DotJob start_dot(const std::string& dot_text, bool fast);

// The SVG element of a finished job; "" when Graphviz failed or ran past `deadline` (then it is
// killed). Removes the job's temporary files.
std::string finish_dot(DotJob& j, std::chrono::steady_clock::time_point deadline);

}  // namespace ow::cli
