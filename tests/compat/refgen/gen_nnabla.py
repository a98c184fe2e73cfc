"""Write the NNabla references: run every NNabla case under the real NNabla 1.39.

    /work/peers/nnabla/bin/python tests/compat/refgen/gen_nnabla.py [--only NAME ...]
"""

import contextlib
import gc
import sys
import threading
import time

import _gen


@contextlib.contextmanager
def threads_joined(timeout=30.0):
    """Leave no thread a case started behind it: collect its garbage, then wait (``timeout``
    seconds in all) for its threads to end, naming on stderr any that did not.

    NNabla 1.39's ``DataSourceWithFileCache`` fills its cache with a ``ThreadPool`` it closes
    but never joins (nnabla/utils/data_source.py:233, ``with closing(ThreadPool(...))``), its
    samples passed through a ``multiprocessing.Queue`` whose feeder thread lives as long as
    the queue; a constructor that raises (case ``user28b_file_cache_of_own_source``'s ragged
    source) leaves the queue in its frames until a garbage collection, which may then run the
    queue's finalizer in the middle of a later case's import: NNabla's
    ``PythonFunction.__call__`` once raised importlib's ``KeyError`` so.  Collected and joined
    here, they end inside the case that made them."""
    before = set(threading.enumerate())
    try:
        yield
    finally:
        gc.collect()
        deadline = time.monotonic() + timeout
        started = [t for t in threading.enumerate() if t not in before]
        for t in started:
            t.join(max(0.0, deadline - time.monotonic()))
        left = [t.name for t in started if t.is_alive()]
        if left:
            sys.stderr.write("a case left threads running after %.0f s: %s\n"
                             % (timeout, ", ".join(left)))


@contextlib.contextmanager
def isolate():
    """A clean slate per case: no parameters, static graphs, the default context and seed; the
    default context a case sets (``nn.set_default_context``, which NNabla's ``GraphProfiler``
    also calls) is put back after it, as the Stadyn side's ``state_guard`` does, so a case's
    references do not depend on the cases generated before it; the threads a case started
    end inside it (:func:`threads_joined`)."""
    import nnabla as nn
    context = nn.get_current_context()
    nn.clear_parameters()
    nn.set_auto_forward(False)
    nn.seed(313)
    try:
        with threads_joined():
            yield
    finally:
        nn.clear_parameters()
        nn.set_auto_forward(False)
        nn.set_default_context(context)


if __name__ == "__main__":
    import nnabla
    sys.exit(_gen.main("nnabla", nnabla.__version__, isolate))
