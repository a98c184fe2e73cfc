"""List the public names of the real CNTK 2.7 or NNabla 1.39, per module, as JSON.

Run under the real framework's interpreter (see tests/compat/README.md)::

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \
        tests/compat/refgen/list_names.py cntk
    /work/peers/nnabla/bin/python tests/compat/refgen/list_names.py nnabla

writes ``tests/compat/refs/names_<framework>.json``: ``{"framework": ..., "version": ...,
"modules": {"cntk.ops": ["abs", ...], ...}}``.

A module is named as users type it (``cntk.sequence`` is the attribute ``sequence`` of ``cntk``)
and found by attribute look-up from the package.  Its public names are those ``dir()`` shows that
do not start with ``_`` and are not modules, less what the module merely imports from elsewhere:
a function or class counts only when its ``__module__`` belongs to the framework; other objects
(constants such as ``FULL_DATA_SWEEP``) count unless their type comes from a foreign module
(``from __future__ import division`` leaves a ``__future__._Feature``), and helpers whose home is
the framework's internal package (``cntk.internal``: ``sanitize_shape``, ``typemap``, ...).

This file must parse under Python 3.6 (CNTK's interpreter).
"""

import importlib
import inspect
import json
import os
import sys
import types

MODULES = {
    "cntk": [
        "cntk", "cntk.ops", "cntk.ops.functions", "cntk.sequence", "cntk.layers",
        "cntk.layers.sequence", "cntk.layers.typing", "cntk.learners", "cntk.io",
        "cntk.io.transforms", "cntk.train", "cntk.train.distributed",
        "cntk.train.training_session", "cntk.logging", "cntk.logging.graph", "cntk.losses",
        "cntk.metrics", "cntk.initializer", "cntk.variables", "cntk.device", "cntk.random",
        "cntk.core", "cntk.axis", "cntk.debugging", "cntk.default_options", "cntk.eval",
        "cntk.logging.progress_print", "cntk.train.trainer", "cntk.layers.models.attention",
    ],
    "nnabla": [
        "nnabla", "nnabla.functions", "nnabla.parametric_functions", "nnabla.solvers",
        "nnabla.initializer", "nnabla.logger", "nnabla.monitor", "nnabla.ext_utils",
        "nnabla.communicators", "nnabla.utils.data_iterator", "nnabla.utils.data_source",
        "nnabla.utils.save", "nnabla.utils.load", "nnabla.utils.image_utils",
        "nnabla.utils.learning_rate_scheduler", "nnabla.utils.nnp_graph",
        "nnabla.random", "nnabla.contrib.context",
        "nnabla.utils.data_source_implements", "nnabla.utils.profiler",
        "nnabla.experimental.viewers", "nnabla.experimental.parametric_function_classes",
        "nnabla.config", "nnabla.lms", "nnabla.models.imagenet",
        "nnabla.experimental.graph_converters",
    ],
}

# Not listed: ``nnabla.function``, whose 235 names are the C++ function classes behind
# ``nnabla.functions`` (programs call F; its PythonFunction has its own case), and the
# internal modules under ``nnabla.utils`` that the listed ones import.

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from compat_harness import Side  # noqa: E402


def own(obj, framework):
    """Whether ``obj`` is the framework's own (not NumPy's, the standard library's, ...)."""
    if inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj) \
            or inspect.ismethod(obj) or callable(obj):
        mod = getattr(obj, "__module__", None) or ""
        if mod.startswith(framework + ".internal"):
            return False
        return mod == framework or mod.startswith(framework + ".")
    mod = type(obj).__module__ or ""
    return mod in ("builtins", framework) or mod.startswith(framework + ".")


def public_names(module, framework):
    names = []
    for name in dir(module):
        if name.startswith("_"):
            continue
        obj = getattr(module, name)
        if isinstance(obj, types.ModuleType) or not own(obj, framework):
            continue
        names.append(name)
    return sorted(names)


def main(argv):
    if len(argv) != 1 or argv[0] not in MODULES:
        sys.exit("usage: list_names.py cntk|nnabla")
    framework = argv[0]
    package = importlib.import_module(framework)
    real = Side(framework, "")
    modules = {path: public_names(real.module(path), framework) for path in MODULES[framework]}
    out = {"framework": framework, "version": package.__version__, "modules": modules}
    target = os.path.join(HERE, "..", "refs", "names_%s.json" % framework)
    with open(target, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    total = sum(len(v) for v in modules.values())
    print("%s %s: %d names in %d modules -> %s" % (framework, out["version"], total,
                                                    len(modules), os.path.normpath(target)))


if __name__ == "__main__":
    main(sys.argv[1:])
