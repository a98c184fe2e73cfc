"""What ``StadynLibrary.checkpoint`` costs a BrainScript build with many delays and parameters.

    PYTHONPATH=src python benchmarks/bs_delay_checkpoint.py 500 2000

Each size ``n`` builds ``n`` ``ParameterTensor`` nodes and ``n`` ``PastValue`` nodes (each delay
reads its own parameter, so the registry grows while the delays are evaluated); the evaluator
takes a checkpoint per delay (``_evaluator.py``, ``_delay_args``), which copies the registry's
names.  Prints the build's process CPU time and the part of it spent in ``checkpoint``; the
sizes run in one process, one after the other, so their ratio is what to read (quadratic: 4x
the size, ~16x the checkpoint time).
"""

import sys
import time

import stadyn as sd
from stadyn.brainscript import StadynLibrary, build_network


def config(n):
    lines = ["t = DynamicAxis {} ; x = Input {(1:4), dynamicAxis = t}"]
    lines += ["p%d = ParameterTensor {(4)}" % i for i in range(n)]
    lines += ["d%d = PastValue (0, x .* p%d)" % (i, i) for i in range(n)]
    return "{ " + "\n".join(lines) + " }"


def main(sizes):
    spent = [0.0, 0]
    original = StadynLibrary.checkpoint

    def timed(self):
        t0 = time.process_time()
        forget = original(self)
        spent[0] += time.process_time() - t0
        spent[1] += 1
        return forget

    StadynLibrary.checkpoint = timed
    for n in sizes:
        spent[:] = [0.0, 0]
        cfg = config(n)
        with sd.parameter_registry(sd.ParameterRegistry()):
            t0 = time.process_time()
            build_network(cfg, StadynLibrary())
            total = time.process_time() - t0
            print("n=%d parameters=%d build %.2f s, checkpoint %.3f s in %d calls"
                  % (n, len(sd.get_parameters()), total, spent[0], spent[1]))


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [500, 2000])
