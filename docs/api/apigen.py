"""Write the API reference's pages from the public modules' ``__all__``.

Each public module gets one page: its docstring, then every name in its ``__all__``.  A class,
function or module documented on an earlier page (the order of :data:`SECTIONS`) is listed with
a link to that page instead of a second copy: ``stadyn.compat.nnabla.functions.relu`` says it
is ``stadyn.functions.relu``.  Run by ``conf.py`` at the start of every build; the pages go to
``generated/`` (not kept in git).
"""

from __future__ import annotations

import importlib
import inspect
import os
import types

# (section title, modules): the order also says which page holds an object's full entry.
SECTIONS = [
    ("Graphs, parameters and files", [
        "stadyn", "stadyn.functions", "stadyn.sequence", "stadyn.parametric_functions",
        "stadyn.initializer",
        "stadyn.solvers", "stadyn.amp", "stadyn.compile", "stadyn.serialize",
        "stadyn.serialize.op_rules", "stadyn.inspect"]),
    ("CNTK-style layers, learners and training", [
        "stadyn.layers", "stadyn.learners", "stadyn.schedules", "stadyn.train",
        "stadyn.train.progress"]),
    ("Data", ["stadyn.io", "stadyn.io.transforms", "stadyn.io.image_utils"]),
    ("Data-parallel training", ["stadyn.distributed"]),
    ("BrainScript", ["stadyn.brainscript"]),
    ("Reference models", ["stadyn.models"]),
    ("NNabla's names", [
        "stadyn.compat.nnabla", "stadyn.compat.nnabla.functions",
        "stadyn.compat.nnabla.parametric_functions", "stadyn.compat.nnabla.solvers",
        "stadyn.compat.nnabla.solver", "stadyn.compat.nnabla.parameter",
        "stadyn.compat.nnabla.initializer", "stadyn.compat.nnabla.ext_utils",
        "stadyn.compat.nnabla.communicators", "stadyn.compat.nnabla.utils",
        "stadyn.compat.nnabla.utils.data_iterator", "stadyn.compat.nnabla.utils.load",
        "stadyn.compat.nnabla.utils.save",
        "stadyn.compat.nnabla.utils.nnp_graph", "stadyn.compat.nnabla.utils.data_source",
        "stadyn.compat.nnabla.utils.data_source_loader", "stadyn.compat.nnabla.utils.download",
        "stadyn.compat.nnabla.utils.image_utils",
        "stadyn.compat.nnabla.utils.learning_rate_scheduler",
        "stadyn.compat.nnabla.utils.inspection", "stadyn.compat.nnabla.utils.progress",
        "stadyn.compat.nnabla.utils.callback",
        "stadyn.compat.nnabla.utils.communicator_util",
        "stadyn.compat.nnabla.utils.create_cache", "stadyn.compat.nnabla.logger",
        "stadyn.compat.nnabla.monitor", "stadyn.compat.nnabla.tutorial",
        "stadyn.compat.nnabla.tutorial.tiny_digits", "stadyn.compat.nnabla.random",
        "stadyn.compat.nnabla.testing", "stadyn.compat.nnabla.backward_functions",
        "stadyn.compat.nnabla.dtypes", "stadyn.compat.nnabla.utils.nnabla_pb2",
        "stadyn.compat.nnabla.utils.converter",
        "stadyn.compat.nnabla.function", "stadyn.compat.nnabla.contrib",
        "stadyn.compat.nnabla.contrib.context",
        "stadyn.compat.nnabla.utils.data_source_implements",
        "stadyn.compat.nnabla.utils.profiler", "stadyn.compat.nnabla.utils.qnn",
        "stadyn.compat.nnabla.utils.rnn",
        "stadyn.compat.nnabla.config", "stadyn.compat.nnabla.graph_def",
        "stadyn.compat.nnabla.lms", "stadyn.compat.nnabla.experimental",
        "stadyn.compat.nnabla.experimental.parametric_function_classes",
        "stadyn.compat.nnabla.experimental.parametric_function_class"]
       + ["stadyn.compat.nnabla.experimental.parametric_function_class." + k
          for k in ("module", "affine", "convolution", "deconvolution", "embed",
                    "batch_normalization")]
       + ["stadyn.compat.nnabla.experimental.graph_converters",
          "stadyn.compat.nnabla.experimental.viewers",
          "stadyn.compat.nnabla.experimental.mixed_precision_training",
          "stadyn.compat.nnabla.models",
          "stadyn.compat.nnabla.models.utils", "stadyn.compat.nnabla.models.imagenet",
          "stadyn.compat.nnabla.models.imagenet.base"]
       + ["stadyn.compat.nnabla.models.imagenet." + k
          for k in ("alexnet", "densenet", "googlenet", "inception", "mobilenet", "nin",
                    "resnet", "resnext", "senet", "shufflenet", "squeezenet", "vgg",
                    "xception")]
       + ["stadyn.compat.nnabla_ext", "stadyn.compat.nnabla_ext.cpu",
          "stadyn.compat.nnabla_ext.cuda", "stadyn.compat.nnabla_ext.cudnn"]),
    ("CNTK's names", [
        "stadyn.compat.cntk", "stadyn.compat.cntk.ops", "stadyn.compat.cntk.sequence",
        "stadyn.compat.cntk.layers",
        "stadyn.compat.cntk.models", "stadyn.compat.cntk.learners", "stadyn.compat.cntk.learner",
        "stadyn.compat.cntk.losses", "stadyn.compat.cntk.metrics", "stadyn.compat.cntk.io",
        "stadyn.compat.cntk.io.transforms",
        "stadyn.compat.cntk.train", "stadyn.compat.cntk.train.distributed",
        "stadyn.compat.cntk.eval",
        "stadyn.compat.cntk.logging", "stadyn.compat.cntk.logging.graph",
        "stadyn.compat.cntk.utils", "stadyn.compat.cntk.device", "stadyn.compat.cntk.debugging",
        "stadyn.compat.cntk.contrib", "stadyn.compat.cntk.contrib.netopt",
        "stadyn.compat.cntk.contrib.netopt.factorization",
        "stadyn.compat.cntk.contrib.netopt.quantization",
        "stadyn.compat.cntk.initializer", "stadyn.compat.cntk.variables",
        "stadyn.compat.cntk.layers.typing", "stadyn.compat.cntk.layers.sequence",
        "stadyn.compat.cntk.layers.models", "stadyn.compat.cntk.layers.models.attention",
        "stadyn.compat.cntk.core", "stadyn.compat.cntk.layers.layers",
        "stadyn.compat.cntk.layers.blocks", "stadyn.compat.cntk.layers.higher_order_layers",
        "stadyn.compat.cntk.train.trainer", "stadyn.compat.cntk.debugging.debug",
        "stadyn.compat.cntk.debugging.profiler",
        "stadyn.compat.cntk.ops.functions"]),
    ("Internals for extending Stadyn", [
        "stadyn.graph", "stadyn.ops", "stadyn.parametric", "stadyn.parametric.initializers",
        "stadyn.cntk_semantics"]),
]

