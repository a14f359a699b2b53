#!/usr/bin/env python3
"""numpy side of `ow bench`: times the same math as a reference case on the same inputs.

Run by `ow bench` once per case (it is a benchmark, not a test):

    bench_numpy.py --kind scan|mlp|axpb|matmul --dir DIR [--repeat N] [--out OUT.npy]

DIR holds the inputs `ow bench` generated, as .npy: vec.npy (1, D) and mats.npy (S, D, D) for
a scan; img.npy (R, D), w1.npy and w2.npy (D, D) for an MLP; a.npy and b.npy for the --micro
kinds (axpb: `a*b+1` elementwise; matmul: `a@b`). The math is the natural fast numpy
(a Python loop of `v = dot(v, M[k], out=out[k])` for the scan, two batched matmuls for the MLP), timed
in-process with time.perf_counter: one warm-up call, then the median and minimum of N calls.

stdout, one fact a line (`ow bench` parses the OW_BENCH_RESULT line, echoes the others):
    blas: <which BLAS numpy uses: threadpoolctl if installed, else the libraries mapped in>
    openblas core: <openblas_get_corename(), the kernel OpenBLAS runs> (<openblas_get_config()>)
    numpy build blas: <numpy.__config__'s blas_opt_info: the library numpy was linked against>
    OW_BENCH_RESULT median_s=<float> min_s=<float> repeat=<N> [reuse_median_s=<float> reuse_min_s=<float>]
(reuse_*: the axpb and matmul kinds timed again writing into a preallocated result, out=.)
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np


def scan(vec, mats):
    # numpy's fastest step loop we found: each row written in place by out=, no list to join
    # (about 5 % faster than matmul(out=), 25 % faster than v = v @ M[k] and a concatenate)
    out = np.empty((mats.shape[0], vec.shape[1]), dtype=vec.dtype)  # (S, D): row k is vec @ M0 @ ... @ Mk
    v = vec[0]
    for k, m in enumerate(mats):
        v = np.dot(v, m, out=out[k])
    return out


def mlp(img, w1, w2):
    return np.maximum(np.maximum(img @ w1.T, 0) @ w2.T, 0)


def axpb(a, b):
    return a * b + 1  # float32 throughout: the 1 is a Python scalar, it does not upcast


def matmul(a, b):
    return a @ b


# The same math writing into a preallocated result (`ow bench --micro`'s "out reused" column, to
# compare with compiled kernels that rewrite a bound output buffer): no allocation per call.
def axpb_out(out, a, b):
    np.multiply(a, b, out=out)
    np.add(out, np.float32(1), out=out)
    return out


def matmul_out(out, a, b):
    return np.matmul(a, b, out=out)


OUT_KINDS = {"axpb": axpb_out, "matmul": matmul_out}

KINDS = {"scan": (scan, ["vec", "mats"]), "mlp": (mlp, ["img", "w1", "w2"]), "axpb": (axpb, ["a", "b"]), "matmul": (matmul, ["a", "b"])}


def loaded_blas_libraries():
    """The BLAS/LAPACK shared libraries mapped into this process (Linux), e.g. netlib's libblas.so.3."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "/" in line}
    except OSError:
        return []
    names = ("blas", "lapack", "mkl", "blis")
    return sorted(p for p in paths if any(n in os.path.basename(p).lower() for n in names))


def build_blas():
    """What numpy's build says it links as BLAS (numpy.show_config()'s blas_opt_info)."""
    try:
        cfg = getattr(np.__config__, "blas_opt_info", None)
        if cfg is None and hasattr(np.__config__, "CONFIG"):  # numpy >= 1.26
            b = np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {})
            return "%s %s" % (b.get("name"), b.get("version"))
        return ", ".join(cfg.get("libraries", [])) + " in " + ", ".join(cfg.get("library_dirs", []))
    except Exception as e:  # only informative
        return "unknown (%s)" % e


def openblas_core():
    """The kernel the loaded OpenBLAS runs (OPENBLAS_CORETYPE or its own detection), or None."""
    import ctypes
    for path in loaded_blas_libraries():
        try:
            lib = ctypes.CDLL(path)  # already mapped: the same instance numpy calls
            name, config = lib.openblas_get_corename, lib.openblas_get_config
        except (OSError, AttributeError):
            continue
        name.restype = config.restype = ctypes.c_char_p
        return "%s (%s)" % (name().decode(), config().decode())
    return None


def blas_info():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        libs = loaded_blas_libraries()
        if not libs:
            return None
        real = sorted({os.path.realpath(p) for p in libs})
        return "threadpoolctl not installed; loaded: " + ", ".join(real)
    parts = []
    for p in threadpool_info():
        if p.get("user_api") != "blas":
            continue
        parts.append("%s %s (%s, %s threads) %s" % (p.get("internal_api"), p.get("version"), p.get("architecture"),
                                                     p.get("num_threads"), p.get("filepath")))
    return "; ".join(parts) if parts else "no BLAS found by threadpoolctl"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kind", required=True, choices=sorted(KINDS))
    ap.add_argument("--dir", required=True, help="directory with the input .npy files")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--out", help="save the result here (.npy, float32)")
    a = ap.parse_args()
    if a.repeat < 1:
        ap.error("--repeat must be at least 1")

    fn, names = KINDS[a.kind]
    args = [np.load(os.path.join(a.dir, n + ".npy")) for n in names]
    for n, x in zip(names, args):
        if x.dtype != np.float32:
            sys.exit("bench_numpy.py: %s.npy is %s, expected float32" % (n, x.dtype))

    info = blas_info()
    print("numpy: %s (python %s)" % (np.__version__, sys.version.split()[0]))
    print("blas: " + (info if info is not None else "unknown (threadpoolctl not installed, no BLAS library found in /proc/self/maps; skipped)"))
    print("numpy build blas: " + build_blas())
    core = openblas_core()
    if core is not None:
        print("openblas core: " + core)
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        if var in os.environ:
            print("env: %s=%s" % (var, os.environ[var]))

    out = fn(*args)  # warm-up
    times = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t0)
    if a.out:
        np.save(a.out, np.ascontiguousarray(out, dtype=np.float32))
    extra = ""
    if a.kind in OUT_KINDS:
        buf = np.empty_like(out)
        OUT_KINDS[a.kind](buf, *args)  # warm-up
        reuse = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            OUT_KINDS[a.kind](buf, *args)
            reuse.append(time.perf_counter() - t0)
        if not np.array_equal(buf, out):
            sys.exit("bench_numpy.py: the out= variant of %s disagrees with the plain one" % a.kind)
        extra = " reuse_median_s=%.9g reuse_min_s=%.9g" % (statistics.median(reuse), min(reuse))
    print("OW_BENCH_RESULT median_s=%.9g min_s=%.9g repeat=%d%s" % (statistics.median(times), min(times), a.repeat, extra))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
