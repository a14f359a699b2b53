"""One `ow serve` process and the protocol spoken with it (reference/SERVE.md).

A request is a JSON header line followed by the raw .npy bytes of each input; a response is a
JSON header line followed by the raw .npy bytes of each output. The worker caches parsed and
compiled graphs, so running one graph many times through one Worker compiles it once.
"""
import io
import json
import math
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


class Error(Exception):
    """An error from outerworld: str(e) is exactly the message `ow` prints for it.

    kind says whose problem it is: "user" (the graph or the inputs), "unsupported" (a valid graph
    the compiled path does not handle yet; backend "interp" runs it), "uninitialized" (an output
    reads memory nothing initialized), "budget" (a step or memory limit ran out), "internal" (a
    bug in outerworld), "died" (WorkerDied), "not-differentiable" (a GRADIENT outerworld refuses to
    define). reason: for "unsupported", which limit of the compiled path it is (a stable name such
    as "unshaped-value"); for "not-differentiable", which gradient limit (e.g. "no-rule",
    "per-binding-through-effects"); else None.
    """

    def __init__(self, message, kind="user", reason=None):
        super().__init__(message)
        self.kind = kind
        self.reason = reason


class WorkerDied(Error):
    """The worker process ended during a call. The next call starts a new worker."""

    def __init__(self, message):
        super().__init__(message, kind="died")


@dataclass
class CheckReport:
    """The compiled kernels compared with the interpreter, launch by launch (ow run --backend check).

    agree: every kernel launch and every output matched bit for bit; launches: kernel launches
    compared; message: the agreement, or the first divergence (kernel, bindings, element, values);
    outputs: the compiled outputs when they agreed, else empty.
    """

    agree: bool
    launches: int
    message: str
    compiler: str
    outputs: dict = field(default_factory=dict)

    def __bool__(self):
        return self.agree


def find_ow(ow=None):
    """The ow binary: the argument, else $OW_BIN, else `ow` on PATH, else the one installed with
    this package (PREFIX/bin/ow for PREFIX/lib/python3.X/site-packages/outerworld), else this
    repository's build/tools/ow."""
    here = Path(__file__).resolve()
    candidates = [ow, os.environ.get("OW_BIN"), shutil.which("ow"),
                  here.parents[4] / "bin" / "ow" if len(here.parents) > 4 else None,
                  here.parents[2] / "build" / "tools" / "ow"]
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return str(c)
    if ow or os.environ.get("OW_BIN"):
        raise FileNotFoundError(f"no ow binary at {ow or os.environ['OW_BIN']}")
    raise FileNotFoundError("no ow binary: pass Worker(ow=PATH), set OW_BIN, put ow on PATH, or build it (ninja -C build tools/ow)")


def npy_bytes(array):
    a = np.asarray(array)
    if not a.flags.c_contiguous:  # np.save would write a Fortran-order file, which ow does not read
        a = a.copy(order="C")
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def from_npy(data):
    return np.load(io.BytesIO(data), allow_pickle=False)


# bfloat16 and the fp8s have no numpy dtype: ow reads and writes them as their bits in a one-field
# structured dtype named after them (reference/SEMANTICS.md S2.1.1), so no value is rounded and
# every NaN payload survives the trip. values() turns such bits into numbers.
BITS_DTYPES = {"bfloat16": np.dtype([("bfloat16", "<u2")]), "fp8e4m3": np.dtype([("fp8e4m3", "u1")]),
               "fp8e5m2": np.dtype([("fp8e5m2", "u1")])}


def bits_format(array):
    """"bfloat16", "fp8e4m3" or "fp8e5m2" for an array of that format's bits (BITS_DTYPES), else None."""
    names = np.asarray(array).dtype.names
    return names[0] if names is not None and len(names) == 1 and names[0] in BITS_DTYPES else None


