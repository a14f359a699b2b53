#!/usr/bin/python3
"""Generate reference/expected/<case>/{in,out}_<name>.npy for the small reference cases.

The expected outputs are computed INDEPENDENTLY of outerworld's interpreter: straight from the
math of each tinygrad outerworld test (see the per-case notes below), in numpy with float64
arithmetic, cast to float32 once at the end. Nothing here reads a .uop graph's ops or runs
`ow`; the .uop files are only consulted for the buffer names/sizes and the output names, so a
mismatch between this script and reference/cases/ is caught here rather than in the test.
(simple_range is the one exception to float64: it is specified as a sequential float32 fold,
so it is computed that way and is expected bit-exact.)

Run with Debian's python3 + python3-numpy, from anywhere:
    /usr/bin/python3 reference/make_expected.py
It is deterministic: every case draws its inputs from numpy.random.default_rng(SEED) with the
seed listed in SEEDS, and re-running rewrites byte-identical files.

Inputs are float32 and saved with their natural shapes (the graphs see them as flat buffers,
row-major). Seeds are deliberately different from the ones used for tinygrad's golden data
(/work/shared/golden, seeds 1..14), so the two data sets test the interpreter on different values.
The large cases (scan_big_*, vmap_mlp_*) are skipped to keep the data small.
"""

import os
import re
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES_DIR = os.path.join(ROOT, "reference", "cases")
OUT_DIR = os.path.join(ROOT, "reference", "expected")

SKIP = {"scan_big_64x128", "scan_big_16x256", "vmap_mlp_32x128"}

# One seed per case (documented here, printed by the script). The vmap_inner family shares
# one input set, like tinygrad's golden data does.
SEEDS = {
    "reduce": 1001,
    "simple_range": 1002,
    "inner_range": 1003,
    "range_matmul": 1004,
    "uop_scan_matmul": 1005,
    "scan_with_assign": 1006,
    "range_plus_1": 1007,
    "range_plus_1_transpose": 1008,
    "flip_range": 1009,
    "vmap": 1010,
    "fancy_vmap": 1011,
    "vmap_inner_loop": 1012,
    "vmap_inner_loop_grad": 1012,
    "vmap_inner_loop_fuse": 1012,
    "vmap_inner_loop_fuse_grad": 1012,
    "vmap_inner_outer": 1012,
    "vmap_inner_outer_grad": 1012,
    "vmap_inner_outer_fuse": 1012,
    "vmap_inner_outer_fuse_grad": 1012,
    "vmap_convs": 1013,
    "vmap_gemm": 1014,
    "vmap_gemm_grad": 1015,
    "sgd_baseline": 1016,
    "sgd_snapshot": 1016,
}


def f32(a):
    return np.asarray(a, dtype=np.float32)


def normal(rng, *shape):
    return f32(rng.standard_normal(shape))


def d(a):
    """float64 copy of a float32 input, for the reference math."""
    return np.asarray(a, dtype=np.float64)


# ---- per-case generators: rng -> (inputs, outputs), dicts name -> array ----

def case_reduce(rng):
    # REDUCE over a range a(5) of x[a]: column sums.
    x = normal(rng, 5, 5)
    return {"x": x}, {"out": d(x).sum(0)}


def case_simple_range(rng):
    # acc (0-d) folded in place over OUTER range i(10): acc = acc + a[i], in float32, in order.
    a = normal(rng, 10)
    acc0 = f32(rng.standard_normal())
    acc = np.float32(acc0)
    for v in a:
        acc = np.float32(acc + v)
    return {"acc0": acc0, "a": a}, {"out": np.array(acc, dtype=np.float32)}


def case_inner_range(rng):
    # acc (10,) folded in place over i(10): acc[r] += a[r, i].
    acc0 = normal(rng, 10)
    a = normal(rng, 10, 10)
    return {"acc0": acc0, "a": a}, {"out": d(acc0) + d(a).sum(1)}


def chain_mats(rng, n=3, dim=10):
    # mats scaled by 1/sqrt(dim) so the products stay O(1).
    vec = normal(rng, 1, dim)
    mats = f32(rng.standard_normal((n, dim, dim)) / np.sqrt(dim))
    return vec, mats


def prefix_products(vec, mats):
    outs, v = [], d(vec)
    for m in d(mats):
        v = v @ m
        outs.append(v)
    return np.stack(outs)  # (n, 1, dim)


def case_range_matmul(rng):
    # vec = vec @ mats[i] in place over OUTER i(3): vec @ M0 @ M1 @ M2.
    vec, mats = chain_mats(rng)
    return {"vec": vec, "mats": mats}, {"out": prefix_products(vec, mats)[-1]}


def case_uop_scan_matmul(rng):
    # out[k] = vec @ M0 @ ... @ Mk; out (3,1,10) starts uninitialised (not an input).
    vec, mats = chain_mats(rng)
    return {"vec": vec, "mats": mats}, {"out": prefix_products(vec, mats)}


def case_scan_with_assign(rng):
    # Same prefix-product scan, built with pad + REDUCE + assign.
    vec, mats = chain_mats(rng)
    return {"vec": vec, "mats": mats}, {"out": prefix_products(vec, mats)}


