#!/usr/bin/python3
"""Generate reference/unsigned/<case>.uop and <case>/{in,out}_<name>.npy: uint32/uint64
arithmetic, casts, bitcasts, reductions and THREEFRY, with expected outputs computed here.

The expectations are INDEPENDENT of outerworld: Python integers (exact, reduced mod 2^n by hand)
for the integer ops, exact rational rounding for integer -> float, the CAST rule of
reference/SEMANTICS.md S2.1 for float -> integer, and Threefry-2x32-20 written from the
Random123 specification (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as
1, 2, 3", SC 2011), checked below against Random123's published known-answer vectors. Only the
bitcasts use numpy's .view, which is what a bitcast is. tests/interp/test_unsigned.cpp runs every
case on the interpreter, tcc and cc and requires the outputs byte for byte.

Run with Debian's python3-numpy, from anywhere:
    /usr/bin/python3 reference/unsigned/make_unsigned.py
Deterministic (fixed values and a seeded generator), so re-running rewrites identical files.
"""

import os
import random
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(2027)
M32, M64 = (1 << 32) - 1, (1 << 64) - 1


# ---- Threefry-2x32-20 from the spec -----------------------------------------------------------
ROTATIONS = [13, 15, 26, 6, 17, 29, 16, 24]  # R_{2x32}, cycled every 8 rounds
PARITY = 0x1BD11BDA                          # the key schedule constant for 32-bit words


def threefry2x32_20(ctr, key):
    """(x0, x1) = Threefry-2x32 with 20 rounds of the counter words under the key words."""
    ks = [key[0], key[1], key[0] ^ key[1] ^ PARITY]
    x = [(ctr[0] + ks[0]) & M32, (ctr[1] + ks[1]) & M32]
    for r in range(20):
        x[0] = (x[0] + x[1]) & M32
        rot = ROTATIONS[r % 8]
        x[1] = (((x[1] << rot) | (x[1] >> (32 - rot))) & M32) ^ x[0]
        if r % 4 == 3:  # inject subkey s after every 4 rounds
            s = r // 4 + 1
            x[0] = (x[0] + ks[s % 3]) & M32
            x[1] = (x[1] + ks[(s + 1) % 3] + s) & M32
    return x


# Random123's kat_vectors for threefry2x32_20: (counter, key) -> output.
KAT = [((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6b200159, 0x99ba4efe)),
       ((0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff), (0x1cb996fc, 0xbb002be7)),
       ((0x243f6a88, 0x85a308d3), (0x13198a2e, 0x03707344), (0xc4923a9c, 0x483df7a0))]
for _ctr, _key, _want in KAT:
    assert threefry2x32_20(_ctr, _key) == list(_want), (_ctr, _key)


def pack(lo, hi):
    """THREEFRY's uint64 operands hold two words, the low one first (as tinygrad packs them)."""
    return lo | hi << 32


def threefry(x, key):
    out = threefry2x32_20((x & M32, x >> 32), (key & M32, key >> 32))
    return pack(*out)


# ---- exact conversions ------------------------------------------------------------------------
def round_int(n, bits):
    """n (an int) rounded to `bits` significant bits, ties to even: one rounding, exactly."""
    neg, n = n < 0, abs(n)
    shift = n.bit_length() - bits
    if shift > 0:
        q, r = divmod(n, 1 << shift)
        half = 1 << (shift - 1)
        if r > half or (r == half and q & 1):
            q += 1
        n = q << shift
    return -n if neg else n


def int_to_float(n, dtype):
    return dtype(round_int(n, 24 if dtype is np.float32 else 53))  # exact: n has few enough bits


def float_to_int(x, lo, hi):
    """SEMANTICS S2.1: truncate toward zero, saturate at the limits, NaN -> 0."""
    if x != x:
        return 0
    if x <= lo:
        return lo
    if x >= hi:
        return hi
    return int(x)  # int() truncates toward zero; x is finite here


