"""NNabla 1.39 fidelity, eleventh round: what a parametric function makes a parameter from
(``None``, a NumPy array or a callable; anything else is a ``ValueError`` when the parameter is
made); a loaded dataset's ``cache_dir`` with and without ``create_cache_explicitly``;
``F.batch_inv`` above 16 x 16, in Eigen's blocked order.
"""

import functools
import logging
import os

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import outcome

PFN = "nnabla.parametric_functions."


# the shape of what ``call()`` made, or NNabla's ValueError and its words (any other error
# propagates)
_outcome = functools.partial(outcome, convert=lambda got: list(got.shape),
                             raised=lambda e: ["ValueError", str(e)], catch=ValueError)


@nnabla_case(names=[PFN + "affine", PFN + "convolution", PFN + "prelu",
                    PFN + "batch_normalization", PFN + "embed", PFN + "min_max_quantize",
                    PFN + "weight_normalization"],
             note="a list, tuple, NdArray, bool or complex as a *_init, initializer= or a "
                  "value of param_init is NNabla 1.39's ValueError when the parameter is made "
                  "(Stadyn took a list or tuple as an array, a float in param_init as a fill "
                  "value, and refused the others with another error); an existing parameter "
                  "is found without it, as NNabla's")
def pf_initializers_neither_arrays_nor_callable(nn, PF, r):
    x2 = lambda: nn.Variable.from_numpy_array(np.ones((2, 2), np.float32))
    x4 = lambda: nn.Variable.from_numpy_array(np.ones((1, 2, 3, 3), np.float32))
    calls = {
        "affine w list": lambda: PF.affine(x2(), 2, w_init=[[1.0, 2.0], [3.0, 4.0]]),
        "affine w tuple": lambda: PF.affine(x2(), 2, w_init=((1.0, 2.0), (3.0, 4.0))),
        "affine b list": lambda: PF.affine(x2(), 2, b_init=[1.0, 2.0]),
        "affine w list of arrays": lambda: PF.affine(x2(), 2, w_init=[np.ones(2), np.ones(2)]),
        "affine w NdArray": lambda: PF.affine(
            x2(), 2, w_init=nn.NdArray.from_numpy_array(np.ones((2, 2), np.float32))),
        "affine w bool": lambda: PF.affine(x2(), 2, w_init=np.bool_(True)),
        "affine w complex": lambda: PF.affine(x2(), 2, w_init=1j),
        "conv w list": lambda: PF.convolution(x4(), 1, (1, 1), w_init=[[[[1.0]], [[2.0]]]]),
        "prelu slope list": lambda: PF.prelu(x4(), shared=True, slope_init=[0.5]),
        "bn param_init list": lambda: PF.batch_normalization(
            x4(), param_init={"gamma": [[[[1.0]], [[2.0]]]]}),
        "bn param_init float": lambda: PF.batch_normalization(x4(), param_init={"gamma": 2.0}),
        "embed initializer list": lambda: PF.embed(
            nn.Variable.from_numpy_array(np.zeros((2,), np.int32)), 2, 2,
            initializer=[[1.0, 2.0], [3.0, 4.0]]),
        "min_max_quantize qr_min list": lambda: PF.min_max_quantize(x4(), qr_min_init=[-1.0]),
        "weight_normalization g list": lambda: PF.weight_normalization(
            nn.Variable.from_numpy_array(np.ones((3, 2), np.float32)), g_init=[1.0, 2.0]),
    }
    res = {}
    for key, call in calls.items():
        nn.clear_parameters()
        res[key] = _outcome(call)
    nn.clear_parameters()
    with nn.parameter_scope("made"):
        w = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
        y = PF.affine(x2(), 2, w_init=w, b_init=lambda shape: np.full(shape, 0.5, np.float32))
        y.forward()
        res["array and callable"] = y.d.copy()
        res["existing, list"] = _outcome(lambda: PF.affine(x2(), 2, w_init=[[0.0, 0.0]]))
        res["bn param_init array"] = _outcome(lambda: PF.batch_normalization(
            x4(), param_init={"gamma": np.full((1, 2, 1, 1), 2.0, np.float32)}))
    nn.clear_parameters()
    return res


_NET = """network { name: "net" batch_size: 2
 variable { name: "x" type: "Buffer" shape { dim: -1 dim: 1 } }
 variable { name: "y" type: "Buffer" shape { dim: -1 dim: 1 } }
 function { name: "R" type: "ReLU" input: "x" output: "y" }
}
"""


