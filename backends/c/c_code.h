// What a C compiler reads of a source: shared by the renderer (render_unit: kernels with the same
// code share a function) and the compile layer (cc's disk cache is keyed by code). Header only,
// so neither layer links the other.
#pragma once
#include <algorithm>
#include <string>

namespace ow::backend {

// `c` without its comments (each becomes one space; a backslash ending a // comment's line
// continues it), string and character literals kept whole. Sources with the same code compile
// to the same library: kernels that differ only in comments (their ranges' ids) share one.
inline std::string code_of(const std::string& c) {
  std::string out;
  out.reserve(c.size());
  const size_t n = c.size();
  size_t i = 0, run = 0;  // out lacks c[run, i): plain code, copied in one piece
  while (i < n) {
    char ch = c[i];
    if (ch != '"' && ch != '\'' && ch != '/') {
      ++i;
      continue;
    }
    out.append(c, run, i - run);
    if (ch != '/') {  // a literal, escapes included, to its closing quote
      size_t j = i + 1;
      while (j < n && c[j] != ch && c[j] != '\n') j += c[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, n);
      out.append(c, i, j - i);
      i = j;
    } else if (i + 1 < n && c[i + 1] == '/') {  // to the end of the line (a backslash before it continues the comment)
      size_t j = i + 2;
      while (j < n && !(c[j] == '\n' && c[j - 1] != '\\')) ++j;
      out += ' ';
      i = j;
    } else if (i + 1 < n && c[i + 1] == '*') {
      size_t j = c.find("*/", i + 2);
      out += ' ';
      i = j == std::string::npos ? n : j + 2;
    } else {
      out += ch;  // a division
      ++i;
    }
    run = i;
  }
  out.append(c, run, n - run);
  return out;
}

}  // namespace ow::backend
