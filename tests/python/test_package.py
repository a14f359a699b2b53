"""The Python package (python/outerworld) against a built ow (OW_BIN): runs on every backend,
exact error messages, a worker dying mid-call, the worker reused and its compiled graphs cached.

Run from the repository root:
  OW_BIN=build/tools/ow PYTHONPATH=python /usr/bin/python3 -m unittest tests/python/test_package.py
"""
import json
import math
import os
import signal
import subprocess
import tempfile
import threading
import unittest
from pathlib import Path

import numpy as np

import outerworld

ROOT = Path(os.environ.get("OW_SOURCE_DIR", Path(__file__).resolve().parents[2]))
CASE = ROOT / "reference" / "cases" / "scan_with_assign.uop"
EXPECTED = ROOT / "reference" / "expected" / "scan_with_assign"

# As tests/interp/test_cases.cpp compares the interpreter with reference/make_expected.py: shapes and
# dtype exactly, values within 1e-5 of the largest expected magnitude. The expected values are
# computed in float64 and rounded once; outerworld computes in float32, rounding after every
# step of each sum, so the two differ by float32 accumulation error (~1e-7 relative here).
REL_TOL = 1e-5


def scan_inputs():
    return {"vec": np.load(EXPECTED / "in_vec.npy"), "mats": np.load(EXPECTED / "in_mats.npy")}


class PackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.worker = outerworld.Worker()
        cls.graph = outerworld.load(CASE)

    @classmethod
    def tearDownClass(cls):
        cls.worker.close()

    def assert_expected(self, outs):
        want = np.load(EXPECTED / "out_out.npy")
        self.assertEqual(list(outs), ["out"])
        got = outs["out"]
        self.assertEqual(got.dtype, np.float32)
        self.assertEqual(got.shape, want.shape)
        self.assertLessEqual(np.max(np.abs(got.astype(np.float64) - want)), REL_TOL * np.max(np.abs(want)))

    def test_runs_on_every_backend(self):
        for backend in ["interp", "tcc", "cc", "check"]:
            with self.subTest(backend=backend):
                self.assert_expected(self.worker.run(self.graph, scan_inputs(), backend=backend))

    def test_check_reports_agreement(self):
        for compiler in ["tcc", "cc"]:
            with self.subTest(compiler=compiler):
                report = self.worker.check(self.graph, scan_inputs(), compiler=compiler)
                self.assertTrue(report.agree, report.message)
                self.assertGreater(report.launches, 0)
                self.assertEqual(report.compiler, compiler)
                self.assertIn("agree with the interpreter bit for bit", report.message)
                self.assert_expected(report.outputs)

    def test_module_level_functions(self):
        self.assert_expected(outerworld.run(self.graph, scan_inputs()))
        self.assertTrue(outerworld.check(str(self.graph), scan_inputs()).agree)

    def test_missing_input_is_an_error_with_the_engines_message(self):
        with self.assertRaises(outerworld.Error) as e:
            self.worker.run(self.graph, {"vec": scan_inputs()["vec"]}, backend="tcc")
        self.assertEqual(str(e.exception), "input 'mats' was given no data: the graph reads it and nothing writes it (inputs: vec, mats)")
        self.assertEqual(e.exception.kind, "user")

    def test_error_kinds_say_whose_problem_it_is(self):
        # A buffer the graph writes, given no data, read by the output: poison on every backend.
        acc = ('%0 = BUFFER float32 () ("acc", 4)\n%1 = BUFFER float32 () ("x", 4)\n'
                               '%2 = ADD float32 (%0, %1)\n%3 = ASSIGN float32 (%0, %2)\n%4 = SINK void (%3) ("out",)\n')
        for backend in ["interp", "tcc"]:
            with self.subTest(backend=backend), self.assertRaises(outerworld.Error) as e:
                self.worker.run(acc, {"x": np.arange(4, dtype=np.float32)}, backend=backend)
            self.assertEqual(e.exception.kind, "uninitialized")
            self.assertTrue(str(e.exception).startswith("output 'out' reads uninitialized memory: 4 of 4"))
        # A scalar output: the interpreter computes it, the compiled path refuses it as its own limit.
        scalar = ('%0 = CONST float32 () 1.5\n%1 = SINK void (%0) ("out",)\n')
        self.assertEqual(float(self.worker.run(scalar, {}, backend="interp")["out"]), 1.5)
        with self.assertRaises(outerworld.Error) as e:
            self.worker.run(scalar, {}, backend="tcc")
        self.assertEqual(e.exception.kind, "unsupported")
        self.assertEqual(e.exception.reason, "unshaped-value")
        self.assertEqual(str(e.exception), "lowering: an unshaped (scalar) output CONST (not supported by the compiled path yet)")
        # A gradient outerworld refuses to define: refused alike on every backend, with its reason.
        unordered = ('%0 = BUFFER float64 () ("b", 3)\n%1 = CONST float64 () 2.0\n%2 = CONST index () 1\n'
                     '%3 = RESHAPE float64 (%1, %2)\n%4 = CONST index () 3\n%5 = EXPAND float64 (%3, %4)\n'
                     '%6 = MUL float64 (%0, %5)\n%7 = STORE void (%0, %6)\n%8 = AFTER float64 (%0, %7)\n'
                     '%9 = MUL float64 (%8, %0)\n%10 = GRADIENT float64 (%9, %0)\n%11 = SINK void (%10) ("g",)\n')
        for backend in ["interp", "tcc"]:
            with self.subTest(backend=backend), self.assertRaises(outerworld.Error) as e:
                self.worker.run(unordered, {"b": np.ones(3)}, backend=backend)
            self.assertEqual(e.exception.kind, "not-differentiable")
            self.assertEqual(e.exception.reason, "unordered-read")
            self.assertTrue(str(e.exception).startswith("gradient: a read of buffer 'b' is not ordered after a write of it"))

    def test_shape_mismatch_says_how_to_pass_flat(self):
        inputs = scan_inputs()
        inputs["mats"] = inputs["mats"].reshape(-1)
        with self.assertRaises(outerworld.Error) as e:
            self.worker.run(self.graph, inputs)
        self.assertEqual(str(e.exception), "input 'mats': shape (300,) does not match buffer 'mats', which the graph views as (3, 10, 10) "
                                           "(the same 300 elements: set flat_inputs to read them row-major)")
        self.assert_expected(self.worker.run(self.graph, inputs, flat_inputs=True))

    def test_any_memory_layout_is_sent_in_c_order(self):
        inputs = scan_inputs()
        inputs["mats"] = np.asfortranarray(inputs["mats"])
        self.assert_expected(self.worker.run(self.graph, inputs, backend="tcc"))

    def test_parse_error_is_what_ow_prints(self):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "bad.uop"
            path.write_text(CASE.read_text().replace("MUL float32 (%18", "MUL float32 (%99"))
            ow = subprocess.run([self.worker.ow, "run", str(path)], capture_output=True, text=True)
            self.assertEqual(ow.returncode, 1)
            with self.assertRaises(outerworld.Error) as e:
                self.worker.run(outerworld.load(path), scan_inputs())
            self.assertEqual(str(e.exception) + "\n", ow.stderr)

    def test_worker_is_reused_and_compiled_graphs_are_cached(self):
        with outerworld.Worker() as w:
            pid = w.process.pid
            w.run(self.graph, scan_inputs(), backend="tcc")
            first = w.stats()
            w.run(self.graph, scan_inputs(), backend="tcc")
            second = w.stats()
            self.assertEqual(w.process.pid, pid)
            self.assertEqual((first["compiles"], first["cache_misses"]), (1, 1))
            self.assertEqual((second["compiles"], second["cache_misses"], second["cache_hits"]), (1, 1, 1))
            self.assertEqual(second["runs"], 2)
            w.run(self.graph, scan_inputs(), backend="cc")  # another backend: compiled anew
            self.assertEqual(w.stats()["compiles"], 2)

    def test_serve_options_apply_to_every_request(self):
        # a memory budget too small for the scan's values: a budget error, and the worker goes on
        with outerworld.Worker(args=["--max-memory", "1K"]) as w:
            for _ in range(2):
                with self.assertRaises(outerworld.Error) as e:
                    w.run(self.graph, scan_inputs())
                self.assertEqual(e.exception.kind, "budget")
                self.assertIn("memory budget exceeded", str(e.exception))

    def test_killed_worker_raises_worker_died_and_the_next_call_works(self):
        with outerworld.Worker() as w:
            pid = w.process.pid
            threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()
            with self.assertRaises(outerworld.WorkerDied) as e:
                w.request({"op": "sleep", "seconds": 60})
            self.assertIn(f"pid {pid}", str(e.exception))
            self.assertIn("SIGKILL", str(e.exception))
            self.assertIsInstance(e.exception, outerworld.Error)
            self.assert_expected(w.run(self.graph, scan_inputs()))
            self.assertNotEqual(w.process.pid, pid)

    def test_a_hung_worker_is_killed_at_the_timeout_and_the_next_call_works(self):
        with outerworld.Worker(timeout=0.5) as w:
            pid = w.process.pid
            with self.assertRaises(outerworld.WorkerDied) as e:
                w.request({"op": "sleep", "seconds": 60})  # stands for a call that never answers
            self.assertEqual(str(e.exception), f"the ow worker (pid {pid}) was killed before answering: the call took more than its timeout of 0.5 s; its stderr was empty")
            self.assert_expected(w.run(self.graph, scan_inputs()))  # well within the timeout
            self.assertNotEqual(w.process.pid, pid)

    def test_an_interrupted_call_does_not_leave_its_reply_for_the_next(self):
        with outerworld.Worker() as w:
            pid = w.process.pid
            main = threading.main_thread().ident  # the signal must interrupt the main thread's read
            threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT)).start()
            with self.assertRaises(KeyboardInterrupt):
                w.request({"op": "sleep", "seconds": 5})
            self.assertEqual(w.stats()["requests"], 1)  # a new worker, not the old reply
            self.assertNotEqual(w.process.pid, pid)

    def test_worker_killed_between_calls_is_replaced(self):
        with outerworld.Worker() as w:
            pid = w.process.pid
            os.kill(pid, signal.SIGKILL)
            w.process.wait()
            self.assert_expected(w.run(self.graph, scan_inputs()))
            self.assertNotEqual(w.process.pid, pid)


