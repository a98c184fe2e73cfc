"""Write the NNabla references: run every NNabla case under the real NNabla 1.39.

    /work/peers/nnabla/bin/python tests/compat/refgen/gen_nnabla.py [--only NAME ...]
"""

import contextlib
import sys

import _gen


@contextlib.contextmanager
def isolate():
    """A clean slate per case: no parameters, static graphs, the default context and seed; the
    default context a case sets (``nn.set_default_context``, which NNabla's ``GraphProfiler``
    also calls) is put back after it, as the Stadyn side's ``state_guard`` does, so a case's
    references do not depend on the cases generated before it."""
    import nnabla as nn
    context = nn.get_current_context()
    nn.clear_parameters()
    nn.set_auto_forward(False)
    nn.seed(313)
    try:
        yield
    finally:
        nn.clear_parameters()
        nn.set_auto_forward(False)
        nn.set_default_context(context)


if __name__ == "__main__":
    import nnabla
    sys.exit(_gen.main("nnabla", nnabla.__version__, isolate))