MODULES = [name for _, names in SECTIONS for name in names]

# Public modules left out of the reference are listed, with the reason, in
# tests/docs/test_api_reference.py, which checks that every other one is here.


def _kind(obj) -> str | None:
    if isinstance(obj, types.ModuleType):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return None


def _title(text: str, mark: str) -> str:
    return f"{text}\n{mark * len(text)}\n"


def _entry(module: str, attr: str, obj, home: dict[int, str]) -> str:
    """The reStructuredText for ``module.attr``; records where an object's full entry is."""
    kind, full = _kind(obj), f"{module}.{attr}"
    if kind == "module" and not obj.__name__.startswith("stadyn"):      # cntk.layers' np
        return f"``{attr}``: the module ``{obj.__name__}``, re-exported (its own project's).\n"
    if kind == "module":
        target = obj.__name__ if obj.__name__ in MODULES else full      # see _alias_pages
        return f"``{attr}``: the module :mod:`{target}`.\n"
    directive = {"class": "class", "function": "function", None: "data"}[kind]
    if kind is not None and not getattr(obj, "__module__", "").startswith("stadyn"):
        origin = f"{obj.__module__}.{obj.__qualname__}"
        return (f".. py:{directive}:: {attr}\n   :module: {module}\n\n"
                f"   ``{origin}``, re-exported unchanged (documented by its own project).\n")
    owner = home.get(id(obj)) if kind else None
    if owner is not None and owner != full:
        role = {"class": "class", "function": "func"}[kind]
        return (f".. py:{directive}:: {attr}\n   :module: {module}\n\n"
                f"   The same object as :{role}:`{owner}`.\n")
    if kind is not None:
        home[id(obj)] = full
    if kind == "class":
        return f".. autoclass:: {full}\n   :members:\n   :show-inheritance:\n"
    if kind == "function":
        return f".. autofunction:: {full}\n"
    # a constant: its value (or type) only; autodoc would show a dict's or an int's docstring
    text = repr(obj)
    option = f":value: {text}" if len(text) <= 80 else f":type: {type(obj).__name__}"
    return f".. py:data:: {attr}\n   :module: {module}\n   {option}\n"


