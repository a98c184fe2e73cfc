"""A/B of what the ``nn.ProtoVariable`` check costs an NNabla ``F`` call that is given none.

    PYTHONPATH=src python benchmarks/nnabla_proto_check_ab.py [--calls 3000] [--rounds 7]

Every ``stadyn.compat.nnabla.functions`` function looks at its arguments for a
``ProtoVariable`` (``_proto_variable.recording_proto_variables``) before building its node.
A is ``F.add2`` through that wrapper, B the function it wraps, on the same two
``nn.Variable`` s (a static graph: each call builds one node); the rounds alternate A and B and
time ``--calls`` calls each by process CPU time; the report gives each side's median per call
and the median of the rounds' A/B.
"""

import argparse
import statistics
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    import stadyn.compat.nnabla as nn
    import stadyn.compat.nnabla.functions as F

    checked = F.add2
    while checked.__code__.co_qualname != "recording_proto_variables.<locals>.call":
        checked = checked.__wrapped__
    bare = checked.__wrapped__
    x = nn.Variable((4, 8))

    def per_call(fn):
        t = time.process_time()
        for _ in range(args.calls):
            fn(x, x)
        return (time.process_time() - t) / args.calls * 1e6

    per_call(checked), per_call(bare)        # warm up
    a, b = [], []
    for k in range(args.rounds):
        for side, fn in ((a, checked), (b, bare)) if k % 2 == 0 else ((b, bare), (a, checked)):
            side.append(per_call(fn))
    ratios = [x / y for x, y in zip(a, b)]
    print(f"A (with the check): {statistics.median(a):.1f} us/call; B (without): "
          f"{statistics.median(b):.1f} us/call; A/B median {statistics.median(ratios):.3f} "
          f"(min-max {min(ratios):.3f}-{max(ratios):.3f})")


if __name__ == "__main__":
    main()
