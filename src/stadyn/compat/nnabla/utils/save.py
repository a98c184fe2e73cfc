"""``nnabla.utils.save`` on Stadyn: :func:`save` writes NNabla's ``contents`` dict (networks,
executors, optimizers, datasets, monitors, global and training config) as an ``.nnp`` or
``.nntxt`` file that real NNabla 1.39 loads, without NNabla (``stadyn.serialize.NnpWriter``).

``.protobuf`` files hold the parameters only (what NNabla's own loader reads from them).
Solver states (``include_solver_state``) are not written.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any, Callable

from ....parametric import get_parameters
from .._kept_dtypes import kept_arrays
from ....serialize import ExportError, NnpWriter

__all__ = ["save", "create_proto", "get_parameters", "save_files", "get_default_file_savers",
           "FileHandlerContext"]


class FileHandlerContext:
    """What the file savers share, set as attributes as NNabla's ``save`` sets them: ``proto``
    (what :func:`create_proto` returns) and ``parameters`` (name -> Variable to write instead of
    the networks' own parameters, or None)."""


def _solver_fields(solver: Any, where: str) -> tuple[str, dict]:
    name = str(getattr(solver, "name", type(solver).__name__))
    hyper = getattr(solver, "hyper", None)
    if not isinstance(hyper, dict):
        raise ExportError(f"{where}: {solver!r} is not a solver")
    return name, dict(hyper)


def _backends(ctx: Any) -> list[str]:
    """NNabla's backend strings (``cpu:float``; ``cudnn:half``...) for a Stadyn context."""
    backend = getattr(ctx, "backend", None) or "cpu"
    if not isinstance(backend, str):                  # already NNabla's list
        return [str(b) for b in backend]
    if ":" in backend:
        return [backend]
    kind = "half" if str(getattr(ctx, "dtype", "")) in ("float16", "half") else "float"
    device = "cudnn" if backend in ("cuda", "cudnn", "gpu") else backend
    return [f"{device}:{kind}"] + (["cpu:float"] if device != "cpu" else [])


def create_proto(contents: dict, include_params: bool = False, variable_batch_size: bool = True,
                 save_solver_in_proto: bool = False) -> NnpWriter:
    """The file ``contents`` describes, as an :class:`~stadyn.serialize.NnpWriter` (NNabla
    returns its ``NNablaProtoBuf``; ``.text()`` is the ``.nntxt``).  ``include_params`` puts
    the parameters into the text when it is written as ``.nntxt``.

    Example:
        >>> import stadyn as sd
        >>> from stadyn.compat import nnabla as nn
        >>> from stadyn.compat.nnabla import functions as F
        >>> x = nn.Variable((2, 3))
        >>> proto = create_proto({"networks": [{"name": "n", "batch_size": 2,
        ...                                     "outputs": {"y": F.tanh(x)}, "names": {"x": x}}]})
        >>> list(proto.networks)
        ['n']
    """
    if save_solver_in_proto:
        raise ExportError("save_solver_in_proto: solver states are not written to NNabla files")
    w = NnpWriter()
    if "global_config" in contents:
        ctx = contents["global_config"].get("default_context")
        w.set_global_config(_backends(ctx), str(getattr(ctx, "array_class", "") or ""),
                            str(getattr(ctx, "device_id", "0") or "0"))
    if "training_config" in contents:
        t = contents["training_config"]
        w.set_training_config(t["max_epoch"], t.get("iter_per_epoch", 0),
                              t.get("save_best", True), t.get("monitor_interval", 0))
    trained = {o["network"] for o in contents.get("optimizers", [])}
    for net in contents.get("networks", []):
        names = OrderedDict(net.get("names") or {})
        w.add_network(net["name"], dict(net["outputs"]), None,
                      batch_size=net.get("batch_size"), training=net["name"] in trained,
                      names=names, variable_batch_size=variable_batch_size)
    for d in contents.get("datasets", []):
        w.add_dataset(d["name"], d["uri"], list(d["variables"]), d["batch_size"],
                      shuffle=d.get("shuffle", False), cache_dir=d.get("cache_dir"),
                      no_image_normalization=d.get("no_image_normalization", False))
    for o in contents.get("optimizers", []):
        solver_type, fields = _solver_fields(o["solver"], f"optimizer {o['name']!r}")
        trained_params = o["solver"].get_parameters() if hasattr(o["solver"],
                                                                 "get_parameters") else None
        w.add_optimizer(o["name"], o["network"], solver_type, fields, o.get("dataset"),
                        loss_variables=o.get("loss_variables"),
                        trained=None if trained_params is None else list(trained_params),
                        weight_decay=o.get("weight_decay", 0.0), lr_decay=o.get("lr_decay", 1.0),
                        lr_decay_interval=o.get("lr_decay_interval", 1),
                        update_interval=o.get("update_interval", 1),
                        data_variables=o.get("data_variables"))
    for m in contents.get("monitors", []):
        w.add_monitor(m["name"], m["network"], m["dataset"], m.get("monitor_variables"),
                      m.get("data_variables"))
    for e in contents.get("executors", []):
        w.add_executor(e["name"], e["network"], e.get("data"), e.get("output"), e.get("remp"),
                       e.get("generator_variables", ()),
                       **{k: e.get(k) for k in ("no_image_normalization", "num_evaluations",
                                                "repeat_evaluation_type",
                                                "need_back_propagation")})
    w.include_params = bool(include_params)
    return w


def _override(ctx: Any) -> None:
    """Write ``ctx.parameters`` (NNabla's ``save(parameters=...)``) instead of the networks'."""
    given = getattr(ctx, "parameters", None)
    if given is None:
        return
    params = ctx.proto.parameters
    for name, var in given.items():
        if name in params:
            params[name] = (getattr(var, "d", var), params[name][1])


def _nntxt_saver(ctx: FileHandlerContext, filename: str, ext: str) -> None:
    _override(ctx)
    ctx.proto.write(filename, include_params=ctx.proto.include_params, kind=".nntxt")


def _kept_dtypes(ctx: Any) -> None:
    """The parameters NNabla 1.39 holds in another floating dtype (a float64 ``.h5`` or
    ``.protobuf`` loaded, a float64 initializer array) written in it, as NNabla's
    ``parameter.h5`` holds them (``_kept_dtypes.py``).  Only those: the others' values are
    in the writer already (read once, by the network's export or :func:`_override`), and a
    value the export reshaped (a running statistic written in its function's shape) keeps
    that shape."""
    params = ctx.proto.parameters
    found = getattr(ctx, "parameters", None) or get_parameters(grad_only=False)
    found = {n: v for n, v in found.items() if n in params and hasattr(v, "d")}
    for name, array in kept_arrays(found).items():
        params[name] = (array.reshape(params[name][0].shape), params[name][1])


def _nnp_saver(ctx: FileHandlerContext, filename: str, ext: str, parameter_format: str) -> None:
    _override(ctx)
    if parameter_format == ".h5":
        _kept_dtypes(ctx)
    ctx.proto.write(filename, parameter_format=parameter_format, kind=".nnp")


def _protobuf_saver(ctx: FileHandlerContext, filename: str, ext: str) -> None:
    _override(ctx)
    data = ctx.proto.parameter_bytes(".protobuf")
    with open(filename, "wb") as f:
        f.write(data)


def get_default_file_savers(parameter_format: str = ".h5",
                            solver_state_format: str | None = None
                            ) -> "OrderedDict[str, Callable[..., None]]":
    """The file savers by extension (NNabla's keys: ``'.nntxt, .prototxt'``, ``'.protobuf'``,
    ``'.nnp'``); each is ``saver(ctx, filename, ext)``.

    Example:
        >>> list(get_default_file_savers())
        ['.nntxt, .prototxt', '.protobuf', '.nnp']
    """
    if parameter_format not in (".h5", ".protobuf"):
        raise ExportError(f"parameter_format is '.h5' or '.protobuf', got {parameter_format!r}")
    return OrderedDict([
        (".nntxt, .prototxt", _nntxt_saver),
        (".protobuf", _protobuf_saver),
        (".nnp", lambda ctx, filename, ext: _nnp_saver(ctx, filename, ext, parameter_format)),
    ])


def save_files(ctx: FileHandlerContext, file_savers: dict, filenames: Any,
               extension: str | None = None) -> None:
    """Write ``ctx`` to each of ``filenames`` with the saver of its extension (or
    ``extension``); an extension no saver handles is an error.

    Example:
        >>> try:
        ...     save_files(FileHandlerContext(), get_default_file_savers(), "net.onnx")
        ... except ValueError as exc:
        ...     print(exc)
        net.onnx: NNabla's save writes .nntxt, .prototxt, .protobuf, .nnp files, not .onnx
    """
    if isinstance(filenames, (str, os.PathLike)):
        filenames = [filenames]
    for filename in filenames:
        filename = os.fspath(filename)
        ext = extension or os.path.splitext(filename)[1]
        for keys, saver in file_savers.items():
            if ext.lower() in [k.strip() for k in keys.split(",")]:
                saver(ctx, filename, ext)
                break
        else:
            known = ", ".join(k.strip() for keys in file_savers for k in keys.split(","))
            raise ExportError(f"{filename}: NNabla's save writes {known} files, not {ext}")


def save(filename: Any, contents: dict, include_params: bool = False,
         variable_batch_size: bool = True, extension: str = ".nnp", parameters: Any = None,
         parameter_format: str = ".h5", include_solver_state: bool = False,
         solver_state_format: str = ".h5") -> None:
    """Save networks and their execution configuration as NNabla does (``.nnp``: a zip of
    ``network.nntxt`` and ``parameter.h5``/``.protobuf``; ``.nntxt``: the text alone,
    ``include_params`` putting the parameters in it).  ``contents`` is NNabla's dict:
    ``networks`` (``name``, ``batch_size``, ``outputs`` and ``names``: name -> Variable),
    ``executors`` (``name``, ``network``, ``data``, ``output``), and optionally
    ``optimizers``, ``datasets``, ``monitors``, ``global_config``, ``training_config``.
    ``parameters`` (name -> Variable) are written instead of the networks' own.

    Example:
        >>> import os, tempfile, numpy as np, stadyn as sd
        >>> from stadyn.compat import nnabla as nn
        >>> from stadyn.compat.nnabla import functions as F, parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     x = nn.Variable((4, 3))
        ...     y = F.softmax(PF.affine(x, 2, name="fc"))
        ...     path = os.path.join(tempfile.mkdtemp(), "net.nnp")
        ...     save(path, {"networks": [{"name": "net", "batch_size": 4,
        ...                               "outputs": {"y": y}, "names": {"x": x}}],
        ...                 "executors": [{"name": "runtime", "network": "net",
        ...                                "data": ["x"], "output": ["y"]}]})
        >>> sd.load(path)(x=np.zeros((4, 3)))["y"]
        array([[0.5, 0.5],
               [0.5, 0.5],
               [0.5, 0.5],
               [0.5, 0.5]], dtype=float32)
    """
    if include_solver_state:
        raise ExportError("include_solver_state: solver states are not written to NNabla files")
    if not isinstance(filename, (str, os.PathLike)):
        raise ExportError("save writes to a path (file objects are not supported)")
    ext = os.path.splitext(os.fspath(filename))[1] or extension
    ctx = FileHandlerContext()
    ctx.proto = create_proto(contents, include_params and ext != ".nnp", variable_batch_size)
    ctx.parameters = parameters
    save_files(ctx, get_default_file_savers(parameter_format, solver_state_format), filename,
               ext)
