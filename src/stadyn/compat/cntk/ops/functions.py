"""``cntk.ops.functions``: ``Function`` and what goes with it (``CloneMethod``,
``ModelFormat``, ``load_model``, ``BlockFunction``), and ``UserFunction``: an op written in
Python on NumPy arrays.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> class MySigmoid(C.ops.functions.UserFunction):
    ...     def __init__(self, arg, name="MySigmoid"):
    ...         super().__init__([arg], name=name)
    ...     def forward(self, argument, device=None, outputs_to_retain=None):
    ...         s = 1 / (1 + np.exp(-argument))
    ...         return s, s
    ...     def backward(self, state, root_gradients):
    ...         return root_gradients * state * (1 - state)
    ...     def infer_outputs(self):
    ...         x = self.inputs[0]
    ...         return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]
    >>> x = C.input_variable(2, needs_gradient=True)
    >>> f = C.user_function(MySigmoid(x))
    >>> f.eval({x: np.zeros((1, 2), np.float32)}).tolist()
    [[0.5, 0.5]]
    >>> f.grad({x: np.zeros((1, 2), np.float32)}).tolist()
    [[0.25, 0.25]]
"""

from __future__ import annotations

import importlib
import inspect

import numpy as np

from .... import functions as F
from ....serialize import register_user_function_loader
from .. import _graph as G
from .._adapt import operand, wrap
from .._blocks import BlockFunction
from .._deferred import Deferred as Waiting
from .._deferred import cloning
from .._deferred import pending as waits
from .._function import CloneMethod, Function, ModelFormat, load_model
from .._mixins import GraphObject
from .._user_clones import as_cloned
from .._values import HandedValue, Value, arrays_of
from .._variables import Record, Variable
from ..device import DeviceDescriptor, cpu

__all__ = ["Function", "CloneMethod", "ModelFormat", "BlockFunction", "load_model",
           "UserFunction", "Record", "Value", "Variable", "DeviceDescriptor",
           "cpu"]


