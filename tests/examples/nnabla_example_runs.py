"""What the drivers of nnabla-examples' programs record of a run, on NNabla 1.39 and on Stadyn
alike: the monitor series, the files written, whether the saved parameters are finite, and a
digest of them for programs whose monitors write nothing at a tiny size."""

import glob
import os

import numpy as np


def series(folder):
    """``{name: [[iteration, value], ...]}`` of every ``*.series.txt`` under ``folder``."""
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "**", "*.series.txt"), recursive=True)):
        rows = np.loadtxt(path, ndmin=2)
        out[os.path.basename(path)[:-len(".series.txt")]] = rows.tolist()
    return out


def files(folder):
    """The names of the files under ``folder`` (its subfolders' too)."""
    return sorted(name for _, _, names in os.walk(folder) for name in names)


def _parameter_files(folder):
    """``{file: {parameter name: array}}`` of every ``*.h5`` parameter file under ``folder``,
    by its path there (solver states left out)."""
    import h5py
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "**", "*.h5"), recursive=True)):
        name = os.path.relpath(path, folder).replace(os.sep, "/")
        if "states" in os.path.basename(name) or "solver" in os.path.basename(name):
            continue
        with h5py.File(path, "r") as f:
            arrays = {}
            f.visititems(lambda k, o: arrays.__setitem__(k, np.asarray(o[()]))
                         if isinstance(o, h5py.Dataset) else None)
        out[name] = arrays
    return out


def finite_parameters(folder):
    """Whether every parameter file under ``folder`` holds finite values only."""
    return {name: bool(all(np.isfinite(v).all() for v in arrays.values()))
            for name, arrays in _parameter_files(folder).items()}


def parameter_digest(folder, first=8):
    """``{file: {parameter: [sum, sum of squares, first values ...]}}`` of the parameter files
    under ``folder``: enough to compare two runs' trained parameters without storing them."""
    out = {}
    for name, arrays in _parameter_files(folder).items():
        out[name] = {key: [float(np.sum(v, dtype=np.float64)),
                           float(np.sum(np.square(v, dtype=np.float64)))]
                     + [float(x) for x in v.ravel()[:first]]
                     for key, v in sorted(arrays.items())}
    return out


def six_if_missing(work):
    """A two-line ``six`` (``six.moves.range``, all the programs import from it) under
    ``work/shim`` on ``sys.path`` where the package is not installed."""
    import sys
    try:
        import six  # noqa: F401
    except ImportError:
        shim = os.path.join(work, "shim")
        os.makedirs(shim, exist_ok=True)
        with open(os.path.join(shim, "six.py"), "w") as f:
            f.write("import sys\nclass moves:\n    range = range\n"
                    "sys.modules['six.moves'] = moves\n")
        sys.path.insert(0, shim)


def stub_if_missing(names, **attributes):
    """Empty modules (with ``attributes``, ``{name: value}``, set on each) for those of ``names``
    that cannot be imported, for programs that import a GPU-only package at the top of a file
    whose functions the run never calls (VQ-VAE's ``data/imagenet.py`` imports NVIDIA DALI for
    ImageNet alone)."""
    import importlib
    import sys
    import types
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            module = types.ModuleType(name)
            for key, value in attributes.items():
                setattr(module, key, value)
            sys.modules[name] = module