class _Lines(logging.Handler):
    """The ``nnabla`` logger's messages while it is attached, temporary folder masked."""

    def __init__(self, folder):
        logging.Handler.__init__(self)
        self.folder, self.lines = folder, []

    def emit(self, record):
        self.lines.append(record.getMessage().replace(self.folder, "<tmp>"))


def _dataset_run(nn, r, explicit, shuffle, stale=False, overwrite=False):
    L = r.module("nnabla.utils.load")
    res = []
    with r.tempdir() as folder:
        csv = os.path.join(folder, "data.csv")
        with open(csv, "w") as f:
            f.write("x,t\n" + "".join("%d,%d\n" % (i, i % 3) for i in range(5)))
        cache = os.path.join(folder, "cache")
        if stale:
            os.makedirs(cache)
            with open(os.path.join(cache, "junk.txt"), "w") as f:
                f.write("x")
        path = os.path.join(folder, "net.nntxt")
        with open(path, "w") as f:
            f.write(_NET + 'dataset { name: "d" uri: "%s" cache_dir: "%s" batch_size: 2 '
                    'shuffle: %s %s %s }\n' % (
                        csv, cache, "true" if shuffle else "false",
                        "create_cache_explicitly: true" if explicit else "",
                        "overwrite_cache: true" if overwrite else ""))
        lines = _Lines(folder)
        logging.getLogger("nnabla").addHandler(lines)
        try:
            info = L.load([path], prepare_data_iterator=True)
        finally:
            logging.getLogger("nnabla").removeHandler(lines)
        res.append([m for m in lines.lines if "Creating cache data" in m])
        res.append(sorted(os.listdir(cache)) if os.path.isdir(cache) else "no folder")
        for _ in range(2):
            with info.datasets["d"].data_iterator() as di:
                res.append([list(di.variables), di.size,
                            [np.asarray(di.next()[0]).ravel().tolist() for _ in range(3)]])
        res.append(sorted(os.listdir(cache)))
    return res


@nnabla_case(names=["nnabla.utils.load.load"],
             note="a dataset's cache_dir: with create_cache_explicitly the cache is made "
                  "when the file is loaded (logged, shuffled from the dataset's RandomState, "
                  "into a folder made for it or one holding other files) and the iterators "
                  "read it; without, a missing folder is made at load and the CSV iterator "
                  "writes the cache there (Stadyn made neither: FileNotFoundError at the first "
                  "batch, and a DataError for the explicit cache)")
def load_dataset_cache_dir(nn, r):
    res = {}
    for explicit in (True, False):
        for shuffle in (False, True):
            res["explicit %s shuffle %s" % (explicit, shuffle)] = _dataset_run(
                nn, r, explicit, shuffle)
    res["explicit, a folder of other files"] = _dataset_run(nn, r, True, False, stale=True)
    res["explicit, overwrite"] = _dataset_run(nn, r, True, True, stale=True, overwrite=True)
    res["implicit, overwrite"] = _dataset_run(nn, r, False, True, stale=True, overwrite=True)
    return res


@nnabla_case(names=["nnabla.functions.batch_inv"], rtol=0, atol=0,
             note="above 16 x 16 NNabla's Eigen factorises in blocks and solves in panels of "
                  "8 (sums over the rows solved before a panel in one piece, four partial sums "
                  "for the kernel's left-over rows); Stadyn's earlier unblocked LU and other "
                  "solve order differed in rounding, which ill-conditioned and singular "
                  "matrices magnify (a duplicated column at 33 x 33 gave 561 NaN and "
                  "infinities, NNabla none): compared bit for bit at 8 to 130")
def batch_inv__eigen_blocked_lu(nn, F, r):
    res = {}
    rng = np.random.RandomState(0)
    nn.set_auto_forward(True)
    try:
        for n in (8, 17, 20, 33, 130):
            random = rng.randn(n, n)
            duplicated = rng.randn(n, n)
            duplicated[:, n // 2] = duplicated[:, 1]
            summed = rng.randint(-3, 4, size=(n, n)).astype(np.float64)
            summed[n - 1] = summed[0] + summed[1]
            hilbert = 1.0 / (np.arange(n)[:, None] + np.arange(n)[None] + 1)
            ramp = np.arange(n * n, dtype=np.float64).reshape(n, n)
            m = np.stack([random, duplicated, summed, hilbert, ramp]).astype(np.float32)
            res["%d x %d" % (n, n)] = F.batch_inv(nn.Variable.from_numpy_array(m)).d.copy()
    finally:
        nn.set_auto_forward(False)
    return res
