"""NNabla 1.39's first-stage file loaders (``nnabla.utils.get_file_handle``, which
``nnabla.utils.load`` re-exports): :func:`get_initial_file_loader` maps file extensions to
loaders, :func:`load_files` hands each file (a path, or a file object with ``extension``) to the
loaders its extension matches, and :func:`restore_optimizer_state` gives a solver the states an
optimizer was saved with.

What the loaders do to the context object ``ctx`` they share, as NNabla's:

* parameters (``.h5``, ``.protobuf``, those inside a ``.nntxt``, and an ``.nnp``'s members) go to
  the current parameter scope (or ``ctx.parameter_scope``, a :class:`stadyn.ParameterRegistry`,
  at its root), created with the file's ``need_grad`` or, when there, overwritten in place (their
  ``need_grad`` set to the file's); ``ctx.exclude_parameter`` skips them;
* a ``.nntxt``'s sections are added to ``ctx.proto`` (made when ``ctx`` has none; skipped
  with ``ctx.parameter_only``): ``network`` (Stadyn's ``LegacyNetwork``), ``parameter``
  (``variable_name``, ``shape.dim``, ``need_grad``; no ``data``), ``optimizer``,
  ``executor``, ``dataset``, ``monitor`` (the file's fields, by attribute).  As NNabla's, a
  text holding parameters is added twice (once for the network, once for its parameters);
* an ``.nnp``'s saved solver states (``*.optimizer`` members) go to
  ``ctx.optimizer_states_checkpoint``: optimizer name -> ``('.h5', file object)`` or
  ``('.protobuf', {parameter: {state: array, "t": steps}})`` (NNabla keeps its protobuf message
  there).

``ctx.parameter_only`` and ``ctx.exclude_parameter`` default to false where ``ctx`` has none
(NNabla's loaders need them set).  A file no loader takes is logged (``... is omitted.``).
"""

from __future__ import annotations

import io
import os
import tempfile
import zipfile
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np

from ...._errors import ModelFileError
from ....graph import Variable, current_scope
from ....parametric import ParameterRegistry, current_registry
from ....serialize import (optimizer_states, read_legacy_model, read_nnabla_optimizer_states,
                           read_parameter_file)
from ..logger import logger

__all__ = ["get_initial_file_loader", "load_files", "restore_optimizer_state"]

Loader = Callable[[Any, "OrderedDict[str, Any]", Any, Any, str], None]


class _Fields:
    """A section of the file as attributes (``o.name``, ``o.solver.type``); lists stay lists."""

    def __init__(self, fields: Mapping):
        self._fields = dict(fields)

    def __getattr__(self, key: str) -> Any:
        if key.startswith("_"):
            raise AttributeError(key)
        value = self._fields.get(key)
        if isinstance(value, Mapping):
            return _Fields(value)
        if isinstance(value, list):
            return [_Fields(v) if isinstance(v, Mapping) else v for v in value]
        return value

    def __repr__(self) -> str:
        return f"<fields {sorted(self._fields)}>"


class _Proto:
    """What the loaders gather of the files' text (``ctx.proto``): the sections by name."""

    def __init__(self):
        self.network: list = []
        self.parameter: list = []
        self.optimizer: list = []
        self.executor: list = []
        self.dataset: list = []
        self.monitor: list = []

    def __repr__(self) -> str:
        return (f"<proto networks={[n.name for n in self.network]} "
                f"parameters={len(self.parameter)}>")


def _proto(ctx: Any) -> _Proto:
    proto = getattr(ctx, "proto", None)
    if proto is None:
        proto = ctx.proto = _Proto()
    if not isinstance(proto, _Proto):
        raise TypeError(f"load_files: ctx.proto is a {type(proto).__name__}; Stadyn gathers "
                        "the files' sections in its own object (leave ctx.proto unset)")
    return proto


def _flag(ctx: Any, name: str) -> bool:
    return bool(getattr(ctx, name, False))


def _read(nnp: Any, filename: Any) -> bytes:
    if nnp is not None:
        return nnp.read(filename)
    if hasattr(filename, "read"):
        return filename.read()
    with open(filename, "rb") as f:
        return f.read()


def _where(nnp: Any, filename: Any) -> str:
    name = filename if isinstance(filename, str) else getattr(filename, "name", "<file object>")
    return f"{nnp.filename}:{name}" if nnp is not None else str(name)


