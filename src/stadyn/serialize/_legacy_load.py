"""Loading NNabla (``.nnp``, ``.nntxt``) and CNTK 2 (``.model``, ``.dnn``) model files as runnable
Stadyn networks: :func:`load_nnp`, :func:`load_cntk`, and :func:`load_legacy`, which
:func:`stadyn.load` calls for any file that is not a Stadyn model file."""

from __future__ import annotations

import os
import re
import zipfile
from collections import Counter, OrderedDict
from typing import Any

import numpy as np

from .._errors import ModelFileError
from .. import functions as F
from ..graph import Variable, auto_forward
from ..parametric import ParameterRegistry
from ._cntk_format import LARGE_MAGIC, cntk_output_name
from ._cntk_v1_format import is_cntk_v1_file
from ._legacy import read_legacy_model
from ._legacy_import import ModelRefusedAtRunError, build_network, output_shapes
from ._legacy_ir import LegacyModel
from ._network import ModelInfo, Network

__all__ = ["load_nnp", "load_cntk", "load_legacy", "legacy_model_info", "is_legacy_model_file",
           "legacy_model_head", "LEGACY_SUFFIXES"]

#: File name endings read as NNabla or CNTK model files.
LEGACY_SUFFIXES = (".nnp", ".nntxt", ".prototxt", ".model", ".dnn")


def is_legacy_model_file(path: str | os.PathLike) -> bool:
    """Is ``path`` an NNabla or CNTK model file?  A zip is one when it holds an
    ``nnp_version.txt`` or ``.nntxt`` member (a Stadyn model file is a zip holding neither);
    another existing file when it starts like a CNTK v1 or CNTK 2 model or has a suffix of
    :data:`LEGACY_SUFFIXES`; a missing file by its suffix.

    Example:
        >>> is_legacy_model_file("net.nnp"), is_legacy_model_file("old.model"), \\
        ...     is_legacy_model_file(__file__)
        (True, True, False)
    """
    return legacy_model_head(path) is not None


def legacy_model_head(path: str | os.PathLike) -> bytes | None:
    """The first 16 bytes of ``path`` where it is an NNabla or CNTK model file
    (:func:`is_legacy_model_file`), read once for both questions (``b""`` for one told by its
    suffix alone: missing or unreadable); None for another file.

    Example:
        >>> legacy_model_head("missing.dnn"), legacy_model_head(__file__)
        (b'', None)
    """
    path = os.fspath(path)
    by_suffix = b"" if path.lower().endswith(LEGACY_SUFFIXES) else None
    if not os.path.isfile(path):
        return by_suffix
    try:
        with open(path, "rb") as f:
            head = f.read(16)
        if head.startswith(b"PK\x03\x04"):
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
            return head if "nnp_version.txt" in names or \
                any(n.endswith(".nntxt") for n in names) else None
    except (OSError, zipfile.BadZipFile):
        return by_suffix
    large = len(head) >= 4 and int.from_bytes(head[:4], "little") == LARGE_MAGIC
    # a CNTK 2 Dictionary as CNTK 2.7 (and Function.save) writes it: version 2, then an entry
    cntk_v2 = head.startswith(b"\x08\x02\x12")
    return head if by_suffix is not None or is_cntk_v1_file(head) or large or cntk_v2 else None


