"""The oracle's pytest plugin (python/outerworld/tinygrad/pytest_plugin.py) on oracle_smoke_cases.py,
with pytest-xdist's two workers: the JSON report's counts, --ow-strict failing the test whose
realize disagrees, the outcomes otherwise those of a run without the oracle, and exit codes.

Run by `meson test tinygrad-plugin` (the environment of `meson test tinygrad`). Skips without
tinygrad, pytest or pytest-xdist, unless OW_REQUIRE_TINYGRAD is set (then it fails).
"""
import json, os, subprocess, sys, tempfile, unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TINYGRAD = os.environ.get("OW_TINYGRAD", os.path.join(os.path.dirname(ROOT), "shared", "tinygrad"))
CASES = "oracle_smoke_cases.py"
NODE = CASES + "::SmokeCases::"


def missing() -> str | None:
  """Why the plugin cannot run here, or None."""
  env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), TINYGRAD]))
  r = subprocess.run([sys.executable, "-c", "import numpy, pytest, xdist, tinygrad"], capture_output=True, text=True, env=env)
  return None if r.returncode == 0 else r.stderr.strip().splitlines()[-1]


def setUpModule():
  if (why := missing()) is None: return
  msg = f"the oracle's pytest plugin needs numpy, pytest, pytest-xdist and tinygrad (OW_TINYGRAD={TINYGRAD}): {why}"
  if os.environ.get("OW_REQUIRE_TINYGRAD"): raise RuntimeError(msg)
  raise unittest.SkipTest(msg)


def pytest(*options: str) -> tuple[subprocess.CompletedProcess, dict]:
  """pytest on the cases with two xdist workers and the plugin; (the process, its JSON report)."""
  with tempfile.TemporaryDirectory() as d:
    report = os.path.join(d, "report.json")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), TINYGRAD]), DEV="CPU")
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-p", "outerworld.tinygrad.pytest_plugin",
                        "--ow-report", report, *options, CASES], cwd=HERE, capture_output=True, text=True, env=env, timeout=120)
    with open(report) as f: return r, json.load(f)


class TestPlugin(unittest.TestCase):
  @classmethod
  def setUpClass(cls):
    # one run of each kind, shared by the tests (each is a few seconds of xdist start-up)
    cls.plain = pytest()
    cls.checked = pytest("--ow-oracle")
    cls.strict = pytest("--ow-oracle", "--ow-strict")

  def outcomes(self, report: dict) -> dict:
    return {t: v["outcome"] for t, v in report["tests"].items()}

  def test_counts(self):
    r, report = self.checked
    self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
    n = report["totals"]
    got = {k: n[k] for k in ("realizes", "agree", "DISAGREE", "NaN as written", "refused", "uninitialized", "tinygrad failed",
                             "round trips identical", "failed", "tests")}
    self.assertEqual(got, {"realizes": 6, "agree": 5, "DISAGREE": 1, "NaN as written": 0, "refused": 0, "uninitialized": 0,
                           "tinygrad failed": 0, "round trips identical": 6, "failed": 1, "tests": 4})
    self.assertEqual(n["refused by reason"], {})
    realizes = {t: v["realizes"] for t, v in report["tests"].items()}
    self.assertEqual(realizes, {NODE + "test_elementwise_and_reduce": 1, NODE + "test_zero_size": 3,
                                NODE + "test_bound_variable": 1, NODE + "test_max_ignores_nan": 1})
    (bad,) = [x for x in report["records"] if x["status"] == "DISAGREE"]
    self.assertEqual((bad["test"], bad["index"], bad["reason"], bad["round_trip"]), (NODE + "test_max_ignores_nan", 1, "", True))
    self.assertRegex(bad["detail"], r"^out0\[0?\]: tinygrad 3\.0 vs outerworld nan")
    self.assertIn("outerworld oracle", r.stdout)
    self.assertIn("realizes checked 6, agreed 5, disagreed 1, refused 0,", r.stdout)
    # each of the two workers' ow gets half of ow's default budget (half of physical memory)
    share = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2 // 2 // 2**20
    self.assertEqual(report["max_memory"], [f"{share}M", f"{share}M"])

  def test_the_oracle_changes_no_outcome(self):
    (r, plain), (_, checked) = self.plain, self.checked
    self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
    self.assertEqual(plain["records"], [])  # --ow-report alone: outcomes, no oracle
    self.assertEqual(set(self.outcomes(plain).values()), {"passed"})
    self.assertEqual(self.outcomes(checked), self.outcomes(plain))

  def test_strict_fails_the_disagreeing_test(self):
    r, report = self.strict
    self.assertEqual(r.returncode, 1, r.stdout[-3000:] + r.stderr[-3000:])
    want = dict(self.outcomes(self.plain[1]), **{NODE + "test_max_ignores_nan": "failed"})
    self.assertEqual(self.outcomes(report), want)
    self.assertEqual([t for t, v in report["tests"].items() if v["strict_failed"]], [NODE + "test_max_ignores_nan"])
    self.assertIn("outerworld oracle (--ow-strict): realize 1 DISAGREE: out0", r.stdout)
    self.assertIn("1 failed, 3 passed", r.stdout)


if __name__ == "__main__":
  unittest.main()