def _fp8_table(ebits, mbits, ieee):
    """The float32 value of each of the 256 bit patterns, from the format's definition (OCP OFP8
    1.0). ieee: the top exponent holds inf and NaNs (E5M2); otherwise (E4M3) it holds normal
    numbers and only S.1111.111 is NaN. At most 4 significant bits, so each value is exact."""
    bias, top, ones = (1 << (ebits - 1)) - 1, (1 << ebits) - 1, (1 << mbits) - 1
    table = np.empty(256, np.float32)
    for b in range(256):
        e, m = (b >> mbits) & top, b & ones
        if e == top and (ieee or m == ones):
            v = math.nan if m else math.inf
        else:  # subnormals have exponent 1 - bias and no implicit bit
            v = math.ldexp(m if e == 0 else (1 << mbits) | m, max(e, 1) - bias - mbits)
        table[b] = -v if b & 0x80 else v
    return table


_FP8_VALUES = {"fp8e4m3": _fp8_table(4, 3, ieee=False), "fp8e5m2": _fp8_table(5, 2, ieee=True)}


def values(array):
    """The numbers an array holds: bfloat16/fp8 bits (BITS_DTYPES, as ow returns those outputs) as
    float32, exactly (each of their values is a float32; a NaN stays NaN); any other array as it is."""
    a = np.asarray(array)
    fmt = bits_format(a)
    if fmt is None:
        return a
    bits = a[fmt]
    if fmt == "bfloat16":  # bfloat16 is float32's top half (flat: numpy makes a 0-d shift a scalar)
        return (bits.astype(np.uint32).reshape(-1) << 16).view(np.float32).reshape(bits.shape)
    return _FP8_VALUES[fmt][bits]


def exit_text(status):
    if status is None:
        return "still running"
    if status < 0:
        try:
            return f"killed by signal {-status} ({signal.Signals(-status).name})"
        except ValueError:
            return f"killed by signal {-status}"
    return f"exit status {status}"


