#include "graphviz.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "cli.h"
#include "uop/error.h"

extern char** environ;

namespace ow::cli {

bool graphviz_installed() {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "");
  for (std::string dir; std::getline(ss, dir, ':');)
    if (!dir.empty() && access((dir + "/dot").c_str(), X_OK) == 0) return true;
  return false;
}

DotJob start_dot(const std::string& dot_text, bool fast) {
  DotJob j;
  char in[] = "/tmp/ow-dot-XXXXXX";
  int fd = mkstemp(in);
  if (fd < 0) return j;
  close(fd);
  j.in = in;
  j.out = j.in + ".svg";
  write_file(j.in, dot_text);
  std::string out_arg = "-o" + j.out;
  std::vector<const char*> argv{"dot", "-Tsvg", out_arg.c_str()};
  if (fast)
    for (const char* o : {"-Gsplines=line", "-Gmclimit=0.05", "-Gnslimit=0.5", "-Gnslimit1=0.5"}) argv.push_back(o);
  argv.push_back(j.in.c_str());
  argv.push_back(nullptr);
  if (posix_spawnp(&j.pid, "dot", nullptr, nullptr, const_cast<char* const*>(argv.data()), environ) != 0) j.pid = -1;
  return j;
}

namespace {

// Waits for the job until `deadline` (then kills it); true when dot exited successfully.
bool wait_dot(DotJob& j, std::chrono::steady_clock::time_point deadline) {
  if (j.pid <= 0) return false;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(j.pid, &status, WNOHANG);
    if (r == j.pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (r < 0) return false;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(j.pid, SIGKILL);
      waitpid(j.pid, &status, 0);
      return false;
    }
    usleep(5000);
  }
}

}  // namespace

std::string finish_dot(DotJob& j, std::chrono::steady_clock::time_point deadline) {
  std::string svg;
  if (wait_dot(j, deadline)) {
    try {
      svg = read_file(j.out);
    } catch (const Error&) {
    }
    size_t at = svg.find("<svg");
    svg = at == std::string::npos ? "" : svg.substr(at);
  }
  if (!j.in.empty()) unlink(j.in.c_str());
  if (!j.out.empty()) unlink(j.out.c_str());
  return svg;
}

}  // namespace ow::cli
