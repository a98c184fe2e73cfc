"""Writing NNabla ``.nnp`` / ``.nntxt`` files (what real NNabla 1.39 loads and runs): networks
(:mod:`._nnp_export`), executors, optimizers, datasets, monitors and the global and training
configuration, laid out as NNabla's ``nnabla.utils.save.save`` lays them out.

An ``.nnp`` is a zip of ``nnp_version.txt`` (``0.1``), ``network.nntxt`` (protobuf text) and
``parameter.h5`` (NNabla's layout: a dataset per parameter with ``need_grad`` and ``index``) or
``parameter.protobuf``; a ``.nntxt`` holds the text alone, with the parameters inside when asked.
Files are written atomically.
"""

from __future__ import annotations

import io
import os
import zipfile
from collections import OrderedDict
from typing import Any, Iterable, Mapping

import numpy as np

from .._fileutil import atomic_write
from ._nnp_export import NetworkExport, export_network
from ._onnx_api import ExportError
from ._parameters import _write_h5
from ._pb_text_write import Message, format_text

__all__ = ["NnpWriter", "save_nnp", "SOLVER_FIELDS", "parameter_bytes", "write_with_parameters"]

#: NNabla's solver types (``solver.type``) and the fields of their ``<type>_param`` message.
SOLVER_FIELDS = {"Sgd": ("lr",), "Momentum": ("lr", "momentum"), "Nesterov": ("lr", "momentum"),
                 "Adam": ("alpha", "beta1", "beta2", "eps"), "Adagrad": ("lr", "eps"),
                 "Adadelta": ("lr", "decay", "eps"), "RMSprop": ("lr", "decay", "eps")}
_SOLVER_PARAM = {"Sgd": "sgd_param", "Momentum": "momentum_param", "Nesterov": "nesterov_param",
                 "Adam": "adam_param", "Adagrad": "adagrad_param", "Adadelta": "adadelta_param",
                 "RMSprop": "rmsprop_param"}


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


