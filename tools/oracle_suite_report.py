#!/usr/bin/env python3
"""The table of tools/oracle_suite.sh: per test file, what the oracle found and what it cost.

    oracle_suite_report.py OUT_DIR FILE...

reads OUT_DIR/BASE.plain.json and BASE.oracle.json (the pytest plugin's --ow-report of a plain
run and of a run under the oracle) and BASE.times ("plain_seconds plain_status oracle_seconds
oracle_status") for each FILE (BASE.py). Prints a row per file, then refusals by reason, every
DISAGREE, every test whose outcome the oracle changed, and the oracle's own failures. Exits 1
when the oracle failed or changed an outcome. Standard library only.
"""
import json, os, sys

COLUMNS = ("file", "tests", "realizes", "agree", "DISAGREE", "NaN as written", "refused", "uninitialized",
           "tinygrad failed", "oracle failed", "outcomes changed", "plain s", "oracle s", "ratio")
SHOWN = 30  # oracle failures listed per file (every DISAGREE and outcome change is listed)


def load(path: str) -> dict | None:
  try:
    with open(path) as f: return json.load(f)
  except (OSError, ValueError): return None  # pytest died before writing it


def changes(plain: dict | None, oracle: dict | None) -> list[tuple[str, str, str]]:
  """(test, outcome without the oracle, outcome under it) where they differ."""
  a = {t: v["outcome"] for t, v in (plain or {}).get("tests", {}).items()}
  b = {t: v["outcome"] for t, v in (oracle or {}).get("tests", {}).items()}
  return [(t, a.get(t, "absent"), b.get(t, "absent")) for t in sorted(set(a) | set(b)) if a.get(t) != b.get(t)]


def row(base: str, plain: dict | None, oracle: dict | None, times: list[str]) -> tuple:
  n = (oracle or {}).get("totals", {})
  ps, prc, os_, orc = (times + ["?"] * 4)[:4]
  ratio = f"{float(os_) / float(ps):.2f}x" if ps not in ("?", "0.000") and os_ != "?" else "-"
  mark = lambda s, rc: s + ("" if rc in ("0", "1", "?") else f" (status {rc})")  # 0 passed, 1 tests failed
  count = lambda k: str(n.get(k, "-"))
  return (base + ".py", count("tests"), count("realizes"), count("agree"), count("DISAGREE"), count("NaN as written"),
          count("refused"), count("uninitialized"), count("tinygrad failed"), count("oracle failed"),
          str(len(changes(plain, oracle))), mark(ps, prc), mark(os_, orc), ratio)


def table(rows: list[tuple]) -> str:
  widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
  return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def details(base: str, plain: dict | None, oracle: dict | None) -> list[str]:
  if oracle is None: return [f"{base}.py: no report under the oracle (see its .oracle.log)"]
  lines = []
  if why := oracle["totals"].get("refused by reason"):
    lines.append(f"{base}.py refused by reason: " + ", ".join(f"{k} {v}" for k, v in why.items()))
  records = oracle["records"]
  failure = set(oracle.get("failure_reasons", []))
  for r in records:
    if r["status"] == "DISAGREE": lines.append(f"  DISAGREE {r['test']} realize {r['index']}: {r['detail']}")
  for t, a, b in changes(plain, oracle): lines.append(f"  outcome changed {t}: {a} without the oracle, {b} under it")
  failed = [r for r in records if r["reason"] in failure or r["round_trip"] is False]
  for r in failed[:SHOWN]:
    lines.append(f"  oracle failed {r['test']} realize {r['index']} [{r['reason'] or 'round trip not identical'}]: {r['detail']}")
  if len(failed) > SHOWN: lines.append(f"  ... and {len(failed) - SHOWN} more oracle failures")
  return lines


def main(argv: list[str]) -> int:
  if len(argv) < 2:
    print(__doc__, file=sys.stderr)
    return 2
  out, bases = argv[0], [f[:-3] if f.endswith(".py") else f for f in argv[1:]]
  rows, notes, bad = [COLUMNS], [], 0
  for base in bases:
    plain, oracle = load(os.path.join(out, base + ".plain.json")), load(os.path.join(out, base + ".oracle.json"))
    try:
      with open(os.path.join(out, base + ".times")) as f: times = f.read().split()
    except OSError: times = []
    rows.append(row(base, plain, oracle, times))
    notes += details(base, plain, oracle)
    bad += len(changes(plain, oracle)) + ((oracle or {}).get("totals", {}).get("oracle failed", 0))
  print(table(rows))
  if notes: print("\n".join(notes))
  return 1 if bad else 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
