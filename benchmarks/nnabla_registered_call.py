"""Cost of one dynamic-mode compat.nnabla ``F.*`` call on registered parameters against the
same call on plain Variables (``_registered_flags.honouring_registered_flags``: each
registered argument is replaced by its program view and, when the op needs a gradient, the
op's autograd steps are hooked by ``_cut_when_off``).

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/nnabla_registered_call.py

Prints the least CPU microseconds per call (process time, of 7 runs of 2000: the machine
may be shared) of ``F.affine(x, W, b)`` (x 4x8, W 8x8) with ``W``, ``b`` from
``nn.get_parameters()`` and with plain ``nn.Variable``s.

Measured at d308e883 (one thread, 2 shared cores, CPU time): 32-36 us registered against
16-18 us plain.  The ~16 us between them, taken apart with the same timer: hooking the op's
autograd step (``_cut_when_off``) ~7.5 us, of which torch's ``Node.register_hook`` ~3 us and
the walk ~1 us; making and freeing the two program views when the output is dropped before
the next call ~5 us (a view's store in the ``WeakKeyDictionary`` ~2.6 us for two); the
wrapper's look-ups ~2-4 us.  Wall-clock numbers on the shared machine swing by 2x from run to
run (the ~83 vs ~38 us first reported are within that), so compare CPU times.
"""

import time

import numpy as np

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.parametric_functions as PF


def per_call(fn, n=2000, repeats=7):
    for _ in range(200):
        fn()
    times = []
    for _ in range(repeats):
        t = time.process_time()
        for _ in range(n):
            fn()
        times.append((time.process_time() - t) / n * 1e6)
    return min(times)


def main():
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(np.random.RandomState(0).randn(4, 8).astype(np.float32))
    with nn.auto_forward():
        PF.affine(x, 8, name="fc")
    params = nn.get_parameters()
    w, b = params["fc/affine/W"], params["fc/affine/b"]
    pw = nn.Variable.from_numpy_array(w.d.copy(), need_grad=True)
    pb = nn.Variable.from_numpy_array(b.d.copy(), need_grad=True)
    with nn.auto_forward():
        registered = per_call(lambda: F.affine(x, w, b))
        plain = per_call(lambda: F.affine(x, pw, pb))
    print("F.affine, registered parameters: %.1f us/call" % registered)
    print("F.affine, plain Variables:       %.1f us/call" % plain)


if __name__ == "__main__":
    main()