def case_range_plus_1(rng):
    t = normal(rng, 10, 10)
    return {"t": t}, {"out": d(t) + 1.0}


def case_range_plus_1_transpose(rng):
    t = normal(rng, 10, 10)
    return {"t": t}, {"out": (d(t) + 1.0).T}


def case_flip_range(rng):
    t = f32(rng.random((10, 10)))
    return {"t": t}, {"out": d(t)[::-1, :]}


def case_vmap(rng):
    # f(x) = 2 * x.sum(0) mapped over x[a], a(3).
    x = normal(rng, 3, 10, 2)
    return {"x": x}, {"out": 2.0 * d(x).sum(1)}


def case_fancy_vmap(rng):
    # out[a, j] = x[j, a] + y[a, j].
    x = normal(rng, 3, 3)
    y = normal(rng, 3, 3)
    return {"x": x, "y": y}, {"out": d(x).T + d(y)}


def vmap_inner(fuse, grad):
    s = 2.0 if fuse else 1.0

    def gen(rng):
        x = normal(rng, 1, 10)
        mats = f32(rng.standard_normal((3, 10, 10)) / np.sqrt(10))
        xd, md = d(x), d(mats)
        out = s * np.einsum("i,kij->kj", xd[0], md)  # (3, 10)
        outs = {"out": out}
        if grad:
            # Gradients of out.mean() (30 elements). x_grad is the TRUE derivative, summed over
            # all k (tinygrad itself gets it wrong / fails; see the golden MANIFEST).
            n = out.size
            outs["mats_grad"] = np.broadcast_to(s * xd[0][None, :, None] / n, (3, 10, 10)).copy()
            outs["x_grad"] = (s / n * md.sum(axis=(0, 2)))[None, :]
        return {"x": x, "mats": mats}, outs

    return gen


def conv2d_valid(x, w, b):
    # Valid 3x3 cross-correlation, stride 1. x (N,C,H,W), w (O,C,KH,KW), b (O,) -> (N,O,H-KH+1,W-KW+1).
    n, c, h, wd = x.shape
    o, c2, kh, kw = w.shape
    assert c == c2
    oh, ow = h - kh + 1, wd - kw + 1
    out = np.zeros((n, o, oh, ow))
    for dy in range(kh):
        for dx in range(kw):
            patch = x[:, :, dy:dy + oh, dx:dx + ow]  # (N,C,OH,OW)
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, dy, dx])
    return out + b[None, :, None, None]


def relu(x):
    return np.maximum(x, 0.0)


def uniform_fan_in(rng, shape, fan_in):
    bound = 1.0 / np.sqrt(fan_in)
    return f32(rng.uniform(-bound, bound, shape))


def case_vmap_convs(rng):
    img = normal(rng, 4, 1, 16, 16)
    w1 = uniform_fan_in(rng, (8, 1, 3, 3), 1 * 9)
    b1 = uniform_fan_in(rng, (8,), 1 * 9)
    w2 = uniform_fan_in(rng, (8, 8, 3, 3), 8 * 9)
    b2 = uniform_fan_in(rng, (8,), 8 * 9)
    h = relu(conv2d_valid(d(img), d(w1), d(b1)))
    out = relu(conv2d_valid(h, d(w2), d(b2)))
    return {"img": img, "w1": w1, "b1": b1, "w2": w2, "b2": b2}, {"out": out}


def case_vmap_gemm(rng):
    img = normal(rng, 4, 16)
    w1 = uniform_fan_in(rng, (16, 16), 16)  # Linear weight layout (out, in)
    w2 = uniform_fan_in(rng, (16, 16), 16)
    out = relu(relu(d(img) @ d(w1).T) @ d(w2).T)
    return {"img": img, "w1": w1, "w2": w2}, {"out": out}


def case_vmap_gemm_grad(rng):
    # test_vmap_gemm_grad: d mean(out) / d w for out = relu(relu(img @ w1^T) @ w2^T), summed over
    # every row (the OUTER range's iterations), by the chain rule written out in float64.
    img = normal(rng, 4, 16)
    w1 = uniform_fan_in(rng, (16, 16), 16)
    w2 = uniform_fan_in(rng, (16, 16), 16)
    x, a1, a2 = d(img), d(w1), d(w2)
    h1 = x @ a1.T
    r1 = relu(h1)
    h2 = r1 @ a2.T
    out = relu(h2)
    g_out = np.full(out.shape, 1.0 / out.size)
    g_h2 = g_out * (h2 > 0)
    g_w2 = g_h2.T @ r1
    g_h1 = (g_h2 @ a2) * (h1 > 0)
    g_w1 = g_h1.T @ x
    return {"img": img, "w1": w1, "w2": w2}, {"out": out, "w1_grad": g_w1, "w2_grad": g_w2}