def wrap(n, bits, signed=False):
    n &= (1 << bits) - 1
    return n - (1 << bits) if signed and n >> (bits - 1) else n


# ---- cases --------------------------------------------------------------------------------------
DTYPE = {"u32": "uint32", "u64": "uint64", "f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64", "bl": "bool", "bool": "bool"}


def sink(names):
    """The root: every named node (%name) as an output of that name."""
    return f"%out = SINK void ({', '.join('%' + k for k in names)}) ({', '.join(chr(34) + k + chr(34) for k in names)})"


def arith_case(bits):
    """ADD SUB MUL IDIV MOD AND OR XOR MAX CMPLT NEG SHL SHR of two uint buffers (d: nonzero
    divisors, c: shift counts)."""
    m = (1 << bits) - 1
    edge = [0, 1, 2, m, m - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1, 12345]
    a = edge + [rng.getrandbits(bits) for _ in range(8)]
    b = [m, m, 3, 2, m, 1 << (bits - 1), 1, 7] + [rng.getrandbits(bits) for _ in range(8)]
    d = [v or 1 for v in b[:4]] + [3, m, 1 << (bits - 1), 10] + [rng.getrandbits(bits) | 1 for _ in range(8)]
    c = [0, 1, bits - 1, 5] + [rng.randrange(bits) for _ in range(12)]
    outs = {
        "add": [(x + y) & m for x, y in zip(a, b)],
        "sub": [(x - y) & m for x, y in zip(a, b)],
        "mul": [(x * y) & m for x, y in zip(a, b)],
        "idiv": [x // y for x, y in zip(a, d)],  # nonnegative operands: floor = truncation
        "mod": [x % y for x, y in zip(a, d)],
        "and": [x & y for x, y in zip(a, b)],
        "or": [x | y for x, y in zip(a, b)],
        "xor": [x ^ y for x, y in zip(a, b)],
        "max": [max(x, y) for x, y in zip(a, b)],
        "neg": [(-x) & m for x in a],
        "shl": [(x << k) & m for x, k in zip(a, c)],
        "shr": [x >> k for x, k in zip(a, c)],
    }
    lt = [x < y for x, y in zip(a, b)]
    t = f"uint{bits}"
    n = len(a)
    text = [f'%a = BUFFER {t} () ("a", {n})', f'%b = BUFFER {t} () ("b", {n})',
             f'%d = BUFFER {t} () ("d", {n})', f'%c = BUFFER {t} () ("c", {n})']
    ops = {"add": "ADD", "sub": "SUB", "mul": "MUL", "idiv": "IDIV", "mod": "MOD", "and": "AND", "or": "OR",
           "xor": "XOR", "max": "MAX", "shl": "SHL", "shr": "SHR"}
    second = {"idiv": "%d", "mod": "%d", "shl": "%c", "shr": "%c"}
    for name, op in ops.items():
        text.append(f"%{name} = {op} {t} (%a, {second.get(name, '%b')})")
    text += [f"%neg = NEG {t} (%a)", "%lt = CMPLT bool (%a, %b)"]
    names = list(ops) + ["neg", "lt"]
    text.append(sink(names))
    dt = np.uint32 if bits == 32 else np.uint64
    ins = {k: np.array(v, dt) for k, v in dict(a=a, b=b, d=d, c=c).items()}
    expected = {k: np.array(v, dt) for k, v in outs.items()}
    expected["lt"] = np.array(lt, np.bool_)
    return text, ins, expected


def conversions(op, ins, outs):
    """A graph converting input buffers of 16 elements: output "SRC_TO" is op(%SRC) to TO's dtype."""
    text = [f'%{k} = BUFFER {DTYPE[k]} () ("{k}", 16)' for k in ins]
    for out in outs:
        src, to = out.split("_")
        text.append(f"%{out} = {op} {DTYPE[to]} (%{src})")
    text.append(sink(outs))
    return text, ins, outs


def casts_case():
    f32 = [-1.5, -0.0, 0.0, 0.5, 1.9, 3e9, 4294967040.0, 4294967296.0, 4.3e9, 9.3e18, 1e19, 2e19,
           float("inf"), float("-inf"), float("nan"), 255.75]
    f64 = [-1.0, 0.99, 2.0**32 - 0.5, 2.0**32, 2.0**63, 2.0**63 + 2048, 2.0**64 - 2048, 2.0**64, 1.8e19, 1e300,
           float("nan"), float("-inf"), 123456789.9, -1e-300, 2.0**53 + 2, 7.0]
    u64 = [0, 1, 2**53 + 1, 2**63 - 1, 2**63, 2**63 + 1, 2**63 + 2**39 + 1, 2**64 - 1, 2**64 - 2**39,
           2**32 + 5, 2**31, 2**24 + 1, 12345678901234567890, 2**40 + 2**16 + 1, 3, 2**62 + 2**38]
    u32 = [0, 1, 2**24 + 1, 2**31, 2**32 - 1, 2**31 - 1, 16777217 * 3, 4000000000, 7, 2**25 + 3, 100, 2**32 - 129,
           2**32 - 128, 65535, 2**30 + 65, 9]
    i32 = [-1, 0, 1, -2**31, 2**31 - 1, -5, 77, -1000000, 3, -3, 2**30, -2**30, 12, -12, 0, 1]
    i64 = [-1, 0, 2**63 - 1, -2**63, -2**32, 2**32 + 7, -12345678901234, 5, -5, 2**40, 1, -2, 3, -3, 4, 2**62]
    bools = [i % 3 == 0 for i in range(16)]
    ins = {"f32": np.array(f32, np.float32), "f64": np.array(f64, np.float64), "u64": np.array(u64, np.uint64),
           "u32": np.array(u32, np.uint32), "i32": np.array(i32, np.int32), "i64": np.array(i64, np.int64),
           "bl": np.array(bools, np.bool_)}
    f32x = [float(v) for v in ins["f32"]]  # the float32 values exactly
    outs = {
        "f32_u32": np.array([float_to_int(x, 0, M32) for x in f32x], np.uint32),
        "f32_u64": np.array([float_to_int(x, 0, M64) for x in f32x], np.uint64),
        "f64_u32": np.array([float_to_int(x, 0, M32) for x in f64], np.uint32),
        "f64_u64": np.array([float_to_int(x, 0, M64) for x in f64], np.uint64),
        "u64_f32": np.array([int_to_float(n, np.float32) for n in u64], np.float32),
        "u64_f64": np.array([int_to_float(n, np.float64) for n in u64], np.float64),
        "u64_i64": np.array([wrap(n, 64, True) for n in u64], np.int64),
        "u64_u32": np.array([wrap(n, 32) for n in u64], np.uint32),
        "u64_i32": np.array([wrap(n, 32, True) for n in u64], np.int32),
        "u64_bool": np.array([n != 0 for n in u64], np.bool_),
        "u32_f32": np.array([int_to_float(n, np.float32) for n in u32], np.float32),
        "u32_f64": np.array([int_to_float(n, np.float64) for n in u32], np.float64),
        "u32_i32": np.array([wrap(n, 32, True) for n in u32], np.int32),
        "u32_u64": np.array(u32, np.uint64),
        "u32_i64": np.array(u32, np.int64),
        "i32_u32": np.array([wrap(n, 32) for n in i32], np.uint32),
        "i32_u64": np.array([wrap(n, 64) for n in i32], np.uint64),
        "i64_u64": np.array([wrap(n, 64) for n in i64], np.uint64),
        "i64_u32": np.array([wrap(n, 32) for n in i64], np.uint32),
        "bl_u32": np.array([int(v) for v in bools], np.uint32),
        "bl_u64": np.array([int(v) for v in bools], np.uint64),
    }
    return conversions("CAST", ins, outs)


def bitcast_case():
    """float <-> uint and int <-> uint of one size: the same bits (NaN payloads, -0, denormals)."""
    bits32 = [0x00000000, 0x80000000, 0x3f800000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7fa00001, 0xffc12345,
              0x00000001, 0x807fffff, 0x3eaaaaab, 0xdeadbeef, 0x4b800000, 0x00800000, 0x7f7fffff, 0x12345678]
    bits64 = [0, 1 << 63, 0x3ff0000000000000, 0x7ff0000000000000, 0xfff8000000000000, 0x7ff4000000000001,
              0x0000000000000001, 0x800fffffffffffff, 0xdeadbeefcafebabe, 0x4330000000000000, 0x7fefffffffffffff,
              0x0010000000000000, 0xbff0000000000000, 0x123456789abcdef0, 0x7ff8000000000000, 0x3fd5555555555555]
    u32, u64 = np.array(bits32, np.uint32), np.array(bits64, np.uint64)
    ins = {"u32": u32, "u64": u64, "f32": u32.view(np.float32), "f64": u64.view(np.float64),
           "i32": u32.view(np.int32), "i64": u64.view(np.int64)}
    outs = {"u32_f32": u32.view(np.float32), "f32_u32": u32, "u64_f64": u64.view(np.float64), "f64_u64": u64,
            "i32_u32": u32, "u32_i32": u32.view(np.int32), "i64_u64": u64, "u64_i64": u64.view(np.int64),
            "f32_i32": u32.view(np.int32), "f64_i64": u64.view(np.int64)}
    return conversions("BITCAST", ins, outs)


def reduce_case():
    """REDUCE_AXIS over uint32 and uint64 rows: sums that wrap, products, maxima."""
    x32 = [[rng.getrandbits(32) for _ in range(5)] for _ in range(4)]
    x64 = [[rng.getrandbits(64) for _ in range(5)] for _ in range(4)]
    x32[1] = [M32] * 5
    x64[2] = [M64, 1, 0, M64, 2]
    ins = {"x32": np.array(x32, np.uint32), "x64": np.array(x64, np.uint64)}

    def fold(rows, f, init, m):
        out = []
        for r in rows:
            acc = init
            for v in r:
                acc = f(acc, v) & m
            out.append([acc])
        return out
    outs = {"sum32": np.array(fold(x32, lambda a, b: a + b, 0, M32), np.uint32),
            "max32": np.array(fold(x32, max, 0, M32), np.uint32),
            "sum64": np.array(fold(x64, lambda a, b: a + b, 0, M64), np.uint64),
            "prod64": np.array(fold(x64, lambda a, b: a * b, 1, M64), np.uint64),
            "max64": np.array(fold(x64, max, 0, M64), np.uint64)}
    text = ['%x32b = BUFFER uint32 () ("x32", 20)', '%x64b = BUFFER uint64 () ("x64", 20)', "%c4 = CONST index () 4",
            "%c5 = CONST index () 5", "%x32 = RESHAPE uint32 (%x32b, %c4, %c5)", "%x64 = RESHAPE uint64 (%x64b, %c4, %c5)",
            "%sum32 = REDUCE_AXIS uint32 (%x32) (Ops.ADD, (1,))", "%max32 = REDUCE_AXIS uint32 (%x32) (Ops.MAX, (1,))",
            "%sum64 = REDUCE_AXIS uint64 (%x64) (Ops.ADD, (1,))", "%prod64 = REDUCE_AXIS uint64 (%x64) (Ops.MUL, (1,))",
            "%max64 = REDUCE_AXIS uint64 (%x64) (Ops.MAX, (1,))"]
    text.append(sink(outs))
    return text, ins, outs


def threefry_case():
    """THREEFRY of packed counters under packed keys: the KAT vectors, then random ones."""
    xs = [pack(*c) for c, _, _ in KAT] + [rng.getrandbits(64) for _ in range(13)]
    keys = [pack(*k) for _, k, _ in KAT] + [rng.getrandbits(64) for _ in range(13)]
    ins = {"x": np.array(xs, np.uint64), "key": np.array(keys, np.uint64)}
    outs = {"out": np.array([threefry(x, k) for x, k in zip(xs, keys)], np.uint64)}
    text = ['%x = BUFFER uint64 () ("x", 16)', '%key = BUFFER uint64 () ("key", 16)', "%tf = THREEFRY uint64 (%x, %key)",
            '%out = SINK void (%tf) ("out",)']
    return text, ins, outs


def rand_case():
    """Tensor.rand's pipeline as tinygrad builds it (tensor.py: _threefry_random_bits, rand):
    counters (lo, hi) packed into uint64, THREEFRY under the seed key, the two words split,
    the top 23 bits of each made the mantissa of a float in [1, 2), minus 1."""
    n, key = 8, pack(0x1234, 0)
    lo = list(range(n))
    ins = {"lo": np.array(lo, np.uint32), "key": np.array([key] * n, np.uint64)}
    words = [threefry2x32_20((c, c + n), (key & M32, key >> 32)) for c in lo]
    bits = [w[0] for w in words] + [w[1] for w in words]
    outs = {"rand": np.array([struct.unpack("<f", struct.pack("<I", (b >> 9) | 0x3F800000))[0] - 1.0 for b in bits], np.float32)}
    text = ['%lo = BUFFER uint32 () ("lo", 8)', '%key = BUFFER uint64 () ("key", 8)', "%n = CONST uint32 () 8",
            "%hi = ADD uint32 (%lo, %n)", "%lo64 = CAST uint64 (%lo)", "%hi64 = CAST uint64 (%hi)",
            "%two32 = CONST uint64 () 4294967296", "%hiup = MUL uint64 (%hi64, %two32)", "%x = OR uint64 (%hiup, %lo64)",
            "%tf = THREEFRY uint64 (%x, %key)", "%mask = CONST uint64 () 4294967295", "%w0l = AND uint64 (%tf, %mask)",
            "%w1s = IDIV uint64 (%tf, %two32)", "%w1l = AND uint64 (%w1s, %mask)", "%w0 = CAST uint32 (%w0l)", "%w1 = CAST uint32 (%w1l)",
            "%c0 = CONST index () 0", "%c8 = CONST index () 8",
            "%p0 = PAD uint32 (%w0, %c0, %c8)", "%p1 = PAD uint32 (%w1, %c8, %c0)", "%bits = ADD uint32 (%p0, %p1)",
            "%sh = CONST uint32 () 512", "%top = IDIV uint32 (%bits, %sh)", "%one = CONST uint32 () 1065353216",
            "%fb = OR uint32 (%top, %one)", "%f = BITCAST float32 (%fb)", "%fone = CONST float32 () 1.0",
            "%r = SUB float32 (%f, %fone)", '%out = SINK void (%r) ("rand",)']
    return text, ins, outs


CASES = {"arith_u32": lambda: arith_case(32), "arith_u64": lambda: arith_case(64), "casts": casts_case,
         "bitcasts": bitcast_case, "reduce": reduce_case, "threefry": threefry_case, "rand": rand_case}

for case, make in CASES.items():
    text, ins, outs = make()
    with open(os.path.join(HERE, case + ".uop"), "w") as f:
        f.write(f"# {case}: generated by reference/unsigned/make_unsigned.py (expected outputs in {case}/)\n")
        f.write("\n".join(text) + "\n")
    d = os.path.join(HERE, case)
    os.makedirs(d, exist_ok=True)
    for k, v in ins.items():
        np.save(os.path.join(d, f"in_{k}.npy"), v)
    for k, v in outs.items():
        np.save(os.path.join(d, f"out_{k}.npy"), v)
print("wrote", len(CASES), "cases to", HERE)
