"""Cost of NNabla's parameter order (``solvers/_param_order.MapOrder``, which
``get_parameters()``, ``get_states()``, ``save_states`` and the solver hooks read since
nnsolv42), before and after a change, alternating in one process: ``A`` the module at
``--before`` (read with ``git show``), ``B`` the working tree's.  Each round fills a new map with
``n`` names (``layer<i>/conv/W``) and asks for its order once (the work is done then), after a
``remove`` of every third name and a second order; the two must give the same lists.

    PYTHONPATH=src python benchmarks/nnabla_param_order_ab.py [--before 5d8f15b5] \\
        [--sizes 100 1000 3000] [--rounds 5]

Prints the median process CPU time in ms per size and B/A.
"""

import argparse
import importlib.util
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from stadyn.solvers import _param_order as after

ROOT = Path(__file__).resolve().parent.parent


def _before(rev: str, tmp: str):
    text = subprocess.run(["git", "show", "%s:src/stadyn/solvers/_param_order.py" % rev],
                          cwd=ROOT, check=True, capture_output=True, text=True).stdout
    path = Path(tmp) / "param_order_before.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("param_order_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(module, names):
    m = module.MapOrder()
    for name in names:
        m.insert(name)
    first = m.order()
    for name in names[::3]:
        m.erase(name)
    return first, m.order()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="5d8f15b5")
    ap.add_argument("--sizes", nargs="*", type=int, default=[100, 1000, 3000])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        modules = {"A": _before(args.before, tmp), "B": after}
        print("MapOrder fill + order + erase a third + order, ms CPU (median of %d), A: %s, "
              "B: working tree" % (args.rounds, args.before))
        for n in args.sizes:
            names = ["layer%d/conv/W" % i for i in range(n)]
            times, results = {"A": [], "B": []}, {}
            for _ in range(args.rounds):
                for kind in "AB":
                    t = time.process_time()
                    results[kind] = _run(modules[kind], names)
                    times[kind].append(1e3 * (time.process_time() - t))
            a, b = statistics.median(times["A"]), statistics.median(times["B"])
            print("%6d names  A %8.2f  B %8.2f  B/A %.3f  %s" % (
                n, a, b, b / a, "same orders" if results["A"] == results["B"] else "DIFFERENT"))


if __name__ == "__main__":
    main()
