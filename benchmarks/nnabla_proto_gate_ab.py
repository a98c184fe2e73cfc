"""A/B of the ``nn.ProtoVariable`` check's own cost per ``F`` call, on a function doing nothing.

    PYTHONPATH=src python benchmarks/nnabla_proto_gate_ab.py [--rounds 7]

A is ``_proto_variable.recording_proto_variables`` as it is (skipped until a ProtoVariable
is made), B its former form (a loop over every argument, ``any()`` into lists and tuples),
C the bare function; the same three argument lists each (``(x, x)``, ``(x, (2, 16))``,
``(x, axis=1)``); no ProtoVariable is made.  The report gives each side's median ns per call
over the rounds (each the best of 3 repeats of 20000 calls).
"""

import argparse
import statistics
import timeit


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    import stadyn.compat.nnabla as nn
    from stadyn.compat.nnabla._proto_variable import (_HOLDING, _holds_proto, record,
                                                      recording_proto_variables)

    def noop(*a, **k):
        return None

    def former(fn):
        def call(*args, **kwargs):
            for a in args:
                if isinstance(a, _HOLDING) and _holds_proto(a):
                    return record(fn, args, kwargs)
            if kwargs:
                for a in kwargs.values():
                    if isinstance(a, _HOLDING) and _holds_proto(a):
                        return record(fn, args, kwargs)
            return fn(*args, **kwargs)
        return call

    sides = {"A (now)": recording_proto_variables(noop), "B (former)": former(noop),
             "C (bare)": noop}
    x = nn.Variable((4, 8))
    calls = {"(x, x)": lambda f: f(x, x), "(x, (2, 16))": lambda f: f(x, (2, 16)),
             "(x, axis=1)": lambda f: f(x, axis=1)}
    for label, call in calls.items():
        times = {k: [] for k in sides}
        for _ in range(args.rounds):
            for k, f in sides.items():
                best = min(timeit.repeat(lambda: call(f), number=20000, repeat=3))
                times[k].append(best / 20000 * 1e9)
        print(label, "; ".join(f"{k}: {statistics.median(v):.0f} ns" for k, v in times.items()))


if __name__ == "__main__":
    main()
