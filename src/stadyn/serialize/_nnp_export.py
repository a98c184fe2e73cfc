"""A Stadyn graph as an NNabla ``network`` message (the inverse of :mod:`._nnp_format` and the
``nnp_import`` rules): each op node is written by its ``nnp_export`` rule through an
:class:`NnpEmitter`, or, where the op has none, by the inverse of its ``nnp_import``
declaration (:func:`~.op_rules._nnabla.nnabla`: the same NNabla type and fields).

Variables are named as NNabla names them: the inputs and outputs by the names given, the
parameters by their registry names (``cnn/conv1/conv/W``), constants ``constant_<k>`` (as
parameters without gradient: NNabla has no constants), every other value after the NNabla
function writing it, in the network's namespace, as NNabla 1.39's ``nnabla.utils.save.save``
names them (``nnabla/core/graph_def.py``): functions ``@<network>/<Type>`` (``@Validation/
Convolution``, then ``@Validation/Convolution_1``, ...), their outputs ``@<network>/<Type>_out``
(``_out_1``, ... for a second), no ``@<network>/`` prefix for a network named ``model``.  The
buffers come first (in the order the functions reach them: an input first read late is listed
after the buffers written before it), then the parameters, and a function that takes
arguments has its ``<type>_param`` block even when every argument is at its default
(``relu_param {}``), as NNabla writes them (checked on NNabla 1.39: ``tests/fixtures/nnp_names/``).
The batch axis (the inputs' first axis, followed through the ops by :mod:`._nnp_batch`) is
written as ``-1`` in the variables' shapes and in the first size of a ``Reshape`` or
``Broadcast`` to a shape with the batch axis, so NNabla's loaders build the network at any
batch size (NNabla's ``save(variable_batch_size=True)`` writes ``-1`` the same places where the
batch axis is, but decides by size: see :mod:`._nnp_batch`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, NoReturn

import numpy as np

from ..graph import Variable, output_key, value_key
from ._graph import GraphParts, collect_graph
from ._nnp_batch import BatchAxis
from ._onnx_api import ExportError
from ._pb_text_write import Message
from .op_rules import Unmapped, rules_for

__all__ = ["NnpEmitter", "NetworkExport", "export_network", "nnp_export_rule"]

# NNabla's <type>_param field names that are not the type name in snake case (its
# functions.yaml spells these snake names out; checked against NNabla 1.39's nnabla_pb2)
_PARAM_FIELDS = {"ReLU": "relu_param", "LeakyReLU": "leaky_relu_param", "ELU": "elu_param",
                 "SELU": "selu_param", "SoftPlus": "softplus_param", "ReLU6": "relu6_param",
                 "RNN": "rnn_param", "LSTM": "lstm_param", "GRU": "gru_param",
                 "CReLU": "crelu_param", "CELU": "celu_param", "PReLU": "prelu_param",
                 "CumSum": "cumsum_param", "CumProd": "cumprod_param",
                 "SearchSorted": "searchsorted_param", "ResetNaN": "reset_nan_param",
                 "ONNXResize": "onnx_resize_param", "FFT": "fft_param", "IFFT": "ifft_param",
                 "STFT": "stft_param", "ISTFT": "istft_param",
                 "KLMultinomial": "kl_multinomial_param", "INQAffine": "inq_affine_param",
                 "INQConvolution": "inq_convolution_param", "VATNoise": "vat_noise_param",
                 "ONNXNonMaxSuppression": "onnx_non_max_suppression_param"}


# The functions whose ``shape`` field holds the output's shape: where that output has the batch
# axis (:mod:`._nnp_batch`), its first size is written ``-1``, as NNabla 1.39's ``save`` writes
# it (``nnabla/core/variable_batch_size.py``), and NNabla's loaders (``NnpLoader``,
# ``nnabla.utils.load``) put the batch size they are given in its place
# (``ProtoFunction.graph_call`` in ``nnabla/core/graph_def.py``).  At the export's size, a
# network built for another batch size fails in NNabla's reshape.cpp / broadcast.cpp.
_BATCH_SHAPED = ("Reshape", "Broadcast")


# NNabla 1.39's functions without arguments: the only ones it writes without a <type>_param
# block (nnabla/utils/save_function.py sets a field of the block for every other type).
_NO_ARGUMENTS = frozenset((
    "ACos", "ACosh", "ASin", "ASinh", "ATan", "ATan2", "ATanh", "Abs", "AbsoluteError",
    "AdaptiveSeparableConvolution", "AddN", "Assign", "BatchDet", "BatchInv", "BatchLogdet",
    "BinaryCrossEntropy", "BinaryError", "BinarySigmoid", "BinaryTanh", "BoolGather",
    "BoolScatter", "Ceil", "ClipGradByValue", "Cos", "Cosh", "DequantizeLinear", "Embed",
    "Equal", "Erf", "Exp", "Floor", "GELU", "GatherNd", "GlobalAveragePooling", "Greater",
    "GreaterEqual", "HardSigmoid", "HardTanh", "Identity", "IsInf", "IsNaN", "Less",
    "LessEqual", "Log", "LogSigmoid", "LogicalAnd", "LogicalNot", "LogicalOr", "LogicalXor",
    "MatrixDiag", "MatrixDiagPart", "Maximum2", "Minimum2", "Mish", "MulN", "NonZero",
    "NotEqual", "ReLU6", "ReduceMean", "ReduceSum", "Round", "Sigmoid", "SigmoidCrossEntropy",
    "Sin", "Sinc", "Sinh", "SoftSign", "SquaredError", "Swish", "Tan", "Tanh", "TanhShrink",
    "Unlink", "WarpByFlow", "Where"))


def param_field(type_name: str) -> str:
    """The ``Function`` field holding ``type_name``'s parameters (``Convolution`` ->
    ``convolution_param``, ``RSubScalar`` -> ``r_sub_scalar_param``).

    Example:
        >>> param_field("BatchNormalization"), param_field("Add2"), param_field("LeakyReLU")
        ('batch_normalization_param', 'add2_param', 'leaky_relu_param')
    """
    if type_name in _PARAM_FIELDS:
        return _PARAM_FIELDS[type_name]
    out = []
    for i, ch in enumerate(type_name):
        if ch.isupper() and i > 0:
            out.append("_")
        out.append(ch.lower())
    return "".join(out) + "_param"


class _Unsupported(Exception):
    pass


class NnpEmitter:
    """What an ``nnp_export`` rule writes one op node through.

    ``e.function(type, inputs, params)`` appends an NNabla function reading the variables named
    ``inputs`` and writing, unless ``outputs`` says otherwise, the node's outputs; ``params``
    are its ``<type>_param`` fields (a tuple is a ``Shape``, a list a repeated field; fields equal
    to proto3's zero are left out as NNabla leaves them out).  ``e.shape(name)`` is a variable's
    shape; ``e.batched(name)`` whether its first axis is the batch axis, ``e.keeps_batch``
    whether the node's output has it; ``e.training`` tells
    whether the network is written for training (batch statistics, dropout).  A rule marked
    ``takes_numbers = True`` is also given inputs that are plain numbers: their name is None
    and ``e.numbers`` maps their position to the number (others are refused).
    ``e.name_of(var)`` names a Variable the op holds as an attribute (``scatter_nd``'s ``out``).

    Example (the rule of an op that is NNabla's ``Tanh``)::

        def _tanh_nnp(e, inputs, attrs):
            e.function("Tanh", inputs)
    """

    def __init__(self, writer: "_NetworkWriter", node: Any, outputs: list[str | None]):
        self._w = writer
        self.node = node
        self.outputs = outputs
        self.training = writer.training
        self.numbers: dict[int, float] = {}
        self.keeps_batch = False        # whether an output of the node has the batch axis
        self.ids: dict[Any, str] = {}   # the written variables' names by value key

    def name_of(self, var: Variable) -> str:
        """The written name of ``var``, a Variable of the graph the op holds as an
        attribute."""
        return self.ids[value_key(var)]

    def shape(self, name: str) -> tuple[int, ...]:
        """The shape of the variable ``name`` (the batch axis at its built size)."""
        return self._w.shapes[self._w.renamed.get(name, name)]

    def same_rank(self, inputs: list[str]) -> list[str]:
        """``inputs`` with each of lower rank than the highest reshaped to it (leading axes of
        size 1, NumPy's broadcasting) by an NNabla ``Reshape``: NNabla's binary functions
        broadcast only between inputs of the same rank."""
        rank = max(len(self.shape(i)) for i in inputs)
        return [self.reshape(name, (1,) * (rank - len(self.shape(name))) + self.shape(name))
                for name in inputs]

    def reshape(self, name: str, shape: tuple[int, ...]) -> str:
        """``name`` as ``shape`` (the same size): itself when it has that shape, else a new
        variable an NNabla ``Reshape`` writes (for parameters: a view NNabla recomputes)."""
        shape = tuple(int(d) for d in shape)
        if tuple(self.shape(name)) == shape:
            return name
        # the batch axis stays first when the first size does (a Reshape to (1, B) moves it)
        batch = self.batched(name) and bool(shape) \
            and shape[0] == self.shape(name)[0]
        reshaped = self._w.pending_buffer(f"{name}_reshaped", shape, batch)
        self._w.add_function("Reshape", [name], [reshaped], {"shape": shape})
        return self._w.renamed.get(reshaped, reshaped)

    def statistic(self, name: str, shape: tuple[int, ...]) -> str | None:
        """``name`` declared in ``shape`` (the same size) instead of its own, for a function
        that updates it in place (NNabla's ``BatchNormalization`` moves its running statistics
        on; through a ``Reshape`` it would update a copy): its value is written in that shape.
        Only for a parameter that no other function reads; None otherwise."""
        shape = tuple(int(d) for d in shape)
        if tuple(self.shape(name)) == shape:
            return name
        w = self._w
        if name not in w.params or w.readers.get(name, 0) != 1:
            return None
        value, need_grad = w.params[name]
        w.params[name] = (value.reshape(shape), need_grad)
        del w.variables[name]
        return w.declare(name, shape, "Parameter", False)

    def variable(self, base: str, shape: tuple[int, ...], batch: bool | None = None) -> str:
        """A new intermediate variable of ``shape`` (named after ``base``) for a rule that
        writes the op as several functions.  ``batch`` says whether its first axis is the batch
        axis; by default it is when the op's output has the batch axis and this first size is
        the batch's (a rule whose intermediate moves or reduces the output's first axis says
        so)."""
        shape = tuple(int(d) for d in shape)
        if batch is None:
            batch = self.keeps_batch and bool(shape) and shape[0] == self._w.batch_axis
        return self._w.pending_buffer(base, shape, bool(batch))

    def batched(self, name: str) -> bool:
        """Whether the variable ``name`` has the batch axis first."""
        return self._w.batched.get(self._w.renamed.get(name, name), False)

    def function(self, type_name: str, inputs: list[str], params: dict | None = None,
                 outputs: list[str] | None = None) -> list[str]:
        """Append one NNabla function (see the class docstring); returns its output names."""
        outs = self.outputs if outputs is None else outputs
        if any(o is None for o in outs):
            self.unsupported("an output nobody holds (NNabla declares every output)")
        self._w.add_function(type_name, list(inputs), outs, params or {})
        renamed = self._w.renamed
        self.outputs = [renamed.get(o, o) for o in self.outputs]
        return [renamed.get(o, o) for o in outs]

    def unsupported(self, reason: str) -> NoReturn:
        """Give up on this node (an :class:`~stadyn.serialize.ExportError` naming it)."""
        raise _Unsupported(reason)


def _fields_message(params: dict) -> Message:
    """``params`` as the pairs of a ``<type>_param`` message (proto3's zeros left out)."""
    out: Message = []
    for name, value in params.items():
        if isinstance(value, tuple):
            out.append((name, [("dim", int(d)) for d in value]))
        elif isinstance(value, list):
            out.extend((name, v) for v in value)
        elif isinstance(value, (bool, np.bool_)):
            if value:
                out.append((name, True))
        elif isinstance(value, (int, np.integer)):
            if value:
                out.append((name, int(value)))
        elif isinstance(value, (float, np.floating)):
            if value:
                out.append((name, float(value)))
        elif isinstance(value, str):
            if value:
                out.append((name, value))
        else:
            raise TypeError(f"field {name!r} holds {value!r}")
    return out


def nnp_export_rule(spec: Any) -> Callable[..., Any] | None:
    """The ``nnp_export`` rule of the op ``spec``: its own, or the inverse of an
    ``nnp_import`` declared with :func:`~.op_rules._nnabla.nnabla`; None when it has neither
    or its ``nnp_export`` column is :class:`~.op_rules.Unmapped` (read, not written)."""
    rules = rules_for(spec)
    if rules is None or isinstance(rules.nnp_export, Unmapped):
        return None
    if callable(getattr(rules, "nnp_export", None)):
        return rules.nnp_export
    mapping = rules.nnp_import
    if isinstance(mapping, dict):
        for build in mapping.values():
            declared = getattr(build, "nnabla_declaration", None)
            if declared is not None:
                return declared.export
    return None


class _NetworkWriter:
    def __init__(self, name: str, training: bool, variable_batch_size: bool = True):
        self.name = name
        self.variable_batch_size = variable_batch_size
        self.training = training
        self.variables: OrderedDict[str, Message] = OrderedDict()
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.batched: dict[str, bool] = {}      # whether the first axis is the batch axis
        self.functions: list[Message] = []
        self.params: OrderedDict[str, tuple[np.ndarray, bool]] = OrderedDict()
        self.readers: dict[str, int] = {}    # how many functions read each parameter
        self.batch_size = 1            # the message's batch_size field
        self.batch_axis = 1            # the size of the axis written as -1
        self._counts: dict[str, int] = {}
        self._fcounts: dict[str, int] = {}      # function names, counted apart as NNabla's
        # NNabla's namespace of the network's functions and their outputs
        self.prefix = "" if name == "model" else f"@{name}/"
        self.pending: set[str] = set()          # buffers named after the function writing them
        self.renamed: dict[str, str] = {}       # a pending name -> the name it was given

    def unique(self, base: str, taken) -> str:
        k = self._counts.get(base, 0)
        name = base if k == 0 else f"{base}_{k}"
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        self._counts[base] = k + 1
        return name

    def declare(self, name: str, shape: tuple[int, ...], kind: str, batch: bool) -> str:
        if name in self.variables:
            raise ExportError(f"network {self.name!r}: two variables are both named {name!r}")
        dims = [(-1 if (i == 0 and batch and self.variable_batch_size) else int(d))
                for i, d in enumerate(shape)]
        self.variables[name] = [("name", name), ("type", kind),
                                ("shape", [("dim", d) for d in dims])]
        self.shapes[name] = tuple(int(d) for d in shape)
        self.batched[name] = batch
        return name

    def pending_buffer(self, base: str, shape: tuple[int, ...], batch: bool) -> str:
        """A buffer named ``base`` for now, renamed ``@<network>/<Type>_out`` by the function
        that writes it."""
        name = self.declare(self.unique(base, self.variables), shape, "Buffer", batch)
        self.pending.add(name)
        return name

    def _rename(self, old: str, new: str) -> None:
        self.variables = OrderedDict(
            (new, [("name", new)] + v[1:]) if k == old else (k, v)
            for k, v in self.variables.items())
        self.shapes[new] = self.shapes.pop(old)
        self.batched[new] = self.batched.pop(old)
        self.pending.discard(old)
        self.renamed[old] = new

    def add_function(self, type_name: str, inputs: list[str], outputs: list[str],
                     params: dict) -> None:
        fname = self.prefix + type_name
        k = self._fcounts.get(fname, 0)
        self._fcounts[fname] = k + 1
        fname = fname if k == 0 else f"{fname}_{k}"
        inputs = [self.renamed.get(i, i) for i in inputs]
        outputs = [self.renamed.get(o, o) for o in outputs]
        for i, o in enumerate(outputs):
            if o in self.pending:
                new = self.unique(f"{self.prefix}{type_name}_out", self.variables)
                self._rename(o, new)
                outputs[i] = new
        if type_name in _BATCH_SHAPED and self.variable_batch_size and outputs \
                and self.batched.get(outputs[0]):
            shape = tuple(params.get("shape", ()))
            if shape and shape[0] == self.batch_axis:
                params = {**params, "shape": (-1,) + shape[1:]}
        message: Message = [("name", fname), ("type", type_name)]
        message += [("input", i) for i in inputs]
        message += [("output", o) for o in outputs]
        fields = _fields_message(params)
        if fields or type_name not in _NO_ARGUMENTS:
            message.append((param_field(type_name), fields))
        self.functions.append(message)


class NetworkExport:
    """One network as written: its ``network`` message, the names of its data inputs and
    outputs, and its parameters (name -> (value, need_grad))."""

    def __init__(self, message: Message, inputs: list[str], outputs: list[str],
                 parameters: "OrderedDict[str, tuple[np.ndarray, bool]]"):
        self.message = message
        self.inputs = inputs
        self.outputs = outputs
        self.parameters = parameters


def _is_number(v: Any) -> bool:
    return (isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)) \
        or (isinstance(v, np.ndarray) and v.shape == () and v.dtype.kind in "iuf")


def _where(node) -> str:
    return f"op '{node.spec.name}'" + (f" in scope '{node.scope}'" if node.scope else "")


def export_network(name: str, outputs: Any, inputs: Any = None, *, batch_size: int | None = None,
                   training: bool = False, names: dict[str, Variable] | None = None,
                   variable_batch_size: bool = True) -> NetworkExport:
    """The NNabla ``network`` message of the graph computing ``outputs`` from ``inputs`` (as
    :func:`stadyn.save` takes them).  ``training`` writes batch normalisation that follows the
    phase with batch statistics and keeps ``train_only`` dropout; ``names`` names other
    variables of the graph (NNabla's ``names`` entry; without ``inputs``, the unnamed leaves
    are the inputs, named by ``names`` where it names them).  ``variable_batch_size=False``
    writes the batch axis at its size instead of ``-1``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((2, 3))
        >>> net = export_network("n", {"y": F.tanh(x)}, {"x": x})
        >>> [v for k, v in net.message if k == "function"][0][:2]
        [('name', '@n/Tanh'), ('type', 'Tanh')]
    """
    parts: GraphParts = collect_graph(outputs, inputs, fmt="NNabla's .nnp")
    if inputs is None and names:
        by_id = {id(v): n for n, v in names.items() if isinstance(v, Variable)}
        parts.inputs = OrderedDict((by_id.get(id(v), n), v) for n, v in parts.inputs.items())
    w = _NetworkWriter(name, training, variable_batch_size)
    ids: dict[Any, str] = {}
    batches = {v.shape[0] for v in parts.inputs.values() if v.shape}
    # The batch axis is the inputs' leading size when they share one, whatever ``batch_size``
    # says (NNabla infers it from the graph too; ``batch_size`` is only the message's field).
    w.batch_axis = (next(iter(batches)) if len(batches) == 1 else batch_size or 1)
    w.batch_size = batch_size or w.batch_axis
    sizes = {int(d) for v in list(parts.inputs.values()) + list(parts.parameters.values())
             + list(parts.constants) for d in v.shape}
    sizes |= {int(d) for node in parts.nodes for ref in node._outputs if ref() is not None
              for d in ref().shape}
    axis = BatchAxis(w.batch_axis, sizes)
    for iname, v in parts.inputs.items():
        batched = bool(v.shape) and v.shape[0] == w.batch_axis
        ids[value_key(v)] = w.declare(iname, tuple(v.shape), "Buffer", batched)
        axis.mark(v, batched, from_data=True)
    params = w.params
    for pname, v in parts.parameters.items():
        ids[value_key(v)] = w.declare(pname, tuple(v.shape), "Parameter", False)
        params[pname] = (np.asarray(v.d), bool(v.need_grad))
    for pname, view in parts.views:
        ids[value_key(view)] = pname
    for k, v in enumerate(parts.constants):
        cname = w.unique("constant", w.variables)
        ids[value_key(v)] = w.declare(cname, tuple(v.shape), "Parameter", False)
        params[cname] = (np.asarray(v.d), False)
    for node in parts.nodes:
        for v in node.spec.split_arguments(node.args, node.kwargs)[0]:
            if isinstance(v, Variable) and params.get(ids.get(value_key(v), "")) is not None:
                w.readers[ids[value_key(v)]] = w.readers.get(ids[value_key(v)], 0) + 1
    given = {value_key(v): n for n, v in (names or {}).items() if isinstance(v, Variable)}
    given.update((value_key(v), n) for n, v in parts.outputs.items())
    for node in parts.nodes:
        rule = nnp_export_rule(node.spec)
        if rule is None:
            unmapped = getattr(rules_for(node.spec), "nnp_export", None)
            why = unmapped.reason if isinstance(unmapped, Unmapped) else "no nnp_export rule"
            raise ExportError(f"{_where(node)}: NNabla has no function this op is written as "
                              f"({why})")
        ins, attrs = node.spec.split_arguments(node.args, node.kwargs)
        in_names: list[str | None] = []
        numbers: dict[int, float] = {}
        for k, v in enumerate(ins):
            if v is None:
                in_names.append(None)
            elif isinstance(v, Variable):
                in_names.append(ids[value_key(v)])
            elif getattr(rule, "takes_numbers", False) and _is_number(v):
                in_names.append(None)
                numbers[k] = float(v)
            else:
                raise ExportError(f"{_where(node)}: an input given as a value ({type(v).__name__})"
                                  " has no NNabla form")
        batched = axis.outputs(node)
        out_names: list[str | None] = []
        for i, ref in enumerate(node._outputs):
            v = ref()
            if v is None:
                out_names.append(None)
                continue
            key = output_key(node, i)
            base = given.get(key)
            if base is not None and base in w.variables:
                raise ExportError(f"network {name!r}: two variables are both named {base!r}")
            if base is None:
                vname = w.pending_buffer(f"{node.spec.name}_out", tuple(v.shape), batched[i])
            else:
                vname = w.declare(base, tuple(v.shape), "Buffer", batched[i])
            out_names.append(vname)
            ids[key] = vname
        e = NnpEmitter(w, node, out_names)
        e.numbers = numbers
        e.ids = ids
        e.keeps_batch = any(batched)
        try:
            rule(e, in_names, attrs)
        except _Unsupported as exc:
            raise ExportError(f"{_where(node)}: cannot be written for NNabla: {exc}") from None
        for key in [output_key(node, i) for i in range(len(node._outputs))]:
            if key in ids:
                ids[key] = w.renamed.get(ids[key], ids[key])
    # a parameter no written function reads (CNTK's sample count of a batch normalisation) is
    # left out: NNabla has no use for it (and reads a 0-d one back as None)
    read = {i for f in w.functions for k, i in f if k == "input"} | set(parts.outputs)
    for pname in [p for p in params if p not in read]:
        del params[pname], w.variables[pname]
    message: Message = [("name", name), ("batch_size", int(w.batch_size))]
    # NNabla's order: the buffers (inputs and what functions write) as the functions reach
    # them -- each function's inputs not listed yet, then its outputs (an input first read by
    # a later function comes after the buffers written before it: nnabla/core/graph_def.py's
    # ProtoGraphGenerator lists them so) -- then the parameters
    kinds = {k: dict(v)["type"] for k, v in w.variables.items()}
    buffers = [k for k in w.variables if kinds[k] != "Parameter"]
    reached: dict[str, None] = {}
    for f in w.functions:
        for k, v in f:
            if k in ("input", "output") and v in w.variables and kinds[v] != "Parameter":
                reached.setdefault(v)
    order = list(reached) + [k for k in buffers if k not in reached]
    message += [("variable", w.variables[k]) for k in order]
    message += [("variable", v) for k, v in w.variables.items() if kinds[k] == "Parameter"]
    message += [("function", f) for f in w.functions]
    return NetworkExport(message, list(parts.inputs), list(parts.outputs), params)