class UserFunction(Function):
    """An op in Python: subclass it, pass the inputs to ``__init__`` and write
    ``forward(argument(s), ...)`` returning ``(state, output)``, ``backward(state,
    root_gradients[, variables])`` returning the gradient (one input) or filling
    ``variables`` (several), and ``infer_outputs()`` returning ``[output_variable(...)]``;
    ``cntk.user_function(instance)`` is the Function to use.  With several outputs, as in
    CNTK 2.7, ``forward(arguments, outputs, ...)`` fills the dict ``outputs`` (keyed by
    ``self.outputs``) and returns the state, and ``backward`` is given the root gradients as
    a dict of the outputs that need one (the array itself when one does).  An output's
    dimension may be ``FreeDimension``: the arrays ``forward`` returns give its size.  As in
    CNTK 2.7, an input with a sequence axis reaches ``forward`` as a list of its sequences
    (one array each), and an output declared on a sequence input's ``dynamic_axes`` is a
    sequence of that input's lengths (``forward`` returns, and ``backward`` is given, a list
    of per-sequence arrays for it).  ``user_function`` gives an unnamed composite; the name
    given here is the function's own (``find_by_name`` finds it), its output is unnamed.
    Made with ``as_numpy=False``, ``forward`` is given Values and ``backward`` its root
    gradients as Values, as CNTK 2.7 hands them (SWIG's: ``shape()``, ``device()``,
    ``deep_clone()``; a sequence input's padded), which a CNTK graph's ``forward`` takes;
    what the two return may be a Value or an array (``_values.HandedValue``).
    """

    def __new__(cls, *args, **kwargs):
        # (a subclass is made on its inputs, which may be a waiting Function -- callable, as
        # ``C.Function(python_function)`` takes one -- still an input here, as in CNTK 2.7)
        return super(Function, cls).__new__(cls)

    def __init__(self, inputs, as_numpy: bool = True, attributes=None, name: str = ""):
        self._user_inputs = [i if isinstance(i, GraphObject) else i for i in inputs]
        self._user_name = name
        self.as_numpy = as_numpy
        self.attributes_ = dict(attributes or {})

    def _build(self) -> None:
        """Make the op (once): ``infer_outputs`` is asked when ``user_function`` takes the
        instance, as CNTK 2.7 asks it after the subclass's ``__init__`` has finished."""
        if self.__dict__.get("_built"):
            return
        self._built = True
        name = self._user_name
        types = list(self.infer_outputs())
        if not types:
            raise ValueError(f"{type(self).__name__}.infer_outputs returned no outputs")
        self._output_types = types
        operands = [operand(i) for i in self._user_inputs]
        # a sequence input's lengths go in too: forward is given its sequences one by one
        lengths = [v.sequence_lengths for v in operands if v.sequence_lengths is not None]
        outs = F.cntk_user_function(*operands, *lengths, function=_Call(self, operands))
        outs = list(outs) if isinstance(outs, tuple) else [outs]
        # as CNTK 2.7: one function ``UserFunction`` (uid ``UserDefinedFunction<n>``) of
        # unnamed outputs, the name its own (``find_by_name`` finds it; the composite
        # ``user_function`` gives and the ops reading its outputs show none)
        G.set_uid(outs[0], G.new_uid("UserDefinedFunction"))
        G.mark_outputs(outs, "UserFunction")
        G.FUNCTION_NAMES[outs[0]] = name
        self._call_outputs = outs       # (what a clone of a graph holding it takes)
        Function.__init__(self, outs[0], outs if len(outs) > 1 else None, view="op")

    @property
    def op_name(self) -> str:
        """``module.class`` of the subclass, as CNTK 2.7's (the op name a saved model keeps);
        the graph shows the function as ``UserFunction``."""
        return f"{type(self).__module__}.{type(self).__name__}"

    def __repr__(self) -> str:
        """As CNTK 2.7's: ``UserFunction: Input('x', [#], [2]) -> Output(...)``."""
        return repr(Function(self.variable, self.members, view="op"))

    @property
    def name(self) -> str:
        """The name given to ``__init__`` (also before its op is built: one over a waiting
        input, whose ``clone`` reads it as a call makes the function again)."""
        if not self.__dict__.get("_built"):
            return self._user_name
        return Function.name.fget(self)

    @name.setter
    def name(self, value: str) -> None:
        Function.name.fset(self, value)

    @property
    def inputs(self) -> list:
        """The inputs given to ``__init__``."""
        return list(self._user_inputs)

    def infer_outputs(self) -> list:
        """The output's shape and type (``[output_variable(...)]``); override it."""
        raise NotImplementedError("UserFunction.infer_outputs: return [output_variable(...)]")

    def clone(self, cloned_inputs):
        """A copy of this function over ``cloned_inputs`` (its inputs in the clone of a graph
        holding it: ``Function.clone``), as CNTK 2.7's default: ``type(self)(*cloned_inputs,
        name=self.name)``; override it where ``__init__`` takes other arguments.  What it
        raises, or a result that is no ``UserFunction``, makes the graph's ``clone`` raise
        CNTK's ``RuntimeError``.

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> class Scaled(C.ops.functions.UserFunction):
            ...     def __init__(self, arg, k=2.0, name="Scaled"):
            ...         super().__init__([arg], name=name)
            ...         self.k = k
            ...     def forward(self, argument, device=None, outputs_to_retain=None):
            ...         return None, argument * self.k
            ...     def backward(self, state, root_gradients):
            ...         return root_gradients * self.k
            ...     def infer_outputs(self):
            ...         x = self.inputs[0]
            ...         return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]
            ...     def clone(self, cloned_inputs):
            ...         return Scaled(cloned_inputs[0], self.k * 10, name=self.name)
            >>> x, y = C.input_variable(2), C.input_variable(2)
            >>> f = C.user_function(Scaled(x, 3.0))
            >>> f.clone(C.CloneMethod.freeze, {x: y}).eval({y: np.ones((1, 2), np.float32)})
            array([[30., 30.]], dtype=float32)
        """
        return self.__class__(*cloned_inputs, name=self.name)

    def serialize(self) -> dict:
        """The state a model file keeps (plain values): override it when the function has
        any; ``deserialize`` is given it back.  A saved model holds the class's module and
        name, the function's name and this state, as CNTK 2.7's does."""
        return {}

    @staticmethod
    def deserialize(inputs, name, state):
        """Rebuild the function from its ``inputs``, ``name`` and ``serialize()`` state when
        a model file is loaded; override it (as a staticmethod) to load such models.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> class Twice(C.ops.functions.UserFunction):
            ...     def __init__(self, a, name="Twice"):
            ...         super().__init__([a], name=name)
            ...     @staticmethod
            ...     def deserialize(inputs, name, state):
            ...         return Twice(inputs[0], name=name)
        """
        raise NotImplementedError("UserFunction.deserialize: rebuild the function from "
                                  "(inputs, name, state) to load models holding it")


