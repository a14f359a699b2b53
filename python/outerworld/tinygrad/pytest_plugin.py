"""tinygrad's tests under the outerworld oracle, where they run: a pytest plugin.

    pytest -p outerworld.tinygrad.pytest_plugin --ow-oracle [--ow-report FILE] [--ow-strict] [-n 2] TESTS

--ow-oracle checks every Tensor.realize of the tests against outerworld (outerworld.tinygrad.oracle)
and prints a summary at the end; --ow-report FILE writes every record, each test's outcome and the
totals as JSON (without --ow-oracle: the outcomes alone, to compare a plain run with); --ow-strict
fails a test in which a realize DISAGREEs. Otherwise the oracle never changes a test's outcome.

With pytest-xdist each worker process has its own oracle and ow worker; a test's records travel
to the controller in its reports' user_properties (serialized by xdist like the rest of a report),
and records made outside any test (at collection) in the worker's workeroutput.
"""
from __future__ import annotations
import json, os, time

import pytest

_RECORDS = "ow_records"        # user_properties key: the records a test phase made
_STRICT = "ow_strict_failed"   # user_properties key: --ow-strict failed this report


def pytest_addoption(parser):
  g = parser.getgroup("outerworld", "outerworld oracle for tinygrad")
  g.addoption("--ow-oracle", action="store_true", help="check every Tensor.realize against outerworld")
  g.addoption("--ow-report", metavar="FILE", help="write the oracle's records, the tests' outcomes and the totals as JSON")
  g.addoption("--ow-strict", action="store_true", help="fail a test in which a realize DISAGREEs")
  g.addoption("--ow-backend", default="interp", help="outerworld backend: interp (default) | tcc | cc | check")
  g.addoption("--ow-max-memory", metavar="SIZE",
              help="memory ow may use per request, per worker process (e.g. 4G; default: ow's, half of physical "
                   "memory, shared out among xdist workers)")
  g.addoption("--ow-overlap", action="store_true",
              help="send each graph to ow before tinygrad runs it, so both compute at once (a thread waits for ow)")


def pytest_configure(config):
  opt = config.option
  if opt.ow_oracle or opt.ow_report:
    config.pluginmanager.register(OraclePlugin(config), "outerworld-oracle")


def _outcome(report, before: str | None) -> str | None:
  """A test's outcome after this report of one of its phases (None: not decided yet)."""
  if hasattr(report, "wasxfail"): return "xfailed" if report.skipped else "xpassed"
  if report.when == "setup":
    return "error" if report.failed else "skipped" if report.skipped else None
  if report.when == "call": return report.outcome
  if report.failed: return "error"   # teardown
  return before


