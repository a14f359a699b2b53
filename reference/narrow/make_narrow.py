#!/usr/bin/python3
"""Generate the narrow-dtype reference cases: <out>/<case>.uop and <out>/<case>/{in,out}_<name>.npy
for CAST and BITCAST between all 15 dtypes (bool, int8, uint8, int16, uint16, int32, uint32, int64,
uint64, float16, bfloat16, fp8e4m3, fp8e5m2, float32, float64: tinygrad's set), the ALU on the 8
narrow dtypes and REDUCE_AXIS in them, with expected outputs computed here.

The expectations are INDEPENDENT of outerworld: every conversion is written here from the format
specifications (IEEE 754-2008 binary16/binary32/binary64, bfloat16, the OCP 8-bit floating point
specification v1.0 for E4M3FN and E5M2) in integer arithmetic: a float's exact value is an
integer mantissa times a power of two, and rounding to a format is done on those integers
(shift, remainder against the half, ties to even), never by the FPU or numpy's casts. numpy is
used as an array of integers (uint64 shifts and masks, vectorized over all 2^16 bit patterns) and
to write .npy files. The ALU's float32 step is computed exactly with fractions.Fraction and
math.isqrt and rounded by the same integer rule.

Three implementations of rule 4 (below) check one another: the vectorized integer encoder used
for the tables, a scalar one on Fractions (round_formula: exponent, quantum, floor, tie), and for
the narrow formats a nearest-neighbour search in the sorted table of every representable value
(round_table). Then the script checks itself against outside code, and stops with an
AssertionError on any disagreement:
  - float16 <-> float32/float64 against numpy's casts (its own C conversion, correctly rounded),
  - float64 -> float32 and float32 ALU results against the x86 FPU through numpy,
  - fp8 encoding/decoding against tinygrad's float_to_fp8 / fp8_to_float (from CUDA's
    cuda_fp8.hpp, saturating) and bfloat16 against tinygrad's float_to_bf16,
  - the spec tables (max finite, min normal, min subnormal, inf/NaN encodings) of every format.

Run with Debian's python3-numpy, from anywhere (about 5 s, 1 s with --no-checks; the cases are some
16 MB, mostly the 2-byte cast tables, so a build writes them into its build directory rather than
the repository; --out defaults to this script's directory, whose .gitignore keeps them out of git):
    /usr/bin/python3 reference/narrow/make_narrow.py [--out DIR]
Deterministic (fixed values and a seeded generator), so re-running rewrites identical files.
tests/interp/narrow/check_narrow.py runs every case with `ow run` and compares the bytes.

THE SEMANTICS (outerworld's normative definition of the narrow dtypes, implemented below)

Formats (sign, exponent, mantissa bits; bias):
  float16  = IEEE binary16 (1,5,10; 15), inf/NaN at exponent field 31.
  bfloat16 = (1,8,7; 127), IEEE-like with inf/NaN at exponent field 255.
  fp8e4m3  = OCP E4M3FN (1,4,3; 7): NO infinities, NaN only S.1111.111 (0x7F/0xFF), max finite
             448 = 0x7E (S.1111.110 is a normal number), subnormals down to 2^-9.
  fp8e5m2  = OCP E5M2 (1,5,2; 15), IEEE-like: inf 0x7C, NaN 0x7D-0x7F, max finite 57344 = 0x7B,
             subnormals down to 2^-16.
.npy: float16 <f2, int8 |i1, uint8 |u1, int16 <i2, uint16 <u2, bool |b1; bfloat16, fp8e4m3 and
fp8e5m2 have no numpy dtype and are stored as raw bits in a one-field structured dtype named
after the dtype: [('bfloat16', '<u2')], [('fp8e4m3', 'u1')], [('fp8e5m2', 'u1')].

CAST x -> D:
 1. to bool: x != 0 (NaN -> True, -0.0 -> False). bool -> anything: 0 or 1.
 2. integer -> integer: the low bits (two's complement wrap): int32 300 -> int8 44.
 3. float (the narrow ones by their exact value) -> any integer: truncate toward zero, saturate at
    the type's limits (-inf -> min, +inf -> max; unsigned: negatives -> 0), NaN -> 0.
 4. anything -> a float format: the EXACT source value rounded ONCE to nearest, ties to even (no
    double rounding through float32/float64), subnormals kept, a value rounding to zero keeps its
    sign. Overflow (the rounding, with an unbounded exponent, exceeds max finite):
    float16/bfloat16/float32/float64 give +-inf; fp8e4m3/fp8e5m2 SATURATE finite values to
    +-max finite (448, 57344; tinygrad's float_to_fp8, CUDA's __NV_SATFINITE). +-inf -> fp8e5m2
    +-inf, -> fp8e4m3 NaN with the sign (0x7F/0xFF). NaN -> a quiet NaN with the source's sign
    and the top bits of the source mantissa (target_mant = source_mant >> (src_mbits - dst_mbits),
    or shifted left when widening) with the target's quiet bit (mantissa MSB) set; fp8e4m3's
    only NaN is S.1111.111.
 5. BITCAST between dtypes of one size (1: int8 uint8 fp8e4m3 fp8e5m2; 2: int16 uint16 float16
    bfloat16; 4: int32 uint32 float32; 8: int64 uint64 float64): the same bits. Never bool.
ALU on narrow floats: the operands widened exactly to float32, the float32 operation (one IEEE
rounding), the result cast to the node's dtype by rule 4 (for + - * / sqrt this is the correctly
rounded narrow result: 24 >= 2p+2). NaN results of the float32 step are x86's (SSE): a NaN
operand comes out quieted (the first NaN operand; no case here has two NaN operands, since a C
compiler may commute a+b), and an invalid operation (inf-inf, 0*inf, 0/0, inf/inf, sqrt of a
negative) gives x86's default NaN 0xFFC00000, which is NEGATIVE (ARM would give 0x7FC00000), so
e.g. float16 sqrt(-1) is 0xFE00. MAX: NaN if either operand is NaN, and that NaN is float32's
0x7FC00000 cast by rule 4 (float16 0x7E00, bfloat16 0x7FC0, e4m3 0x7F, e5m2 0x7E); otherwise
`a > b ? a : b` on the widened values (b when equal, so MAX(-0.0, +0.0) is +0.0 and MAX(+0.0,
-0.0) is -0.0). CMPLT/CMPNE on the widened values. NEG is the same widening: the sign flipped on
the float32 (a signalling NaN comes back quiet, as from every other op).
ALU on narrow ints: ADD SUB MUL NEG wrap modulo 2^bits; IDIV truncates, MOD has the dividend's
sign, INT_MIN / -1 wraps to INT_MIN and INT_MIN % -1 is 0; SHL keeps the low bits, SHR is
arithmetic for signed and logical for unsigned (counts in [0, bits)); AND OR XOR MAX CMPLT CMPNE.
REDUCE_AXIS (ADD MUL MAX) folds in row-major order in the node's dtype, acc = op(acc, x) with the
ALU op above rounded at every step, from the identity: 0, 1, and for MAX -inf (fp8e4m3: its
lowest finite value -448; integers: the minimum).
"""

import argparse
import bisect
import math
import os
import platform
import random
import struct
import sys
import time
from fractions import Fraction

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
U, I64 = np.uint64, np.int64
ALL_ONES = (1 << 64) - 1