def _padded(sequences, like: np.ndarray) -> np.ndarray:
    """Per-sequence arrays (a list) as one array of ``like``'s (batch, steps) axes, zeros
    past each sequence's end; an array given whole is taken as it is."""
    if not isinstance(sequences, (list, tuple)):
        return np.asarray(sequences, dtype=np.float32)
    out = np.zeros(like.shape[:2] + np.shape(sequences[0])[1:], np.float32)
    for b, seq in enumerate(sequences):
        seq = np.asarray(seq, dtype=np.float32)
        out[b, :len(seq)] = seq
    return out


def _split(array: np.ndarray, lengths: np.ndarray) -> list:
    """A padded array of sequences as the list of them (CNTK 2.7 gives ``forward`` and
    ``backward`` a sequence input's and output's values so)."""
    return [array[b, :int(n)] for b, n in enumerate(lengths)]


class _Call:
    """A UserFunction as the ``cntk_user_function`` op calls it (NumPy in and out): the op's
    inputs are the function's, then the lengths of those that are sequences."""

    def __init__(self, function: UserFunction, operands: list):
        self.function = function
        self.n_inputs = len(operands)
        self.sequence_inputs = [k for k, v in enumerate(operands)
                                if v.sequence_lengths is not None]
        self.batched = [k for k, v in enumerate(operands) if G.BATCH(v)]
        self.axis_inputs = [self._axis_input(t.variable, operands)
                            for t in function._output_types]

    def cloned(self, inputs: list) -> "_Call":
        """This call for the clone of a graph, over its cloned ``inputs`` (the sequences'
        lengths after the function's own): that of the function's ``clone(cloned_inputs)``,
        built (its :attr:`outputs` the clone's), as CNTK 2.7's clone asks it through its SWIG
        director, whose ``RuntimeError`` stands for what it raised or for a result of another
        type."""
        new = _made_again(self.function, [wrap(v) for v in inputs[:self.n_inputs]])
        new._build()
        return new._call_outputs[0].parent.kwargs["function"]

    @property
    def outputs(self) -> list:
        """The op's outputs (Stadyn Variables), as the function built them."""
        return list(self.function._call_outputs)

    def _axis_input(self, declared, operands: list):
        """The input whose sequence axis an output declared on a sequence axis has (the first
        sequence input on the same named axis, else the first); None for another output."""
        if declared.sequence_lengths is None or not self.sequence_inputs:
            return None
        axis = G.SEQUENCE_AXES.get(declared.sequence_lengths)
        same = [k for k in self.sequence_inputs
                if G.SEQUENCE_AXES.get(operands[k].sequence_lengths) is axis or
                getattr(G.SEQUENCE_AXES.get(operands[k].sequence_lengths), "name", None) ==
                getattr(axis, "name", None)]
        return (same or self.sequence_inputs)[0]

    def sequence_forms(self) -> list:
        """Each output's sequence axis (the op's ``sequence`` rule): its input's, or none."""
        return ["drop" if k is None else f"of:{k}" for k in self.axis_inputs]

    def output_shape(self, input_shapes):
        import torch
        found = []
        for t, k in zip(self.function._output_types, self.axis_inputs):
            v = t.variable
            shape = tuple(v.shape)
            if k is not None:                   # (batch, steps) of its sequence input
                shape = tuple(input_shapes[k][:2]) + shape[2:]
            elif G.BATCH(v) and self.batched:   # the batch of the first input with one
                shape = (input_shapes[self.batched[0]][0],) + shape[1:]
            found.append((shape, torch.float32 if np.dtype(v.dtype) == np.float32 else
                          torch.float64))
        return found if len(found) > 1 else found[0]

    def saved_form(self) -> dict:
        """What a model file keeps of the function: its class's module and name, its op name
        (``module.class``, CNTK 2.7's default), its name and its ``serialize()`` state; for
        Stadyn's file, also which inputs carry the batch axis (the rebuild's
        ``infer_outputs`` sees their sample shapes, as when it was built)."""
        f = self.function
        cls = type(f)
        return {"module": cls.__module__, "class": cls.__name__,
                "op_name": f"{cls.__module__}.{cls.__name__}", "name": f._user_name,
                "state": f.serialize(), "inputs": self.n_inputs,
                "batched": [k in self.batched for k in range(self.n_inputs)]}

    def _output(self, out, k: int, arrays: list, lengths: dict) -> np.ndarray:
        t = self.function._output_types[k]
        n = self.axis_inputs[k]
        out = arrays_of(out)
        return _batched(out, t) if n is None else _padded(out, arrays[n])

    def forward_arrays(self, arrays, for_backward: bool = False):
        f = self.function
        lengths = dict(zip(self.sequence_inputs, arrays[self.n_inputs:]))
        arrays = list(arrays[:self.n_inputs])
        given = [_split(a, lengths[k]) if k in lengths else a for k, a in enumerate(arrays)]
        if not f.as_numpy:          # CNTK 2.7 hands such a function its Values (SWIG's)
            given = [HandedValue.of(a) for a in given]
        args = given[0] if len(given) == 1 else given
        # CNTK 2.7's outputs_to_retain: the outputs whose state a backward pass will need
        # (none when evaluating); CNTK's object-detection ProposalLayer reads it
        retain = list(f.outputs) if for_backward else []
        kept = (arrays, lengths)
        if len(f._output_types) == 1:
            state, out = f.forward(args, cpu(), retain)
            return (state, kept), self._output(out, 0, arrays, lengths)
        outputs = {o: None for o in f.outputs}
        state = f.forward(args, outputs, cpu(), retain)
        missing = [o for o in f.outputs if outputs.get(o) is None]
        if missing:
            raise ValueError(f"{type(f).__name__}.forward: not all outputs have been provided "
                             f"(missing {len(missing)} of {len(outputs)})")
        return (state, kept), [self._output(outputs[o], k, arrays, lengths)
                               for k, o in enumerate(f.outputs)]

    def backward_arrays(self, state, gradient):
        f = self.function
        state, (arrays, lengths) = state
        several = isinstance(gradient, list)
        gradients = [g if n is None else _split(g, lengths[n]) for g, n in
                     zip(gradient if several else [gradient], self.axis_inputs)]
        if not f.as_numpy:
            gradients = [HandedValue.of(g) for g in gradients]
        if several:                             # several outputs: those that need a gradient
            roots = {o: g for o, g, t in zip(f.outputs, gradients, f._output_types)
                     if t.needs_gradient}
            gradient = next(iter(roots.values())) if len(roots) == 1 else roots
        else:
            gradient = gradients[0]
        params = inspect.signature(f.backward).parameters
        if len(f._user_inputs) == 1 and len(params) < 3:
            found = [f.backward(state, gradient)]
        else:
            variables = {i: None for i in f._user_inputs}
            f.backward(state, gradient, variables)
            found = [variables[i] for i in f._user_inputs]
        found = [g if g is None else arrays_of(g) for g in found]
        found = [g if g is None or k not in lengths else _padded(g, arrays[k])
                 for k, g in enumerate(found)]
        found = [g if g is None else np.asarray(g) for g in found]
        return found + [None] * len(lengths)


