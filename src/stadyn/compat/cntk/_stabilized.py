"""CNTK's recurrent steps with ``enable_self_stabilization``: the step's previous output ``dh``
goes through a ``Stabilizer`` (a learned scalar, 1 at the start) before the step uses it.

In CNTK 2.7 the LSTM uses the stabilised ``dh`` wherever it reads ``dh`` (and a stabilised
``dc`` only in its peepholes); the GRU and the plain step read ``dh`` only stabilised.  So a
stabilised step is Stadyn's step applied to ``(Stabilizer(dh), ...)``; it runs step by step
(not as the fused LSTM kernel).
"""

from __future__ import annotations

from typing import Any

from ... import layers as _L
from ..._errors import StadynError

__all__ = ["StabilizedStep", "step_layer"]


class StabilizedStep:
    """``step(Stabilizer(dh), *other states, x)`` with the stabiliser's ``alpha`` among the
    parameters (named as CNTK names it: ``alpha`` of ``dh_stabilizer``).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.layers as L
        >>> x = sd.sequence.input_variable(2)
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = L.Recurrence(StabilizedStep(L.GRU(3)))(x)
        ...     names = sorted(p.name for p in sd.get_parameters().values())
        >>> y.shape[-1], names[0]
        (3, 'recurrence/dh_stabilizer/alpha')
    """

    def __init__(self, step: Any):
        self.step = step
        self.stabilizer = _L.Stabilizer(enable_self_stabilization=True, name="dh_stabilizer")

    @property
    def state_shapes(self) -> list:
        return self.step.state_shapes

    @property
    def parameters(self) -> list:
        return list(self.stabilizer.parameters) + list(self.step.parameters)

    def __call__(self, dh, *rest):
        return self.step(self.stabilizer(dh), *rest)


def step_layer(cls, args: tuple, kwargs: dict) -> Any:
    """Stadyn's ``cls`` step (``LSTM``, ``GRU``, ``RNNStep``) made from CNTK's arguments, wrapped
    in a :class:`StabilizedStep` when ``enable_self_stabilization`` is on (given or by
    ``default_options``)."""
    kind = cls.__name__
    names = ["shape", "cell_shape", "activation"] + (["use_peepholes"] if kind == "LSTM" else []) \
        + ["init", "init_bias", "enable_self_stabilization"]
    given = dict(zip(names, args))
    given.update(kwargs)
    stabilize = _L.resolve(kind, "enable_self_stabilization",
                           given.pop("enable_self_stabilization",
                                     _L.default_override_or(False)))
    if not stabilize:
        return cls(**given, enable_self_stabilization=False)
    if kind == "LSTM" and _L.resolve(kind, "use_peepholes",
                                     given.get("use_peepholes", _L.default_override_or(False))):
        raise StadynError("LSTM: use_peepholes with enable_self_stabilization is not supported "
                          "yet (CNTK stabilises the peepholes' cell values apart)")
    return StabilizedStep(cls(**given, enable_self_stabilization=False))
