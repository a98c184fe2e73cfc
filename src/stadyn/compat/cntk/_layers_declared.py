"""What a CNTK layer knows before it is applied: its parameters' declared shapes (``-1`` for an
axis its input decides, CNTK's inferred dimension) and the inputs it refuses up front.

Example:
    >>> import stadyn.compat.cntk as C
    >>> C.layers.Dense(3).W.shape
    (-1, 3)
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

import numpy as np

from ... import layers as _L
from ...graph import FREE_DIMENSION, Variable
from . import _graph as G
from ._adapt import wrap
from ._mixins import hash_as, not_a_variable
from ._seq_axes import free_steps, refuse_free_windows
from ._variable_text import dims_text


def _refuse_weights_over_steps(layer: Any, values: list) -> None:
    """CNTK 2.7 refuses a ``Dense`` whose weight would take its input dimensions from a free
    dimension (-3: an input's ``FreeDimension``, ``sequence.unpack``'s padded steps): their
    number is the run's, so the weight would have none (a ValueError, in CNTK's ``Times``
    words, when applied); ``input_rank``/``map_rank`` that leave the free axes out apply it
    to each row."""
    if not isinstance(layer, _L.Dense) or layer.parameters or len(values) != 1:
        return
    x = values[0]
    if not isinstance(x, Variable) or x.sequence_lengths is not None:
        return
    free = free_steps(x)
    if layer.input_rank is not None:
        base = x.ndim - int(layer.input_rank)
    else:
        base = 1 + int(layer.map_rank or 0)
    if any(a >= base for a in free):
        sample = tuple(wrap(x).shape)
        out = tuple(layer.shape)
        declared = (-1,) * int(layer.input_rank or 1) + out
        inferred = tuple(-1 if d == FREE_DIMENSION else d for d in sample[base - 1:]) + out
        shown = dims_text
        name = G.name_of(x) or f"Placeholder{next(_UIDS)}"
        raise ValueError(
            f"Times: right operand 'Parameter('W', [], [{shown(declared)}])' shape "
            f"'[{shown(inferred)}]' dimension cannot be inferred from a left operand "
            f"'Placeholder('{name}', [#], [{shown(sample)}])' shape '[{shown(sample)}]' free "
            f"dimension.\nDense: its weight W cannot take its input dimensions from a free "
            f"dimension (-3) of its input of shape {sample}; apply it to each row with "
            "input_rank=1 or map_rank=1")


def _refuse_windows_over_free_lengths(layer: Any, values: list) -> None:
    """A ``Convolution``, ``MaxPooling`` or ``AveragePooling`` layer whose CNTK padding over a
    free dimension of its input would depend on each minibatch's length is refused
    (:func:`._seq_axes.refuse_free_windows`); the same at every length, it runs."""
    window = getattr(layer, "filter_shape", None)
    if window is None or len(values) != 1 or not isinstance(values[0], Variable) or \
            not isinstance(layer, (_L.Convolution, _L.MaxPooling, _L.AveragePooling)):
        return
    pad = layer.pad if isinstance(layer.pad, bool) else tuple(bool(p) for p in layer.pad)
    refuse_free_windows(values[0], window, getattr(layer, "strides", 1), pad,
                        getattr(layer, "dilation", 1), type(layer).__name__)


_UIDS = itertools.count(1)


class _DeclaredParameter:
    """A parameter of a layer not applied yet, as CNTK shows it: ``shape`` with ``-1`` for each
    axis the input decides (CNTK's inferred dimension), ``value`` once the shape is known and
    the initial value is not drawn at random.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> d = C.layers.Dense(3)
        >>> d.W.shape, d.b.shape, d.b.value.tolist()
        ((-1, 3), (3,), [0.0, 0.0, 0.0])
    """

    is_placeholder = is_input = is_output = False

    def __init__(self, name: str, shape: tuple, init: Any, dtype: Any = np.float32,
                 constant: bool = False, layer: Any = None):
        self.name, self.shape, self._init = name, tuple(int(s) for s in shape), init
        # (the native layer whose application makes it: a learner given it learns that one)
        self._layer = None if layer is None else weakref.ref(layer)
        # (an Embedding of given weights holds them as a constant)
        self.is_parameter, self.is_constant = not constant, constant
        self.dtype = np.float64 if np.dtype(dtype) == np.float64 else np.float32
        self.uid = f"{'Constant' if constant else 'Parameter'}{next(_UIDS)}"

    @property
    def value(self) -> np.ndarray:
        """The initial value (CNTK refuses it while an axis is not inferred yet)."""
        if -1 in self.shape:
            raise ValueError(f"parameter {self.name!r} of shape {self.shape}: its axes of -1 "
                             "come from the input, so it has no value until the layer is "
                             "applied (CNTK: 'unknown dimensions')")
        if self.__dict__.get("_set") is not None:
            return self._set.copy()
        if isinstance(self._init, (int, float, np.ndarray)):
            return _L.initial_value(self._init, self.shape, 1, 1)
        raise ValueError(f"parameter {self.name!r}: its random initial value is drawn when the "
                         "layer is first applied")

    @value.setter
    def value(self, value) -> None:
        """Its value, set before the layer is applied: the parameter the application makes
        takes it, as CNTK 2.7's parameter, the same one, keeps it.  A shape other than its
        own (or its own has an axis the input decides) is refused as CNTK 2.7 refuses it:
        a RuntimeError."""
        array = np.asarray(value, dtype=self.dtype)
        if -1 in self.shape or array.shape != self.shape:
            raise RuntimeError(f"Variable '{self!r}' SetValue(): 'source' shape "
                               f"'[{dims_text(array.shape)}]' differs 'destination' shape "
                               f"'[{dims_text(self.shape)}]'.")
        self._set = array
        _SET_VALUES.append(weakref.ref(self))

    #: compared as a Variable is (CNTK 2.7's Variable_eq)
    compared_by_variable = True
    #: once its layer is applied, compared as the parameter the application made
    #: (``_mixins.compared_output``)
    compares_as_made = True

    def made_object(self) -> Any:
        """The CNTK object over the parameter its layer's application made for it (None before
        the layer is applied): CNTK 2.7's declared parameter is that one."""
        made = _made(self)
        return None if made is None else wrap(made)

    def __eq__(self, other) -> bool:
        """Itself, and once its layer is applied the parameter the application made (CNTK
        2.7's is that one); ``None`` is none, another Variable or Function is another one,
        and anything else CNTK 2.7's TypeError of SWIG's ``Variable_eq`` (``d.W == 3``)."""
        if other is None:
            return False
        if other is self:
            return True
        made = self.made_object()
        if made is not None:
            return made == other
        if getattr(type(other), "compared_by_variable", False) or \
                getattr(type(other), "compares_as_output", False):
            return False
        raise not_a_variable()

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        """The same before and after its layer's application, and the hash of the parameter
        the application makes (:func:`adopt_applied`), as CNTK 2.7's one Parameter: a dict
        keyed by ``d.W`` before ``d(x)`` finds ``d.W`` and ``z.parameters[0]`` after."""
        key = self.__dict__.get("_hash")
        if key is None:
            made = self.made_object()
            key = self._hash = object.__hash__(self) if made is None else hash(made)
            if made is None:
                _HASHED.append(weakref.ref(self))
        return key

    def __repr__(self) -> str:
        """As CNTK 2.7's: ``Parameter('W', [], [? x 3])`` (an axis the input decides ``?``)."""
        kind = "Constant" if self.is_constant else "Parameter"
        return f"{kind}('{self.name}', [], [{dims_text(self.shape)}])"


