"""The op catalog: ``@op`` turns a torch implementation into a declared op and its ``F`` function.

Example:
    >>> import torch
    >>> from stadyn.ops import CATALOG
    >>> spec = CATALOG["leaky_relu"]
    >>> spec.inputs, spec.attrs
    (('x',), {'alpha': 0.1, 'inplace': False, 'rule': 'torch'})
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from ..graph import OpSpec, apply
from ._half_elementwise import wrap_impl
from ._shape_rules import rule_for

__all__ = ["CATALOG", "op", "get_spec", "function_of"]

CATALOG: dict[str, OpSpec] = {}
_FUNCTIONS: dict[str, Callable[..., Any]] = {}


def op(n_inputs: int | None = None, *, category: str, name: str | None = None,
       shape: Callable[..., Any] | None = None, traceable: bool = True, precision: str = "any",
       unstorable: str = "", frameworks: tuple[str, ...] = (), sequence: Any = "keep",
       value_shape: str = "", state: Callable[[], Any] | None = None,
       elementwise: bool = False, forwards_inputs: bool = False,
       seeds_inputs: Callable[[dict], bool] | None = None,
       keeps_input_dtype: Callable[[dict], bool] | None = None,
       computes_in_half: Callable[[dict], bool] | None = None,
       nnabla_half: Any = None):
    """Declare an op from its torch implementation (see :class:`stadyn.graph.OpSpec`).

    The decorated function's first ``n_inputs`` parameters are the tensor inputs (or ``*x`` for a
    variadic op); the rest are attributes.  Returns the user-facing function, which builds a
    graph node (static mode) or runs at once (dynamic mode).  ``unstorable`` says why a model
    file cannot hold the op (see :class:`stadyn.graph.OpSpec`); ``frameworks`` names the front
    ends whose API has it (default: all; ``("cntk",)`` keeps it out of NNabla's ``F``);
    ``sequence`` how its outputs relate to the sequence axis (default ``"keep"``: an output
    whose first two axes are an input's keeps that input's axis; ``"drop"``, ``"of:x"``,
    ``"lengths:lengths"``, ``"lengths:output1"``, a tuple per output or a rule -- see
    :func:`stadyn.graph._sequence.propagate` and ``ops/_sequence_axis.py``); ``value_shape``
    what among the inputs' values the output shape depends on (the op then runs eagerly in a
    static graph; ``shape`` gives its provisional shape); ``shape`` may also name a rule of
    ``ops/_shape_rules.py`` (``"elementwise"``, ``"reduce"``, ``"same"``), which infers the outputs
    without running the implementation on meta tensors, as ``elementwise=True`` does
    (broadcast shapes), or ``"meta"``: none, meta inference; ``state`` a factory of the state
    each node keeps from run to run, passed to the implementation as ``state=``;
    ``elementwise`` marks an op of broadcast inputs computed element by element;
    ``forwards_inputs`` an op whose output's forward runs its inputs as roots too (``sink``);
    ``seeds_inputs`` when a backward from its output starts from its inputs' gradients too
    (``sink(one_input_grad=False)``); ``keeps_input_dtype`` when its output is its input's
    array, which keeps a half input's dtype in a float context (``identity``, ``reshape``);
    ``computes_in_half`` when an op declared ``"float"`` computes in the half type in a node
    bound to a half context (``sum``/``mean`` with ``rule="nnabla"``); ``nnabla_half`` an
    element-wise op's :class:`._half_elementwise.HalfFormula`, NNabla 1.39's expressions of
    it in ``Half``, which float16 CPU inputs compute by in a node bound to a float16 context
    (an NNabla function made in ``cpu:half``: ``OpSpec.half_formula``,
    ``ops/_half_elementwise.py``).  How
    the op is written to file formats (ONNX) is registered against its spec in
    ``stadyn.serialize``'s op rules, not here.
    """
    def declare(impl: Callable[..., Any]) -> Callable[..., Any]:
        if nnabla_half is not None:
            impl = wrap_impl(impl, n_inputs, nnabla_half)
        named = isinstance(shape, str)
        spec = OpSpec.from_function(impl, n_inputs, name=name, category=category,
                                    shape=None if named else shape,
                                    traceable=traceable, precision=precision,
                                    unstorable=unstorable, frameworks=frameworks,
                                    sequence=sequence, value_shape=value_shape, state=state,
                                    elementwise=elementwise,
                                    forwards_inputs=forwards_inputs,
                                    seeds_inputs=seeds_inputs,
                                    keeps_input_dtype=keeps_input_dtype,
                                    computes_in_half=computes_in_half)
        # the rule probes the op's implementation as it is when it runs (a replaced
        # ``spec.impl`` -- a kernel whose import fails -- is the one probed and then raising)
        spec.half_formula = nnabla_half is not None
        spec.rule = rule_for(lambda *a, **k: spec.impl(*a, **k), shape, elementwise)
        if spec.name in CATALOG:
            raise ValueError(f"op {spec.name!r} declared twice")
        CATALOG[spec.name] = spec

        def function(*args, **kwargs):
            return apply(spec, args, kwargs)

        functools.update_wrapper(function, impl)
        function.spec = spec  # type: ignore[attr-defined]
        _FUNCTIONS[spec.name] = function
        return function
    return declare


def get_spec(name: str) -> OpSpec:
    """The declaration of the op called ``name``; the error lists close names."""
    try:
        return CATALOG[name]
    except KeyError:
        import difflib
        close = difflib.get_close_matches(name, list(CATALOG), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"no op named {name!r} in the catalog{hint}") from None


def function_of(name: str) -> Callable[..., Any]:
    """The ``F`` function of the op called ``name``."""
    get_spec(name)
    return _FUNCTIONS[name]
