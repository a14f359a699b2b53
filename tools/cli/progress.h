// A progress bar for long-running commands, drawn on stderr only when stderr is a terminal:
// piped or redirected output (tests, CI logs, `2> file`) never sees it. Throttled to ~10
// redraws a second, and it stays invisible for the first half second so short runs print
// nothing at all. Single-threaded; call it from the thread doing the work.
//
//   Progress bar("fuzz", 1000);        // total 0: unknown (a counter instead of a bar)
//   for (...) { ...; bar.update(i + 1, "seed 42"); }   // or bar.tick()
//   bar.finish();                      // erases the line (the destructor does too)
//
// OW_PROGRESS=0 in the environment turns it off, OW_PROGRESS=1 forces it on (for trying it
// out through a pipe).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace ow::cli {

class Progress {
 public:
  explicit Progress(std::string label, int64_t total = 0);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return enabled_; }
  void set_total(int64_t total) { total_ = total; }
  // done units out of total; note is shown after the bar (e.g. "m1=2/3").
  void update(int64_t done, const std::string& note = "");
  void tick(int64_t n = 1) { update(done_ + n); }
  void finish();  // erases the bar; later updates draw nothing

 private:
  std::string label_;
  int64_t total_ = 0, done_ = 0;
  bool enabled_ = false, drawn_ = false, finished_ = false;
  std::chrono::steady_clock::time_point start_, last_;
  void draw(const std::string& note);
};

}  // namespace ow::cli
