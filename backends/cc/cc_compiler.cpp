// The optimizing tier: the system C compiler builds a shared object that is dlopen'ed. Slower to
// compile than tcc (tens of milliseconds), faster code. The sources and shared objects are kept in
// a private cache directory, $OW_CACHE_DIR/cc, $XDG_CACHE_HOME/outerworld/cc or
// ~/.cache/outerworld/cc (0700), named by a hash of the compiler, its flags and the source, so a
// later process reuses them without compiling. OW_CACHE_DIR=off (or an unusable directory):
// compiled in a private temporary directory, removed once loaded.
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "backends/compiler.h"
#include "backends/c/c_code.h"
#include "uop/error.h"
#include "uop/files.h"

extern char** environ;

namespace ow::backend {
namespace {

// -ffp-contract=off: GCC with -march=native contracts a*b+c into an FMA by default, and results
// must agree with the interpreter bit for bit (one rounding per op). -fwrapv: integer overflow
// wraps (SEMANTICS S2.1). No -ffast-math / -fno-math-errno: libm calls keep their C semantics.
// -mno-red-zone: GCC 12.2 with -march=znver3 at -O2 put a kernel's local accumulator array
// (double acc[10]) in the red zone below the stack pointer, 8 bytes off the 16 its vmovapd
// stores need, and the kernel died of SIGSEGV (ow fuzz seed 501500, tests/fuzz/lower). Kernels are
// leaf functions, so the red zone only saved them one stack adjustment. -pthread: a big parallel
// kernel runs its halves on two threads (backends/c/parallel.cpp; glibc 2.34+ has pthread_create
// in libc). -pipe: no temporary assembly file. -frounding-math: GCC 12.2 folds `0.0f - (float)i`
// and `0.0f + -(float)i` into `-(float)i`, even at -O0, which is -0 where the sum is +0 for i = 0
// (ow fuzz seed 960114, tests/fuzz/lower); -frounding-math stops that fold and left the code of
// the reference kernels unchanged (vmap_mlp_32x128's assembly is byte-identical).
// -Werror=implicit-function-declaration: a helper the unit's prelude lacks (its optional parts,
// render.h's PreludeParts) is a compile error here, as it is tcc's link error.
const std::vector<std::string> flags = {"-O2", "-march=native", "-mno-red-zone", "-ffp-contract=off", "-fwrapv", "-frounding-math", "-fPIC", "-pipe",
                                        "-Werror=implicit-function-declaration"};
// The link: a unit defines only functions and calls only libc/libm functions, which dlopen
// resolves in the process (every process has libc; libm is named so it is loaded if missing).
// -nostdlib drops the start files and libgcc_s/libc link steps, 12 -> 5 ms of a 55 ms compile of
// scan_big_64x128 (2026-12-04); -lgcc keeps the static helpers GCC may call (e.g. 128-bit division).
const std::vector<std::string> link_flags = {"-shared", "-nostdlib"};
const std::vector<std::string> libraries = {"-lm", "-lgcc"};

bool usable_dir(const std::string& d) {
  struct stat st;
  return stat(d.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 022) == 0 &&
         access(d.c_str(), W_OK | X_OK) == 0;
}

// mkdir -p with mode 0700 for the parts it creates.
bool make_dirs(const std::string& path) {
  for (std::size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') {
      std::string part = path.substr(0, i);
      if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
    }
  return true;
}

// A directory no other process uses (made once per process): where cc writes when the disk
// cache is off or unusable. Its files are removed once loaded, the directory at exit.
struct PrivateDir {
  std::string path;
  PrivateDir() {
    const char* tmp = getenv("TMPDIR");
    std::string templ = std::string(tmp && tmp[0] == '/' ? tmp : "/tmp") + "/outerworld-cc-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) throw Error("the cc backend cannot create a directory to compile in (" + templ + "): " + std::strerror(errno));
    path = buf.data();
  }
  ~PrivateDir() { rmdir(path.c_str()); }
};

const std::string& private_dir() {
  static PrivateDir d;
  return d.path;
}

// Where compiled shared objects are kept between processes: $OW_CACHE_DIR/cc, else
// $XDG_CACHE_HOME/outerworld/cc, else ~/.cache/outerworld/cc; "" when OW_CACHE_DIR=off or the
// directory cannot be made private to the user. Read at every compile (cheap next to a compile),
// so a process may turn the cache off for a while (ow bench does, to time real compiles).
std::string disk_cache_dir() {
  std::string base;
  if (const char* o = getenv("OW_CACHE_DIR"); o && *o) {
    if (std::string(o) == "off") return "";
    base = o;
  } else if (const char* x = getenv("XDG_CACHE_HOME"); x && x[0] == '/') {
    base = std::string(x) + "/outerworld";
  } else if (const char* h = getenv("HOME"); h && h[0] == '/') {
    base = std::string(h) + "/.cache/outerworld";
  }
  if (base.empty()) return "";
  std::string d = base + "/cc";
  return make_dirs(d) && usable_dir(d) ? d : "";
}

// The compiler command: $OW_CC split at spaces ("ccache gcc" works), or "cc".
std::vector<std::string> compiler_command() {
  const char* env = getenv("OW_CC");
  std::vector<std::string> words;
  std::istringstream in(env && *env ? env : "cc");
  for (std::string w; in >> w;) words.push_back(w);
  if (words.empty()) words.push_back("cc");
  return words;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& w : v) s += (s.empty() ? "" : " ") + w;
  return s;
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}

// A name no other thread or process uses, for a file renamed into place when complete.
std::string temp_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

void write_file(const std::string& path, const std::string& text) {
  std::string tmp = temp_name(path);
  try {
    create_private_file(tmp, text);  // never through a link, mode 0600
  } catch (const InternalError&) {
    throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
  } catch (const Error& e) {
    throw Error(std::string("the cc backend cannot write: ") + e.what());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error("the cc backend cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  }
}

// Runs argv with stdout and stderr captured; returns the exit status (-1: killed by a signal).
int run(const std::vector<std::string>& argv, std::string& output) {
  int fds[2];
  if (pipe(fds) != 0) throw Error(std::string("the cc backend cannot create a pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    if (rc == ENOENT)
      throw Error("the cc backend needs a C compiler: '" + argv[0] + "' was not found (set OW_CC or install gcc)");
    throw Error("the cc backend cannot run '" + argv[0] + "': " + std::strerror(rc));
  }
  char buf[4096];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0)
      output.append(buf, static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR)
      break;
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class CcLibrary final : public Library {
 public:
  CcLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  ~CcLibrary() override { dlclose(handle_); }
  void* symbol(const std::string& name) const override {
    void* p = dlsym(handle_, name.c_str());
    if (!p) throw Error("cc: " + path_ + " defines no symbol '" + name + "'");
    return p;
  }

 private:
  void* handle_;
  std::string path_;
};

class CcCompiler final : public Compiler {
 public:
  CcCompiler() : command_(compiler_command()) {}
  std::string name() const override { return "cc"; }

 protected:
  std::string options() const override { return join(command_) + " " + join(flags) + " " + join(link_flags) + " " + join(libraries); }

  // The disk cache (disk_cache_dir) keeps <hash>-<length>.c, .so and .sum (the FNV-1a hash of
  // the .so's bytes), named by the source's code (code_of: comments aside). A .so is reused only
  // if its .c has exactly this source's code, its bytes match the .sum and it loads; anything
  // else (a truncated or damaged file) is compiled again.
  std::shared_ptr<const Library> compile_uncached(const std::string& src) override {
    std::string code = code_of(src), key = options() + '\0' + code;
    char hex[40];
    std::snprintf(hex, sizeof hex, "%016llx-%llx", static_cast<unsigned long long>(fnv1a64(key)),
                  static_cast<unsigned long long>(key.size()));
    std::string dir = disk_cache_dir();
    bool keep = !dir.empty();
    std::string base = keep ? dir + "/" + hex : temp_name(private_dir() + "/" + hex);
    std::string c_path = base + ".c", so_path = base + ".so", sum_path = base + ".sum";
    if (keep)
      if (void* h = load_cached(code, c_path, so_path, sum_path)) return std::make_shared<CcLibrary>(h, so_path);
    build(src, c_path, so_path);
    std::string so;
    if (keep && read_file(so_path, so)) write_file(sum_path, checksum(so));
    void* h = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!keep) {  // loaded (or not): the mapping outlives the files
      std::remove(so_path.c_str());
      std::remove(c_path.c_str());
    }
    if (!h) {
      const char* e = dlerror();
      throw Error("cc: cannot load " + so_path + ": " + (e ? e : "dlopen failed"));
    }
    return std::make_shared<CcLibrary>(h, so_path);
  }

 private:
  static std::string checksum(const std::string& bytes) {
    char h[24];
    std::snprintf(h, sizeof h, "%016llx\n", static_cast<unsigned long long>(fnv1a64(bytes)));
    return h;
  }

  // An earlier process's shared object of a source with this code, loaded; null if there is none
  // or it is damaged in any way.
  static void* load_cached(const std::string& code, const std::string& c_path, const std::string& so_path, const std::string& sum_path) {
    std::string old, so, sum;
    if (!read_file(c_path, old) || code_of(old) != code || !read_file(so_path, so) || !read_file(sum_path, sum) || sum != checksum(so)) return nullptr;
    void* h = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) dlerror();  // clear it: the caller compiles again
    return h;
  }

  // Writes c_path and compiles it into so_path (renamed into place when complete).
  void build(const std::string& src, const std::string& c_path, const std::string& so_path) {
    write_file(c_path, src);
    std::string tmp_so = temp_name(so_path);
    std::vector<std::string> argv = command_;
    for (const auto* part : {&flags, &link_flags}) argv.insert(argv.end(), part->begin(), part->end());
    argv.insert(argv.end(), {"-o", tmp_so, c_path});
    argv.insert(argv.end(), libraries.begin(), libraries.end());
    std::string output;
    int rc = run(argv, output);
    if (rc != 0) {
      std::remove(tmp_so.c_str());
      throw Error("cc: cannot compile the generated C source (" + join(argv) + " exited with " +
                  (rc < 0 ? std::string("a signal") : "status " + std::to_string(rc)) + "):\n" + output +
                  "the source (" + c_path + "):\n" + number_lines(src));
    }
    if (std::rename(tmp_so.c_str(), so_path.c_str()) != 0) {
      std::remove(tmp_so.c_str());
      throw Error("the cc backend cannot rename " + tmp_so + " to " + so_path + ": " + std::strerror(errno));
    }
  }

  std::vector<std::string> command_;
};

}  // namespace

std::unique_ptr<Compiler> make_cc_compiler() { return std::make_unique<CcCompiler>(); }

}  // namespace ow::backend