# ---- formats -----------------------------------------------------------------------------------
class Fmt:
    """A binary floating-point format: sign, `ebits` exponent bits, `mbits` stored mantissa bits.
    ieee: the top exponent field holds inf (mantissa 0) and NaNs; otherwise (E4M3FN) it holds
    normal numbers and S.1111.111 is the only NaN. sat: finite overflow saturates (the fp8s)."""

    def __init__(self, name, ebits, mbits, ieee=True, sat=False):
        self.name, self.ebits, self.mbits, self.ieee, self.sat = name, ebits, mbits, ieee, sat
        self.bias = (1 << (ebits - 1)) - 1
        self.emin = 1 - self.bias                                    # exponent of the min normal
        top = (1 << ebits) - 1                                       # all-ones exponent field
        self.emax = (top - 1 if ieee else top) - self.bias           # exponent of the max finite
        self.size = (1 + ebits + mbits) // 8
        self.sign_bit = 1 << (ebits + mbits)
        mant_ones = (1 << mbits) - 1
        self.maxfin = ((top - 1) << mbits | mant_ones) if ieee else (top << mbits | (mant_ones - 1))
        self.inf = top << mbits if ieee else None
        self.qnan = (top << mbits) | (1 << (mbits - 1)) if ieee else top << mbits | mant_ones
        self.lowest = self.sign_bit | self.maxfin

    def is_nan(self, b):
        b &= self.sign_bit - 1
        return b > self.inf if self.ieee else b == self.qnan


F16 = Fmt("float16", 5, 10)
BF16 = Fmt("bfloat16", 8, 7)
E4M3 = Fmt("fp8e4m3", 4, 3, ieee=False, sat=True)
E5M2 = Fmt("fp8e5m2", 5, 2, sat=True)
F32 = Fmt("float32", 8, 23)
F64 = Fmt("float64", 11, 52)
FLOATS = {f.name: f for f in (F16, BF16, E4M3, E5M2, F32, F64)}
NARROW_FLOATS = ["float16", "bfloat16", "fp8e4m3", "fp8e5m2"]
INTS = {"int8": (8, True), "uint8": (8, False), "int16": (16, True), "uint16": (16, False),
        "int32": (32, True), "uint32": (32, False), "int64": (64, True), "uint64": (64, False)}
