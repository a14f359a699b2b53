"""TEMPORARY stand-in for outerworld.run / outerworld.Error until the core package
(python/outerworld/__init__.py, branch i16-python) is merged. It shells out to `ow run`.
Delete this file after merging i16-python."""
import os, re, subprocess, tempfile
import numpy as np


class Error(Exception):
  """The engine's message, exactly as `ow` printed it."""


class WorkerDied(Error):
  pass


def _ow_binary() -> str:
  return os.environ.get("OW_BIN", "/work/main/build/tools/ow")


def _output_names(text: str) -> list[str]:
  # The root is the last statement; a SINK's arg lists the output names.
  last = [l for l in text.splitlines() if l.split("#")[0].strip()][-1]
  m = re.search(r"\bSINK\b.*\)\s*\((.*)\)", last.split("#")[0])
  if m is None: raise Error("shim: the graph's root is not a SINK with output names")
  return re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))


def run(graph_text: str, inputs: dict, backend: str = "interp", flat_inputs: bool = False) -> dict:
  with tempfile.TemporaryDirectory(prefix="ow_shim_") as d:
    path = os.path.join(d, "graph.uop")
    with open(path, "w") as f: f.write(graph_text)
    cmd = [_ow_binary(), "run", path, "--backend", backend]
    if flat_inputs: cmd.append("--flat-inputs")
    for i, (name, arr) in enumerate(inputs.items()):
      p = os.path.join(d, f"in{i}.npy")
      np.save(p, np.array(arr, order="C"))  # ascontiguousarray would make 0-d arrays 1-d
      cmd += ["--in", f"{name}={p}"]
    names = _output_names(graph_text)
    outs = {n: os.path.join(d, f"out{i}.npy") for i, n in enumerate(names)}
    for n, p in outs.items(): cmd += ["--out", f"{n}={p}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0: raise Error(r.stderr.strip())
    return {n: np.load(p) for n, p in outs.items()}
