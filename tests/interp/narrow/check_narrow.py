#!/usr/bin/python3
"""Run reference cases with `ow run` and compare every output with its expected .npy, byte for byte.

    check_narrow.py --ow build/tools/ow --cases DIR [--backend interp|tcc|cc|check] [--case NAME]...

A case directory holds, for each case C, the graph C.uop and a directory C/ with the inputs
C/in_<name>.npy (bound to BUFFER "<name>") and the expected outputs C/out_<name>.npy (SINK output
"<name>"): the layout of reference/narrow (make_narrow.py --out DIR) and reference/unsigned. Each
case is one `ow run C.uop --backend B --flat-inputs --in NAME=PATH ... --out NAME=PATH ...`; each
output must have the expected dtype (.npy descr), shape and bytes. For the first differing element
of an output it prints the index, the bits of every input of the same element count at that index,
the expected bits and the bits ow wrote.

Exit status: 0 when every output of every case matches, 1 on any mismatch or failed run, 77 (the
test harnesses' "skipped") only when the ow executable is missing. stdlib and numpy only.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

UINT = {1: np.dtype("u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}


def descr(a):
    return np.lib.format.dtype_to_descr(a.dtype)


def raw(a):
    """The elements' bit patterns, flat (any dtype: numbers, bool, one-field structured)."""
    return np.frombuffer(np.ascontiguousarray(a).tobytes(), dtype=UINT[a.dtype.itemsize])


def shown(a, i):
    """Element i (flat) of a as bits, with its value when numpy has a number type for it."""
    bits = int(raw(a)[i])
    text = f"0x{bits:0{2 * a.dtype.itemsize}x}"
    if a.dtype.names is None:
        text += f" ({a.reshape(-1)[i]!r})"
    return text


def run_case(args, uop, tmp):
    """Returns the number of problems found in this case (0: all outputs match)."""
    name = os.path.splitext(os.path.basename(uop))[0]
    d = os.path.join(os.path.dirname(uop), name)
    ins = sorted(glob.glob(os.path.join(d, "in_*.npy")))
    outs = sorted(glob.glob(os.path.join(d, "out_*.npy")))
    key = lambda p: os.path.basename(p)[len("in_"):-len(".npy")] if os.path.basename(p).startswith("in_") else \
        os.path.basename(p)[len("out_"):-len(".npy")]
    if not outs:
        print(f"FAIL {name}: no expected outputs in {d}")
        return 1
    got_dir = os.path.join(tmp, name)
    os.makedirs(got_dir, exist_ok=True)
    cmd = [args.ow, "run", uop, "--backend", args.backend, "--flat-inputs"]
    for p in ins:
        cmd += ["--in", f"{key(p)}={p}"]
    for p in outs:
        cmd += ["--out", f"{key(p)}={os.path.join(got_dir, key(p) + '.npy')}"]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"FAIL {name}: ow run did not finish in {args.timeout} s")
        return 1
    if r.returncode != 0:
        print(f"FAIL {name}: ow run {uop} --backend {args.backend} ({len(ins)} --in, {len(outs)} --out) exited {r.returncode}")
        for line in (r.stderr or r.stdout).strip().splitlines()[:20]:
            print("  | " + line)
        return 1
    inputs = {key(p): np.load(p) for p in ins}
    problems = 0
    for p in outs:
        o = key(p)
        want = np.load(p)
        gp = os.path.join(got_dir, o + ".npy")
        if not os.path.exists(gp):
            print(f"FAIL {name}/{o}: ow wrote no {gp}")
            problems += 1
            continue
        got = np.load(gp)
        if descr(got) != descr(want) or got.shape != want.shape:
            print(f"FAIL {name}/{o}: dtype {descr(got)} shape {got.shape}, expected dtype {descr(want)} shape {want.shape}")
            problems += 1
            continue
        rw, rg = raw(want), raw(got)
        diff = np.nonzero(rw != rg)[0]
        if len(diff) == 0:
            continue
        i = int(diff[0])
        idx = np.unravel_index(i, want.shape) if want.shape else ()
        ctx = ", ".join(f"{k}={shown(v, i)}" for k, v in inputs.items() if v.size == want.size)
        print(f"FAIL {name}/{o}: {len(diff)} of {want.size} elements differ; first at index {tuple(int(j) for j in idx)}"
              + (f": input {ctx}" if ctx else "") + f"; expected {shown(want, i)}, got {shown(got, i)}")
        problems += 1
    status = "ok  " if problems == 0 else "FAIL"
    print(f"{status} {name} ({len(outs)} outputs, {time.time() - t0:.2f} s)")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ow", required=True, help="the ow executable")
    ap.add_argument("--cases", required=True, help="directory of <case>.uop and <case>/{in,out}_<name>.npy")
    ap.add_argument("--backend", default="interp", choices=["interp", "tcc", "cc", "check"])
    ap.add_argument("--case", action="append", help="run only this case (repeatable)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per case")
    args = ap.parse_args()
    if not (os.path.isfile(args.ow) and os.access(args.ow, os.X_OK)):
        print(f"SKIP: no ow executable at {args.ow}")
        return 77
    args.ow = os.path.abspath(args.ow)
    uops = sorted(glob.glob(os.path.join(args.cases, "*.uop")))
    if args.case:
        uops = [u for u in uops if os.path.splitext(os.path.basename(u))[0] in args.case]
        missing = set(args.case) - {os.path.splitext(os.path.basename(u))[0] for u in uops}
        if missing:
            print(f"FAIL: no such case(s) in {args.cases}: {', '.join(sorted(missing))}")
            return 1
    if not uops:
        print(f"FAIL: no .uop cases in {args.cases}")
        return 1
    tmp = tempfile.mkdtemp(prefix="check_narrow.")
    try:
        failed = [os.path.basename(u) for u in uops if run_case(args, os.path.abspath(u), tmp)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(uops) - len(failed)} of {len(uops)} cases match on {args.backend}"
          + (f"; failing: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
