"""NNabla's ``nnabla.function.Function``: the node an ``nn.Variable``'s ``parent`` is.

Every op applied to NNabla Variables records one :class:`Function` (Stadyn's
``FunctionNode``, with NNabla's view of it): ``name`` and ``info.type_name`` are NNabla's type
name (``'Affine'``, ``'ReLU'``, ``'MulScalar'``, ``'ReduceSum'``), ``inputs`` and ``outputs``
are lists of Variables (``inputs`` is the list the node holds: read it, do not change it),
``info.args`` (also ``arguments``) the op's attributes, ``rank`` its depth in the graph (the
largest rank of its inputs; a leaf Variable's is 0, a Variable's one more than its parent's).
``str()`` and ``repr()`` are the type name, as in NNabla.  Stadyn's own code keeps reading
the node as a ``FunctionNode`` (``spec``, ``attrs``, ``scope``, ``where``).

``info.args`` is NNabla's (names, order, resolved defaults, float32 values:
``_function_args.py``) for the common functions (convolution, pooling, normalisation,
reductions, softmax and its losses, ...); for the others it holds Stadyn's declaration of the
op's attributes (NNabla's names for nearly every op).  As in NNabla 1.39, ``rank`` grows by 1
once a ``forward()`` has run the function (it then equals its outputs' rank).  Differences
from NNabla 1.39: NNabla's ``forward``/``backward``/``setup`` of a single function are not here
(a graph runs as a whole), and ``args`` is the node's own (the arguments the op was called
with), not ``info.args``.

Example:
    >>> import stadyn.compat.nnabla as nn
    >>> import stadyn.compat.nnabla.functions as F
    >>> x = nn.Variable((2, 3), need_grad=True)
    >>> h = F.relu(x)
    >>> y = F.reduce_sum(h * 2.0)
    >>> h.parent, h.parent.name, h.parent.inputs
    (ReLU, 'ReLU', [<Variable((2, 3), need_grad=True) at 0x...>])
    >>> [f.info.type_name for f in [h.parent, y.parent]], y.parent.rank, y.rank
    (['ReLU', 'ReduceSum'], 2, 3)
"""

from __future__ import annotations

import weakref
from typing import Any, Sequence

from ...graph import FunctionNode, topological_nodes
from ._context import bound_context
from ._float_inputs import note_reads
from ._function_args import nnabla_args
from . import _function_api
from ._readers import note_reader_function, note_readers

__all__ = ["Function", "Info", "type_name", "as_function", "named", "mark_forwarded",
           "built_rank"]

# NNabla's type names that are not the CamelCase of the function's name (checked against
# nnabla.function's classes in NNabla 1.39: ``Relu`` is ``ReLU``, ``Acos`` is ``ACos``).
_NNABLA_TYPE_NAMES = {
    "acos": "ACos", "acosh": "ACosh", "asin": "ASin", "asinh": "ASinh", "atan": "ATan",
    "atan2": "ATan2", "atanh": "ATanh", "celu": "CELU", "crelu": "CReLU", "cumprod": "CumProd",
    "cumsum": "CumSum", "elu": "ELU", "fft": "FFT", "gelu": "GELU", "gru": "GRU",
    "ifft": "IFFT", "inq_affine": "INQAffine", "inq_convolution": "INQConvolution",
    "isinf": "IsInf", "isnan": "IsNaN", "istft": "ISTFT", "kl_multinomial": "KLMultinomial",
    "leaky_relu": "LeakyReLU", "lstm": "LSTM", "nonzero": "NonZero",
    "onnx_non_max_suppression": "ONNXNonMaxSuppression", "onnx_resize": "ONNXResize",
    "prelu": "PReLU", "relu": "ReLU", "relu6": "ReLU6", "reset_nan": "ResetNaN", "rnn": "RNN",
    "searchsorted": "SearchSorted", "selu": "SELU", "softplus": "SoftPlus",
    "softsign": "SoftSign", "stft": "STFT", "vat_noise": "VATNoise",
}

# Nodes of NNabla functions that are compositions of catalog ops (``F.reduce_sum`` is
# Stadyn's ``sum``): the type name NNabla gives them.
_NAMED: "weakref.WeakKeyDictionary[FunctionNode, str]" = weakref.WeakKeyDictionary()