class NnpWriter:
    """Collects the sections of one NNabla file, then :meth:`write` s it.

    Example:
        >>> import os, tempfile, numpy as np, stadyn as sd, stadyn.functions as F
        >>> import stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     x = sd.Variable((2, 3))
        ...     y = F.relu(PF.affine(x, 4, name="fc"))
        ...     w = NnpWriter()
        ...     _ = w.add_network("net", {"y": y}, {"x": x})
        ...     w.add_executor("runtime", "net")
        ...     path = os.path.join(tempfile.mkdtemp(), "net.nnp")
        ...     w.write(path)
        >>> sd.load(path)(x=np.ones((2, 3)))["y"].shape
        (2, 4)
    """

    def __init__(self):
        self.networks: OrderedDict[str, NetworkExport] = OrderedDict()
        self.parameters: OrderedDict[str, tuple[np.ndarray, bool]] = OrderedDict()
        self.sections: list[tuple[str, Message]] = []
        self.datasets: OrderedDict[str, Message] = OrderedDict()
        self.global_config: Message | None = None
        self.training_config: Message | None = None
        self.include_params = False          # the default of write(.nntxt) and text()

    # -- networks and parameters ------------------------------------------------------------------
    def add_network(self, name: str, outputs: Any, inputs: Any = None, *,
                    batch_size: int | None = None, training: bool = False,
                    names: Mapping[str, Any] | None = None,
                    variable_batch_size: bool = True) -> NetworkExport:
        """Add the network ``name`` computing ``outputs`` (see :func:`export_network`)."""
        if name in self.networks:
            raise ExportError(f"two networks are both named {name!r}")
        net = export_network(name, outputs, inputs, batch_size=batch_size, training=training,
                             names=dict(names or {}), variable_batch_size=variable_batch_size)
        for pname, (value, need_grad) in net.parameters.items():
            have = self.parameters.get(pname)
            if have is not None and have[0].shape != value.shape:
                raise ExportError(f"parameter {pname!r} has shape {have[0].shape} in one network "
                                  f"and {value.shape} in network {name!r}")
            self.parameters.setdefault(pname, (value, need_grad))
        self.networks[name] = net
        return net

    def _network(self, name: str, what: str) -> NetworkExport:
        if name not in self.networks:
            raise ExportError(f"{what} refers to the network {name!r}, which is not saved "
                              f"(the networks are {list(self.networks)})")
        return self.networks[name]

    def _variables(self, net: NetworkExport, names: Iterable[str], what: str) -> list[str]:
        declared = {v[0][1] for k, v in net.message if k == "variable"}
        names = list(names)
        for n in names:
            if n not in declared:
                raise ExportError(f"{what}: {n!r} is not a variable of network "
                                  f"{dict(net.message)['name']!r}")
        return names

    def _data_variables(self, net: NetworkExport, datasets: list[str],
                        given: Mapping[str, str] | None, what: str) -> Message:
        """``data_variable`` entries: ``given`` (variable -> data name), or by default each
        network input a dataset provides (as Neural Network Console writes them; without them
        ``nnabla_cli train`` feeds no data)."""
        if given is None:
            provided = {v for d in datasets for k, v in self.datasets[d] if k == "variable"}
            given = OrderedDict((v, v) for v in net.inputs if v in provided)
        names = self._variables(net, given, what)
        return [("data_variable", [("variable_name", v), ("data_name", str(given[v]))])
                for v in names]

    # -- the other sections -----------------------------------------------------------------------
    def add_executor(self, name: str, network: str, data: Iterable[str] | None = None,
                     output: Iterable[str] | None = None, remap: Mapping[str, str] | None = None,
                     generator_variables: Iterable[str] = (), **options: Any) -> None:
        """An ``executor``: the network's data and output variables (default: its inputs and
        outputs), ``remap`` renaming their data names, NNabla's options
        (``no_image_normalization``, ``num_evaluations``, ``repeat_evaluation_type``,
        ``need_back_propagation``)."""
        net = self._network(network, f"executor {name!r}")
        remap = dict(remap or {})
        m: Message = [("name", name), ("network_name", network)]
        for key in ("no_image_normalization", "num_evaluations", "repeat_evaluation_type",
                    "need_back_propagation"):
            if options.get(key) is not None:
                m.append((key, options[key]))
        what = f"executor {name!r}"
        for v in self._variables(net, net.inputs if data is None else data, what):
            m.append(("data_variable", [("variable_name", v), ("data_name", remap.get(v, v))]))
        for v in self._variables(net, net.outputs if output is None else output, what):
            m.append(("output_variable", [("variable_name", v), ("data_name", remap.get(v, v))]))
        for p in net.parameters:
            m.append(("parameter_variable", [("variable_name", p)]))
        for v in self._variables(net, generator_variables, what):
            m.append(("generator_variable", [("variable_name", v), ("type", "Constant")]))
        self.sections.append(("executor", m))

    def add_optimizer(self, name: str, network: str, solver_type: str,
                      solver_params: Mapping[str, float], dataset: Any = None,
                      loss_variables: Iterable[str] | None = None,
                      trained: Iterable[str] | None = None, weight_decay: float = 0.0,
                      lr_decay: float = 1.0, lr_decay_interval: int = 1,
                      update_interval: int = 1,
                      data_variables: Mapping[str, str] | None = None) -> None:
        """An ``optimizer``: NNabla's solver ``solver_type`` (:data:`SOLVER_FIELDS`) with its
        parameters, the datasets it trains on, the loss variables (default: the network's
        outputs) and the parameters it updates (``trained``, default those with gradients;
        the others are listed with learning-rate multiplier 0); ``data_variables`` maps network
        inputs to dataset variables (default: the inputs the datasets provide, same names)."""
        net = self._network(network, f"optimizer {name!r}")
        if solver_type not in SOLVER_FIELDS:
            raise ExportError(f"optimizer {name!r}: NNabla's file format has no solver "
                              f"{solver_type!r} (it has {sorted(SOLVER_FIELDS)})")
        for d in _names(dataset):
            if d not in self.datasets:
                raise ExportError(f"optimizer {name!r}: no dataset {d!r} was added")
        fields = [(f, float(solver_params[f])) for f in SOLVER_FIELDS[solver_type]
                  if f in solver_params]
        solver: Message = [("type", solver_type)]
        if weight_decay:
            solver.append(("weight_decay", float(weight_decay)))
        solver += [("lr_decay", float(lr_decay)), ("lr_decay_interval", int(lr_decay_interval)),
                   (_SOLVER_PARAM[solver_type], fields)]
        m: Message = [("name", name), ("network_name", network)]
        m += [("dataset_name", d) for d in _names(dataset)]
        m += [("solver", solver), ("update_interval", int(update_interval))]
        m += self._data_variables(net, _names(dataset), data_variables, f"optimizer {name!r}")
        losses = net.outputs if loss_variables is None else list(loss_variables)
        for v in self._variables(net, losses, f"optimizer {name!r}"):
            m.append(("loss_variable", [("variable_name", v)]))
        trained = None if trained is None else set(trained)
        for p, (_, need_grad) in net.parameters.items():
            on = need_grad if trained is None else p in trained
            entry: Message = [("variable_name", p)]
            if on:
                entry.append(("learning_rate_multiplier", 1.0))
            m.append(("parameter_variable", entry))
        self.sections.append(("optimizer", m))

    def add_dataset(self, name: str, uri: str, variables: Iterable[str], batch_size: int,
                    shuffle: bool = False, cache_dir: str | None = None,
                    no_image_normalization: bool = False, **options: Any) -> None:
        """A ``dataset``: NNabla's data source ``uri`` (a CSV file for ``stadyn train``) and the
        variables its columns feed."""
        if name in self.datasets:
            raise ExportError(f"two datasets are both named {name!r}")
        m: Message = [("name", name), ("uri", str(uri)), ("batch_size", int(batch_size))]
        if cache_dir:
            m.append(("cache_dir", str(cache_dir)))
        for key in ("overwrite_cache", "create_cache_explicitly"):
            if options.get(key):
                m.append((key, True))
        if shuffle:
            m.append(("shuffle", True))
        if no_image_normalization:
            m.append(("no_image_normalization", True))
        m += [("variable", v) for v in variables]
        self.datasets[name] = m

    def add_monitor(self, name: str, network: str, dataset: Any,
                    monitor_variables: Iterable[str] | None = None,
                    data_variables: Mapping[str, str] | None = None) -> None:
        """A ``monitor``: the network whose outputs (or ``monitor_variables``) are evaluated on
        ``dataset`` (NNabla's type ``Error``); ``data_variables`` as for :meth:`add_optimizer`."""
        net = self._network(network, f"monitor {name!r}")
        for d in _names(dataset):
            if d not in self.datasets:
                raise ExportError(f"monitor {name!r}: no dataset {d!r} was added")
        m: Message = [("name", name), ("network_name", network)]
        m += [("dataset_name", d) for d in _names(dataset)]
        m += self._data_variables(net, _names(dataset), data_variables, f"monitor {name!r}")
        watched = net.outputs if monitor_variables is None else list(monitor_variables)
        for v in self._variables(net, watched, f"monitor {name!r}"):
            m.append(("monitor_variable", [("variable_name", v), ("type", "Error")]))
        self.sections.append(("monitor", m))

    def set_global_config(self, backends: Iterable[str] = ("cpu:float",),
                          array_class: str = "", device_id: str = "0") -> None:
        """NNabla's ``global_config.default_context``."""
        ctx: Message = [("backends", b) for b in backends]
        if array_class:
            ctx.append(("array_class", array_class))
        ctx.append(("device_id", str(device_id)))
        self.global_config = [("default_context", ctx)]

    def set_training_config(self, max_epoch: int, iter_per_epoch: int = 0,
                            save_best: bool = True, monitor_interval: int = 0) -> None:
        """NNabla's ``training_config`` (``stadyn train`` runs ``max_epoch`` epochs)."""
        m: Message = [("max_epoch", int(max_epoch))]
        if iter_per_epoch:
            m.append(("iter_per_epoch", int(iter_per_epoch)))
        if save_best:
            m.append(("save_best", True))
        if monitor_interval:
            m.append(("monitor_interval", int(monitor_interval)))
        self.training_config = m

    # -- writing ----------------------------------------------------------------------------------
    def text(self, include_params: bool | None = None) -> str:
        """The ``.nntxt`` text (``include_params``: the parameters inside it)."""
        if include_params is None:
            include_params = self.include_params
        m: Message = []
        if self.global_config is not None:
            m.append(("global_config", self.global_config))
        if self.training_config is not None:
            m.append(("training_config", self.training_config))
        m += [("network", net.message) for net in self.networks.values()]
        if include_params:
            for name, (value, need_grad) in self.parameters.items():
                entry: Message = [("variable_name", name),
                                  ("shape", [("dim", int(d)) for d in value.shape])]
                entry += [("data", float(v)) for v in np.asarray(value, np.float32).ravel()]
                if need_grad:
                    entry.append(("need_grad", True))
                m.append(("parameter", entry))
        m += [("dataset", d) for d in self.datasets.values()]
        order = {"optimizer": 0, "monitor": 1, "executor": 2}
        m += sorted(self.sections, key=lambda s: order[s[0]])
        return format_text(m)

    def parameter_bytes(self, parameter_format: str = ".h5") -> bytes:
        """The parameters as NNabla's ``parameter.h5`` or ``parameter.protobuf``."""
        return parameter_bytes(self.parameters, parameter_format)

    def write(self, path: str | os.PathLike, parameter_format: str = ".h5",
              include_params: bool | None = None, kind: str | None = None) -> None:
        """Write an ``.nnp`` (zip: the text and ``parameter.h5`` or ``parameter.protobuf``) or, for
        a path ending ``.nntxt``/``.prototxt`` (or ``kind`` ``".nntxt"``), the text alone
        (``include_params``: with the parameters in it).  Atomic: temporary file, then
        rename."""
        path = os.fspath(path)
        if include_params is None:
            include_params = self.include_params
        if kind == ".nntxt" or (kind is None and path.lower().endswith((".nntxt", ".prototxt"))):
            data = self.text(include_params).encode("utf-8")

            def write_text(tmp: str) -> None:
                with open(tmp, "wb") as f:
                    f.write(data)
            atomic_write(path, write_text)
            return
        members = [("nnp_version.txt", b"0.1\n"),       # parameters go to their own member
                   ("network.nntxt", self.text(False).encode("utf-8")),
                   (f"parameter{parameter_format}", self.parameter_bytes(parameter_format))]

        _write_zip(path, members)


