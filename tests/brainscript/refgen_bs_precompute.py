"""Write the CNTK 2.7 reference of test_bs_precompute.py: CNTK's own ``Mean`` and ``InvStdDev``
nodes over a small data set.

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \
        tests/brainscript/refgen_bs_precompute.py

CNTK 2.7's ``compute_input_per_dim_means_and_inv_std_devs`` (``ComputeInputStatistics.cpp``)
builds a network of the ``Mean`` and ``InvStdDev`` nodes that cntk.exe's pre-computation runs
(``PreComputeNodes.h``) and feeds them a minibatch source; here 50 samples of 3 values, the third
constant (so its variance is floored).  Parses under Python 3.6.
"""

import json
import os
import tempfile

import numpy as np

import cntk as C
import cntk.cntk_py as cntk_py

OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "brainscript",
                   "precompute_cntk27.json")


def main():
    rng = np.random.RandomState(3)
    x = (rng.randn(50, 3) * [2, 0.5, 0] + [1, -4, 7]).astype(np.float32)
    path = os.path.join(tempfile.mkdtemp(), "d.ctf")
    with open(path, "w") as f:
        for row in x:
            f.write("|x %s\n" % " ".join(repr(float(v)) for v in row))
    source = C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
        x=C.io.StreamDef(field="x", shape=3))), randomize=False, max_sweeps=1)
    mean = C.NDArrayView(shape=(3,), data_type=np.float32, device=C.cpu())
    inv = C.NDArrayView(shape=(3,), data_type=np.float32, device=C.cpu())
    cntk_py.compute_input_per_dim_means_and_inv_std_devs(
        source, {source.stream_info("x"): (mean, inv)}, C.cpu())
    with open(OUT, "w") as f:
        json.dump({"samples": x.tolist(), "mean": mean.to_ndarray().tolist(),
                   "inv_std_dev": inv.to_ndarray().tolist()}, f, indent=1)


if __name__ == "__main__":
    main()