NARROW_INTS = ["int8", "uint8", "int16", "uint16"]
DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "bfloat16", "fp8e4m3", "fp8e5m2", "float32", "float64"]
SIZE = {"bool": 1, **{k: v[0] // 8 for k, v in INTS.items()}, **{k: f.size for k, f in FLOATS.items()}}


def frac_of(f, bits):
    """The exact value of a finite pattern, straight from the format definition: (sign, |x|)."""
    s, e, t = bits >> (f.ebits + f.mbits) & 1, bits >> f.mbits & ((1 << f.ebits) - 1), bits & ((1 << f.mbits) - 1)
    mag = Fraction(t, 1 << f.mbits) * Fraction(2) ** f.emin if e == 0 else \
        Fraction((1 << f.mbits) + t, 1 << f.mbits) * Fraction(2) ** (e - f.bias)
    return s, mag


# The spec tables: IEEE 754-2008 binary16/32/64, bfloat16 (binary32's top half), OCP 8-bit FP v1.0.
TABLE = {  # name: (max finite, its bits, min normal, min subnormal, inf bits, a quiet NaN's bits)
    "float16": (65504, 0x7BFF, Fraction(1, 2**14), Fraction(1, 2**24), 0x7C00, 0x7E00),
    "bfloat16": ((2 - Fraction(1, 2**7)) * 2**127, 0x7F7F, Fraction(1, 2**126), Fraction(1, 2**133), 0x7F80, 0x7FC0),
    "fp8e4m3": (448, 0x7E, Fraction(1, 2**6), Fraction(1, 2**9), None, 0x7F),
    "fp8e5m2": (57344, 0x7B, Fraction(1, 2**14), Fraction(1, 2**16), 0x7C, 0x7E),
    "float32": ((2 - Fraction(1, 2**23)) * 2**127, 0x7F7FFFFF, Fraction(1, 2**126), Fraction(1, 2**149), 0x7F800000, 0x7FC00000),
    "float64": ((2 - Fraction(1, 2**52)) * 2**1023, 0x7FEFFFFFFFFFFFFF, Fraction(1, 2**1022), Fraction(1, 2**1074),
                0x7FF0000000000000, 0x7FF8000000000000),
}
for _n, (_max, _maxb, _minn, _mins, _inf, _qnan) in TABLE.items():
    _f = FLOATS[_n]
    assert _f.maxfin == _maxb and frac_of(_f, _maxb) == (0, _max), _n
    assert frac_of(_f, 1 << _f.mbits) == (0, _minn) and frac_of(_f, 1) == (0, _mins), _n
    assert _f.inf == _inf and _f.qnan == _qnan, _n
assert E4M3.is_nan(0x7F) and E4M3.is_nan(0xFF) and not E4M3.is_nan(0x7E) and not E4M3.is_nan(0x78)  # 0x78 = 256
assert [b for b in range(256) if E5M2.is_nan(b)] == [0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF]
assert frac_of(E4M3, 0x78) == (0, 256) and frac_of(E5M2, 0xFB) == (1, 57344)


# ---- rule 4, scalar: two independent roundings of an exact value (sign, Fraction) -------------
def round_formula(f, s, x):
    """Bits of the finite value (-1)^s x, x >= 0 a Fraction, rounded to nearest even in f."""
    if x == 0:
        return s * f.sign_bit
    n, d = x.numerator, x.denominator
    E = n.bit_length() - d.bit_length()          # 2^E <= x < 2^(E+1)
    if Fraction(2) ** E > x:
        E -= 1
    q = max(E, f.emin) - f.mbits                 # the quantum (ulp) at x
    k = x / Fraction(2) ** q
    lo = k.numerator // k.denominator
    r = k - lo
    m = lo + 1 if r > Fraction(1, 2) or (r == Fraction(1, 2) and lo & 1) else lo
    # m * 2^q; an m of 2^(mbits+1) has carried into the next binade
    if m == 0:
        return s * f.sign_bit
    if m >= 2 << f.mbits:
        m, q = m >> 1, q + 1
    e = q + f.mbits
    if m < 1 << f.mbits:                         # subnormal
        bits = m
    else:
        bits = (e + f.bias) << f.mbits | (m - (1 << f.mbits))
    if e > f.emax or bits > f.maxfin:
        bits = f.maxfin if f.sat else f.inf
    return s * f.sign_bit | bits


_TABLES = {}


def positive_table(f):
    """Every finite positive value of a narrow format times 2^K (K making them all integers), in
    bit-pattern order, plus the next value an unbounded exponent would have (the overflow side)."""
    if f.name not in _TABLES:
        K = f.mbits - f.emin
        vals = []
        for b in range(f.maxfin + 1):
            v = frac_of(f, b)[1] * 2**K
            assert v.denominator == 1
            vals.append(v.numerator)
        vals.append(vals[-1] + (vals[-1] - vals[-2]))  # max finite + its ulp (2^(emax+1) for IEEE; 480 for e4m3)
        assert vals == sorted(vals)
        _TABLES[f.name] = (K, vals)
    return _TABLES[f.name]


def round_table(f, s, x):
    """The same rounding as a search: the nearest entry of the table, the even pattern on a tie."""
    K, vals = positive_table(f)
    N, D = x.numerator << K, x.denominator
    i = bisect.bisect_right(vals, N // D)  # vals[i-1] <= x < vals[i]
    if i == 0:
        b = 0
    elif i == len(vals):
        b = len(vals)  # beyond the sentinel: overflow
    else:
        lo, hi = vals[i - 1], vals[i]
        two = 2 * N - (lo + hi) * D
        b = i if two > 0 or (two == 0 and i % 2 == 0) else i - 1
    if b > f.maxfin:
        b = f.maxfin if f.sat else f.inf
    return s * f.sign_bit | b


# ---- rule 4 and friends, vectorized on uint64 arrays --------------------------------------------
class Exact:
    """Exact values of an array: cls 0 finite (value (-1)^s m 2^e), 1 infinite, 2 NaN (payload pl:
    the source mantissa left-aligned in 64 bits). Every field a numpy array."""

    def __init__(self, cls, s, m, e, pl):
        self.cls, self.s, self.m, self.e, self.pl = cls, s, m, e, pl


def bitlen(m):
    """bit_length of every uint64, by halving (no float conversion)."""
    n, L = m.copy(), np.zeros(m.shape, I64)
    for sh in (32, 16, 8, 4, 2, 1):
        big = n >= U(1 << sh)
        n = np.where(big, n >> U(sh), n)
        L += np.where(big, sh, 0)
    return L + (n > 0)


def decode(f, bits):
    bits = bits.astype(U)
    mb = U(f.mbits)
    t = bits & U((1 << f.mbits) - 1)
    fe = (bits >> mb) & U((1 << f.ebits) - 1)
    s = (bits >> U(f.ebits + f.mbits)) & U(1)
    top = U((1 << f.ebits) - 1)
    if f.ieee:
        nan, inf = (fe == top) & (t != 0), (fe == top) & (t == 0)
    else:
        nan, inf = (fe == top) & (t == U((1 << f.mbits) - 1)), np.zeros(bits.shape, bool)
    sub = fe == 0
    m = np.where(sub, t, t | U(1 << f.mbits))
    e = np.where(sub, f.emin - f.mbits, fe.astype(I64) - (f.bias + f.mbits))
    special = nan | inf
    cls = np.where(nan, 2, np.where(inf, 1, 0)).astype(np.uint8)
    return Exact(cls, s, np.where(special, U(0), m), np.where(special, 0, e).astype(I64), t << U(64 - f.mbits))


def from_int_bits(bits, width, signed):
    """Exact values of two's-complement (or unsigned) integers held as uint64 bit patterns."""
    mask = U(ALL_ONES >> (64 - width))
    u = bits.astype(U) & mask
    neg = ((u >> U(width - 1)) & U(1)).astype(bool) if signed else np.zeros(u.shape, bool)
    m = np.where(neg, (~u + U(1)) & mask, u)
    z = np.zeros(u.shape, U)
    return Exact(np.zeros(u.shape, np.uint8), neg.astype(U), m, np.zeros(u.shape, I64), z)


def encode(x, f):
    """Rule 4, vectorized: each value rounded once to nearest even in f (bits as uint64)."""
    fin = x.cls == 0
    m = np.where(fin, x.m, U(0))
    L = np.maximum(bitlen(m), 1)
    m64 = m << (64 - L).astype(U)                      # normalized: top bit set (or 0)
    E = L - 1 + np.where(fin, x.e, 0)                  # 2^E <= |x| < 2^(E+1)
    E = np.clip(E, f.emin - f.mbits - 3, f.emax + 2)   # beyond these the outcome is fixed (0 or overflow)
    k = np.where(E >= f.emin, f.mbits + 1, E - f.emin + f.mbits + 1)  # significant bits kept
    sh = (64 - np.clip(k, 0, 63)).astype(U)            # bits dropped, 1..64
    n = (m64 >> (sh - U(1))) >> U(1)
    rem = m64 - ((n << (sh - U(1))) << U(1))
    half = U(1) << (sh - U(1))
    up = ((rem > half) | ((rem == half) & ((n & U(1)) == U(1)))) & (k >= 0)
    n = n + up.astype(U)
    # ((E' - emin) << mbits) + n is the pattern for the normal n in [2^mbits, 2^(mbits+1)] (a carry to
    # 2^(mbits+1) steps into the next binade by itself) and for subnormals (E' = emin, n < 2^mbits).
    mag = (np.maximum(E, f.emin) - f.emin).astype(U) << U(f.mbits)
    mag = mag + n
    mag = np.where(mag > U(f.maxfin), U(f.maxfin if f.sat else f.inf), mag)
    mag = np.where(m == 0, U(0), mag)
    inf_bits = f.inf if f.ieee else f.qnan               # e4m3 has no inf: NaN
    mag = np.where(x.cls == 1, U(inf_bits), mag)
    if f.ieee:
        nan = U(((1 << f.ebits) - 1) << f.mbits | 1 << (f.mbits - 1)) | (x.pl >> U(64 - f.mbits))
    else:
        nan = U(f.qnan)
    mag = np.where(x.cls == 2, nan, mag)
    return mag | (x.s.astype(U) << U(f.ebits + f.mbits))


def float_to_int(x, width, signed):
    """Rule 3: truncate toward zero, saturate, NaN -> 0; the two's-complement pattern (uint64)."""
    fin = x.cls == 0
    m = np.where(fin, x.m, U(0))
    e = np.where(fin, x.e, 0)
    L = bitlen(m)
    big = (m != 0) & (e >= 0) & (L + e > 64)           # |x| >= 2^64
    left = m << np.clip(e, 0, 63).astype(U)
    right = (m >> np.clip(-e, 0, 63).astype(U))
    right = np.where(-e >= 64, U(0), right)
    mag = np.where(e >= 0, left, right)
    pos_lim = U((1 << (width - 1)) - 1 if signed else (1 << width) - 1)
    neg_lim = U(1 << (width - 1) if signed else 0)
    neg = x.s.astype(bool)
    pos_val = np.where(big | (mag > pos_lim), pos_lim, mag)
    neg_val = np.where(big | (mag > neg_lim), neg_lim, mag)
    mag = np.where(neg, neg_val, pos_val)
    mag = np.where(x.cls == 1, np.where(neg, neg_lim, pos_lim), mag)
    mag = np.where(x.cls == 2, U(0), mag)
    pat = np.where(neg, ~mag + U(1), mag)             # -0 is 0
    return pat & U(ALL_ONES >> (64 - width))


_EXACT = {}


def exact_of(dt, bits, cache_key=None):
    if cache_key and cache_key in _EXACT:
        return _EXACT[cache_key]
    if dt == "bool":
        r = from_int_bits(bits, 8, False)
    elif dt in INTS:
        r = from_int_bits(bits, *INTS[dt])
    else:
        r = decode(FLOATS[dt], bits)
    if cache_key:
        _EXACT[cache_key] = r
    return r


def cast_bits(src, bits, dst, cache_key=None):
    """CAST src -> dst of bit patterns (uint64 arrays), by rules 1-4."""
    x = exact_of(src, bits, cache_key)
    if dst == "bool":
        return ((x.cls != 0) | (x.m != 0)).astype(U)
    if dst in INTS:
        w, signed = INTS[dst]
        if src in FLOATS:
            return float_to_int(x, w, signed)
        return np.where(x.s.astype(bool), ~x.m + U(1), x.m) & U(ALL_ONES >> (64 - w))  # rule 2 (and bool: 0/1)
    return encode(x, FLOATS[dst])


# The rules' own examples, as this code computes them.
def _cast1(src, bits, dst):
    return int(cast_bits(src, np.array([bits], U), dst)[0])


assert _cast1("int32", 300, "int8") == 44 and _cast1("int16", 0xFFFF, "uint16") == 65535
assert _cast1("int64", 2**60 + 2**52 + 1, "bfloat16") == 0x5D81  # 2^60 + 2^53 (via float32: 2^60 = 0x5D80)
assert _cast1("int64", 2**60 + 2**52 + 1, "float32") == 0x5D808000  # exact in float32; to bfloat16 from there: a tie, 2^60
assert [_cast1("float32", 0x7F800001, d) for d in NARROW_FLOATS] == [0x7E00, 0x7FC0, 0x7F, 0x7E]
assert _cast1("float32", 0xFFC12345, "float16") == 0xFE09 and _cast1("float64", 0x7FF0000000000001, "float32") == 0x7FC00000
assert _cast1("float32", 0x80000001, "float16") == 0x8000  # -tiny -> -0.0
assert [_cast1("float32", v, "fp8e4m3") for v in (0x43E00000, 0x43E80000, 0x43F00000, 0x7F800000, 0xFF800000)] == \
    [0x7E, 0x7E, 0x7E, 0x7F, 0xFF]  # 448 464 480 saturate; +-inf -> NaN with the sign
assert [_cast1("float32", v, "fp8e5m2") for v in (0x47600000, 0x47700000, 0x7F7FFFFF, 0xFF800000)] == [0x7B, 0x7B, 0x7B, 0xFC]
assert [_cast1("float32", v, "float16") for v in (0x477FE000, 0x477FEFFF, 0x477FF000)] == [0x7BFF, 0x7BFF, 0x7C00]  # 65504, 65520
assert [_cast1("float32", v, "bfloat16") for v in (0x7F7F7FFF, 0x7F7F8000, 0x7F7F0000)] == [0x7F7F, 0x7F80, 0x7F7F]
assert [_cast1(s, b, "int8") for s, b in (("float16", 0xFC00), ("float16", 0x7C00), ("float16", 0x7E00), ("float16", 0xD7D0))] \
    == [0x80, 0x7F, 0, 0x83]  # -inf -> -128, inf -> 127, NaN -> 0, -125.0 -> -125
assert _cast1("float16", 0xBC00, "uint8") == 0 and _cast1("fp8e4m3", 0x7E, "int8") == 0x7F and _cast1("fp8e4m3", 0x7E, "int16") == 448
assert _cast1("fp8e4m3", 0x7F, "float16") == 0x7F80 and _cast1("fp8e5m2", 0x7D, "float16") == 0x7F00  # NaN payloads widen


# ---- .npy representation ---------------------------------------------------------------------
RAW = {"bfloat16": np.dtype([("bfloat16", "<u2")]), "fp8e4m3": np.dtype([("fp8e4m3", "u1")]),
       "fp8e5m2": np.dtype([("fp8e5m2", "u1")])}
NPY = {"bool": np.dtype("|b1"), "int8": np.dtype("|i1"), "uint8": np.dtype("|u1"), "int16": np.dtype("<i2"),
       "uint16": np.dtype("<u2"), "int32": np.dtype("<i4"), "uint32": np.dtype("<u4"), "int64": np.dtype("<i8"),
       "uint64": np.dtype("<u8"), "float16": np.dtype("<f2"), "float32": np.dtype("<f4"),
       "float64": np.dtype("<f8"), **RAW}
UINT = {1: np.dtype("u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}


def to_npy(dt, bits, shape=None):
    """An array of dtype dt holding these bit patterns (bool: 0/1), in dt's .npy representation."""
    raw = np.asarray(bits, dtype=U).astype(UINT[SIZE[dt]])   # values < 2^(8 size): exact
    a = raw.view(NPY[dt])
    return a.reshape(shape) if shape is not None else a


def bits_of(a):
    """The bit patterns of any array to_npy makes (uint64, flat)."""
    return np.ascontiguousarray(a).reshape(-1).view(UINT[a.dtype.itemsize]).astype(U)


assert to_npy("bfloat16", [0x3F80]).dtype.descr == [("bfloat16", "<u2")]
assert to_npy("bool", [0, 1]).tolist() == [False, True]


# ---- scalar values and the float32 ALU step -------------------------------------------------------
def sval(f, b):
    """('nan'|'inf'|'fin', sign, |value| Fraction or None) of pattern b of float format f."""
    s = b >> (f.ebits + f.mbits) & 1
    if f.is_nan(b):
        return "nan", s, None
    if f.ieee and b & (f.sign_bit - 1) == f.inf:
        return "inf", s, None
    return "fin", s, frac_of(f, b)[1]


F32_DEFAULT_NAN = 0xFFC00000   # x86's "real indefinite": what an invalid SSE operation returns
F32_QNAN = 0x7FC00000          # the positive default quiet NaN (MAX's NaN)


def nan_operand(A, a, B, b):
    """x86 SSE: a NaN operand comes out quieted, the first one if both are NaN; None if neither is."""
    if A[0] == "nan":
        return a | 0x400000
    if B[0] == "nan":
        return b | 0x400000
    return None


def f32_add(a, b, negate_b=False):
    A, B = sval(F32, a), sval(F32, b)
    if A[0] == "nan":
        return a | 0x400000
    if B[0] == "nan":
        return b | 0x400000                  # x86 subss: b's NaN unchanged in sign, quieted
    sb = B[1] ^ negate_b
    if A[0] == "inf" or B[0] == "inf":
        if A[0] == "inf" and B[0] == "inf" and A[1] != sb:
            return F32_DEFAULT_NAN
        return (A[1] if A[0] == "inf" else sb) << 31 | F32.inf
    r = (-A[2] if A[1] else A[2]) + (-B[2] if sb else B[2])
    if r == 0:                               # exact zero: -0 only for (-0) + (-0) (ties to even)
        return 0x80000000 if (A[1] and sb and A[2] == 0 and B[2] == 0) else 0
    return round_formula(F32, int(r < 0), abs(r))


def f32_mul(a, b):
    A, B = sval(F32, a), sval(F32, b)
    if (q := nan_operand(A, a, B, b)) is not None:
        return q
    s = A[1] ^ B[1]
    if A[0] == "inf" or B[0] == "inf":
        if (A[0] == "fin" and A[2] == 0) or (B[0] == "fin" and B[2] == 0):
            return F32_DEFAULT_NAN
        return s << 31 | F32.inf
    return round_formula(F32, s, A[2] * B[2])


def f32_div(a, b):
    A, B = sval(F32, a), sval(F32, b)
    if (q := nan_operand(A, a, B, b)) is not None:
        return q
    s = A[1] ^ B[1]
    if A[0] == "inf":
        return F32_DEFAULT_NAN if B[0] == "inf" else s << 31 | F32.inf
    if B[0] == "inf":
        return s << 31
    if B[2] == 0:
        return F32_DEFAULT_NAN if A[2] == 0 else s << 31 | F32.inf
    return round_formula(F32, s, A[2] / B[2])


def f32_sqrt(a):
    A = sval(F32, a)
    if A[0] == "nan":
        return a | 0x400000
    if A[0] == "fin" and A[2] == 0:
        return a                             # sqrt(-0) = -0
    if A[1]:
        return F32_DEFAULT_NAN               # x86 sqrtss of a negative: 0xFFC00000
    if A[0] == "inf":
        return F32.inf
    return round_formula(F32, 0, sqrt_sticky(A[2]))


def sqrt_sticky(x):
    """A Fraction that rounds like sqrt(x) at any precision up to 60 bits: floor(sqrt) at >= 64
    bits, plus 1/2 if inexact (no rounding boundary lies strictly between two such integers)."""
    n, d = x.numerator, x.denominator
    t = 70 - (n.bit_length() - d.bit_length()) // 2      # scale 2^t: sqrt(x) 2^t has about 70 bits
    t = max(t, 0)
    N = (n << (2 * t)) // d
    exact = (n << (2 * t)) % d == 0
    r = math.isqrt(N)
    if not (exact and r * r == N):
        return (r + Fraction(1, 2)) / 2**t
    return Fraction(r, 2**t)


def f32_lt(a, b):
    A, B = sval(F32, a), sval(F32, b)
    if "nan" in (A[0], B[0]):
        return False
    return key(A) < key(B)


def key(v):
    """An ordering key of a non-NaN sval (inf as a number beyond every finite)."""
    mag = Fraction(2) ** 200 if v[0] == "inf" else v[2]
    return -mag if v[1] else mag


# ---- chosen values -----------------------------------------------------------------------------
rng = random.Random(2029)


def float_candidates():
    """(sign, Fraction) values around every float target's edges and ties: max finite and the
    overflow threshold (448 464 480 ...), min normal, subnormals, ties odd and even."""
    out = []
    for f in (F16, BF16, E4M3, E5M2, F32):
        v = lambda b, f=f: frac_of(f, b)[1]
        mx, ulp = v(f.maxfin), v(f.maxfin) - v(f.maxfin - 1)
        out += [mx, mx + ulp / 4, mx + ulp / 2, mx + ulp * 3 / 4, mx + ulp, mx + 2 * ulp, 2 * mx]
        minsub, minnorm = v(1), v(1 << f.mbits)
        out += [minnorm, v((1 << f.mbits) - 1), minsub, minsub / 2, minsub / 4, minsub * 3 / 4, minsub * 3 / 2,
                minsub * 5 / 2, minnorm - minsub / 2, minsub / 2 + minsub / 1024]
        for _ in range(12):  # ties between neighbours b, b+1 (both parities), normal and subnormal
            for b0 in (rng.randrange(f.maxfin - 2), rng.randrange((1 << f.mbits) - 2)):
                for b in (b0, b0 + 1):
                    out.append((v(b) + v(b + 1)) / 2)
    out += [Fraction(1, 10), Fraction(1, 3), Fraction(1, 2), Fraction(3, 2), Fraction(5, 2), Fraction(9999, 10000),
            Fraction(10**5), Fraction(1, 10**5), Fraction(10**30), Fraction(1, 10**30), Fraction(10**300),
            Fraction(1, 10**300), Fraction(2**1000 * 3)]
    return out


def int_candidates():
    """Integers: every int type's limits and +-1 around them, 2^k and 2^k+-1 up to k = 64, ties at
    each float precision (p = 3 4 8 11 24 53 significant bits) with odd and even kept parts, +-1."""
    out = [0, 1, 2, 3, 100, 300, 2**60 + 2**52 + 1, 448, 464, 480, 57344, 61440, 65504, 65519, 65520, 65521, 65536]
    for w, signed in INTS.values():
        lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
        out += [lo - 1, lo, lo + 1, hi - 1, hi, hi + 1]
    for k in range(65):
        out += [2**k - 1, 2**k, 2**k + 1]
    for p in (3, 4, 8, 11, 24, 53):
        for L in sorted({p + 1, p + 2, p + 5, 25, 32, 33, 54, 63, 64} - set(range(p + 1))):
            q = rng.getrandbits(p - 1) | 1 << (p - 1)
            for qq in (q & ~1, q | 1):
                n = qq << (L - p) | 1 << (L - p - 1)
                out += [n - 1, n, n + 1]
    return out + [-n for n in out]


def float_source_bits(f):
    """A few thousand patterns of float32/float64: specials, NaNs, the candidates rounded into f
    and their neighbours (one ulp either side), then random patterns."""
    n_bits = 8 * f.size
    pats = [0, f.sign_bit, f.inf, f.sign_bit | f.inf]
    if f is F32:
        pats += [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FA00000, 0xFFC12345, 0x7FFFFFFF, 0xFFFFFFFF,
                 0x7F802000, 0x7FBFE000, 0x7F900000, 0xFFD00001, 0x7FE00000]
    else:
        pats += [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0xFFF0000000000001, 0x7FF4000000000000,
                 0xFFFC123456789ABC, 0x7FFFFFFFFFFFFFFF, 0x7FF0040000000000, 0x7FF0000020000000, 0x7FF7FC0000000000,
                 0xFFF2000000000000, 0x7FFC000000000000]
    mags = []
    for x in float_candidates() + [Fraction(n) for n in int_candidates() if n > 0]:
        b = round_formula(f, 0, x)
        mags += [b, b - 1, b + 1]
    for k in range(1, 66):   # integer limits +- 1/2 and just below the next integer
        for n in (2**k, 2**(k - 1) - 1):
            mags += [round_formula(f, 0, Fraction(n) + Fraction(1, 2)), round_formula(f, 0, Fraction(n) - Fraction(1, 2))]
    for b in mags:
        if 0 <= b <= f.inf:
            pats += [b, b | f.sign_bit]
    pats += [rng.getrandbits(n_bits) for _ in range(1000)]
    return dedupe(pats)


def int_source_bits(width, signed):
    pats = [n & (ALL_ONES >> (64 - width)) for n in int_candidates()]
    pats += [rng.getrandbits(width) for _ in range(500)]
    for _ in range(1000):  # random magnitudes of every length, either sign
        n = rng.getrandbits(rng.randrange(1, width + 1))
        pats.append((-n if rng.random() < 0.5 else n) & (ALL_ONES >> (64 - width)))
    return dedupe(pats)


def dedupe(xs):
    seen, out = set(), []
    for x in xs:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def source_bits(dt):
    if dt == "bool":
        return list(range(2))
    if SIZE[dt] <= 2:
        return list(range(1 << (8 * SIZE[dt])))  # every pattern
    if dt in FLOATS:
        return float_source_bits(FLOATS[dt])
    return int_source_bits(*INTS[dt])


# ---- cases --------------------------------------------------------------------------------------
def sink(names):
    return f"%out = SINK void ({', '.join('%' + k for k in names)}) ({', '.join(chr(34) + k + chr(34) for k in names)})"


def cast_case(src):
    """x of dtype src; to_<dst>: CAST to each of the other 14 dtypes; bits_<dst>: BITCAST to each
    other dtype of src's size."""
    bits = np.array(source_bits(src), U)
    n = len(bits)
    key = src if SIZE[src] <= 2 else None
    outs = {}
    text = [f'%x = BUFFER {src} () ("x", {n})']
    for dst in DTYPES:
        if dst != src:
            outs["to_" + dst] = to_npy(dst, cast_bits(src, bits, dst, key))
            text.append(f"%to_{dst} = CAST {dst} (%x)")
    for dst in DTYPES:
        if dst != src and src != "bool" and dst != "bool" and SIZE[dst] == SIZE[src]:
            outs["bits_" + dst] = to_npy(dst, bits)
            text.append(f"%bits_{dst} = BITCAST {dst} (%x)")
    text.append(sink(outs))
    return text, {"x": to_npy(src, bits)}, outs


def widen(dt, bits):
    """Narrow float patterns -> float32 patterns (exact), as Python ints."""
    return cast_bits(dt, np.array(bits, U), "float32").tolist()


def narrow(dt, bits32):
    """float32 patterns -> dt by rule 4."""
    return cast_bits("float32", np.array(bits32, U), dt).tolist()


def f32_max(a, b):
    A, B = sval(F32, a), sval(F32, b)
    if A[0] == "nan" or B[0] == "nan":
        return F32_QNAN
    return a if key(A) > key(B) else b


F32_OPS = {"add": f32_add, "sub": lambda a, b: f32_add(a, b, True), "mul": f32_mul, "fdiv": f32_div, "max": f32_max}
ALU_LOG = []  # (dtype, op, a32, b32, r32, narrow result) of every float ALU step, for the checks


def float_alu(dt, op, a, b):
    """dt patterns a, b (lists) -> dt patterns of op: widened, the float32 step, cast back."""
    a32, b32 = widen(dt, a), widen(dt, b)
    r32 = [F32_OPS[op](x, y) for x, y in zip(a32, b32)]
    r = narrow(dt, r32)
    ALU_LOG.extend((dt, op, x, y, z, w) for x, y, z, w in zip(a32, b32, r32, r))
    return r


def float_specials(f):
    sb = f.sign_bit
    one_bits = round_formula(f, 0, Fraction(1))
    vals = [0, sb, 1, sb | 1, (1 << f.mbits) - 1, 1 << f.mbits, sb | 1 << f.mbits, f.maxfin, f.lowest, f.maxfin - 1,
            one_bits, sb | one_bits, round_formula(f, 0, Fraction(3, 2)), round_formula(f, 1, Fraction(5, 2)),
            round_formula(f, 0, Fraction(1, 10)), round_formula(f, 0, Fraction(7))]
    if f.ieee:
        vals += [f.inf, sb | f.inf, f.qnan, sb | f.qnan | 1, f.inf | 1]   # quiet, negative with payload, signalling
    else:
        vals += [f.qnan, sb | f.qnan]
    return vals


def arith_float_case(dt):
    f = FLOATS[dt]
    sp = float_specials(f)
    a, b = [], []
    for x in sp:
        for y in sp:
            a.append(x)
            b.append(y)
    nb = 1 << 8 * f.size
    for _ in range(200):
        a.append(rng.randrange(nb))
        b.append(rng.randrange(nb))
    # no pair of two NaNs: which one x86 returns depends on the operand order a C compiler picks
    for i in range(len(a)):
        if f.is_nan(a[i]) and f.is_nan(b[i]):
            b[i] = round_formula(f, 0, Fraction(1))
    outs = {op: float_alu(dt, op, a, b) for op in ("add", "sub", "mul", "fdiv", "max")}
    a32, b32 = widen(dt, a), widen(dt, b)
    s32 = [f32_sqrt(x) for x in a32]
    outs["sqrt"] = narrow(dt, s32)
    ALU_LOG.extend((dt, "sqrt", x, 0, z, w) for x, z, w in zip(a32, s32, outs["sqrt"]))
    outs["neg"] = narrow(dt, [x ^ 0x80000000 for x in a32])  # widened (a NaN quieted), sign flipped, rounded back
    lt = [f32_lt(x, y) for x, y in zip(a32, b32)]
    ne = [not (sval(F32, x)[0] != "nan" and sval(F32, y)[0] != "nan" and key(sval(F32, x)) == key(sval(F32, y)))
          for x, y in zip(a32, b32)]
    expected = {k: to_npy(dt, v) for k, v in outs.items()}
    expected["lt"], expected["ne"] = to_npy("bool", lt), to_npy("bool", ne)
    n = len(a)
    text = [f'%a = BUFFER {dt} () ("a", {n})', f'%b = BUFFER {dt} () ("b", {n})']
    for name, op in (("add", "ADD"), ("sub", "SUB"), ("mul", "MUL"), ("fdiv", "FDIV"), ("max", "MAX")):
        text.append(f"%{name} = {op} {dt} (%a, %b)")
    text += [f"%sqrt = SQRT {dt} (%a)", f"%neg = NEG {dt} (%a)", "%lt = CMPLT bool (%a, %b)", "%ne = CMPNE bool (%a, %b)"]
    text.append(sink(["add", "sub", "mul", "fdiv", "max", "sqrt", "neg", "lt", "ne"]))
    return text, {"a": to_npy(dt, a), "b": to_npy(dt, b)}, expected


def wrap(n, w, signed):
    n &= (1 << w) - 1
    return n - (1 << w) if signed and n >> (w - 1) else n


def c_div(x, y):
    q = abs(x) // abs(y)
    return -q if (x < 0) != (y < 0) else q


def arith_int_case(dt):
    w, signed = INTS[dt]
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
    edge = sorted({lo, lo + 1, hi, hi - 1, 0, 1, 2, 3, 7, 100 % (hi + 1), wrap(-1, w, signed), wrap(-2, w, signed),
                   wrap(-7, w, signed), 1 << (w - 2), (1 << (w - 2)) + 5})
    a, b = [], []
    for x in edge:
        for y in edge:
            a.append(x)
            b.append(y)
    for _ in range(150):
        a.append(wrap(rng.getrandbits(w), w, signed))
        b.append(wrap(rng.getrandbits(w), w, signed))
    n = len(a)
    d = [y if y != 0 else wrap(-1, w, signed) for y in b]  # nonzero divisors (y = 0 would be an error)
    c = [rng.randrange(w) for _ in range(n)]
    c[:w] = list(range(w))
    outs = {
        "add": [wrap(x + y, w, signed) for x, y in zip(a, b)],
        "sub": [wrap(x - y, w, signed) for x, y in zip(a, b)],
        "mul": [wrap(x * y, w, signed) for x, y in zip(a, b)],
        "idiv": [wrap(c_div(x, y), w, signed) for x, y in zip(a, d)],
        "mod": [wrap(x - c_div(x, y) * y, w, signed) for x, y in zip(a, d)],
        "and": [wrap(x & y, w, signed) for x, y in zip(a, b)],
        "or": [wrap(x | y, w, signed) for x, y in zip(a, b)],
        "xor": [wrap(x ^ y, w, signed) for x, y in zip(a, b)],
        "max": [max(x, y) for x, y in zip(a, b)],
        "shl": [wrap(x << k, w, signed) for x, k in zip(a, c)],
        "shr": [x >> k for x, k in zip(a, c)],  # Python's >> on a negative int is arithmetic
        "neg": [wrap(-x, w, signed) for x in a],
    }
    assert all(lo <= v <= hi for vs in outs.values() for v in vs)
    npdt = NPY[dt]
    expected = {k: np.array(v, npdt) for k, v in outs.items()}
    expected["lt"] = np.array([x < y for x, y in zip(a, b)], np.bool_)
    expected["ne"] = np.array([x != y for x, y in zip(a, b)], np.bool_)
    text = [f'%a = BUFFER {dt} () ("a", {n})', f'%b = BUFFER {dt} () ("b", {n})',
            f'%d = BUFFER {dt} () ("d", {n})', f'%c = BUFFER {dt} () ("c", {n})']
    ops = {"add": "ADD", "sub": "SUB", "mul": "MUL", "idiv": "IDIV", "mod": "MOD", "and": "AND", "or": "OR",
           "xor": "XOR", "max": "MAX", "shl": "SHL", "shr": "SHR"}
    second = {"idiv": "%d", "mod": "%d", "shl": "%c", "shr": "%c"}
    for name, op in ops.items():
        text.append(f"%{name} = {op} {dt} (%a, {second.get(name, '%b')})")
    text += [f"%neg = NEG {dt} (%a)", "%lt = CMPLT bool (%a, %b)", "%ne = CMPNE bool (%a, %b)"]
    text.append(sink(list(ops) + ["neg", "lt", "ne"]))
    ins = {k: np.array(v, npdt) for k, v in dict(a=a, b=b, d=d, c=c).items()}
    return text, ins, expected


ROWS, COLS = 4, 37


def reduce_rows_float(dt):
    f = FLOATS[dt]
    r = lambda x: round_formula(f, int(x < 0), abs(Fraction(x)))
    tenth = r(Fraction(1, 10))
    big = r(2 ** (f.mbits + 1))          # its ulp is 2: adding 0.1 rounds back (the sum stalls)
    row0 = [big] + [tenth] * (COLS - 1)  # (and the product underflows to 0)
    row1 = [r(Fraction(rng.choice([-1, 1]) * rng.randrange(64, 256), 128)) for _ in range(COLS)]  # |x| in [0.5, 2)
    row2 = [tenth] * COLS                # 37 x 0.1 rounded at every step, not 3.7 rounded once
    row3 = [r(Fraction(rng.choice([-1, 1]) * rng.randrange(1, 4000), rng.randrange(1, 300))) for _ in range(COLS)]
    inf = f.inf if f.ieee else f.maxfin
    row3[3], row3[9], row3[12], row3[30] = f.sign_bit, inf, 0, f.sign_bit | inf  # -0; inf * 0, inf + -inf: invalid
    return [row0, row1, row2, row3]


def reduce_rows_int(dt):
    w, signed = INTS[dt]
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
    return [[hi] * COLS,
            [wrap(rng.getrandbits(w), w, signed) for _ in range(COLS)],
            [wrap(rng.choice([-3, -1, 1, 2, 3, 5]), w, signed) for _ in range(COLS)],
            [lo] + [wrap(rng.randrange(-9, 10), w, signed) for _ in range(COLS - 1)]]


def reduce_case(dt):
    """REDUCE_AXIS of a (4, 37) input over axis 1 with ADD, MUL and MAX: a fold rounded (or
    wrapped) at every step in the node's dtype."""
    outs = {}
    if dt in FLOATS:
        f = FLOATS[dt]
        rows = reduce_rows_float(dt)
        one = round_formula(f, 0, Fraction(1))
        ident = {"add": 0, "mul": one, "max": (f.sign_bit | f.inf) if f.ieee else f.lowest}
        for op in ("add", "mul", "max"):
            res = []
            for row in rows:
                acc = ident[op]
                for v in row:
                    acc = float_alu(dt, op, [acc], [v])[0]
                res.append([acc])
            outs[op] = to_npy(dt, res, (ROWS, 1))
        x = to_npy(dt, rows, (ROWS, COLS))
    else:
        w, signed = INTS[dt]
        rows = reduce_rows_int(dt)
        lo = -(1 << (w - 1)) if signed else 0
        fold = {"add": (lambda p, q: p + q, 0), "mul": (lambda p, q: p * q, 1), "max": (max, lo)}
        for op, (fn, init) in fold.items():
            res = []
            for row in rows:
                acc = init
                for v in row:
                    acc = wrap(fn(acc, v), w, signed)
                res.append([acc])
            outs[op] = np.array(res, NPY[dt])
        x = np.array(rows, NPY[dt])
    text = [f'%xb = BUFFER {dt} () ("x", {ROWS * COLS})', f"%c{ROWS} = CONST index () {ROWS}",
            f"%c{COLS} = CONST index () {COLS}", f"%x = RESHAPE {dt} (%xb, %c{ROWS}, %c{COLS})"]
    for op in ("add", "mul", "max"):
        text.append(f"%{op} = REDUCE_AXIS {dt} (%x) (Ops.{op.upper()}, (1,))")
    text.append(sink(["add", "mul", "max"]))
    return text, {"x": x}, outs


# ---- checks against outside code ---------------------------------------------------------------
def check_vectorized_against_scalar(cases):
    """The vectorized encoder against round_formula (all formats) and round_table (narrow ones)
    on the chosen wide values and on a sample of every 2-byte table."""
    n = 0
    for src in DTYPES:
        _, ins, outs = cases["cast_" + src]
        bits = bits_of(ins["x"])
        ob = {k: bits_of(v).tolist() for k, v in outs.items()}
        idx = range(len(bits)) if len(bits) <= 1 << 8 or SIZE[src] > 2 else rng.sample(range(len(bits)), 6000)
        for i in idx:
            b = int(bits[i])
            if src in FLOATS:
                v = sval(FLOATS[src], b)
                if v[0] != "fin":
                    continue
                s, x = v[1], v[2]
            elif src == "bool":
                s, x = 0, Fraction(b)
            else:
                val = wrap(b, *INTS[src])
                s, x = int(val < 0), Fraction(abs(val))
            for dst in FLOATS:
                if dst == src:
                    continue
                got = ob["to_" + dst][i]
                want = round_formula(FLOATS[dst], s, x)
                assert got == want, (src, dst, hex(b), hex(got), hex(want))
                if dst in NARROW_FLOATS:
                    assert round_table(FLOATS[dst], s, x) == want, (src, dst, hex(b))
                n += 1
            got = ob["to_bool"][i] if src != "bool" else 1 if x else 0
            assert got == (1 if x else 0), (src, hex(b))
            for dst in INTS:  # rule 3 / rule 2 from the exact value
                if dst == src:
                    continue
                w, signed = INTS[dst]
                t = int(x)  # truncation toward zero of a nonnegative Fraction
                if src in FLOATS:
                    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
                    want = min(max(-t if s else t, lo), hi)
                else:
                    want = wrap(-t if s else t, w, signed)
                got = wrap(ob["to_" + dst][i], w, signed)
                assert got == want, (src, dst, hex(b), got, want)
    return n


def check_numpy(cases):
    """float16 against numpy's own conversions (not the FPU: numpy converts float16 in C)."""
    all16 = np.arange(1 << 16, dtype=U)
    f32 = cast_bits("float16", all16, "float32", "float16")
    ours = f32.astype(np.uint32).view(np.float32)
    theirs = all16.astype(np.uint16).view(np.float16).astype(np.float32)
    nan = np.isnan(theirs)
    assert (np.isnan(ours) == nan).all()
    assert (ours.view(np.uint32)[~nan] == theirs.view(np.uint32)[~nan]).all()
    assert (np.signbit(ours[nan]) == np.signbit(theirs[nan])).all()  # numpy keeps a sNaN signalling; we quiet it
    for src in ("float32", "float64"):
        _, ins, outs = cases["cast_" + src]
        x = ins["x"]
        ok = ~np.isnan(x)
        with np.errstate(all="ignore"):
            np16 = x.astype(np.float16)
        assert (outs["to_float16"].view(np.uint16)[ok] == np16.view(np.uint16)[ok]).all(), src
    # float64 -> float32 (cvtsd2ss) including NaNs, float32 -> float64, int64 -> float64 (Python's int -> float)
    _, ins, outs = cases["cast_float64"]
    with np.errstate(all="ignore"):
        n32 = ins["x"].astype(np.float32)
    if platform.machine() in ("x86_64", "AMD64"):
        assert (outs["to_float32"].view(np.uint32) == n32.view(np.uint32)).all()
    _, ins, outs = cases["cast_float32"]
    ok = ~np.isnan(ins["x"])
    assert (outs["to_float64"][ok].view(np.uint64) == ins["x"][ok].astype(np.float64).view(np.uint64)).all()
    for src in ("int64", "uint64", "int32", "uint32"):
        _, ins, outs = cases["cast_" + src]
        assert [float(v) for v in ins["x"].tolist()] == outs["to_float64"].tolist(), src


def check_f32_alu():
    """The float32 step against the FPU through numpy, NaN bits included on x86."""
    x86 = platform.machine() in ("x86_64", "AMD64")
    by = {}
    for dt, op, a, b, r, _ in ALU_LOG:
        by.setdefault(op, []).append((a, b, r))
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "fdiv": np.divide}
    for op, rows in by.items():
        a = np.array([t[0] for t in rows], np.uint32).view(np.float32)
        b = np.array([t[1] for t in rows], np.uint32).view(np.float32)
        r = np.array([t[2] for t in rows], np.uint32)
        if op == "max":
            continue  # MAX is defined by the rule, not by an instruction
        with np.errstate(all="ignore"):
            got = (np.sqrt(a) if op == "sqrt" else fn[op](a, b)).view(np.uint32)
        ok = np.ones(len(r), bool) if x86 else ~np.isnan(got.view(np.float32))
        bad = np.nonzero((got != r) & ok)[0]
        assert len(bad) == 0, (op, [(hex(a.view(np.uint32)[i]), hex(b.view(np.uint32)[i]), hex(r[i]), hex(got[i])) for i in bad[:5]])
    # the double rounding is innocuous: every finite narrow result of + - * / is the exact result rounded once
    for dt, op, a, b, r, w in ALU_LOG:
        if op in ("add", "sub", "mul", "fdiv") and sval(F32, r)[0] == "fin":
            A, B = sval(F32, a), sval(F32, b)
            if A[0] != "fin" or B[0] != "fin" or (op == "fdiv" and B[2] == 0):
                continue
            x, y = (-A[2] if A[1] else A[2]), (-B[2] if B[1] else B[2])
            exact = {"add": x + y, "sub": x - y, "mul": x * y, "fdiv": x / y if y else None}[op]
            if exact == 0:
                continue
            assert round_table(FLOATS[dt], int(exact < 0), abs(exact)) == w, (dt, op, hex(a), hex(b))
        elif op == "sqrt" and sval(F32, a)[0] == "fin" and not sval(F32, a)[1] and sval(F32, a)[2] > 0:
            assert round_table(FLOATS[dt], 0, sqrt_sticky(sval(F32, a)[2])) == w, (dt, hex(a))


def load_tinygrad():
    root = os.path.join(os.path.dirname(REPO), "shared", "tinygrad")
    for cand in (root, "/work/shared/tinygrad"):
        if os.path.isdir(os.path.join(cand, "tinygrad")):
            sys.path.insert(0, cand)
            break
    try:
        import tinygrad.dtype as tdt
        return tdt
    except Exception as e:  # noqa: BLE001 (any failure: report and skip only this check)
        print(f"WARNING: cannot import tinygrad ({e}); the fp8/bf16 checks against tinygrad are SKIPPED", file=sys.stderr)
        return None


def as_pyfloats(dt, bits):
    """Python floats with the exact values of dt patterns (via float64 bits, so NaN payloads are kept)."""
    b64 = bits if dt == "float64" else cast_bits(dt, np.asarray(bits, U), "float64")
    return np.asarray(b64, U).view(np.float64).tolist()


def check_tinygrad(tdt, cases):
    T = tdt.dtypes
    fp8 = {"fp8e4m3": T.fp8e4m3, "fp8e5m2": T.fp8e5m2}
    n = 0
    for src in ("float16", "bfloat16", "float64"):
        _, ins, outs = cases["cast_" + src]
        xs = bits_of(ins["x"])
        pyf = as_pyfloats(src, xs)
        for name, tdtype in fp8.items():
            ours = bits_of(outs["to_" + name]).tolist()
            for b, x, o in zip(xs.tolist(), pyf, ours):
                t = tdt.float_to_fp8(x, tdtype)
                # NaN: tinygrad's e4m3 gives 0x7F/0xFF, e5m2 0x7E | the top 2 mantissa bits, with the sign = rule 4
                assert t == o, (src, name, hex(b), hex(t), hex(o))
                n += 1
    for name, tdtype in fp8.items():  # the decoder: every non-NaN pattern, by value and sign
        f = FLOATS[name]
        for b in range(256):
            if f.is_nan(b):
                assert math.isnan(tdt.fp8_to_float(b, tdtype))
                continue
            v = sval(f, b)
            t = tdt.fp8_to_float(b, tdtype)
            want = math.copysign(math.inf if v[0] == "inf" else float(v[2]), -1.0 if v[1] else 1.0)
            assert t == want and math.copysign(1, t) == math.copysign(1, want), (name, hex(b), t, want)
            n += 1
    # bfloat16 from every finite float32 generated (the cast inputs and the ALU's float32 results)
    f32s = bits_of(cases["cast_float32"][1]["x"]).tolist() + [r for _, _, _, _, r, _ in ALU_LOG]
    f32s = [b for b in dedupe(f32s) if sval(F32, b)[0] == "fin"]
    ours = cast_bits("float32", np.array(f32s, U), "bfloat16").tolist()
    for b, o in zip(f32s, ours):
        t = tdt.float_to_bf16(struct.unpack("<f", struct.pack("<I", b))[0])
        tb = struct.unpack("<I", struct.pack("<f", t))[0]
        assert tb & 0xFFFF == 0 and tb >> 16 == o, (hex(b), hex(tb), hex(o))
        n += 1
    return n


# ---- main -------------------------------------------------------------------------------------------
def write_case(out, case, text, ins, outs):
    with open(os.path.join(out, case + ".uop"), "w") as fh:
        fh.write(f"# {case}: generated by reference/narrow/make_narrow.py (expected outputs in {case}/)\n")
        fh.write("\n".join(text) + "\n")
    d = os.path.join(out, case)
    os.makedirs(d, exist_ok=True)
    total = 0
    for prefix, arrays in (("in_", ins), ("out_", outs)):
        for k, v in arrays.items():
            p = os.path.join(d, f"{prefix}{k}.npy")
            np.save(p, v)
            total += os.path.getsize(p)
    return total + os.path.getsize(os.path.join(out, case + ".uop"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=HERE, help="directory for <case>.uop and <case>/ (default: beside this script)")
    ap.add_argument("--no-checks", action="store_true", help="skip the self-checks (numpy, tinygrad, scalar)")
    args = ap.parse_args()
    t0 = time.time()
    cases = {}
    for src in DTYPES:
        cases["cast_" + src] = cast_case(src)
    for dt in NARROW_INTS + NARROW_FLOATS:
        cases["arith_" + dt] = arith_float_case(dt) if dt in FLOATS else arith_int_case(dt)
    for dt in NARROW_INTS + NARROW_FLOATS:
        cases["reduce_" + dt] = reduce_case(dt)
    t1 = time.time()
    if not args.no_checks:
        n = check_vectorized_against_scalar(cases)
        check_numpy(cases)
        check_f32_alu()
        tdt = load_tinygrad()
        m = check_tinygrad(tdt, cases) if tdt else 0
        print(f"checks: {n} conversions against the scalar roundings, numpy, the FPU, {m} against tinygrad")
    t2 = time.time()
    os.makedirs(args.out, exist_ok=True)
    total = sum(write_case(args.out, c, *v) for c, v in cases.items())
    print(f"wrote {len(cases)} cases ({total} bytes) to {args.out} in {time.time() - t0:.1f} s "
          f"(generation {t1 - t0:.1f} s, checks {t2 - t1:.1f} s)")


if __name__ == "__main__":
    main()
