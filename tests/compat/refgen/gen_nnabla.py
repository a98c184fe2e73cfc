"""Write the NNabla references: run every NNabla case under the real NNabla 1.39.

    /work/peers/nnabla/bin/python tests/compat/refgen/gen_nnabla.py [--only NAME ...]
"""

import contextlib
import sys

import _gen


@contextlib.contextmanager
def isolate():
    """A clean slate per case: no parameters, static graphs, the default context and seed."""
    import nnabla as nn
    nn.clear_parameters()
    nn.set_auto_forward(False)
    nn.seed(313)
    try:
        yield
    finally:
        nn.clear_parameters()
        nn.set_auto_forward(False)


if __name__ == "__main__":
    import nnabla
    sys.exit(_gen.main("nnabla", nnabla.__version__, isolate))
