"""What the drivers of nnabla-examples' programs record of a run, on NNabla 1.39 and on Stadyn
alike: the monitor series, the files written, whether the saved parameters are finite, and a
digest of them for programs whose monitors write nothing at a tiny size."""

import glob
import json
import os
import runpy
import sys
import time
import traceback

import numpy as np


def series(folder):
    """``{name: [[iteration, value], ...]}`` of every ``*.series.txt`` under ``folder``."""
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "**", "*.series.txt"), recursive=True)):
        rows = np.loadtxt(path, ndmin=2)
        out[os.path.basename(path)[:-len(".series.txt")]] = rows.tolist()
    return out


def files(folder):
    """The names of the files under ``folder`` (its subfolders' too, by name alone)."""
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
    """Whether every parameter file under ``folder`` holds finite values only, by file name
    (MAML's folder names hold ``strtobool``'s result: 0 on Python 3.10, False on later ones)."""
    return {os.path.basename(name): bool(all(np.isfinite(v).all() for v in arrays.values()))
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


def cuda_extension_if_missing():
    """An ``nnabla_ext.cuda`` whose ``clear_memory_cache()`` does nothing, where the CUDA
    extension is not installed (an empty ``nnabla_ext`` too where there is none, as on
    Stadyn: its contexts are named by ``nnabla.ext_utils``): YOLO v2's and PGGAN's training
    loops free the CUDA memory cache between phases."""
    import importlib
    import types
    try:
        importlib.import_module("nnabla_ext.cuda")
        return
    except ImportError:
        pass
    try:
        parent = importlib.import_module("nnabla_ext")
    except ImportError:
        parent = sys.modules["nnabla_ext"] = types.ModuleType("nnabla_ext")
    cuda = types.ModuleType("nnabla_ext.cuda")
    cuda.clear_memory_cache = lambda: None
    sys.modules["nnabla_ext.cuda"] = parent.cuda = cuda


def run_program(path, argv, folder):
    """Run the program at ``path`` as ``__main__`` with ``sys.argv = [path, *argv]``, in
    ``folder``; returns ``(the error it stopped with, as text, or None; seconds taken)``."""
    sys.argv = [path] + list(argv)
    cwd = os.getcwd()
    os.chdir(folder)
    error, start = None, time.time()
    try:
        runpy.run_path(path, run_name="__main__")
    except BaseException as exc:  # noqa: BLE001 - a program's failure is a result
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()[-500:]
    finally:
        os.chdir(cwd)
    return error, time.time() - start


def write_results(results, out_path):
    """The drivers' JSON (the reference files are written by the same call on NNabla 1.39)."""
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)


def selected(runs, argv, work):
    """``(run, program, arguments, folder)`` of the ``runs`` that ``--only=A,B`` among ``argv``
    names (all of them without it), each with its folder ``work/<run>`` made."""
    only = [a.split("=", 1)[1].split(",") for a in argv if a.startswith("--only=")]
    for run, program, args in runs:
        if only and run not in only[0]:
            continue
        folder = os.path.join(work, run)
        os.makedirs(folder, exist_ok=True)
        yield run, program, args, folder


def run_beside_its_modules(path, argv, folder, own_modules):
    """:func:`run_program` with the program's folder first on ``sys.path``; afterwards the
    modules it imported from there (top-level names ``own_modules``) are forgotten, so that the
    next program imports its own ``args``, ``models`` ..."""
    sys.path.insert(0, os.path.dirname(path))
    try:
        return run_program(path, argv, folder)
    finally:
        sys.path.remove(os.path.dirname(path))
        for name in list(sys.modules):
            if name.split(".")[0] in own_modules:
                sys.modules.pop(name)


def result(folder, error, seconds, stadyn, names=None, digest=False):
    """What a driver records of one run in ``folder``: the error, the monitor series, the files
    (``names``, by default :func:`files`), whether the parameters are finite, a digest of them
    where asked, and on Stadyn the seconds taken (the reference files have no timings)."""
    out = {"error": error, "series": series(folder),
           "files": files(folder) if names is None else names,
           "finite": finite_parameters(folder)}
    if digest:
        out["parameters"] = parameter_digest(folder)
    if stadyn:
        out["seconds"] = round(seconds, 1)
    return out


def begin(argv, root):
    """A driver's start: ``(EXAMPLES, WORK, OUT.json, on Stadyn?)`` from ``argv``.  With
    ``--stadyn`` NNabla's imports load Stadyn's compat layer (``examples/nnabla/on_stadyn.py``);
    the stand-ins' writers (``examples/nnabla``) are importable, and ``HOME`` is ``WORK/home``
    (NNabla's download cache is ``~/nnabla_data``)."""
    examples, work, out_path = (os.path.abspath(a) for a in argv[:3])
    stadyn = "--stadyn" in argv
    sys.path.insert(0, os.path.join(root, "examples", "nnabla"))
    if stadyn:
        import on_stadyn
        on_stadyn.install()
    os.environ["HOME"] = os.path.join(work, "home")
    return examples, work, out_path, stadyn
