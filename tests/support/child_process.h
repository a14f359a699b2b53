// Running a program (usually `ow`, binary path in $OW_BIN) as a child process from a Catch2 test,
// with stdin from a file and stdout/stderr captured. Shared by test_cli.cpp and test_step.cpp.
// (Not named spawn.h: tests/support/ is on the include path, and that name would hide <spawn.h>.)
#pragma once
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void spit(const std::filesystem::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary);
  out << data;
  REQUIRE(out.good());
}

// A scratch directory, removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ow-cli-test-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path operator/(const std::string& name) const { return path / name; }
};

struct Result {
  int rc = -1;
  std::string out, err;
};

// Runs prog with args; stdin from stdin_path, stdout and stderr captured through temp files.
inline Result run_prog(const std::string& prog, const std::vector<std::string>& args, const std::string& stdin_path = "/dev/null") {
  TempDir tmp;
  std::string out_path = (tmp / "stdout").string(), err_path = (tmp / "stderr").string();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> all{prog};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, prog.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE(rc == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  Result r;
  r.rc = WEXITSTATUS(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

inline std::string ow_bin() {
  const char* p = std::getenv("OW_BIN");
  REQUIRE(p != nullptr);
  return p;
}

inline Result run_ow(const std::vector<std::string>& args) { return run_prog(ow_bin(), args); }

}  // namespace