def _batched(out, output_type) -> np.ndarray:
    """An output array as the op gives it: with the batch axis, which an array of only the
    sample's axes (one sample, as CNTK 2.7 takes it) lacks."""
    out = np.asarray(out, dtype=np.float32)
    v = output_type.variable
    if G.BATCH(v) and out.ndim == len(v.shape) - 1:
        out = out[None]
    return out


def _user_function(user_func: UserFunction) -> Function:
    """The Function of a :class:`UserFunction` instance (of all its outputs).  Over a
    placeholder that waits for its shape (one made without, or one with a shape not on a
    sequence axis: Stadyn's placeholders wait until bound) or another waiting Function, the
    op waits too, as the deferrable ops do (``_deferrable``), and is built over what binds
    them (``as_block``, ``replace_placeholders``, a call), its ``infer_outputs`` asked then
    as CNTK 2.7 asks it again as it validates the graph bound.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> class Twice(C.ops.functions.UserFunction):
        ...     def __init__(self, arg, name="Twice"):
        ...         super().__init__([arg], name=name)
        ...     def forward(self, argument, device=None, outputs_to_retain=None):
        ...         return None, 2 * argument
        ...     def backward(self, state, root_gradients):
        ...         return 2 * root_gradients
        ...     def infer_outputs(self):
        ...         x = self.inputs[0]
        ...         return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]
        >>> p, x = C.placeholder(2, name="p"), C.input_variable(2)
        >>> f = C.user_function(Twice(p))
        >>> f(x).eval({x: np.ones((1, 2), np.float32)})
        array([[2., 2.]], dtype=float32)
    """
    user_func = as_cloned(user_func, _made_again)     # (in a @C.Function's call: a clone)
    inputs = tuple(user_func._user_inputs)
    if waits(inputs, {}, layers=False):
        def user_function(*bound):
            """The op built again over ``bound`` (what the placeholders were bound to): in a
            call or a clone, by the function's ``clone(bound)`` (CNTK 2.7's call clones)."""
            if cloning():
                return _user_function(_made_again(user_func, list(bound)))
            user_func._user_inputs = list(bound)
            user_func.__dict__.pop("_built", None)
            return _user_function(user_func)
        return Waiting(user_function, inputs, {}, name="")
    user_func._build()
    return Function(user_func.variable, user_func.members)


