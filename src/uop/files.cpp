#include "uop/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "uop/error.h"

namespace ow {

namespace {

// Writes all of text to fd and closes it; false (errno set) when either fails.
bool write_and_close(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    ssize_t w = write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      int e = errno;
      close(fd);
      errno = e;
      return false;
    }
    done += static_cast<size_t>(w);
  }
  return close(fd) == 0;
}

}  // namespace

void create_private_file(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw Error(path + ": cannot create file (" + std::strerror(errno) + ")");
  if (!write_and_close(fd, text)) {
    int e = errno;
    unlink(path.c_str());
    throw Error(path + ": cannot write file (" + std::strerror(e) + ")");
  }
}

std::string create_temp_file(const std::string& dir, const std::string& prefix, const std::string& suffix, const std::string& text) {
  std::string templ = dir + "/" + prefix + "XXXXXX" + suffix;
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  int fd = mkostemps(buf.data(), static_cast<int>(suffix.size()), O_CLOEXEC);  // O_EXCL, mode 0600
  if (fd < 0) throw Error(dir + ": cannot create a file there (" + std::strerror(errno) + ")");
  std::string path = buf.data();
  if (!write_and_close(fd, text)) {
    int e = errno;
    unlink(path.c_str());
    throw Error(path + ": cannot write file (" + std::strerror(e) + ")");
  }
  return path;
}

}  // namespace ow