def sgd(sequential):
    # test_outerworld_range's model: loss_s = mean((X[s] W^T - Y[s])^2) over 20x8, then
    # W -= 0.1 * dloss/dW = 0.1 * (2/160) (X[s] W^T - Y[s])^T X[s], for s = 0..4. Sequential
    # (OUTER range): each step uses the previous step's W. Snapshot (LOOP range, S5.3): every
    # step reads the initial W, and the last step's write is what W holds after the loop.
    def case(rng):
        X = normal(rng, 5, 20, 64)
        Y = f32(d(X).reshape(5, 20, 8, 8).mean(-1))
        W0 = uniform_fan_in(rng, (8, 64), 64)
        w, start, losses = d(W0), d(W0), []
        for step in range(5):
            x, y = d(X[step]), d(Y[step])
            use = w if sequential else start
            diff = x @ use.T - y
            losses.append((diff ** 2).mean())
            w = use - 0.1 * (2.0 / diff.size) * diff.T @ x
        return {"X": X, "Y": Y, "W0": W0}, {"losses": np.array(losses), "W_final": w}
    return case


GENERATORS = {
    "reduce": case_reduce,
    "simple_range": case_simple_range,
    "inner_range": case_inner_range,
    "range_matmul": case_range_matmul,
    "uop_scan_matmul": case_uop_scan_matmul,
    "scan_with_assign": case_scan_with_assign,
    "range_plus_1": case_range_plus_1,
    "range_plus_1_transpose": case_range_plus_1_transpose,
    "flip_range": case_flip_range,
    "vmap": case_vmap,
    "fancy_vmap": case_fancy_vmap,
    "vmap_inner_loop": vmap_inner(False, False),
    "vmap_inner_loop_grad": vmap_inner(False, True),
    "vmap_inner_loop_fuse": vmap_inner(True, False),
    "vmap_inner_loop_fuse_grad": vmap_inner(True, True),
    "vmap_inner_outer": vmap_inner(False, False),
    "vmap_inner_outer_grad": vmap_inner(False, True),
    "vmap_inner_outer_fuse": vmap_inner(True, False),
    "vmap_inner_outer_fuse_grad": vmap_inner(True, True),
    "vmap_convs": case_vmap_convs,
    "vmap_gemm": case_vmap_gemm,
    "vmap_gemm_grad": case_vmap_gemm_grad,
    "sgd_baseline": sgd(True),
    "sgd_snapshot": sgd(False),
}

BUFFER_RE = re.compile(r'= BUFFER \S+ \(\) \("([^"]+)", (\d+)\)')
SINK_RE = re.compile(r'= SINK \S+ \([^)]*\) \(([^)]*)\)')


def graph_interface(path):
    """(buffers {name: size}, output names) as declared in a .uop file."""
    with open(path) as f:
        lines = [ln for ln in f.read().splitlines() if ln.strip()]
    buffers = {m.group(1): int(m.group(2)) for m in map(BUFFER_RE.search, lines) if m}
    m = SINK_RE.search(lines[-1])
    if not m:
        sys.exit(f"{path}: last line is not a SINK with output names")
    outputs = [s.strip().strip('"') for s in m.group(1).split(",") if s.strip()]
    return buffers, outputs


def main():
    cases = sorted(f[:-4] for f in os.listdir(CASES_DIR) if f.endswith(".uop"))
    wanted = [c for c in cases if c not in SKIP]
    missing = [c for c in wanted if c not in GENERATORS]
    if missing:
        sys.exit(f"no generator for case(s): {', '.join(missing)}")
    total = 0
    for case in wanted:
        buffers, outputs = graph_interface(os.path.join(CASES_DIR, case + ".uop"))
        ins, outs = GENERATORS[case](np.random.default_rng(SEEDS[case]))
        # Check the generator against the graph's interface.
        for name, a in ins.items():
            if name not in buffers:
                sys.exit(f"{case}: input '{name}' is not a BUFFER of the graph")
            if a.size != buffers[name]:
                sys.exit(f"{case}: input '{name}' has {a.size} elements, BUFFER has {buffers[name]}")
        for name in buffers:
            if name not in ins and name not in outputs:
                sys.exit(f"{case}: BUFFER '{name}' is neither an input nor an output")
        if sorted(outs) != sorted(outputs):
            sys.exit(f"{case}: outputs {sorted(outs)} != graph outputs {sorted(outputs)}")

        case_dir = os.path.join(OUT_DIR, case)
        os.makedirs(case_dir, exist_ok=True)
        for f in os.listdir(case_dir):
            if f.endswith(".npy"):
                os.remove(os.path.join(case_dir, f))
        for prefix, arrays in (("in", ins), ("out", outs)):
            for name, a in arrays.items():
                p = os.path.join(case_dir, f"{prefix}_{name}.npy")
                np.save(p, np.asarray(a, dtype=np.float32, order="C"))  # keeps 0-d shapes (ascontiguousarray would not)
                total += os.path.getsize(p)
        desc = ", ".join(f"{k}{tuple(v.shape)}" for k, v in ins.items())
        desc_out = ", ".join(f"{k}{tuple(np.shape(v))}" for k, v in outs.items())
        print(f"{case:28s} seed {SEEDS[case]}  in: {desc}  out: {desc_out}")
    print(f"{len(wanted)} cases, {total} bytes of .npy in {os.path.relpath(OUT_DIR, ROOT)}/")


if __name__ == "__main__":
    main()
