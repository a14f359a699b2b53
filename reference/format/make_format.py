#!/usr/bin/python3
"""Generate reference/format/<name>.{npy,txt}: arrays and numpy's own str() of them.

outerworld's value printer (src/interp/format.h) promises numpy's layout; tests/interp/test_format.cpp
prints each .npy and compares with the .txt numpy wrote. Run with Debian's python3-numpy:
    /usr/bin/python3 reference/format/make_format.py
Deterministic (seeded), so re-running rewrites identical files.
"""

import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(2026)

ARRAYS = {
    "points_f32": np.array([1.5, 2.25, -10.0], dtype=np.float32),
    "normal_f32_2x3": rng.standard_normal((2, 3)).astype(np.float32),
    "integral_f64_3x4": np.arange(-6, 6, dtype=np.float64).reshape(3, 4),
    "tenth_f64": np.array([0.1 + 0.2, 1 / 3, 2.0]),
    "scientific_f32": np.array([1e-5, 2.5, 3e8], dtype=np.float32),
    "scientific_f64_ratio": np.array([0.5, 1234.5, 7.0]),
    "nonfinite_f32": np.array([np.nan, np.inf, -np.inf, 1.25], dtype=np.float32),
    "zeros_f32": np.zeros((2, 2), dtype=np.float32),
    "big_int64": np.array([2**62 + 1, -5, 7], dtype=np.int64),
    "int32_2x2x3": np.arange(12, dtype=np.int32).reshape(2, 2, 3) - 4,
    "bool_5": np.array([True, False, False, True, True]),
    "wrap_int64_100": np.arange(100, dtype=np.int64) * 37,
    "wrap_f32_40": rng.uniform(-1, 1, 40).astype(np.float32),
    "summary_f32_40x50": rng.standard_normal((40, 50)).astype(np.float32),
    "summary_int32_10x10x10": np.arange(1000 + 0, dtype=np.int32).reshape(10, 10, 10) * 1,
    "summary_int32_11x10x10": np.arange(1100, dtype=np.int32).reshape(11, 10, 10),
    "summary_f64_2000": np.linspace(0, 1, 2000),
    "scalar_f32": np.array(3.5, dtype=np.float32),
    "empty_f32": np.zeros((0,), dtype=np.float32),
    "uint32_edges": np.array([0, 1, 4294967295, 123], dtype=np.uint32),
    "uint64_big_2x2": np.array([[2**64 - 1, 0], [2**63, 17]], dtype=np.uint64),
}

for name, a in ARRAYS.items():
    np.save(os.path.join(HERE, name + ".npy"), a)
    with open(os.path.join(HERE, name + ".txt"), "w") as f:
        f.write(str(a) + "\n")
print("wrote", len(ARRAYS), "arrays to", HERE)
