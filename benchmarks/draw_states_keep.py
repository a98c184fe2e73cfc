"""What ``graph/_draw_states.keep`` alone costs per static forward, in a chain of 100 dropouts on
a (4, 16) input: compat.nnabla's Variables and Stadyn's own (standing for the front ends other
than NNabla's), a seed per dropout and ``seed=-1``.  Runs against any tree (``drawing`` took no
roots before 2026-12: every front end noted its states then).

    for k in 1 2; do for s in /tmp/a/src src; do
        PYTHONPATH=$s python benchmarks/draw_states_keep.py; done; done

Best of 5 rounds of 400 calls, process CPU time, microseconds per call.
"""

import inspect
import time

import numpy as np

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.functions as SF
from stadyn.graph import topological_nodes
from stadyn.graph._draw_states import drawing, keep


def main():
    out = []
    for front in ("nnabla", "stadyn"):
        for seeded in (True, False):
            V, Fm = (nn.Variable, F) if front == "nnabla" else (sd.Variable, SF)
            x = V.from_numpy_array(np.ones((4, 16), np.float32), need_grad=True)
            h = x
            for i in range(100):
                h = Fm.dropout(h, 0.1, seed=i + 1) if seeded else Fm.dropout(h, 0.1)
            loss = Fm.sum(h)
            loss.forward()
            nodes = topological_nodes([loss])
            new = "roots" in inspect.signature(drawing).parameters
            d = drawing(nodes, [loss]) if new else drawing(nodes)
            best = 1e9
            for _ in range(5):
                t = time.process_time()
                for _ in range(400):
                    keep(d)
                best = min(best, (time.process_time() - t) / 400 * 1e6)
            out.append(f"{front} {'seeded' if seeded else 'seed=-1'}: keep {best:.0f} us")
    print("; ".join(out))


if __name__ == "__main__":
    main()
