#!/usr/bin/python3
"""List C++ functions longer than N lines (default 60): top-level and member functions, lambdas
counted inside their function. A heuristic brace scanner: comments and strings are skipped."""
import re, sys, pathlib
N = int(sys.argv[1]) if len(sys.argv) > 1 else 60
roots = sys.argv[2:] or ["src", "backends", "tools"]
def strip(text):
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i); i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2); seg = text[i:j + 2]; out.append("\n" * seg.count("\n")); i = j + 2
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:]); end = text.find(")" + m.group(1) + '"', i)
            seg = text[i:end]; out.append('""' + "\n" * seg.count("\n")); i = end + len(m.group(1)) + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)
for path in sorted(p for r in roots for p in pathlib.Path(r).rglob("*") if p.suffix in (".cpp", ".h")):
    s = strip(path.read_text())
    stack, stmt_start = [], 0  # stack of (kind, line, name)
    for i, c in enumerate(s):
        if c in ";}" or (c == "{"):
            pass
        if c == "{":
            head = s[stmt_start:i]
            kind = "block"
            if not stack or stack[-1][0] in ("ns", "class"):
                h = " ".join(head.split())
                if re.search(r"\b(namespace)\b", h) or h.startswith("extern \"\""): kind = "ns"
                elif re.search(r"\b(class|struct|union|enum)\b[^()]*$", h): kind = "class"
                elif ")" in h and not re.search(r"=\s*$", h): kind = "fn"
            line = s.count("\n", 0, i) + 1
            name = re.findall(r"([~\w:<>]+)\s*\(", head)
            stack.append((kind, line, name[0] if name else "?"))
            stmt_start = i + 1
        elif c == "}":
            if stack:
                kind, line, name = stack.pop()
                if kind == "fn":
                    end = s.count("\n", 0, i) + 1
                    if end - line + 1 > N: print(f"{end - line + 1:5d} {path}:{line} {name}")
            stmt_start = i + 1
        elif c == ";":
            stmt_start = i + 1
        elif c == ":" and stack and stack[-1][0] == "class" and re.search(r"\b(public|private|protected)\s*$", s[stmt_start:i]):
            stmt_start = i + 1