def _dense_like(layer: Any) -> "list | None":
    """``(name, shape, init, constant)`` of a Dense's or an Embedding's declared parameters."""
    if isinstance(layer, _L.Dense):
        out = [("W", (-1,) * int(layer.input_rank or 1) + layer.shape, layer.init, False)]
        return out + ([("b", layer.shape, layer.init_bias, False)] if layer.bias else [])
    if layer.weights is not None:                       # (given weights: a constant)
        return [("E", layer.weights.shape, layer.weights, True)]
    return [("E", (-1,) + tuple(layer.shape or ()), layer.init, False)]


def _convolution(layer: Any) -> "list | None":
    """A convolution's: ``W`` ``(filters, -1, *filter_shape)`` (a transposed one's
    ``(-1, filters, *filter_shape)``), ``b`` ``(filters, 1, ...)``; None for the forms
    Stadyn does not model before they are applied (reduction_rank 0, groups)."""
    n = len(layer.filter_shape)
    if isinstance(layer, _L.ConvolutionTranspose):
        w = (-1, layer.num_filters) + layer.filter_shape
    elif layer.reduction_rank != 1 or layer.groups != 1:
        return None
    else:
        w = (layer.num_filters, -1) + layer.filter_shape
    out = [("W", w, layer.init, False)]
    bias = (layer.num_filters,) + (1,) * n
    return out + ([("b", bias, layer.init_bias, False)] if layer.bias else [])