def _write_zip(path: str, members: list[tuple[str, bytes]]) -> None:
    # Stored, not deflated, as NNabla 1.39 writes them (nnabla/utils/get_file_handle.py:90,
    # ``zipfile.ZipFile(path, 'w')``: zipfile's default, ZIP_STORED); deflating a large
    # parameter.h5 cost seconds a save (an Xception-65's: ~7 s of CPU each)
    def write(tmp: str) -> None:
        with zipfile.ZipFile(tmp, "w") as zf:
            for name, data in members:
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_STORED
                info.external_attr = 0o644 << 16
                zf.writestr(info, data)
    atomic_write(path, write)


def parameter_bytes(parameters: Mapping[str, tuple[np.ndarray, bool]],
                    parameter_format: str = ".h5") -> bytes:
    """``parameters`` (name -> (array, need_grad)) as NNabla's ``parameter.h5`` (a dataset per
    parameter with ``need_grad`` and ``index``) or ``parameter.protobuf`` (float32 values).

    Example:
        >>> import numpy as np
        >>> from stadyn.serialize._nnp_format import _read_protobuf
        >>> data = parameter_bytes({"w": (np.ones((2, 2), np.float32), True)}, ".protobuf")
        >>> p = _read_protobuf("parameter.protobuf", data)["w"]
        >>> p.value.shape, p.need_grad
        ((2, 2), True)
    """
    if parameter_format == ".h5":
        import h5py
        buf = io.BytesIO()
        with h5py.File(buf, "w") as f:
            _write_h5(f, ((name, value, need_grad)
                          for name, (value, need_grad) in parameters.items()))
        return buf.getvalue()
    if parameter_format == ".protobuf":
        from .._proto_schemas import extend_packed, nnabla_messages
        proto = nnabla_messages()["NNablaProtoBuf"]()
        for name, (value, need_grad) in parameters.items():
            p = proto.parameter.add()
            p.variable_name = name
            p.shape.dim.extend(int(d) for d in value.shape)
            extend_packed(p, "data", value)
            p.need_grad = bool(need_grad)
        return proto.SerializeToString()
    raise ExportError(f"parameter_format is '.h5' or '.protobuf', got {parameter_format!r}")


