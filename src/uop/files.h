// Files ow creates in directories others may write to (the temporary directory) or that hold
// what ow will load again (its caches): created anew, never through a link someone planted there,
// readable by this user only.
#pragma once
#include <string>

namespace ow {

// Creates `path`, which must not exist yet (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600), with
// `text`; throws Error naming the path and the system's reason.
void create_private_file(const std::string& path, const std::string& text);

// Creates a new file `dir`/`prefix`XXXXXX`suffix` with an unpredictable name (mkstemps, mode
// 0600) holding `text`; returns its path. Throws Error naming the directory and the reason.
std::string create_temp_file(const std::string& dir, const std::string& prefix, const std::string& suffix, const std::string& text);

}  // namespace ow
