// What a C compiler reads of a source: shared by the renderer (render_unit: kernels with the same
// code share a function) and the compile layer (its caches are keyed by code). Header only, so
// neither layer links the other.
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
  size_t i = 0;
  for (size_t at; (at = c.find_first_of("\"'/", i)) != std::string::npos;) {
    out.append(c, i, at - i);  // plain code up to the next quote or slash
    char ch = c[at];
    if (ch == '"' || ch == '\'') {  // a literal, escapes included, to its closing quote
      size_t j = at + 1;
      while (j < c.size() && c[j] != ch && c[j] != '\n') j += c[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, c.size());
      out.append(c, at, j - at);
      i = j;
    } else if (at + 1 < c.size() && c[at + 1] == '/') {  // to the end of the line (a backslash before it continues the comment)
      size_t j = at + 2;
      while (j < c.size() && !(c[j] == '\n' && c[j - 1] != '\\')) ++j;
      out += ' ';
      i = j;
    } else if (at + 1 < c.size() && c[at + 1] == '*') {
      size_t j = c.find("*/", at + 2);
      out += ' ';
      i = j == std::string::npos ? c.size() : j + 2;
    } else {
      out += ch;  // a division
      i = at + 1;
    }
  }
  if (i < c.size()) out.append(c, i, std::string::npos);
  return out;
}

}  // namespace ow::backend