def type_name(op_name: str) -> str:
    """NNabla's type name of the function Stadyn's op ``op_name`` is.

    Example:
        >>> type_name("leaky_relu"), type_name("mul_scalar"), type_name("affine")
        ('LeakyReLU', 'MulScalar', 'Affine')
    """
    known = _NNABLA_TYPE_NAMES.get(op_name)
    if known is not None:
        return known
    return "".join(part[:1].upper() + part[1:] for part in op_name.split("_"))


def named(v: Any, name: str) -> Any:
    """Give the node that made ``v`` NNabla's type name ``name`` (for a function Stadyn
    composes of another op); returns ``v``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> y = named(F.sum(sd.Variable((2,))), "ReduceSum")
        >>> as_function(y.parent).name
        'ReduceSum'
    """
    if v.parent is not None:
        _NAMED[v.parent] = name
    return v


def as_function(node: FunctionNode) -> "Function":
    """``node`` seen as NNabla's :class:`Function` (the same object; a node made from Stadyn's
    own Variables switches class).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> f = as_function(F.tanh(sd.Variable((2,))).parent)
        >>> f.info.type_name, type(f).__name__
        ('Tanh', 'Function')
    """
    if type(node) is FunctionNode:
        node.__class__ = Function
        node.inputs = list(node.inputs)
        note_reader_function(node)      # (v.function_references: _readers.py)
    return node  # type: ignore[return-value]


class Info:
    """A function's ``info`` (NNabla's ``nnabla.function.Info``): ``type_name``, ``args``,
    ``tags``.

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> info = (nn.Variable((2,)) * 3.0).parent.info
        >>> info.type_name, info.args
        ('MulScalar', {'val': 3.0, 'inplace': False})
    """

    __slots__ = ("type_name", "args", "tags")

    def __init__(self, type_name: str, args: dict, tags: dict):
        self.type_name, self.args, self.tags = type_name, args, tags

    def __repr__(self) -> str:
        return f"<Info {self.type_name} {self.args}>"


def _listed(value: Any) -> Any:
    return [_listed(v) for v in value] if isinstance(value, tuple) else value


# The function nodes a forward() has run (see Function.rank).
_FORWARDED: "weakref.WeakSet[FunctionNode]" = weakref.WeakSet()


def mark_forwarded(v: Any) -> None:
    """Note that ``v.forward()`` has run the functions ``v`` depends on (``Function.rank``)."""
    if v.parent is not None and v.parent not in _FORWARDED:
        _FORWARDED.update(topological_nodes([v]))


def built_rank(node: FunctionNode) -> int:
    """The rank NNabla gives a function when it is made: the largest rank of its inputs (a
    leaf's is 0, a Variable's its parent's + 1)."""
    ranks: dict[int, int] = {}
    inputs = node.inputs
    for n in topological_nodes(inputs):
        ranks[id(n)] = max((ranks[id(v.parent)] + 1 for v in n.inputs
                            if v.parent is not None), default=0)
    return max((ranks[id(v.parent)] + 1 for v in inputs if v.parent is not None), default=0)


