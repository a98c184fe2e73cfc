"""A/B of writing NNabla's ``.protobuf`` solver-state file (``solver.save_states("s.protobuf")``)
with the packed float field filled from the values' bytes (``_proto_schemas.extend_packed``,
B) against protobuf's ``extend`` of the values as a Python list (A, the writer before), by
wall-clock seconds in one process; the two files are checked byte-identical.

    PYTHONPATH=src python benchmarks/nnabla_protobuf_states_ab.py --megabytes 32 --rounds 5

An Adam over two parameters holding ``--megabytes`` of states in all (its ``mean`` and ``var``)
is saved with each setting per round (the order alternates); the report gives each setting's
median seconds, the median B/A, and the median seconds of ``load_states`` of the file.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import stadyn as sd  # noqa: E402
import stadyn._proto_schemas as schemas  # noqa: E402
import stadyn.solvers as S  # noqa: E402

PACKED = schemas.extend_packed


def as_list(message, name, values):
    getattr(message, name).extend(np.asarray(values, np.float32).ravel().tolist())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--megabytes", type=float, default=32)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    n = int(args.megabytes * 2 ** 20 / 4 / 2 / 2)         # per parameter, per state
    rng = np.random.RandomState(0)
    params = {k: sd.Variable.from_numpy_array(rng.randn(n).astype(np.float32), need_grad=True)
              for k in ("a/W", "b/W")}
    solver = S.Adam()
    solver.set_parameters(params)
    for p in params.values():
        p.g = rng.randn(n).astype(np.float32)
    solver.update()
    times = {"A": [], "B": [], "load": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for setting in ("AB" if r % 2 == 0 else "BA"):
                schemas.extend_packed = as_list if setting == "A" else PACKED
                start = time.perf_counter()
                solver.save_states(os.path.join(tmp, f"{setting}.protobuf"))
                times[setting].append(time.perf_counter() - start)
            schemas.extend_packed = PACKED
            with open(os.path.join(tmp, "A.protobuf"), "rb") as fa, \
                    open(os.path.join(tmp, "B.protobuf"), "rb") as fb:
                assert fa.read() == fb.read(), "the two writers' files differ"
            start = time.perf_counter()
            solver.load_states(os.path.join(tmp, "B.protobuf"))
            times["load"].append(time.perf_counter() - start)
        size = os.path.getsize(os.path.join(tmp, "B.protobuf"))
    ratios = [b / a for a, b in zip(times["A"], times["B"])]
    print(f"file {size / 2 ** 20:.1f} MiB, {args.rounds} rounds, byte-identical")
    print(f"A (extend of a list)  {statistics.median(times['A']):.3f} s")
    print(f"B (extend_packed)     {statistics.median(times['B']):.3f} s")
    print(f"B/A median {statistics.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f})")
    print(f"load_states           {statistics.median(times['load']):.3f} s")


if __name__ == "__main__":
    main()
