"""Wall time of applying a ``stadyn.compat.cntk`` Recurrence of a Python step of several states
to new inputs, with the states its output leaves unread found once per step (``_step_refusals.
refuse_unread_states``' memo, kept with the step: ``B``) against found at every application
(the memo emptied before each: ``A``, as before cntkrec38), A and B alternating in one process.

    PYTHONPATH=src python benchmarks/cntk_unread_states_ab.py [--applications 20] [--rounds 5]

Prints the median time of one application in ms for each, over ``rounds`` rounds of
``applications`` applications each, for a step whose output reads every state and for one
whose output leaves a state unread (refused at its first run, as CNTK 2.7 refuses it).
"""

import argparse
import statistics
import time

import stadyn.compat.cntk as C


def _steps():
    return {
        "reads every state": lambda h, c, a, x: (C.tanh(h + x + c + a), c + x, a * 0.5 + h),
        "leaves a state unread": lambda h, c, x: (C.tanh(h + x), c + h * 0.5),
    }


def _time(layer, memo_kept: bool, applications: int) -> float:
    step = layer.layer.step
    times = []
    for _ in range(applications):
        if not memo_kept:
            step.refusal_memo.clear()
        x = C.sequence.input_variable(3)
        t0 = time.perf_counter()
        layer(x)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--applications", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    for name, fn in _steps().items():
        layer = C.layers.Recurrence(fn)
        layer(C.sequence.input_variable(3))        # (warm: the step's shapes found)
        got = {"A (every application)": [], "B (once per step)": []}
        for _ in range(args.rounds):
            got["A (every application)"].append(_time(layer, False, args.applications))
            got["B (once per step)"].append(_time(layer, True, args.applications))
        print(name + ": " + ", ".join(f"{k} {statistics.median(v):.2f} ms"
                                      for k, v in got.items()))


if __name__ == "__main__":
    main()
