"""Write ``cntk_refs/learners.npz``: every case of ``cntk_learner_cases.py`` run on the real
CNTK 2.7 (float64 parameters, gradients handed to ``Learner.update``).

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \\
        tests/learners/make_cntk_learner_refs.py

Keys: ``<case>/init/<k>``, ``<case>/grad<step>/<k>``, ``<case>/sizes`` (inputs) and
``<case>/w<step>/<k>`` (CNTK's parameter values after each step), ``<case>/lr<step>`` (the
learner's ``learning_rate()`` after the step).
"""

import os
import sys

import numpy as np
import cntk as C

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cntk_learner_cases import CASES, values  # noqa: E402


def main():
    out = {}
    for index, (name, sizes, make) in enumerate(CASES):
        init = values(index)
        params = [C.parameter(v.shape, init=v, dtype=np.float64, name=k)
                  for k, v in sorted(init.items())]
        learner = make(C.learners, C.learners, params)
        for k, v in init.items():
            out["%s/init/%s" % (name, k)] = v
        out["%s/sizes" % name] = np.array(sizes)
        for step, m in enumerate(sizes):
            grads = values(1000 * (index + 1) + step)
            for k, v in grads.items():
                out["%s/grad%d/%s" % (name, step, k)] = v
            assert learner.update(dict((p, C.NDArrayView.from_dense(grads[p.name]))
                                       for p in params), m)
            for p in params:
                out["%s/w%d/%s" % (name, step, p.name)] = np.array(p.value)
            out["%s/lr%d" % (name, step)] = np.float64(learner.learning_rate())
    os.makedirs(os.path.join(HERE, "cntk_refs"), exist_ok=True)
    np.savez_compressed(os.path.join(HERE, "cntk_refs", "learners.npz"), **out)
    print("%d cases, %d arrays" % (len(CASES), len(out)))


if __name__ == "__main__":
    main()
