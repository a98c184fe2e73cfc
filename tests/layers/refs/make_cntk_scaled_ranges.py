"""Make ``cntk27_scaled_ranges.npz``: what CNTK 2.7 draws for a (37, 11) parameter from
``he_uniform``, ``xavier``, ``glorot_uniform`` and ``uniform`` with a scale other than 1, seed 1
(``test_cntk_scaled_ranges.py`` draws the same on Stadyn and compares them bit for bit: CNTK
multiplies the range by the scale in float32).  Run with CNTK 2.7's Python::

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \\
        tests/layers/refs/make_cntk_scaled_ranges.py
"""

import os

import numpy as np

CASES = [("he_uniform", 0.3), ("he_uniform", 1.2), ("xavier", 0.1), ("xavier", 0.2),
         ("glorot_uniform", 0.3), ("uniform", 0.2)]


def draw(C, name, scale):
    """The initial value of a (37, 11) parameter drawn by ``C.<name>(scale, seed=1)``."""
    init = getattr(C, name)(scale, seed=1)
    return np.asarray(C.parameter((37, 11), init=init).value, dtype=np.float32)


if __name__ == "__main__":
    import cntk
    out = {"%s_%s" % case: draw(cntk, *case) for case in CASES}
    np.savez(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "cntk27_scaled_ranges.npz"), **out)