class ProtocolTest(unittest.TestCase):
    """ow serve directly: bad requests are answered, never fatal; the end of input ends it."""

    def serve(self, data):
        ow = outerworld.find_ow()
        p = subprocess.run([ow, "serve"], input=data, capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_malformed_header_is_answered_and_the_worker_goes_on(self):
        out = self.serve(b'{"id": 1, "op": \n{"id": 2, "op": "ping"}\n[1]\n{"id": 3, "op": "nope"}\n').splitlines()
        responses = [json.loads(x) for x in out]
        self.assertEqual(len(responses), 4)
        self.assertFalse(responses[0]["ok"])
        self.assertTrue(responses[0]["error"].startswith("request header: malformed JSON at column"))
        self.assertEqual((responses[1]["id"], responses[1]["ok"]), (2, True))
        self.assertEqual(responses[2]["error"], "request header: a request header must be a JSON object")
        self.assertEqual(responses[3]["error"], "unknown op 'nope' (ops: run, check, ping, version, stats, sleep)")

    def test_truncated_payload_is_answered_then_the_worker_exits(self):
        header = {"id": 7, "op": "run", "graph": CASE.read_text(), "inputs": [{"name": "vec", "bytes": 1000}]}
        out = self.serve(json.dumps(header).encode() + b"\n" + b"\x93NUMPY")
        r = json.loads(out)
        self.assertEqual((r["id"], r["ok"], r["kind"]), (7, False, "user"))
        self.assertEqual(r["error"], "input 'vec': the request ended after 6 of its 1000 bytes")

    def test_a_huge_declared_size_is_not_allocated_up_front(self):
        header = {"id": 8, "op": "run", "graph": "x", "inputs": [{"name": "vec", "bytes": 2**39}]}
        r = json.loads(self.serve(json.dumps(header).encode() + b"\n" + b"abc"))
        self.assertEqual(r["error"], f"input 'vec': the request ended after 3 of its {2**39} bytes")

    def test_bad_npy_payload_is_a_user_error(self):
        header = {"id": 1, "op": "run", "graph": CASE.read_text(), "inputs": [{"name": "vec", "bytes": 4}]}
        out = self.serve(json.dumps(header).encode() + b"\nabcd" + b'{"id": 2, "op": "ping"}\n').splitlines()
        self.assertFalse(json.loads(out[0])["ok"])
        self.assertTrue(json.loads(out[1])["ok"])


if __name__ == "__main__":
    unittest.main()


class NarrowDtypeTest(unittest.TestCase):
    """bfloat16 and the fp8s travel as their bits (outerworld.BITS_DTYPES); outerworld.values reads them."""

    # Values from the format definitions (OCP OFP8 1.0 tables): bits -> value, NaN as None.
    E4M3 = {0x00: 0.0, 0x01: 2.0 ** -9, 0x07: 7 * 2.0 ** -9, 0x08: 2.0 ** -6, 0x38: 1.0, 0x7E: 448.0,
            0x7F: None, 0xFE: -448.0, 0xFF: None, 0x78: 256.0}
    E5M2 = {0x00: 0.0, 0x01: 2.0 ** -16, 0x04: 2.0 ** -14, 0x3C: 1.0, 0x7B: 57344.0, 0x7C: math.inf,
            0x7D: None, 0x7E: None, 0x7F: None, 0xFC: -math.inf, 0xBC: -1.0}

    def check_table(self, fmt, table):
        got = outerworld.values(np.arange(256, dtype=np.uint8).view(outerworld.BITS_DTYPES[fmt]))
        self.assertEqual(got.dtype, np.float32)
        for bits, want in table.items():
            if want is None:
                self.assertTrue(np.isnan(got[bits]), f"{fmt} 0x{bits:02x}")
            else:
                self.assertEqual(float(got[bits]), want, f"{fmt} 0x{bits:02x}")
        self.assertTrue(np.signbit(got[0x80]) and got[0x80] == 0)  # -0 keeps its sign
        self.assertEqual(int(np.isnan(got).sum()), 2 if fmt == "fp8e4m3" else 6)

    def test_fp8_values_are_the_spec_tables(self):
        self.check_table("fp8e4m3", self.E4M3)
        self.check_table("fp8e5m2", self.E5M2)

    def test_bfloat16_values_are_float32_top_halves(self):
        bits = np.arange(65536, dtype=np.uint32)
        got = outerworld.values(bits.astype(np.uint16).view(outerworld.BITS_DTYPES["bfloat16"]).reshape(256, 256))
        self.assertEqual((got.dtype, got.shape), (np.float32, (256, 256)))
        self.assertTrue((got.reshape(-1).view(np.uint32) == bits << 16).all())  # NaN payloads too
        scalar = outerworld.values(np.array([0x3FC0], np.uint16).view(outerworld.BITS_DTYPES["bfloat16"]).reshape(()))
        self.assertEqual((scalar.shape, float(scalar)), ((), 1.5))

    def test_other_arrays_are_their_own_values(self):
        a = np.array([1, 2], np.int8)
        self.assertIs(outerworld.values(a), a)
        self.assertIsNone(outerworld.bits_format(np.zeros(2, np.float16)))

    def test_bits_round_trip_through_ow(self):
        # a NaN payload, a subnormal and -0 come back bit for bit; a CAST gives the format's bits
        graph = "\n".join([
            '%0 = BUFFER bfloat16 () ("x", 4)', "%1 = CONST index () 4", "%2 = RESHAPE bfloat16 (%0, %1)",
            "%3 = CONTIGUOUS bfloat16 (%2)", "%4 = CAST fp8e4m3 (%2)", "%5 = CAST fp8e5m2 (%2)",
            '%6 = SINK void (%3, %4, %5) ("same", "e4m3", "e5m2")', ""])
        x = np.array([0x7FC1, 0x0001, 0x8000, 0x43FA], np.uint16).view(outerworld.BITS_DTYPES["bfloat16"])  # 0x43fa = 500
        out = outerworld.run(graph, {"x": x})
        self.assertEqual(out["same"].dtype, outerworld.BITS_DTYPES["bfloat16"])
        self.assertEqual(out["same"].tobytes(), x.tobytes())
        self.assertEqual(outerworld.bits_format(out["e4m3"]), "fp8e4m3")
        self.assertEqual(out["e4m3"]["fp8e4m3"].tolist(), [0x7F, 0x00, 0x80, 0x7E])  # NaN, underflow, -0, 500 saturates to 448
        self.assertEqual(outerworld.values(out["e5m2"])[3], 512.0)  # 500 to the nearest of 448, 512


def readme_block(heading: str, fence: str) -> str:
    """The first code block fenced `fence` after the README's `## heading`."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## " + heading + "\n"):]
    start = section.index(fence + "\n") + len(fence) + 1
    return section[start:section.index("\n```", start)]


class ReadmeTest(unittest.TestCase):
    def test_use_from_python_example_runs(self):
        """README "Use from Python", run as its first line says, from the repository root."""
        code = readme_block("Use from Python", "```python")
        env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
        r = subprocess.run(["/usr/bin/python3", "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        want = np.load(EXPECTED / "out_out.npy")[:, 0, :3]
        printed = np.array([[float(x) for x in line.strip(" []").split()] for line in r.stdout.splitlines()[:3]])
        np.testing.assert_allclose(printed, want, rtol=1e-5)  # numpy prints 8 significant digits
        self.assertIn("True 3 ", r.stdout)  # check: agree, 3 kernel launches (3 steps, one each: the fused in-place scan)
        self.assertIn("input 'mats' was given no data: the graph reads it and nothing writes it (inputs: vec, mats)", r.stdout)
