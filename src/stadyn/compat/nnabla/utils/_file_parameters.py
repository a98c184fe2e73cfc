"""The parameters NNabla 1.39's loaders give a network when they do not take the file's values:
``load(..., exclude_parameter=True)`` and the parameters a ``.nnp`` names but does not hold
(both ``load`` and ``NnpLoader``).

NNabla builds each network by calling ``get_parameter_or_create(name, shape, initializer)`` for
every parameter a function reads, in the order the networks and their functions come: a
parameter the scope holds is used (a shape other than the file's is a ``ValueError``), any other
is made from the initializer the file declares for it (``initializer { type: ... multiplier:
... }``), drawn from one ``RandomState`` shared by the whole load (``RandomState(0)`` for
``load``), or zeros where the file declares none.  :func:`scope_parameters` does the same over a
:class:`stadyn.ParameterRegistry`.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from ....graph import Variable
from ....parametric import ParameterRegistry
from ....serialize import LegacyModel, LegacyParameter

__all__ = ["initial_value", "declared_parameters", "scope_parameters"]


def _he_forward(inmaps: int, outmaps: int, kernel: Any) -> float:
    return float(np.sqrt(2.0 / (np.prod(kernel) * inmaps)))


def _he_backward(inmaps: int, outmaps: int, kernel: Any) -> float:
    return float(np.sqrt(2.0 / (np.prod(kernel) * outmaps)))


def _glorot(inmaps: int, outmaps: int, kernel: Any) -> float:
    return float(np.sqrt(2.0 / (np.prod(kernel) * (inmaps + outmaps))))


def _maps(layout: str, shape: tuple) -> tuple:
    """(inmaps, outmaps, kernel) of a parameter of ``shape`` as NNabla's file initializers read
    it: an affine ``(in, *out)``, a convolution ``(out, in, *kernel)``, a channel-last one
    ``(out, *kernel, in)``."""
    if layout == "Affine":
        return shape[0], int(np.prod(shape[1:])), (1, 1)
    if layout == "Convolution":
        return shape[-3], shape[0], tuple(shape[-2:])
    return shape[-1], shape[0], tuple(shape[1:3])


_STD = {"He": _he_forward, "HeForward": _he_forward, "HeBackward": _he_backward,
        "Glorot": _glorot}


def initial_value(initializer: dict | None, shape: tuple, rng: np.random.RandomState,
                  where: str = "") -> np.ndarray:
    """The value NNabla's loader gives a parameter of ``shape`` whose file declares
    ``initializer`` (``{"type": ..., "multiplier": ...}``, or None: zeros), drawn from ``rng``.

    Example:
        >>> import numpy as np
        >>> v = initial_value({"type": "Uniform", "multiplier": 0.5}, (2,),
        ...                   np.random.RandomState(0))
        >>> [round(float(a), 4) for a in v]
        [0.0488, 0.2152]
        >>> initial_value(None, (2,), None).tolist()
        [0.0, 0.0]
    """
    shape = tuple(int(d) for d in shape)
    if not initializer:
        return np.zeros(shape, np.float32)
    kind = str(initializer.get("type", ""))
    m = float(initializer.get("multiplier") or 0.0)
    if kind == "Normal":
        value = rng.randn(*shape) * m
    elif kind == "Uniform":
        value = rng.uniform(-m, m, size=shape)
    elif kind == "Constant":
        value = np.full(shape, m)
    elif kind == "Range":
        value = np.broadcast_to(np.arange(shape[-1], dtype=np.float64), shape) * m
    elif kind in ("UniformAffineGlorot", "UniformConvolutionGlorot", "UniformCLConvGlorot"):
        inmaps, outmaps, kernel = _maps(kind[len("Uniform"):-len("Glorot")], shape)
        lim = float(np.sqrt(6.0 / (np.prod(kernel) * (inmaps + outmaps))))
        value = rng.uniform(-lim, lim, size=shape) * m
    else:
        for layout in ("Affine", "Convolution", "CLConv"):
            std = _STD.get(kind[len("Normal" + layout):]) if kind.startswith(
                "Normal" + layout) else None
            if std is not None:
                value = rng.randn(*shape) * std(*_maps(layout, shape)) * m
                break
        else:       # NNabla makes such a parameter as if no initializer were given
            return np.zeros(shape, np.float32)
    return np.asarray(value, np.float32)


def declared_parameters(model: LegacyModel) -> "OrderedDict[str, tuple[tuple, dict | None]]":
    """Every parameter the functions of ``model``'s networks read, in the order NNabla's loader
    asks for them (network by network, function by function, input by input): name ->
    (shape, the file's initializer or None)."""
    found: "OrderedDict[str, tuple[tuple, dict | None]]" = OrderedDict()
    for network in model.networks.values():
        for f in network.all_functions():
            for name in f.inputs:
                v = network.variables.get(name)
                if v is not None and v.kind == "parameter" and name not in found:
                    found[name] = (tuple(v.shape or ()), v.meta.get("initializer"))
    return found


def scope_parameters(model: LegacyModel, registry: ParameterRegistry,
                     rng: np.random.RandomState) -> "OrderedDict[str, LegacyParameter]":
    """The values ``model``'s networks are built over, as NNabla's ``load`` gives them once the
    file's parameters (unless ``exclude_parameter``) are in ``registry``: each parameter of
    ``registry`` the networks read, the others made (see the module's docstring) and added to
    ``registry``; ``need_grad`` is set on every one, as NNabla's ``get_parameter_or_create``
    does.

    Example:
        >>> from collections import OrderedDict
        >>> import numpy as np, stadyn as sd
        >>> from stadyn.serialize import LegacyFunction, LegacyModel, LegacyNetwork
        >>> from stadyn.serialize._legacy_ir import LegacyVariable
        >>> net = LegacyNetwork("n", [LegacyFunction("f", "Mul2", ("x", "w"), ("y",))],
        ...                     OrderedDict(w=LegacyVariable("w", "parameter", (2,))))
        >>> reg = sd.ParameterRegistry()
        >>> params = scope_parameters(LegacyModel("nnp", "m.nnp", {"n": net}), reg, None)
        >>> params["w"].value.tolist(), reg.get("w").need_grad
        ([0.0, 0.0], True)
    """
    params: "OrderedDict[str, LegacyParameter]" = OrderedDict()
    for name, (shape, initializer) in declared_parameters(model).items():
        var = registry.get(name)
        if var is None:
            var = Variable.from_numpy_array(initial_value(initializer, shape, rng),
                                            need_grad=True)
            registry.set(name, var)
        elif tuple(var.shape) != shape:
            raise ValueError(f"{model.path}: the current scope's parameter {name!r} has the "
                             f"shape {tuple(var.shape)}, the file's networks read it as {shape} "
                             f"(nn.clear_parameters() to start afresh)")
        var.need_grad = True
        params[name] = LegacyParameter(name, np.asarray(var.d), need_grad=True)
    return params
