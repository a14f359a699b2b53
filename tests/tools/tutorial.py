#!/usr/bin/env python3
"""Runs every command of reference/TUTORIAL.md and checks its output.

In each ```console block, a line starting with "$ " is a command; the lines after it, up to the
next command, must appear in its output (stdout then stderr) in that order, each as a whole
line; "..." skips any number of lines. Commands run in a scratch directory in which `build`
points at the build directory and `reference` at the source tree's, so files they write stay
out of the repository. Commands run through bash (pipes work). A command must exit 0.

usage: tutorial.py SOURCE_ROOT BUILD_ROOT
"""
import os
import subprocess
import sys
import tempfile


def blocks(text):
    """(line number, command, expected lines) for every command in console blocks."""
    out, inside, cmd = [], False, None
    for no, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            inside = line.strip() == "```console"
            cmd = None
            continue
        if not inside:
            continue
        if line.startswith("$ "):
            cmd = (no, line[2:], [])
            out.append(cmd)
        elif cmd is not None:
            cmd[2].append(line)
    return out


def matches(expected, actual):
    """Expected lines appear in order as whole lines of actual; '...' skips any lines."""
    i = 0
    for want in expected:
        if want == "...":
            continue
        while i < len(actual) and actual[i] != want:
            i += 1
        if i == len(actual):
            return want
        i += 1
    return None


def main():
    src, build = sys.argv[1], sys.argv[2]
    text = open(os.path.join(src, "reference", "TUTORIAL.md"), encoding="utf-8").read()
    cmds = blocks(text)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="ow-tutorial-") as work:
        os.symlink(build, os.path.join(work, "build"))
        os.symlink(os.path.join(src, "reference"), os.path.join(work, "reference"))
        for no, cmd, expected in cmds:
            p = subprocess.run(["bash", "-c", cmd], cwd=work, capture_output=True, text=True, timeout=300)
            # a block showing a failure ends with "(exit status N)": that status is required
            actual = (p.stdout + p.stderr).splitlines() + (["(exit status %d)" % p.returncode] if p.returncode else [])
            wants_failure = bool(expected) and expected[-1].startswith("(exit status ")
            missing = matches(expected, actual) if (p.returncode != 0) == wants_failure else "(exit status %d)" % p.returncode
            status = "ok" if missing is None else "FAILED"
            print("TUTORIAL.md:%d: %s: %s" % (no, status, cmd))
            if missing is not None:
                failures += 1
                print("  expected line not found: %r\n  output was:\n    %s" % (missing, "\n    ".join(actual[:60])))
    print("%d commands, %d failed" % (len(cmds), failures))
    return 1 if failures or not cmds else 0


if __name__ == "__main__":
    sys.exit(main())