class Function(FunctionNode):
    """A function of an NNabla graph (``nnabla.function.Function``; see the module docstring).

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> f = F.sigmoid(nn.Variable((2,))).parent
        >>> f.name, len(f.inputs), len(f.outputs), f.rank
        ('Sigmoid', 1, 1, 0)
    """

    __slots__ = ()

    @property
    def name(self) -> str:
        """NNabla's name of the function: its type name (``'Convolution'``, ``'ReLU'``), or
        ``'Callback'`` for a ``PythonFunction``'s (NNabla's function running it)."""
        if self.spec.name == "python_function":
            return "Callback"
        return _NAMED.get(self) or type_name(self.spec.name)

    def __init__(self, spec, args: tuple, kwargs: dict, inputs: Sequence, scope: str,
                 location: tuple[str, int] | None = None):
        # ``inputs`` is a list, as NNabla's: held as one, so reading it costs nothing.
        super().__init__(spec, args, kwargs, list(inputs), scope, location)
        # NNabla binds a function's context when it is made: PF.affine made in a cpu:half
        # scope computes in fp16 at every later forward (case user36_half_context_on_cpu);
        # ``y.parent.context`` is the NNabla context that was current (test_function_context)
        self.context = bound_context()
        note_reads(self, inputs)        # the floating leaves it reads as data (_float_inputs)
        note_readers(inputs, self)      # NNabla's function_reference(s/_count) (_readers.py)

    def set_input(self, k: int, new) -> None:
        """Make input ``k`` ``new`` (Stadyn's :meth:`stadyn.graph.FunctionNode.set_input`):
        ``inputs`` stays a list, and ``new.function_references`` lists this function, as for
        a function made on it (the old input still counts it in ``function_reference_count``,
        which never goes down: ``_readers.py``).

        Example:
            >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
            >>> a, b = nn.Variable((2,)), nn.Variable((2,))
            >>> f = F.sigmoid(a).parent
            >>> f.set_input(0, b); b.function_references, a.function_references
            ([Sigmoid], [])
        """
        super().set_input(k, new)
        self.inputs = list(self.inputs)
        note_readers([new], self)

    @property
    def info(self) -> Info:
        """``type_name``, ``args`` (the op's attributes) and ``tags`` (empty); a
        ``PythonFunction``'s type name is its ``name``, its ``args`` empty, as NNabla's."""
        if self.spec.name == "python_function":
            return Info(self.attrs["function"].function.name, {}, {})
        return Info(self.name, self.arguments, {})

    @property
    def arguments(self) -> dict:
        """The function's arguments as NNabla's ``info.args`` shows them (its names, order and
        resolved defaults for the functions ``_function_args.py`` knows; otherwise the op's
        attributes by name), less ``rule`` (which framework's NaN or variance rule the op
        follows: Stadyn's, not an NNabla argument)."""
        attrs = {k: _listed(v) for k, v in self.attrs.items() if k != "rule"}
        return nnabla_args(self, self.name, attrs)

    @property
    def tags(self) -> dict:
        """NNabla's function tags: none here."""
        return {}

    @property
    def need_grad(self) -> bool:
        """Whether a gradient flows through the function (some input needs one)."""
        return any(v.need_grad for v in self.inputs)

    @property
    def rank(self) -> int:
        """The largest rank of the inputs (a leaf's is 0, a Variable's its parent's + 1), and 1
        more once a ``forward()`` has run the function (NNabla 1.39's forward re-ranks what it
        runs: ``src/nbla/computation_graph/variable.cpp``, ``visit_function_recursive``, step C,
        ``func->set_rank_(++max_rank)``)."""
        return built_rank(self) + (self in _FORWARDED)

    def setup(self, inputs: Sequence, outputs: Sequence) -> None:
        """Give ``outputs`` the shapes the function computes from ``inputs`` (NNabla's
        ``Function.setup``; ``_function_api.py``)."""
        _function_api.setup(self, inputs, outputs)

    def forward(self, inputs: Sequence, outputs: Sequence) -> None:
        """Compute the function on ``inputs``' data into ``outputs``' data (Variables other
        than the ones it was made on; ``_function_api.py``).

        Example:
            >>> import numpy as np, stadyn.compat.nnabla as nn
            >>> import stadyn.compat.nnabla.functions as F
            >>> f = F.relu(nn.Variable((3,))).parent
            >>> x = nn.Variable.from_numpy_array(np.array([-1.0, 0.5, 2.0]), need_grad=True)
            >>> y = nn.Variable((3,))
            >>> f.setup([x], [y]); f.forward([x], [y]); y.d.tolist()
            [0.0, 0.5, 2.0]
        """
        _function_api.forward(self, inputs, outputs)

    def backward(self, inputs: Sequence, outputs: Sequence, accum: Any = None) -> None:
        """Send ``outputs``' grads back into the grads of the ``inputs`` that need one: added
        where ``accum[i]`` (default: every input), overwritten elsewhere, as NNabla's.

        Example:
            >>> import numpy as np, stadyn.compat.nnabla as nn
            >>> import stadyn.compat.nnabla.functions as F
            >>> x = nn.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
            >>> y = F.mul_scalar(x, 3.0); f = y.parent
            >>> x.g = 1.0; y.g = 1.0
            >>> f.forward([x], [y]); f.backward([x], [y]); x.g.tolist()
            [4.0, 4.0]
            >>> f.backward([x], [y], accum=[False]); x.g.tolist()
            [3.0, 3.0]
        """
        _function_api.backward(self, inputs, outputs, accum)

    def setup_recompute(self, inputs: Sequence, outputs: Sequence) -> None:
        """Nothing to set up: :meth:`recompute` runs the forward again."""

    def recompute(self, inputs: Sequence, outputs: Sequence) -> None:
        """The forward again (NNabla's recomputation of cleared outputs)."""
        _function_api.forward(self, inputs, outputs)

    def need_setup_recompute(self, o: int) -> bool:
        """False: :meth:`recompute` needs no :meth:`setup_recompute`."""
        return False

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__
