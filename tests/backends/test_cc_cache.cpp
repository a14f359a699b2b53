// cc's disk cache of compiled programs, across `ow run` processes (backends/cc/cc_compiler.cpp):
// one shared object per program (the whole program is one translation unit), reused by a later
// process, compiled again when damaged, and never written with OW_CACHE_DIR=off.
#include "child_process.h"

#include <filesystem>
#include <optional>

namespace fs = std::filesystem;

namespace {

// Sets an environment variable for the children of one test; restores it at the end.
struct EnvVar {
  std::string name;
  std::optional<std::string> old;
  EnvVar(std::string n, const std::string& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    setenv(name.c_str(), value.c_str(), 1);
  }
  ~EnvVar() { old ? (void)setenv(name.c_str(), old->c_str(), 1) : (void)unsetenv(name.c_str()); }
};

std::vector<fs::path> files_with(const fs::path& dir, const std::string& ext) {
  std::vector<fs::path> out;
  if (fs::exists(dir))
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ext) out.push_back(e.path());
  return out;
}

std::string case_uop(const std::string& name) {
  const char* src = std::getenv("OW_SOURCE_DIR");
  REQUIRE(src != nullptr);
  return (fs::path(src) / "reference" / "cases" / (name + ".uop")).string();
}

Result run_cc(const std::string& mode = "program", const std::string& name = "scan_with_assign") {
  return run_ow({"run", case_uop(name), "--backend", "cc", "--compile", mode, "--random-inputs", "3"});
}

}  // namespace

TEST_CASE("cc's disk cache: one object per program, reused by the next process, recompiled when damaged", "[cli][cc-cache]") {
  TempDir tmp;
  EnvVar dir("OW_CACHE_DIR", (tmp / "cache").string());
  Result first = run_cc();
  INFO(first.err);
  REQUIRE(first.rc == 0);
  fs::path cc = tmp / "cache" / "cc";
  std::vector<fs::path> sos = files_with(cc, ".so");
  REQUIRE(sos.size() == 1);  // scan_with_assign has several kernels: one translation unit
  CHECK(files_with(cc, ".c").size() == 1);
  CHECK(files_with(cc, ".sum").size() == 1);
  std::string good = slurp(sos[0]);
  auto stamp = fs::last_write_time(sos[0]);

  Result again = run_cc();
  CHECK(again.out == first.out);
  CHECK(fs::last_write_time(sos[0]) == stamp);  // loaded, not compiled again

  // The cache is keyed by the code, comments aside: a .c whose comments say other things (another
  // program's range ids) serves this one; one with other code does not.
  std::vector<fs::path> cs = files_with(cc, ".c");
  std::string c_text = slurp(cs[0]);
  REQUIRE(c_text.find("// range ") != std::string::npos);
  std::string recommented = c_text;
  for (size_t at = recommented.find("// range "); at != std::string::npos; at = recommented.find("// range ", at + 1)) recommented.replace(at, 9, "// RANGE ");
  spit(cs[0], recommented);
  CHECK(run_cc().out == first.out);
  CHECK(fs::last_write_time(sos[0]) == stamp);
  spit(cs[0], c_text + "int ow_other_code;\n");
  CHECK(run_cc().out == first.out);
  CHECK(fs::last_write_time(sos[0]) != stamp);  // compiled again
  stamp = fs::last_write_time(sos[0]);

  for (const std::string& damage : {good.substr(0, good.size() / 2), std::string("not an ELF file"), good.substr(0, 4000) + std::string(64, 'x') + good.substr(4064)}) {
    spit(sos[0], damage);
    Result r = run_cc();
    INFO(r.err);
    CHECK(r.rc == 0);
    CHECK(r.out == first.out);
    CHECK(slurp(sos[0]).size() == good.size());  // compiled again, in place
  }
}

TEST_CASE("cc's disk cache: --compile kernel writes one object per kernel; OW_CACHE_DIR=off writes none", "[cli][cc-cache]") {
  TempDir tmp;
  {
    EnvVar dir("OW_CACHE_DIR", (tmp / "cache").string());
    Result r = run_cc("kernel", "vmap_convs");  // 4 kernels (the scan's step is 1)
    INFO(r.err);
    REQUIRE(r.rc == 0);
    CHECK(files_with(tmp / "cache" / "cc", ".so").size() > 1);
  }
  {
    // vmap_gemm_grad launches 15 kernels; 4 of them have the C of another but for names and
    // comments (ow show-c --full: "k9: runs k5, ..."): one object per body.
    EnvVar dir("OW_CACHE_DIR", (tmp / "bodies").string());
    Result r = run_cc("kernel", "vmap_gemm_grad");
    INFO(r.err);
    REQUIRE(r.rc == 0);
    CHECK(files_with(tmp / "bodies" / "cc", ".so").size() == 11);
  }
  Result bad = run_ow({"run", case_uop("scan_with_assign"), "--backend", "cc", "--compile", "all", "--random-inputs", "3"});
  CHECK(bad.rc == 1);
  CHECK_THAT(bad.err, Catch::Contains("--compile must be program or kernel, got 'all'"));
  EnvVar off("OW_CACHE_DIR", "off");
  EnvVar xdg("XDG_CACHE_HOME", (tmp / "xdg").string());
  EnvVar tmpdir("TMPDIR", (tmp / "t").string());
  fs::create_directories(tmp / "t");
  Result r = run_cc();
  INFO(r.err);
  CHECK(r.rc == 0);
  CHECK_FALSE(fs::exists(tmp / "xdg"));
  CHECK(fs::is_empty(tmp / "t"));  // the private directory is gone with its files
}
