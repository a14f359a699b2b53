#include "progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>

namespace ow::cli {

Progress::Progress(std::string label, int64_t total) : label_(std::move(label)), total_(total) {
  const char* env = std::getenv("OW_PROGRESS");
  if (env && std::strcmp(env, "0") == 0) enabled_ = false;
  else if (env && std::strcmp(env, "1") == 0) enabled_ = true;
  else enabled_ = isatty(STDERR_FILENO) == 1;
  start_ = last_ = std::chrono::steady_clock::now();
}

Progress::~Progress() { finish(); }

void Progress::update(int64_t done, const std::string& note) {
  done_ = done;
  if (!enabled_ || finished_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - start_ < std::chrono::milliseconds(500)) return;  // short runs: nothing at all
  if (drawn_ && now - last_ < std::chrono::milliseconds(100) && !(total_ > 0 && done_ >= total_)) return;
  last_ = now;
  draw(note);
}

void Progress::draw(const std::string& note) {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  char buf[256];
  if (total_ > 0) {
    constexpr int width = 30;
    double f = std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_));
    int full = static_cast<int>(f * width);
    std::string bar(static_cast<size_t>(full), '#');
    bar += std::string(static_cast<size_t>(width - full), '.');
    std::snprintf(buf, sizeof buf, "\r%s [%s] %3d%% %lld/%lld %.1fs %s\x1b[K", label_.c_str(), bar.c_str(), static_cast<int>(f * 100),
                  static_cast<long long>(done_), static_cast<long long>(total_), secs, note.c_str());
  } else {
    std::snprintf(buf, sizeof buf, "\r%s %lld %.1fs %s\x1b[K", label_.c_str(), static_cast<long long>(done_), secs, note.c_str());
  }
  std::fputs(buf, stderr);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (drawn_) {
    std::fputs("\r\x1b[K", stderr);
    std::fflush(stderr);
  }
}

}  // namespace ow::cli