class Worker:
    """A persistent `ow serve` process. Use as a context manager, or call close()."""

    def __init__(self, ow=None, timeout=None, args=()):
        """timeout: seconds one call may take; a worker still busy then is killed (WorkerDied says
        so) and the next call starts a new one. None: no limit (a hung worker blocks its caller).
        args: options of `ow serve` for every request, e.g. ["--max-memory", "2G"] (reference/SERVE.md)."""
        self.ow = find_ow(ow)
        self.args = [str(a) for a in args]
        self.timeout = timeout
        self._timed_out = False
        self.process = None
        self._stderr = None
        self._lock = threading.Lock()  # one request at a time: the pipe carries one conversation
        self._next_id = 0
        self._start()

    # ---- public API ----

    def run(self, graph, inputs=None, backend="interp", flat_inputs=False, error_bound=False):
        """Evaluates the graph (its .uop text) on inputs {name: array}; returns {name: array} in the graph's output order.
        error_bound=True (interpreter only): after each float output NAME also NAME:bound and NAME:nan_origin
        (ow run --error-bound, reference/SEMANTICS.md S8.1)."""
        fields = {"backend": backend, **({"error_bound": True} if error_bound else {})}
        header, outputs = self.request(self._run_header(graph, "run", flat_inputs, **fields), inputs)
        return outputs

    def check(self, graph, inputs=None, compiler="tcc", flat_inputs=False):
        """Runs the graph compiled with `compiler` and interpreted, comparing every kernel launch: a CheckReport."""
        header, outputs = self.request(self._run_header(graph, "check", flat_inputs, compiler=compiler), inputs)
        c = header["check"]
        return CheckReport(c["agree"], c["launches"], c["message"], c["compiler"], outputs)

    def stats(self):
        """The worker's counters: requests, runs, cache_hits, cache_misses, compiles, cached_graphs."""
        header, _ = self.request({"op": "stats"})
        return {k: v for k, v in header.items() if k not in ("id", "ok")}

    def version(self):
        return self.request({"op": "version"})[0]["version"]

    def close(self):
        p, self.process = self.process, None
        if p is None:
            return
        try:
            p.stdin.close()  # the worker exits at the end of its input
        except OSError:
            pass
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        p.stdout.close()
        self._stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- the protocol ----

    def request(self, header, inputs=None):
        """Sends one request (header dict, inputs {name: array}); returns (response header, {name: array}).

        Raises Error for an ok:false response, WorkerDied when the worker ends mid-call.
        """
        with self._lock:
            if self.process is None or self.process.poll() is not None:
                self._restart()
            self._next_id += 1
            header = dict(header, id=self._next_id)
            payloads = [(name, npy_bytes(a)) for name, a in (inputs or {}).items()]
            if payloads:
                header["inputs"] = [{"name": n, "bytes": len(b)} for n, b in payloads]
            timer = self._watchdog()
            try:
                self._send(header, [b for _, b in payloads])
                return self._receive()
            except Error:
                raise  # answered in full (or the worker is already discarded): still in step
            except BaseException:  # interrupted mid-conversation (Ctrl-C): a reply may be pending
                self._discard()
                raise
            finally:
                if timer:
                    timer.cancel()

    def _watchdog(self):
        """A timer that kills the worker when this call outlives self.timeout (its pipes then end)."""
        self._timed_out = False
        if not self.timeout:
            return None
        p = self.process

        def expire():
            if p.poll() is None:
                self._timed_out = True
                p.kill()

        timer = threading.Timer(self.timeout, expire)
        timer.daemon = True
        timer.start()
        return timer

    def _run_header(self, graph, op, flat_inputs, **fields):
        if not isinstance(graph, str):
            raise TypeError(f"graph must be the .uop text (a str; outerworld.load(path) reads a file), got {type(graph).__name__}")
        h = {"op": op, "graph": str(graph), "flat_inputs": bool(flat_inputs), **fields}
        path = getattr(graph, "path", None)
        if path:  # messages name the file as `ow run FILE` would
            h["file"] = str(path)
        return h

    def _start(self):
        self._stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen([self.ow, "serve", *self.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)

    def _restart(self):
        if self.process is not None:
            self._discard()
        self._start()

    def _send(self, header, payloads):
        try:
            self.process.stdin.write(json.dumps(header, ensure_ascii=False).encode() + b"\n")
            for b in payloads:
                self.process.stdin.write(b)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died("while receiving a request") from None

    def _receive(self):
        line = self.process.stdout.readline()
        if not line.endswith(b"\n"):
            raise self._died("before answering")
        try:
            header = json.loads(line)
        except ValueError:  # the conversation is out of step: no later response can be trusted
            self._discard()
            raise Error(f"internal error: the ow worker answered with a malformed header: {line[:200]!r}", "internal") from None
        if not header.get("ok"):
            raise Error(header.get("error", "the worker gave no message"), header.get("kind", "internal"), header.get("reason"))
        outputs = {}
        for o in header.get("outputs", []):
            data = self.process.stdout.read(o["bytes"])
            if len(data) != o["bytes"]:
                raise self._died(f"while sending output '{o['name']}'")
            outputs[o["name"]] = from_npy(data)
        return header, outputs

    def _died(self, when):
        """The WorkerDied for a worker that ended; it is discarded so the next call starts anew."""
        p = self.process
        try:
            status = p.wait(timeout=5)
        except subprocess.TimeoutExpired:  # its stdout closed but it lives on: end it
            p.kill()
            status = p.wait()
        tail = self._stderr_tail()
        self._discard()
        msg = f"the ow worker (pid {p.pid}) died {when}: {exit_text(status)}"
        if self._timed_out:
            msg = f"the ow worker (pid {p.pid}) was killed {when}: the call took more than its timeout of {self.timeout} s"
        return WorkerDied(msg + (f"; its stderr ended with:\n{tail}" if tail else "; its stderr was empty"))

    def _stderr_tail(self, limit=2000):
        f = self._stderr
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - limit))
        return f.read().decode(errors="replace").strip()

    def _discard(self):
        p, self.process = self.process, None
        if p is None:
            return
        if p.poll() is None:
            p.kill()
        p.wait()
        for f in (p.stdin, p.stdout, self._stderr):
            try:
                f.close()
            except OSError:
                pass