def _via_file(data: bytes, suffix: str, where: str, read: Callable[[str], Any]) -> Any:
    """``read`` of ``data`` written to a temporary ``suffix`` file; errors name ``where``."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "member" + suffix)
        with open(path, "wb") as f:
            f.write(data)
        try:
            return read(path)
        except ModelFileError as exc:
            raise ModelFileError(str(exc).replace(path, where)) from None


def _set_parameters(ctx: Any, params: "OrderedDict[str, tuple[np.ndarray, bool]]") -> None:
    registry = _scope(ctx)
    prefix = "" if registry is not None else current_scope()
    registry = registry if registry is not None else current_registry()
    for name, (value, need_grad) in params.items():
        full = f"{prefix}/{name}" if prefix else name
        var = registry.get(full)
        if var is None:
            registry.set(full, Variable.from_numpy_array(value, need_grad=bool(need_grad)))
            continue
        if tuple(var.shape) != tuple(value.shape):
            raise ModelFileError(f"parameter '{full}' has shape {tuple(value.shape)} in the "
                                 f"file but {tuple(var.shape)} in the scope")
        var.need_grad = bool(need_grad)
        var.d = value


def _text_sections(ctx: Any, model: Any) -> None:
    proto = _proto(ctx)
    proto.network.extend(model.networks.values())
    proto.parameter.extend(_Fields({"variable_name": k, "shape": {"dim": list(p.value.shape)},
                                    "need_grad": bool(p.need_grad)})
                           for k, p in model.parameters.items())
    for section in ("optimizer", "executor", "dataset", "monitor"):
        getattr(proto, section).extend(
            _Fields(v) for v in (model.extras.get(section + "s") or {}).values())


def _nntxt_file_loader(ctx: Any, file_loaders: Any, nnp: Any, filename: Any, ext: str) -> None:
    """``.nntxt``/``.prototxt``: the text's sections to ``ctx.proto``, its parameters (all of
    ``ctx.proto``'s so far, as NNabla's) to the scope."""
    where = _where(nnp, filename)
    model = _via_file(_read(nnp, filename), ".nntxt", where, read_legacy_model)
    if not _flag(ctx, "parameter_only"):
        _text_sections(ctx, model)
    if _proto(ctx).parameter and not _flag(ctx, "exclude_parameter"):
        _text_sections(ctx, model)
        _set_parameters(ctx, OrderedDict((k, (p.value, p.need_grad))
                                         for k, p in model.parameters.items()))


def _parameter_file_loader(ctx: Any, file_loaders: Any, nnp: Any, filename: Any,
                           ext: str) -> None:
    """``.h5``/``.protobuf``: parameters to the scope (a ``.protobuf``'s also to
    ``ctx.proto``)."""
    if _flag(ctx, "exclude_parameter"):
        return
    where = _where(nnp, filename)
    data = _read(nnp, filename)
    if ext == ".h5":
        _set_parameters(ctx, _via_file(data, ".h5", where, read_parameter_file))
    elif ext == ".protobuf":
        model = _via_file(data, ".protobuf", where, read_legacy_model)
        _text_sections(ctx, model)
        _set_parameters(ctx, OrderedDict((k, (p.value, p.need_grad))
                                         for k, p in model.parameters.items()))
    else:
        raise ValueError("Not support extension: {}".format(ext))


def _nnp_file_loader(ctx: Any, file_loaders: Any, nnp: Any, filename: Any, ext: str) -> None:
    """``.nnp``: each member to the loaders its extension matches."""
    if nnp is not None:
        raise ValueError(f"{_where(nnp, filename)}: an .nnp inside an .nnp")
    source = filename if hasattr(filename, "read") else os.fspath(filename)
    with zipfile.ZipFile(source, "r") as archive:
        for name in archive.namelist():
            _, member_ext = os.path.splitext(name)
            for supported, loader in file_loaders.items():
                if member_ext in supported:
                    loader(ctx, file_loaders, archive, name, member_ext)


def _buf_type(filename: str) -> str:
    return filename.split("_")[-1].split(".")[1].lower()


def _opti_file_rough_loader(ctx: Any, file_loaders: Any, nnp: Any, filename: Any,
                            ext: str) -> None:
    """``*.optimizer``: a solver's saved states, kept in ``ctx.optimizer_states_checkpoint``
    for :func:`restore_optimizer_state`."""
    name = filename if isinstance(filename, str) else getattr(filename, "name", "")
    states = getattr(ctx, "optimizer_states_checkpoint", None)
    if states is None:
        states = OrderedDict()
    kind = _buf_type(name)
    if kind == "protobuf":
        for key, value in read_nnabla_optimizer_states(_read(nnp, filename),
                                                       _where(nnp, filename)).items():
            states[key] = (".protobuf", value)
    elif kind == "h5":
        h5 = io.BytesIO(_read(nnp, filename))
        h5.name = f"{'_'.join(name.split('_')[:2])}.h5"
        states["_".join(name.split("_")[:-2])] = (".h5", h5)
    ctx.optimizer_states_checkpoint = states


def optimizer_checkpoints(path: Any) -> "OrderedDict[str, Any]":
    """The solver states saved in the ``.nnp`` at ``path`` (its ``*.optimizer`` members) as
    :func:`load_files` leaves them in ``ctx.optimizer_states_checkpoint``; empty for another
    file.

    Example:
        >>> optimizer_checkpoints("net.nntxt")
        OrderedDict()
    """
    class Ctx:
        optimizer_states_checkpoint = None
    ctx = Ctx()
    if isinstance(path, (str, os.PathLike)) and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path, "r") as archive:
            for name in archive.namelist():
                if name.endswith(".optimizer"):
                    _opti_file_rough_loader(ctx, None, archive, name, ".optimizer")
    return ctx.optimizer_states_checkpoint or OrderedDict()


def get_initial_file_loader() -> "OrderedDict[str, Loader]":
    """The loaders NNabla's ``load`` starts with, by the extensions each takes
    (``'.nntxt,.prototxt'``, ``'.protobuf,.h5'``, ``'.nnp'``, ``'.optimizer'``).

    Example:
        >>> list(get_initial_file_loader())
        ['.nntxt,.prototxt', '.protobuf,.h5', '.nnp', '.optimizer']
    """
    return OrderedDict([(".nntxt,.prototxt", _nntxt_file_loader),
                        (".protobuf,.h5", _parameter_file_loader),
                        (".nnp", _nnp_file_loader),
                        (".optimizer", _opti_file_rough_loader)])


def _scope(ctx: Any):
    scope = getattr(ctx, "parameter_scope", None)
    if scope is None:
        return None
    if not isinstance(scope, ParameterRegistry):
        raise TypeError(f"load_files: ctx.parameter_scope is a {type(scope).__name__}; Stadyn's "
                        "parameter scopes are registries (stadyn.ParameterRegistry), and "
                        "nn.get_current_parameter_scope() is a snapshot -- leave it unset to "
                        "load into the current scope")
    return scope


def load_files(ctx: Any, file_loaders: "Mapping[str, Loader]", filenames: Any,
               extension: str | None = None) -> None:
    """Give each of ``filenames`` (a path, a file object or a list of them; a file object's
    extension is ``extension``) to every loader of ``file_loaders`` whose key holds its
    extension, sharing ``ctx`` (see the module's docstring).

    Example:
        >>> import os, tempfile, h5py, numpy as np, stadyn as sd
        >>> path = os.path.join(tempfile.mkdtemp(), "params.h5")
        >>> with h5py.File(path, "w") as f:
        ...     f["fc/W"] = np.ones((2, 3), np.float32)
        ...     f["fc/W"].attrs["need_grad"] = True
        >>> class Ctx: pass
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     load_files(Ctx(), get_initial_file_loader(), path)
        ...     sd.get_parameters()["fc/W"].shape
        (2, 3)
    """
    if isinstance(filenames, (str, os.PathLike)) or hasattr(filenames, "read"):
        filenames = [filenames]

    def load_all() -> None:
        for filename in filenames:
            if isinstance(filename, (str, os.PathLike)):
                filename = os.fspath(filename)
                _, ext = os.path.splitext(filename)
            else:
                ext = extension
            handled = False
            for supported, loader in file_loaders.items():
                if ext in supported:
                    loader(ctx, file_loaders, None, filename, ext)
                    handled = True
            if not handled:
                logger.warning("{} is omitted.".format(filename))

    _scope(ctx)         # checked before any file is read
    load_all()


def restore_optimizer_state(optimizer: Any) -> None:
    """Give ``optimizer.solver`` the states saved with the optimizer: those in its file fields
    (``optimizer.proto``: ``solver.states``), then its checkpoint (``optimizer.solver_checkpoint``,
    what :func:`load_files` left in ``ctx.optimizer_states_checkpoint`` under its name), as
    NNabla's.  The solver's parameters must be set first; the states are checked against them.

    The optimizers of ``load`` (``info.optimizers[name]``) are such objects (``load`` has
    already restored them once, as NNabla's); so is anything with ``solver``, ``proto`` (the
    fields, or None) and, optionally, ``solver_checkpoint``.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.solvers as S
        >>> from types import SimpleNamespace
        >>> w = sd.Variable.from_numpy_array(np.zeros(2), need_grad=True)
        >>> solver = S.Momentum(0.1, 0.9); solver.set_parameters({"w": w})
        >>> saved = {"w": {"m": np.array([0.5, 1.0], np.float32), "t": 4}}
        >>> restore_optimizer_state(SimpleNamespace(solver=solver, proto=None,
        ...                                         solver_checkpoint=(".protobuf", saved)))
        >>> solver.get_states()["w"].t
        4
    """
    if isinstance(optimizer, Mapping):
        raise TypeError("restore_optimizer_state: this is a dict of an optimizer's file "
                        "fields, with no solver; pass info.optimizers[name] of load, or an "
                        "object with solver (set to the network's parameters), proto (that "
                        "dict) and solver_checkpoint (load_files' "
                        "ctx.optimizer_states_checkpoint[name])")
    solver = optimizer.solver
    fields = optimizer.proto
    if isinstance(fields, _Fields):
        fields = fields._fields
    if fields:
        states = optimizer_states(fields, f"optimizer {fields.get('name', '')!r}")
        if states:
            solver.set_states(states)
    checkpoint = getattr(optimizer, "solver_checkpoint", None)
    if not checkpoint:
        return
    ext, handler = checkpoint
    if ext == ".protobuf":
        solver.set_states(handler)
    elif ext == ".h5":
        name = getattr(handler, "name", "solver_checkpoint.h5")
        _via_file(handler.read(), ".h5", name,
                  lambda path: solver.load_states(path, name=name))
        handler.seek(0)
    else:
        raise ValueError(f"restore_optimizer_state: a checkpoint is ('.h5', file) or "
                         f"('.protobuf', states), not {ext!r}")