def _made_again(f: UserFunction, inputs: list) -> UserFunction:
    """``f.clone(inputs)``, as CNTK 2.7's clone asks it through its SWIG director, whose
    ``RuntimeError`` stands for what it raised or for a result that is no UserFunction."""
    try:
        new = f.clone(inputs)
    except Exception as error:
        raise RuntimeError(
            f"SWIG director method error. ({type(f).__name__}.clone(cloned_inputs) raised "
            f"{type(error).__name__}: {error} -- CNTK 2.7's clone of a graph makes each "
            "user function again by its clone, whose default calls type(self)("
            "*cloned_inputs, name=self.name): override clone where __init__ takes other "
            "arguments)") from error
    if not isinstance(new, UserFunction):
        raise RuntimeError(
            "SWIG director type mismatch in output value of type 'CNTK::FunctionPtr' "
            f"({type(f).__name__}.clone(cloned_inputs) gave a {type(new).__name__}, not a "
            "UserFunction)")
    return new


def _rebuilt(form: dict, inputs: list) -> _Call:
    """A saved user function back (a model file's ``cntk_user_function`` node): its module
    imported, its class's ``deserialize(inputs, name, state)``, as CNTK 2.7 loads one."""
    op_name = form.get("op_name") or f"{form['module']}.{form['class']}"
    factory = Function._udf_callback_map.get(op_name)  # register_udf_deserialize_callback's
    if factory is None:
        module = importlib.import_module(form["module"])
        factory = getattr(module, form["class"]).deserialize
    inputs = inputs[:form.get("inputs", len(inputs))]      # (not the sequences' lengths)
    # a file's inputs are marked batched once it is loaded: those the file gives the batch
    # axis (a sequence input; each the CNTK reader says is batched) are marked now, so that
    # infer_outputs sees CNTK's sample shape and dynamic axes
    batched = form.get("batched") or [False] * len(inputs)
    for v, on_batch in zip(inputs, batched):
        if on_batch or (v.parent is None and v.sequence_lengths is not None):
            G.BATCH.add(v)
    f = factory([wrap(i) for i in inputs], form.get("name", ""), form.get("state") or {})
    if not isinstance(f, UserFunction):
        raise TypeError(f"{form['class']}.deserialize gave a {type(f).__name__}, "
                        "not a UserFunction")
    f._build()          # its outputs (forward fills them by self.outputs), as user_function
    return _Call(f, [operand(i) for i in f._user_inputs])


register_user_function_loader(_rebuilt)