def _alias_pages() -> dict[str, list[str]]:
    """Modules exported under a public name but not importable by it (``stadyn.solvers.functional``
    is ``stadyn.solvers._functional``): ``{page's module: [alias names]}``."""
    pages: dict[str, list[str]] = {}
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if (isinstance(obj, types.ModuleType) and obj.__name__ not in MODULES
                    and obj.__name__.startswith("stadyn")):
                pages.setdefault(name, []).append(f"{name}.{attr}")
    return pages


def _page(name: str, home: dict[int, str]) -> str:
    module = importlib.import_module(name)
    lines = [_title(f"``{name}``", "="), f".. automodule:: {name}\n   :no-members:\n"]
    lines += [_entry(name, attr, getattr(module, attr), home) for attr in module.__all__]
    return "\n".join(lines)


def _alias_page(full: str, home: dict[int, str]) -> str:
    parent, attr = full.rsplit(".", 1)
    module = getattr(importlib.import_module(parent), attr)
    names = getattr(module, "__all__", None)
    if names is None:
        raise ValueError(f"{full} (the module {module.__name__}) has no __all__ to document")
    lines = [_title(f"``{full}``", "="), f".. py:module:: {full}\n",
             f"The module ``{module.__name__}``, exported as ``{full}``.\n",
             f".. automodule:: {module.__name__}\n   :no-members:\n   :no-index:\n"]
    lines += [_entry(full, a, getattr(module, a), home) for a in names]
    return "\n".join(lines)


def generate(out_dir: str) -> list[str]:
    """Write one page per module of :data:`MODULES` (and per module exported under another
    name) and ``toctree.inc``; returns the pages' names in order."""
    os.makedirs(out_dir, exist_ok=True)
    home: dict[int, str] = {}          # id(object) -> the full name it is documented under
    aliases = _alias_pages()
    pages, toc = [], []
    for title, names in SECTIONS:
        section = []
        for name in names:
            texts = [(name, _page(name, home))]
            texts += [(alias, _alias_page(alias, home)) for alias in aliases.get(name, [])]
            for page, text in texts:
                with open(os.path.join(out_dir, f"{page}.rst"), "w", encoding="utf-8") as f:
                    f.write(text)
                section.append(page)
        pages += section
        toc.append(f".. toctree::\n   :caption: {title}\n   :maxdepth: 1\n\n"
                   + "".join(f"   generated/{p}\n" for p in section))
    with open(os.path.join(out_dir, "toctree.inc"), "w", encoding="utf-8") as f:
        f.write("\n".join(toc))
    for stale in set(os.listdir(out_dir)) - {f"{p}.rst" for p in pages} - {"toctree.inc"}:
        if stale.endswith(".rst"):     # a page of a module no longer documented (or renamed):
            os.remove(os.path.join(out_dir, stale))     # Sphinx would warn of it, in no toctree
    return pages