def _recurrent_step(layer: Any) -> "list | None":
    """An LSTM's, GRU's or RNNStep's, in CNTK 2.7's order (``_graph._CELL_ORDER``): ``W``
    ``(-1, gates * cell)``, ``H``, ``b``, a projection ``P``, an LSTM's peepholes, a GRU's
    constant 1 first; self-stabilised, right after ``H`` its stabiliser's three scalar
    constants (0, 4 and 4: the softplus's and the steepness, as CNTK 2.7 lists them before
    and after the application) and its ``alpha`` (``log(expm1(4)) / 4``)."""
    cell, size = layer.cell_shape[0], layer.shape[0]
    cols = layer.n_gates * cell
    made = {"W": ((-1, cols), layer.init), "H": ((size, layer.hidden_gates * cell), layer.init),
            "b": ((cols,), layer.init_bias)}
    if layer.projected:
        made["P"] = ((cell, size), layer.init)
    if isinstance(layer, _L.GRU):
        made["H1"] = ((size, size), layer.init)
        order = ("P", "b", "W", "H", "H1")
    elif isinstance(layer, _L.LSTM):
        if layer.use_peepholes:
            made.update({c: ((cell,), layer.init) for c in ("Ci", "Cf", "Co")})
        order = ("P", "b", "W", "H", "Co", "Cf", "Ci")
    else:
        order = ("P", "W", "H", "b")
    out = []
    for n in order:
        if n in made:
            out.append((n, made[n][0], made[n][1], False))
        if n == "H" and layer.stabilize:
            out += [("", (), k, True) for k in (0.0, _STEEPNESS, _STEEPNESS)] + \
                [("alpha", (), float(np.log(np.expm1(_STEEPNESS)) / _STEEPNESS), False)]
    return ([("", (), 1.0, True)] if isinstance(layer, _L.GRU) else []) + out


_STEEPNESS = 4.0    # (a recurrent cell's stabiliser's: layers/_recurrent.py)


def _normalization(layer: Any) -> "list | None":
    """A batch normalisation's ``scale``, ``bias`` ``(-1,)`` and its running statistics
    (constants); a layer normalisation's epsilon (a constant), ``scale``, ``bias``."""
    if isinstance(layer, _L.LayerNormalization):
        return [("", (), float(layer.epsilon), True),
                ("scale", (-1,), layer.initial_scale, False),
                ("bias", (-1,), layer.initial_bias, False)]
    if layer.sync:
        return None
    return [("scale", (-1,), float(layer.init_scale), False), ("bias", (-1,), 0.0, False),
            ("aggregate_mean", (-1,), 0.0, True), ("aggregate_variance", (-1,), 0.0, True),
            ("aggregate_count", (), 0.0, True)]


_DECLARING = ((_L.Dense, _dense_like), (_L.Embedding, _dense_like),
              ((_L.Convolution, _L.ConvolutionTranspose), _convolution),
              ((_L.LSTM, _L.GRU, _L.RNNStep), _recurrent_step),
              ((_L.BatchNormalization, _L.LayerNormalization), _normalization))


def _declared_specs(layer: Any) -> "list | None":
    """``(name, shape, init, constant)`` of what CNTK 2.7's ``layer`` has among its inputs
    before it is applied, in its order; None where Stadyn does not model it."""
    for kinds, specs in _DECLARING:
        if isinstance(layer, kinds):
            return specs(layer)
    return None


def refuse_declared(parameters: Any, owner: str) -> None:
    """A ValueError for a learner given a parameter of a layer not applied yet whose shape has
    an inferred (-1) axis: CNTK 2.7 creates a learned parameter's value as the learner is made,
    and cannot for it ('Cannot create an NDArrayView using a view shape '[? x 3]' that has
    unknown dimensions for any of its axes').  One of a known shape is taken
    (:func:`stand_ins`).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> C.sgd(C.layers.Dense(3).parameters, C.learning_parameter_schedule(0.1))
        Traceback (most recent call last):
          ...
        ValueError: sgd: parameter 'W' of shape (-1, 3) has unknown dimensions ...
    """
    for p in parameters if isinstance(parameters, (list, tuple)) else ():
        if isinstance(p, _DeclaredParameter) and -1 in p.shape:
            raise ValueError(
                f"{owner}: parameter {p.name!r} of shape {p.shape} has unknown dimensions (-1: "
                "its layer is not applied yet) and so no value to learn, as in CNTK 2.7 "
                "('Cannot create an NDArrayView using a view shape that has unknown "
                "dimensions'); make the learner once the layer is applied to its input")


# learner -> [(stand-in, declared parameter)] still waiting for their layers' application
_AWAITING: "weakref.WeakKeyDictionary[Any, list]" = weakref.WeakKeyDictionary()
# the declared parameters given a value (weakly), until their layer's application makes them
_SET_VALUES: "list[weakref.ref]" = []
# the declared parameters hashed (weakly), until their layer's application makes them
_HASHED: "list[weakref.ref]" = []


