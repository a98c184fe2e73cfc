"""Write the CNTK references: run every CNTK case under the real CNTK 2.7.

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \
        tests/compat/refgen/gen_cntk.py [--only NAME ...]

Parses under Python 3.6.
"""

import contextlib
import sys

import _gen


@contextlib.contextmanager
def isolate():
    """A fixed random seed per case, so random ops (dropout masks) repeat between runs."""
    import cntk
    cntk.cntk_py.set_fixed_random_seed(313)
    yield


if __name__ == "__main__":
    import cntk
    sys.exit(_gen.main("cntk", cntk.__version__, isolate))
