"""Print a Markdown table of the monitor series two runs wrote (a Stadyn run and an NNabla run
of the same gallery program), side by side at the iterations both recorded.

    python examples/nnabla/compare_runs.py STADYN_MONITOR NNABLA_MONITOR "Training loss" ...
        [--every N]      (only every N-th common iteration of each series)

Reads only the monitor files (``<name>.series.txt``: ``iteration value`` per line); needs
neither framework.
"""

import os
import sys

import numpy as np


def series(folder, name):
    rows = np.loadtxt(os.path.join(folder, name.replace(" ", "-") + ".series.txt"), ndmin=2)
    return {int(i): float(v) for i, v in rows}


def table(stadyn, nnabla, names, every=1):
    lines = []
    for name in names:
        a, b = series(stadyn, name), series(nnabla, name)
        common = sorted(set(a) & set(b))[every - 1::every]
        lines += ["", "| %s: iteration | Stadyn | NNabla 1.39 |" % name, "|---:|---:|---:|"]
        lines += ["| %d | %.4g | %.4g |" % (i, a[i], b[i]) for i in common]
    return "\n".join(lines[1:])


if __name__ == "__main__":
    args = sys.argv[1:]
    every = 1
    if "--every" in args:
        k = args.index("--every")
        every = int(args[k + 1])
        del args[k:k + 2]
    if len(args) < 3:
        sys.exit(__doc__)
    print(table(args[0], args[1], args[2:], every))
