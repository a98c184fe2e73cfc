"""NNabla's ``GraphConverter`` and ``FunctionModifier``: rebuild a graph function by function.

``GraphConverter(modifiers).convert(y)`` walks the functions ``y`` depends on in forward order
once per modifier and builds a new graph: each function is handed to the modifier's
``modify(f, inputs)`` with ``inputs`` its inputs in the new graph; what ``modify`` returns (a
Variable) stands for the function's output from then on, and ``None`` rebuilds the function as
it was (same type, same ``info.args``) on the new inputs.  The original graph is left as it is;
parameters are shared unless a modifier makes new ones.

A modifier finds the functions that read a Variable as NNabla's do: ``v.function_references``
(every function alive that reads ``v``, the newest first -- not only those of the graph being
converted).
"""

from __future__ import annotations

import inspect
from typing import Any

from ... import _variable, functions as _F
from ..._parameter import get_parameters
from ..._shared_arrays import same_variable
from ._function_table import function_of

__all__ = ["FunctionModifier", "GraphConverter"]

# info.args names of NNabla's function classes -> the F functions' keywords
_RENAMED = {"axes": "axis", "keep_dims": "keepdims"}


class FunctionModifier:
    """The base class of modifiers: override :meth:`modify`.

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> class ReLUToLeakyReLU(GC.FunctionModifier):
        ...     def modify(self, f, inputs):
        ...         if f.info.type_name == "ReLU":
        ...             return F.leaky_relu(inputs[0])
        >>> x = nn.Variable.from_numpy_array(np.array([-2.0, 3.0]))
        >>> y = GC.GraphConverter([ReLUToLeakyReLU()]).convert(F.relu(x * 1.0))
        >>> y.forward(); y.d.tolist(), y.parent.info.type_name
        ([-0.20000000298023224, 3.0], 'LeakyReLU')
    """

    def __init__(self):
        self._map_func_inputs: dict = {}
        self.outputs: list = []

    # -- what a subclass uses ------------------------------------------------------------------
    def modify(self, f, inputs):
        """The new output of ``f`` given its new ``inputs`` (a Variable), or ``None`` to
        rebuild ``f`` unchanged on them."""
        return None

    def init_map_func_inputs(self, f, inputs) -> None:
        """Make ``inputs`` the new inputs ``f`` will be handed."""
        self._map_func_inputs[f] = list(inputs)

    def get_parameter_scope(self, v) -> str:
        """The scope of the registered parameter ``v`` is (or shares its value with): its name
        less the last part; ``''`` when it is none of ``nn.get_parameters()`` (as in NNabla
        1.39, only the parameters that need a gradient are looked at)."""
        for name, p in get_parameters().items():
            if same_variable(p, v):
                return "/".join(name.split("/")[:-1])
        return ""

    def __finish__(self) -> None:
        """Called once a conversion is over: reset a subclass's state here."""

    def finish_up(self) -> None:
        """Forget this conversion's mapping, then call :meth:`__finish__`."""
        self._map_func_inputs = {}
        self.__finish__()

    # -- the walk ------------------------------------------------------------------------------
    def _start(self) -> None:
        """Called before the first function of each conversion."""

    def _call_function(self, type_name: str, inputs, args: dict):
        """The function of NNabla type ``type_name`` applied to ``inputs`` with ``args`` (its
        ``info.args``: the reductions' ``axes`` / ``keep_dims`` are ``F``'s ``axis`` /
        ``keepdims``; a flag ``F`` lacks is left out when off, NNabla's default)."""
        fn = function_of(type_name)
        accepted = inspect.signature(fn).parameters
        kwargs = {}
        for k, v in args.items():
            if k in accepted:
                kwargs[k] = v
            elif _RENAMED.get(k) in accepted:
                kwargs[_RENAMED[k]] = v
            elif v not in (False, None):
                raise ValueError(f"{type(self).__name__}: cannot rebuild {type_name} with "
                                 f"{k}={v!r}: nnabla.functions.{fn.__name__} takes no {k}")
        try:
            inspect.signature(fn).bind(*inputs, **kwargs)
        except TypeError:
            needed = sum(1 for p in accepted.values() if p.default is p.empty
                         and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
            raise RuntimeError(f"{type(self).__name__}: {type_name} needs at least {needed} "
                               f"inputs (given {len(inputs)})") from None
        return fn(*inputs, **kwargs)

    def _modify_as_same(self, f, inputs):
        return self._call_function(f.info.type_name, inputs, f.info.args)

    def __call__(self, f) -> None:
        # NNabla's bookkeeping, list for list: a function reading a leaf first and not yet
        # mapped reads unlinked copies of its inputs; a slot no function filled keeps the
        # original input; a consumer's list is made when the first of its inputs is mapped.
        inputs = self._map_func_inputs.get(f)
        if inputs is None:
            inputs = self._map_func_inputs[f] = (
                [v.get_unlinked_variable(need_grad=v.need_grad) for v in f.inputs]
                if not f.inputs[0].parent else [])
        if len(f.inputs) > 1:
            for i in range(len(inputs)):
                if inputs[i] is None:
                    inputs[i] = f.inputs[i]
        out = self.modify(f, inputs)
        if out is None:
            out = self._modify_as_same(f, inputs)
        if not isinstance(out, _variable.Variable):
            raise ValueError(f"{type(self).__name__}.modify of {f.info.type_name}: return "
                             f"None or an nn.Variable, not {type(out).__name__}")
        self.outputs = [out]
        for old, new in zip(f.outputs, self.outputs):
            readers = old.function_references
            if not readers:
                return
            for g in readers:
                slots = self._map_func_inputs.setdefault(g, [])
                if not slots:
                    slots[:] = [None] * len(g.inputs)
                for i, v in enumerate(g.inputs):
                    if same_variable(v, old):
                        slots[i] = new      # (an IndexError past a short list, as NNabla's)


class GraphConverter:
    """Convert the graph of ``y`` with ``modifiers`` (a list; nested lists are flattened), one
    modifier after the other.

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> x = nn.Variable.from_numpy_array(np.array([-1.0, 2.0]))
        >>> y = F.relu(x * 2.0) + 1.0
        >>> z = GC.GraphConverter([GC.RemoveFunctionModifier(["ReLU"])]).convert(y)
        >>> z.forward(); z.d.tolist()
        [-1.0, 5.0]
    """

    def __init__(self, modifiers=()):
        self._modifiers = _flattened(modifiers)

    def convert(self, o):
        """The converted output(s): one Variable, or a list for a list ``o``."""
        outputs = list(o) if isinstance(o, (list, tuple)) else [o]
        for modifier in self._modifiers:
            sink = _F.sink(*outputs)
            nodes = []
            sink.visit(nodes.append)
            modifier._start()
            for node in nodes:
                modifier(node)
            outputs = list(modifier.outputs[0].parent.inputs)
            modifier.finish_up()
        return outputs if isinstance(o, list) else outputs[0]


def _flattened(modifiers) -> list:
    out: list[Any] = []
    for m in modifiers:
        out += _flattened(m) if isinstance(m, (list, tuple)) else [m]
    return out
