"""Cost of an ``.nnp`` save with its members deflated (Stadyn before slow44) and stored (now,
as NNabla 1.39 writes them: ``zipfile.ZipFile(path, 'w')``), alternating in one process:

* ``A``: B's save, plus its members read back and written again deflated (what Stadyn
  wrote before);
* ``B``: ``nnabla.utils.save.save`` through ``stadyn.compat.nnabla`` (members stored).

The network is one affine layer of ``--size`` x ``--size`` float32 weights (``--size 4096``:
64 MiB of ``parameter.h5``, about what DeepLab v3+'s Xception-65 in
``tests/examples/test_nnabla_examples_10.py`` saves twice).

    PYTHONPATH=src python benchmarks/nnp_stored_members_ab.py [--size 4096] [--rounds 3]

Prints the median process CPU seconds of a save for A and B and the two files' sizes.
"""

import argparse
import os
import statistics
import tempfile
import time
import zipfile

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.parametric_functions as PF
from stadyn.compat.nnabla.utils.save import save


def _deflated_copy(source: str, path: str) -> None:
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(path, "w") as zout:
        for info in zin.infolist():
            out = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            out.compress_type = zipfile.ZIP_DEFLATED
            zout.writestr(out, zin.read(info.filename))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    nn.clear_parameters()
    x = nn.Variable((1, args.size))
    y = PF.affine(x, args.size, name="fc")
    contents = {"networks": [{"name": "net", "batch_size": 1, "outputs": {"y": y},
                              "names": {"x": x}}],
                "executors": [{"name": "runtime", "network": "net", "data": ["x"],
                               "output": ["y"]}]}
    times = {"A": [], "B": []}
    with tempfile.TemporaryDirectory() as folder:
        stored, deflated = os.path.join(folder, "b.nnp"), os.path.join(folder, "a.nnp")
        for _ in range(args.rounds):
            start = time.process_time()
            save(stored, contents)
            times["B"].append(time.process_time() - start)
            start = time.process_time()
            _deflated_copy(stored, deflated)    # (reading the stored members back: a small
            times["A"].append(time.process_time() - start + times["B"][-1])     # part of A)
        sizes = {k: os.path.getsize(p) for k, p in (("A", deflated), ("B", stored))}
    for side in "AB":
        print(f"{side}: {statistics.median(times[side]):.3f} s CPU a save, "
              f"{sizes[side] / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