def write_with_parameters(source: str | os.PathLike, path: str | os.PathLike,
                          parameters: Mapping[str, tuple[np.ndarray, bool]]) -> None:
    """Write ``path``: the NNabla file ``source`` (``.nnp`` or ``.nntxt``) with its parameters
    replaced by ``parameters`` (in ``parameter.h5``); every other section is kept as written
    (what ``stadyn train`` saves after training).  A source whose text holds parameters itself
    is refused (they would shadow the new ones)."""
    from ._nnp_format import read_nnp_members
    texts = read_nnp_members(source)
    members = [("nnp_version.txt", b"0.1\n")] + texts
    members.append(("parameter.h5", parameter_bytes(parameters, ".h5")))
    _write_zip(os.fspath(path), members)


def save_nnp(path: str | os.PathLike, outputs: Any, inputs: Any = None, *,
             network: str = "network", executor: str = "runtime", batch_size: int | None = None,
             training: bool = False, parameter_format: str = ".h5") -> None:
    """Save the graph computing ``outputs`` as an NNabla ``.nnp`` (or ``.nntxt``) file that
    NNabla 1.39 (``nnabla.utils.load``, ``NnpLoader``, ``nnabla_cli forward``) and
    :func:`stadyn.load` run.

    ``outputs`` and ``inputs`` are as :func:`stadyn.save` takes them (a Variable, a list, a dict
    name -> Variable, or a loaded ``Network``).  One network ``network`` is written with an
    executor ``executor`` over its inputs and outputs; parameters keep their registry names.
    Batch normalisation and dropout that follow the phase are written for inference unless
    ``training``.  Ops NNabla has no function for are refused (:class:`ExportError` naming the op
    and its scope).  The file is written atomically.

    Example:
        >>> import os, tempfile, numpy as np, stadyn as sd, stadyn.functions as F
        >>> import stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     x = sd.Variable((2, 1, 4, 4))
        ...     h = F.max_pooling(F.relu(PF.convolution(x, 3, (3, 3), pad=(1, 1), name="c")),
        ...                       (2, 2))
        ...     y = F.softmax(PF.affine(h, 5, name="fc"))
        ...     path = os.path.join(tempfile.mkdtemp(), "cnn.nnp")
        ...     sd.save_nnp(path, {"y": y}, {"x": x})
        >>> net = sd.load(path)
        >>> list(net.inputs), list(net.registry)[:2], net(x=np.ones((2, 1, 4, 4)))["y"].shape
        (['x'], ['c/conv/W', 'c/conv/b'], (2, 5))
    """
    w = NnpWriter()
    w.add_network(network, outputs, inputs, batch_size=batch_size, training=training)
    w.add_executor(executor, network)
    w.write(path, parameter_format=parameter_format)
