"""The composite ``Sequential`` and ``>>`` make of CNTK layers, ops and Python functions
(:class:`Composite`: its steps applied one after another on CNTK values, a tuple's members
to the same values), and that composite seen as a Stadyn layer (:class:`CompositeLayer`),
which ``_layers_function.LayerFunction`` holds for a ``Sequential``.

Example:
    >>> import stadyn.compat.cntk as C
    >>> s = C.layers.Sequential([C.layers.Dense(3), C.relu])
    >>> type(s.layer).__name__, len(s.layer.composite.steps)
    ('CompositeLayer', 2)
"""

from __future__ import annotations

from typing import Callable

from . import _graph as G
from ._adapt import unwrap, wrap

__all__ = ["Composite", "CompositeLayer", "flatten_steps"]


class Composite:
    """Functions applied one after another on CNTK values (the native layers are reached through
    their LayerFunctions); a tuple applies its members to the same values.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> twice = Composite([C.relu, lambda v: v * 2.0])
        >>> x = C.input_variable(2)
        >>> twice(x).eval({x: np.array([[-1.0, 3.0]], np.float32)}).tolist()
        [[0.0, 6.0]]
    """

    def __init__(self, steps: list):
        self.steps = steps

    def __call__(self, *args):
        values = args
        for step in self.steps:
            if isinstance(step, tuple):
                # (one member per output: of one Function of several, or of the values a
                # full state passed on, e.g. CNTK's 204 `(Label('encoded_h'), Label(...))`)
                outputs = getattr(values[0], "outputs", ()) if len(values) == 1 else values
                if len(outputs) == len(step) > 1:
                    values = tuple(member(v) for member, v in zip(step, outputs))
                else:
                    values = tuple(_applied(member, values) for member in step)
            else:       # (a Function of several outputs passes each on, as CNTK 2.7's
                out = _applied(step, values)        # ``>>``: a full state's h and c)
                outputs = () if isinstance(out, tuple) else getattr(out, "outputs", ())
                values = out if isinstance(out, tuple) else \
                    tuple(outputs) if len(outputs) > 1 else (out,)
        return values[0] if len(values) == 1 else values

    @property
    def parameters(self) -> list:
        """The steps' learnable parameters in CNTK 2.7's order (its walk from the output): the
        last step's first; a batch normalisation's running statistics are constants."""
        out = []
        for step in reversed(self.steps):
            for member in (step if isinstance(step, tuple) else (step,)):
                if getattr(member, "_typed", False) is None and \
                        member.__dict__.get("_parameters") is None:
                    continue    # (a @C.Function without types, never applied: none yet)
                applied = getattr(type(member), "_applied_parameters", None)   # (a layer's)
                found = applied(member) if applied is not None else \
                    getattr(member, "parameters", [])
                for p in found or []:
                    if G.kind_of(unwrap(p)) == "parameter":
                        out.append(unwrap(p))
        return out


def _applied(fn: Callable, values: tuple):
    return fn(*values)


def flatten_steps(items) -> list:
    """``Sequential``'s steps with the lists nested in them flattened (a tuple stays one step).

    Example:
        >>> flatten_steps([1, [2, [3]], (4, 5)])
        [1, 2, 3, (4, 5)]
    """
    out = []
    for item in items:
        if isinstance(item, list):
            out.extend(flatten_steps(item))
        else:
            out.append(item)
    return out


class CompositeLayer:
    """A composite on CNTK values seen from a LayerFunction (which works on Stadyn values): it
    wraps the values it is given and unwraps what the composite gives back.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> layer = CompositeLayer(Composite([C.layers.Dense(2)]))
        >>> layer(C.input_variable(3).variable).shape[1:], len(layer.parameters)
        ((2,), 2)
    """

    def __init__(self, composite: Composite):
        self.composite = composite

    def __call__(self, *values):
        out = self.composite(*[wrap(v) for v in values])
        return unwrap(out)

    @property
    def parameters(self) -> list:
        return self.composite.parameters
