"""Process CPU time of calling compat.cntk's ``sequence`` ops on a sequence input, best of
several rounds of 200 calls each (what a model's build pays per sequence op):

    PYTHONPATH=src python benchmarks/cntk_sequence_calls.py

``last``, ``first``, ``reduce_sum``, ``past_value`` (the ops with an ``as_called`` hook, which
refuses an operand without dynamic axes as CNTK 2.7 does) and ``broadcast_as`` (one without)
on ``C.sequence.input_variable(3)``.  To compare two trees, run it with each tree's ``src``
on ``PYTHONPATH`` (one after the other, twice, on a shared machine).
"""

from __future__ import annotations

import time

import stadyn.compat.cntk as C


def best(fn, runs: int = 15) -> float:
    """The least process CPU time of ``runs`` calls of ``fn``, in ms."""
    times = []
    for _ in range(runs):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return 1e3 * min(times)


def main() -> None:
    x = C.sequence.input_variable(3)
    y = C.sequence.reduce_sum(x)
    calls = {"last": lambda: C.sequence.last(x), "first": lambda: C.sequence.first(x),
             "reduce_sum": lambda: C.sequence.reduce_sum(x),
             "past_value": lambda: C.sequence.past_value(x),
             "broadcast_as": lambda: C.sequence.broadcast_as(y, x)}
    for name, call in calls.items():
        print("200 sequence.%-13s %7.2f ms" % (name, best(lambda: [call() for _ in range(200)])))


if __name__ == "__main__":
    main()