def stand_ins(parameters: list) -> "tuple[list, list]":
    """``parameters`` with each declared parameter of a known shape (a layer's, before it is
    applied) replaced by a Variable of its shape and initial value for the learner to hold
    until the layer is applied (:func:`learn_when_applied`); and the pairs replaced.  CNTK
    2.7's declared parameter is the one its layer's application later uses, so a learner made
    on it learns that one."""
    out, pairs = [], []
    for p in parameters:
        if isinstance(p, _DeclaredParameter) and p.is_parameter and -1 not in p.shape:
            try:
                value = p.value
            except ValueError:                  # (drawn at random when applied)
                value = np.zeros(p.shape, p.dtype)
            v = Variable(p.shape, need_grad=True)
            v.d, v.name = value, p.name
            pairs.append((v, p))
            p = v
        out.append(p)
    return out, pairs


def learn_when_applied(learner: Any, pairs: list) -> None:
    """Have ``learner`` learn each declared parameter's own (for its stand-in) once its layer
    is applied (:func:`adopt_applied`)."""
    if pairs:
        _AWAITING.setdefault(learner, []).extend(pairs)


def adopt_applied() -> None:
    """Give the learners waiting on declared parameters the ones their layers' applications
    made, and those parameters the values set on the declared ones and the hashes of the
    declared ones hashed (called after a layer is applied)."""
    for ref in list(_HASHED):               # (the parameter made hashes as the declared one)
        declared = ref()
        made = _made(declared) if declared is not None else None
        if declared is None or made is not None:
            _HASHED.remove(ref)
        if made is not None:
            hash_as(made, declared._hash)
    for ref in list(_SET_VALUES):
        declared = ref()
        made = _made(declared) if declared is not None else None
        if declared is None or made is not None:
            _SET_VALUES.remove(ref)
        if made is not None:
            made.d = declared._set.reshape(made.shape)
    for learner, pairs in list(_AWAITING.items()):
        left = []
        for stand_in, declared in pairs:
            made = _made(declared)
            if made is None:
                left.append((stand_in, declared))
            else:
                learner.replace_parameter(stand_in, made)
        if left:
            _AWAITING[learner] = left
        else:
            del _AWAITING[learner]


def _made(declared: Any) -> Any:
    """The parameter the application of its layer made for ``declared`` (None before)."""
    layer = declared._layer() if declared._layer is not None else None
    if layer is None:
        return None
    return next((v for v in layer.parameters if G.name_of(v) == declared.name), None)


def _declared_parameter(layer: Any, name: str) -> "_DeclaredParameter | None":
    """``layer``'s parameter ``name`` before its first application (Dense, Embedding,
    convolutions, recurrent steps, normalisations)."""
    if layer.parameters or not name:
        return None
    dtype = getattr(layer, "dtype", np.float32)
    for n, shape, init, constant in _declared_specs(layer) or ():
        if n == name:
            return _DeclaredParameter(n, shape, init, dtype, constant, layer)
    return None


# The layers without parameters (CNTK 2.7 lists none for them, applied or not)
_PARAMETERLESS = (_L.Activation, _L.MaxPooling, _L.AveragePooling, _L.GlobalMaxPooling,
                  _L.GlobalAveragePooling, _L.Dropout, _L.Label)


def declared_parameters(layer: Any) -> "list | None":
    """The parameters and constants CNTK 2.7 lists among the inputs of the native ``layer``
    before it is applied, in its order (``W`` then ``b``; ``E``; an LSTM's ``b``, ``W``,
    ``H``; a batch normalisation's ``scale``, ``bias`` then its running statistics, which
    are constants), their shapes with ``-1`` where the input decides; ``[]`` for a layer
    without parameters; None for the layers whose declared parameters Stadyn does not model
    (Stabilizer, grouped convolutions: their ``parameters`` are empty until applied).

    Example:
        >>> import stadyn.layers as L
        >>> [(p.name, p.shape) for p in declared_parameters(L.Dense(3))]
        [('W', (-1, 3)), ('b', (3,))]
        >>> [(p.name, p.shape) for p in declared_parameters(L.LSTM(4))]
        [('b', (16,)), ('W', (-1, 16)), ('H', (4, 16))]
    """
    if isinstance(layer, _PARAMETERLESS):
        return []
    specs = _declared_specs(layer)
    if specs is None:
        return None
    dtype = getattr(layer, "dtype", np.float32)
    return [_DeclaredParameter(n, shape, init, dtype, constant, layer)
            for n, shape, init, constant in specs]


# The layers Stadyn does not declare parameters for (``declared_parameters``) that make some
_MAKING_PARAMETERS = (_L.Convolution, _L.ConvolutionTranspose, _L.BatchNormalization,
                      _L.LayerNormalization, _L.Stabilizer, _L.LSTM, _L.GRU, _L.RNNStep)


def makes_parameters(layer: Any) -> bool:
    """Whether CNTK 2.7 makes parameters when the layer is made (not applied): refused inside
    a ``@Function`` body (``_function_pure``)."""
    declared = declared_parameters(layer)
    if declared is not None:
        return any(p.is_parameter for p in declared)
    return isinstance(layer, _MAKING_PARAMETERS)
