"""Runs unittest modules for `meson test` (like `python3 -m unittest -v MODULE...`), exiting 77,
meson's code for a skipped test, when no test ran because the module, its classes or every test
was skipped (a missing dependency such as tinygrad): such a run reports a skip, never a pass.
A run with a failure exits 1, any other 0.

  run_unittest.py test_tinygrad
"""
import sys
import unittest


def main(names: list[str]) -> int:
  suite = unittest.defaultTestLoader.loadTestsFromNames(names)
  result = unittest.TextTestRunner(verbosity=2).run(suite)
  if not result.wasSuccessful(): return 1
  # A test skipped by skipTest counts in testsRun; a module or class whose setUp skipped does not.
  ran = result.testsRun - sum(1 for test, _ in result.skipped if isinstance(test, unittest.TestCase))
  if ran <= 0 and result.skipped:
    for _, why in result.skipped[:3]: print(f"SKIP {' '.join(names)}: {why}", file=sys.stderr)
    return 77
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