class OraclePlugin:
  def __init__(self, config):
    self.config = config
    self.checking = bool(config.option.ow_oracle)
    self.strict = bool(config.option.ow_strict)
    self.records: list[dict] = []            # gathered where reports arrive (the controller, or alone)
    self.outcomes: dict[str, str] = {}
    self.strict_failed: set[str] = set()
    self.seconds: dict[str, float] = {}      # the oracle's time by phase, summed over workers
    self.max_memory: list = []               # each oracle's ow memory budget (None: ow's default)
    self.start = time.time()
    self._oracle = None                      # (context manager, Oracle) where tests run
    self._sent = 0                           # records of the local oracle already attached to reports
    self._disagreed: dict[str, list] = {}    # --ow-strict: a test's disagreements not yet failed

  # ---- where the tests run (a worker, or the only process) ----

  def pytest_sessionstart(self, session):
    # not in an xdist controller: it runs no test (its DSession plugin is registered by then)
    if not self.checking or self.config.pluginmanager.hasplugin("dsession"): return
    from outerworld.tinygrad.oracle import oracle
    opt = self.config.option
    cm = oracle(opt.ow_backend, overlap=opt.ow_overlap, max_memory=opt.ow_max_memory or self._share())
    self._oracle = (cm, cm.__enter__())

  def _share(self) -> str | None:
    """An xdist worker's default memory budget: its share of ow's default (half of physical
    memory), so that N workers' ow processes together stay within what one would take; ow's
    interpreter may build values of gigabytes (a view tinygrad never materializes). None (ow's
    default) in a single process."""
    workers = int(getattr(self.config, "workerinput", {}).get("workercount", 1))
    if workers <= 1: return None
    try: physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError): return None
    return f"{physical // 2 // workers // 2**20}M"

  @pytest.hookimpl(hookwrapper=True)
  def pytest_runtest_protocol(self, item, nextitem):
    o = self._oracle and self._oracle[1]
    if o: o.test = item.nodeid
    yield
    if o: o.test = "<between tests>"

  @pytest.hookimpl(hookwrapper=True)
  def pytest_runtest_makereport(self, item, call):
    report = (yield).get_result()
    if self._oracle is None: return
    mine = self._take()
    report.user_properties.append((_RECORDS, mine))
    if self.strict: self._fail_if_disagreed(item, report, mine)

  def _take(self) -> list[dict]:
    """The local oracle's records since the last report, as plain dicts (xdist sends them)."""
    records = self._oracle[1].records
    new, self._sent = records[self._sent:], len(records)
    return [dict(r.__dict__) for r in new]

  def _fail_if_disagreed(self, item, report, mine: list[dict]):
    """--ow-strict: a phase whose realizes disagree fails, after tinygrad's code ran (the
    realize itself returned tinygrad's result). Setup's disagreements fail the call report."""
    pending = self._disagreed.setdefault(item.nodeid, [])
    pending.extend(r for r in mine if r["status"] == "DISAGREE")
    if report.when == "setup" and report.passed: return  # judged with the call
    if not pending or hasattr(report, "wasxfail") or report.skipped: return
    text = "outerworld oracle (--ow-strict): " + "; ".join(f"realize {r['index']} DISAGREE: {r['detail']}" for r in pending)
    if report.passed:
      report.outcome, report.longrepr = "failed", text
      report.user_properties.append((_STRICT, True))  # the outcome it would have had is "passed"
    else:
      report.sections.append(("outerworld oracle (--ow-strict)", text))
    pending.clear()

  def pytest_runtest_logfinish(self, nodeid, location):
    self._disagreed.pop(nodeid, None)

  def pytest_sessionfinish(self, session):
    if self._oracle is None: return
    cm, o = self._oracle
    leftovers = self._take()   # made outside any test: at collection, by session fixtures
    if hasattr(self.config, "workerinput"):
      self.config.workeroutput[_RECORDS] = leftovers
      self.config.workeroutput["ow_seconds"] = dict(o.seconds)
      self.config.workeroutput["ow_max_memory"] = o.max_memory
    else:
      self.records.extend(leftovers)
      self._add_seconds(o.seconds)
      self.max_memory.append(o.max_memory)
    self._oracle = None
    cm.__exit__(None, None, None)

  # ---- where the reports arrive (the controller, or the only process) ----

  @pytest.hookimpl(tryfirst=True)
  def pytest_runtest_logreport(self, report):
    # taken out before junitxml or anything else sees user_properties: records are many. Not in
    # an xdist worker, which sends the report (user_properties and all) after this hook.
    if hasattr(self.config, "workerinput"): return
    props = report.user_properties
    for key, value in [p for p in props if p[0] in (_RECORDS, _STRICT)]:
      if key == _RECORDS: self.records.extend(value)
      else: self.strict_failed.add(report.nodeid)
    report.user_properties = [p for p in props if p[0] not in (_RECORDS, _STRICT)]
    if (o := _outcome(report, self.outcomes.get(report.nodeid))) is not None: self.outcomes[report.nodeid] = o

  @pytest.hookimpl(optionalhook=True)
  def pytest_testnodedown(self, node, error):
    out = getattr(node, "workeroutput", None) or {}
    self.records.extend(out.get(_RECORDS, []))
    self._add_seconds(out.get("ow_seconds", {}))
    if "ow_max_memory" in out: self.max_memory.append(out["ow_max_memory"])

  def _add_seconds(self, seconds: dict):
    for k, v in seconds.items(): self.seconds[k] = self.seconds.get(k, 0.0) + v

  def report(self) -> dict:
    from outerworld.tinygrad.oracle import totals, Record, REASONS, FAILURE_REASONS
    n = totals([Record(**r) for r in self.records])
    outcomes: dict[str, int] = {}
    for o in self.outcomes.values(): outcomes[o] = outcomes.get(o, 0) + 1
    per_test: dict[str, dict[str, int]] = {}
    for r in self.records:
      c = per_test.setdefault(r["test"], {})
      c[r["status"]] = c.get(r["status"], 0) + 1
    # strict_failed: --ow-strict turned this passing test into a failure (its outcome without it: passed)
    tests = {t: {"outcome": o, "strict_failed": t in self.strict_failed, "realizes": sum(per_test.get(t, {}).values()),
                 "statuses": per_test.get(t, {})} for t, o in self.outcomes.items()}
    return {"oracle": self.checking, "strict": self.strict, "backend": self.config.option.ow_backend,
            "reasons": REASONS, "failure_reasons": list(FAILURE_REASONS),
            "max_memory": self.max_memory, "wall_seconds": round(time.time() - self.start, 3),
            "oracle_seconds": {k: round(v, 3) for k, v in self.seconds.items()},
            "totals": {**n, "tests": len(tests), "outcomes": dict(sorted(outcomes.items()))},
            "tests": tests, "records": self.records}

  def pytest_terminal_summary(self, terminalreporter):
    if hasattr(self.config, "workerinput"): return  # the controller reports
    data = self.report()
    if self.config.option.ow_report:
      with open(self.config.option.ow_report, "w") as f: json.dump(data, f, indent=1)
    if self.checking:
      from outerworld.tinygrad.oracle import summary_by_file
      terminalreporter.write_sep("=", "outerworld oracle")
      terminalreporter.write_line(summary_by_file(self.records, self.outcomes))

