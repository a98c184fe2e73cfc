"""Plant the bugs issue 25 lists, one at a time, in a copy of ``src/`` and check that a test of
the suite CI runs fails on each.

Each bug is a textual edit of one source file (the edit must apply exactly once, so a changed
source is noticed rather than silently not planted) and the test files that should catch it (the
suite's own files; the script runs them with ``-x``, stopping at the first failure).  A bug is
*caught* when the tests fail, *missed* when they pass.  The result is printed and written to
``build/planted_bugs.json``.

    python tools/plant_bugs.py                 # all bugs
    python tools/plant_bugs.py minus_swapped   # some
    python tools/plant_bugs.py --list

Like ``tools/mutants.py`` it is a check of the tests, not a test itself: it runs for minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# name: (file under src/stadyn, old text, new text, tests, what it plants)
BUGS: dict[str, tuple[str, str, str, list[str], str]] = {
    "minus_swapped": (
        "compat/cntk/_ops_math.py", "binary(F.sub2, left, right,", "binary(F.sub2, right, left,",
        ["tests/compat/test_compat_names.py", "-k", "cntk"],
        "cntk.minus computes right - left"),
    "element_divide_multiplies": (
        "compat/cntk/_ops_math.py", "binary(F.div2, left, right,", "binary(F.mul2, left, right,",
        ["tests/compat/test_compat_names.py", "-k", "cntk"],
        "cntk.element_divide multiplies"),
    "per_sample_axis_dropped": (
        "compat/cntk/_adapt.py",
        "return S.static_axis(int(axis), len(operand(x).shape), lead_axes(x))",
        "return S.static_axis(int(axis), len(operand(x).shape), 0)",
        ["tests/compat/test_compat_names.py", "-k", "cntk"],
        "CNTK's per-sample axis used as Stadyn's axis (the batch axis not skipped)"),
    "dropout_keep_prob_inverted": (
        "layers/_layers.py", "else 1.0 - keep_prob)", "else keep_prob)",
        ["tests/compat/test_compat_names.py", "-k", "cntk"],
        "Dropout(keep_prob=p) drops with probability p"),
    "eval_in_training_mode": (
        "compat/cntk/_function.py",
        "with training(False), torch.no_grad():\n"
        "                forward_all(roots, clear_buffer=True)",
        "with training(True), torch.no_grad():\n"
        "                forward_all(roots, clear_buffer=True)",
        ["tests/compat/test_compat_names.py", "-k", "cntk"],
        "Function.eval (forward without keep_for_backward) runs in the training phase"),
    "loss_scaler_does_nothing": (
        "amp.py", "loss.backward(grad=self.scale, clear_buffer=clear_buffer)",
        "loss.backward(clear_buffer=clear_buffer)",
        ["tests/test_amp.py"],
        "LossScaler.backward does not scale (and, with the next edit, unscale does not divide)"),
    "test_minibatch_returns_accuracy": (
        "train/_trainer.py", "return metric_sum / samples", "return 1.0 - metric_sum / samples",
        ["tests/train/test_trainer_numbers.py", "tests/train/test_trainer.py"],
        "Trainer.test_minibatch returns 1 - error"),
    "static_trace_falls_back_to_eager": (
        "graph/_plan.py",
        "        return _lower(roots, nodes, leaves, leaf_tensors, fill, needs_backward, "
        "keep_all)\n",
        "        raise RuntimeError('planted trace failure')\n",
        ["tests/models/test_nnabla_tutorial.py", "tests/train/test_trainer.py",
         "tests/ops/test_kernels.py"],
        "every static trace fails, so every static graph falls back to eager (with its warning)"),
    "static_silently_eager": (
        "graph/_plan.py", "    if untraceable:\n", "    if True:\n",
        ["tests/graph/test_graph.py", "tests/models/test_nnabla_tutorial.py",
         "tests/train/test_trainer.py", "tests/ops/test_kernels.py"],
        "every static graph runs eagerly without a warning (as if it held an untraceable op)"),
}
# Extra edits that belong to a bug (applied with it).
EXTRA: dict[str, list[tuple[str, str, str]]] = {
    "loss_scaler_does_nothing": [("amp.py", "torch._foreach_mul_(grads, 1.0 / self.scale)",
                                  "pass")],
}


def _edit(src: Path, rel: str, old: str, new: str) -> None:
    path = src / "stadyn" / rel
    text = path.read_text()
    if text.count(old) != 1:
        raise SystemExit(f"{rel}: the text to replace occurs {text.count(old)} times "
                         f"(expected once): {old!r}")
    path.write_text(text.replace(old, new))


def plant(name: str, timeout: float) -> dict:
    rel, old, new, tests, what = BUGS[name]
    tests = [t for t in tests if t.startswith("-") or (ROOT / t).exists()
             or not re.match(r"tests/", t)]
    with tempfile.TemporaryDirectory(prefix="stadyn-planted-") as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__",
                                                                         "*.egg-info"))
        _edit(src, rel, old, new)
        for extra in EXTRA.get(name, []):
            _edit(src, *extra)
        env = dict(os.environ, PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1")
        start = time.monotonic()
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider",
                 "-p", "no:randomly", *tests], cwd=ROOT, env=env, capture_output=True,
                text=True, timeout=timeout)
            out, rc = proc.stdout + proc.stderr, proc.returncode
        except subprocess.TimeoutExpired:
            out, rc = "", None
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", out, re.M)
    status = ("timeout" if rc is None else "missed" if rc == 0 else
              "caught" if rc == 1 and failed else f"error (exit {rc})")
    return {"bug": name, "what": what, "file": f"src/stadyn/{rel}", "tests": tests,
            "status": status, "first_failure": failed[0] if failed else "",
            "seconds": round(time.monotonic() - start)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bugs", nargs="*", default=list(BUGS))
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "planted_bugs.json")
    opts = parser.parse_args(argv)
    if opts.list:
        for name, (rel, _, _, tests, what) in BUGS.items():
            print(f"{name:34s} src/stadyn/{rel}: {what}  [{' '.join(tests)}]")
        return 0
    unknown = sorted(set(opts.bugs) - set(BUGS))
    if unknown:
        parser.error(f"unknown bug(s) {unknown}; --list shows them")
    results = []
    for name in opts.bugs:
        result = plant(name, opts.timeout)
        results.append(result)
        print(f"{result['status']:8s} {name:34s} {result['seconds']:5d}s  "
              f"{result['first_failure']}", flush=True)
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(results, indent=1) + "\n")
    missed = [r["bug"] for r in results if r["status"] != "caught"]
    print(f"{len(results) - len(missed)}/{len(results)} caught"
          + (f"; not caught: {', '.join(missed)}" if missed else ""))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