def _batch(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ModelFileError(f"{where}: batch_size must be a positive whole number, got "
                             f"{value!r}")
    return int(value)


def _names(entries: Any) -> list[str]:
    return [e["variable_name"] for e in (entries or []) if isinstance(e, dict)
            and isinstance(e.get("variable_name"), str)]


def load_nnp(path: str | os.PathLike | LegacyModel, executor: str | None = None, *,
             network: str | None = None, batch_size: int | None = None,
             registry: ParameterRegistry | None = None, draws: str = "torch") -> Network:
    """Load an NNabla ``.nnp`` / ``.nntxt`` file as a runnable :class:`Network`, without NNabla.

    By default the first executor is built: its network, its data (and generator) variables
    as inputs and its output variables as outputs, all under NNabla's variable names.
    ``executor`` names another; ``network`` builds a network by name instead (inputs: the
    variables no function writes; outputs: those no function reads).  ``batch_size`` sizes
    NNabla's batch placeholder (``-1``; default the network's ``batch_size``).  Parameters go
    to ``registry`` (a new one by default) under NNabla's names (``cnn/conv1/conv/W``), with
    the file's ``need_grad``; batch normalisation and dropout follow the file (a ``runtime``
    network normalises with the running statistics).  Functions no Stadyn op maps are refused
    with one :class:`UnsupportedModelError` naming them.

    The file's random functions (``Dropout``, ``Rand``, ``Randn``, ``Randint``, ``RandomCrop``,
    ``RandomFlip``, ``RandomShift``, ``RandomErase``, ``RandomChoice``) draw as Stadyn's ops draw
    (torch's numbers, ``stadyn.seed``), each from the generator its ``seed`` field names (-1:
    the global one); ``draws="nnabla"`` makes them draw NNabla 1.39's CPU numbers instead, as
    compat.nnabla's ``NnpLoader`` and ``nnabla.utils.load.load`` do.

    Example:
        >>> import os, tempfile, numpy as np, stadyn as sd
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.nntxt")
        >>> with open(path, "w") as f:
        ...     _ = f.write('network { name: "n" batch_size: 2 '
        ...                 'variable { name: "x" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'function { name: "t" type: "Tanh" input: "x" output: "y" } } '
        ...                 'executor { name: "run" network_name: "n" '
        ...                 'data_variable { variable_name: "x" data_name: "x" } '
        ...                 'output_variable { variable_name: "y" data_name: "y" } }')
        >>> net = sd.load_nnp(path)
        >>> list(net.inputs), net(x=np.zeros((2, 2)))["y"].shape
        (['x'], (2, 2))
    """
    model = path if isinstance(path, LegacyModel) else read_legacy_model(path)
    where = model.path
    if model.format != "nnp":
        raise ModelFileError(f"{where}: not an NNabla file (a {model.format} model)")
    if not model.networks:
        raise ModelFileError(f"{where}: holds no network (a parameter file? read it with "
                             "sd.load_parameters)")
    executors = model.extras.get("executors") or OrderedDict()
    if network is not None and executor is not None:
        raise ValueError("pass executor or network, not both")
    if network is None and executors:
        name = executor if executor is not None else next(iter(executors))
        if name not in executors:
            raise ModelFileError(f"{where}: no executor {name!r}; the executors are "
                                 f"{list(executors)}")
        ex = executors[name]
        net_name = ex.get("network_name")
        if net_name not in model.networks:
            raise ModelFileError(f"{where}: executor {name!r} runs the network {net_name!r}, "
                                 f"which the file does not hold")
        net = model.networks[net_name]
        ins = _names(ex.get("data_variable")) + _names(ex.get("generator_variable"))
        outs = _names(ex.get("output_variable"))
        info_name = f"executor {name!r}, network {net_name!r}"
    else:
        if executor is not None:
            raise ModelFileError(f"{where}: no executor {executor!r}; the file has none")
        net_name = network if network is not None else next(iter(model.networks))
        if net_name not in model.networks:
            raise ModelFileError(f"{where}: no network {net_name!r}; the networks are "
                                 f"{list(model.networks)}")
        net = model.networks[net_name]
        ins, outs = list(net.inputs), list(net.outputs)
        info_name = f"network {net_name!r}"
    size = _batch(batch_size, where) or (net.batch_size if (net.batch_size or 0) > 0 else 1)
    info = {"kind": f"NNabla model ({info_name})", "batch_size": size}
    return build_network(model, net, OrderedDict((n, n) for n in ins),
                         OrderedDict((n, n) for n in outs), registry=registry,
                         batch_size=size, info=info, draws=draws)


def _cntk_key(var, uid: str, taken: set[str], name: str = "") -> str:
    name = name or (var.meta.get("name") if var is not None else "") or ""
    key = name if name and name not in taken else uid
    taken.add(key)
    return key


def _output_names(net) -> dict[str, str]:
    """The names CNTK 2.7 shows for the functions' outputs (``load_model(f).outputs``): a
    function's or block's name, ``<name>_UnpackSequenceMask`` for an unpack's mask."""
    names = {}
    for f in net.functions:
        if f.type != "Combine":
            for k, out in enumerate(f.outputs):
                names[out] = cntk_output_name(f.type, f.meta.get("name") or "", k)
    return names


def load_cntk(path: str | os.PathLike | LegacyModel, *, batch_size: int | None = None,
              registry: ParameterRegistry | None = None,
              defer_refusals: bool = False) -> Network:
    """Load a CNTK 2 model file (``.model``, ``.dnn``: what ``Function.save`` wrote) or a CNTK v1
    one (BrainScript's ``cntk.exe``; its dynamic axis taken as the batch axis, nodes written by
    CNTK 2's v1 writer keyed by their CNTK 2 uids and names) as a runnable :class:`Network`,
    without CNTK.

    Inputs and outputs are keyed by CNTK's names where they are unique and set (``features``),
    else by uid (``Block1232_Output_0``).  Inputs with CNTK's batch axis get it first, sized
    ``batch_size`` (default 1; a forward pass accepts other sizes).  Parameters and constants
    (batch-norm running statistics too) go to ``registry`` (a new one by default) under their
    CNTK uids (``Parameter8``: CNTK's names ``W``, ``b`` repeat in every layer).  Blocks
    (CNTK's layers) are expanded into their bodies; batch normalisation follows the phase and
    dropout runs only in training, as in CNTK.  A sequence input (CNTK's default sequence
    axis) takes a list of sequences; each graph loop through ``PastValue``/``FutureValue`` (a
    ``Recurrence``, ``Fold``, LSTM, GRU) runs as one ``recurrence``, and a sequence output's
    padded steps are 0.  Functions no Stadyn op maps, and loops that cannot run as a
    recurrence, are refused with one :class:`UnsupportedModelError` naming them, and so is a
    function CNTK 2.7 loads but refuses when it runs (a :class:`ModelRefusedAtRunError`),
    unless ``defer_refusals`` (``cntk.load_model``'s): then the network's ``refused_at_run``
    lists it, for the caller to raise when it runs.

    Typically ``load_cntk("ConvNet_CIFAR10_DataAug_0.dnn")(features=images)``; an NNabla
    file is refused.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "n.nntxt")
        >>> with open(path, "w") as f:
        ...     _ = f.write('network { name: "n" }')
        >>> try:
        ...     load_cntk(path)
        ... except ModelFileError as exc:
        ...     print(str(exc).split(": ", 1)[1])
        not a CNTK model file (a nnp model)
    """
    model = path if isinstance(path, LegacyModel) else read_legacy_model(path)
    where = model.path
    if model.format not in ("cntk-v2", "cntk-v1"):
        raise ModelFileError(f"{where}: not a CNTK model file (a {model.format} model)")
    net = model.networks["main"]
    ins, outs, names = _cntk_names(model)
    if not outs:    # (a v1 file whose output group holds its input alone: C.alias(x) saved)
        return _computing_nothing(where, defer_refusals)
    size = _batch(batch_size, where) or 1
    kind = "CNTK model" if model.format == "cntk-v2" else "CNTK v1 model (BrainScript)"
    info = {"kind": kind, "batch_size": size}
    split = (lambda key, shown: _v1_split(key)) if model.format == "cntk-v1" else None
    return build_network(model, net, ins, outs, registry=registry, batch_size=size, info=info,
                         parameter_names=names, split_name=split,
                         defer_refusals=defer_refusals)


def _computing_nothing(where: str, defer_refusals: bool) -> Network:
    """A network of no output but its inputs: CNTK 2.7 loads it as a Combine of no outputs
    (``CompositeFunctionOpName``, no arguments) and refuses to run it, a ValueError
    (``Function::Forward``: "At least one output has to be specified").  Refused here, or
    with ``defer_refusals`` a network of no inputs whose one output, a stand-in, is refused
    at every run."""
    reason = (f"{where}: the network computes nothing (no node but its inputs is a root): "
              "CNTK 2.7 loads it as a Combine of no outputs and refuses to run it (At least "
              "one output has to be specified when calling Forward method)")
    if not defer_refusals:
        raise ModelRefusedAtRunError(reason)
    with auto_forward(False):       # (computed, so that a run meets it)
        stand_in = F.identity(Variable.from_numpy_array(np.zeros((), np.float32)))
    network = Network({}, {"": stand_in}, source=where)
    network.refused_at_run = [(stand_in, ModelRefusedAtRunError, reason)]
    return network


_V1_NAME = re.compile(r"^__v2libuid__(?P<uid>.*?)__v2libname__(?P<name>.*)$", re.S)


def _v1_split(name: str) -> tuple[str, str]:
    """(uid, name) of a CNTK v1 node name: CNTK 2's v1 writer stores both
    (``__v2libuid__<uid>__v2libname__<name>``); another node's name is both."""
    m = _V1_NAME.match(name)
    return (m.group("uid"), m.group("name")) if m else (name, name)


def _cntk_names(model: LegacyModel) -> tuple[OrderedDict, OrderedDict, dict]:
    """(inputs key -> variable, outputs key -> variable, parameter -> registry name) of a CNTK
    model: CNTK 2 names as they are (uids for parameters); CNTK v1 nodes written by CNTK 2
    (``__v2libuid__<uid>__v2libname__<name>``) by those uids and names."""
    net = model.networks["main"]
    if model.format == "cntk-v2":
        taken: set[str] = set()
        ins = OrderedDict((_cntk_key(net.variables.get(n), n, taken), n) for n in net.inputs)
        taken, shown = set(), _output_names(net)
        outs = OrderedDict((_cntk_key(net.variables.get(n), n, taken, shown.get(n, "")), n)
                           for n in net.outputs)
        return ins, outs, {}

    split = _v1_split

    def keyed(names: list[str]) -> OrderedDict:
        out: OrderedDict = OrderedDict()
        for n in names:
            uid, short = split(n)
            out[short if short and short not in out else uid] = n
        return out
    names = {p: split(p)[0] for p in model.parameters}
    return keyed(list(net.inputs)), keyed(list(net.outputs)), names


def load_legacy(path: str | os.PathLike, registry: ParameterRegistry | None = None,
                batch_size: int | None = None, **options: Any) -> Network:
    """Load an NNabla or CNTK model file by its format (:func:`load_nnp` with ``options``
    ``executor``/``network``, or :func:`load_cntk`).

    Example:
        >>> import os, tempfile, numpy as np
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.nntxt")
        >>> with open(path, "w") as f:
        ...     _ = f.write('network { name: "n" batch_size: 1 '
        ...                 'variable { name: "x" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'function { name: "r" type: "ReLU" input: "x" output: "y" } }')
        >>> load_legacy(path)(x=np.array([[-1.0, 2.0]]))["y"]
        array([[0., 2.]], dtype=float32)
    """
    model = read_legacy_model(path)
    if model.format == "nnp":
        return load_nnp(model, registry=registry, batch_size=batch_size, **options)
    if options:
        raise ValueError(f"{model.path}: {sorted(options)} apply to NNabla files only")
    return load_cntk(model, registry=registry, batch_size=batch_size)


def _shape(shape: Any, batch: bool = False) -> tuple:
    dims = tuple("batch" if d == -1 else d for d in (shape or ()))
    return (("batch",) + dims) if batch else dims


def legacy_model_info(path: str | os.PathLike) -> ModelInfo:
    """What ``stadyn info`` prints for an NNabla or CNTK model file, read without building the
    graph: the inputs and outputs :func:`load_legacy` would give (``'batch'`` for the batch
    axis), the function types in the framework's own names (CNTK's layers, the blocks, listed
    apart), the parameter count.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.nntxt")
        >>> with open(path, "w") as f:
        ...     _ = f.write('network { name: "n" batch_size: 1 '
        ...                 'variable { name: "x" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'function { name: "r" type: "ReLU" input: "x" output: "y" } }')
        >>> info = legacy_model_info(path)
        >>> info.kind, dict(info.inputs), dict(info.op_counts)
        ("NNabla model (network 'n')", {'x': (('batch', 2), 'float32')}, {'ReLU': 1})
    """
    model = read_legacy_model(path)
    details: dict[str, Any] = {}
    if model.format == "nnp":
        if not model.networks:
            raise ModelFileError(f"{model.path}: holds no network (a parameter file)")
        executors = model.extras.get("executors") or {}
        if executors:
            name, ex = next(iter(executors.items()))
            net = model.networks.get(ex.get("network_name"))
            if net is None:
                raise ModelFileError(f"{model.path}: executor {name!r} runs the network "
                                     f"{ex.get('network_name')!r}, which the file does not hold")
            ins = _names(ex.get("data_variable")) + _names(ex.get("generator_variable"))
            outs = _names(ex.get("output_variable"))
            kind = f"NNabla model (executor {name!r}, network {net.name!r})"
            details["executors"] = ", ".join(executors)
        else:
            net = next(iter(model.networks.values()))
            ins, outs, kind = list(net.inputs), list(net.outputs), \
                f"NNabla model (network {net.name!r})"
        if len(model.networks) > 1:
            details["networks"] = ", ".join(model.networks)
        ins_ = OrderedDict((n, (_shape(getattr(net.variables.get(n), "shape", None)),
                                getattr(net.variables.get(n), "dtype", "float32")))
                           for n in ins)
        outs_ = OrderedDict((n, (_shape(getattr(net.variables.get(n), "shape", None)),
                                 getattr(net.variables.get(n), "dtype", "float32")))
                            for n in outs)
        counts = net.op_counts()
    else:                                   # CNTK 2 or v1
        net = model.networks["main"]
        in_names, out_names, _ = _cntk_names(model)
        ins_ = OrderedDict()
        for key, n in in_names.items():
            v = net.variables.get(n)
            batched = model.format == "cntk-v1" or bool(v is not None and
                                                         v.meta.get("dynamic_axes"))
            shape = _shape(v.shape if v else None, batched)
            if v is not None and len(v.meta.get("dynamic_axes") or ()) > 1:
                shape = shape[:1] + ("sequence",) + shape[1:]
            ins_[key] = (shape, v.dtype if v else "float32")
        kind = "CNTK model" if model.format == "cntk-v2" else "CNTK v1 model (BrainScript)"
        counts = Counter(f.type for f in net.all_functions()
                         if f.body is None and f.type != "DynamicAxis")
        layers = Counter(f.type for f in net.all_functions() if f.body is not None)
        if layers:
            details["layers"] = ", ".join(f"{t} {c}" for t, c in layers.most_common())
        try:
            outs_ = output_shapes(model, net, in_names, out_names)
        except ModelFileError as exc:       # still describe what the file holds (an op not
            # read, or one the importer cannot build: CNTK's op-id probe file)
            outs_ = OrderedDict((k, (("?",), "float32")) for k in out_names)
            details["not buildable"] = str(exc).split(": ", 1)[-1]
    return ModelInfo(kind=kind, inputs=ins_, outputs=outs_, op_counts=Counter(counts),
                     n_parameters=model.parameter_count(),
                     n_parameter_tensors=len(model.parameters), details=details)
