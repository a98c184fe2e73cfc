"""NNabla's incremental-network-quantisation layers: ``inq_affine`` and ``inq_convolution``
create the float weights ``W``, the indicators ``I`` of the weights already fixed (0:
learnable, 1: fixed; no gradient) and the bias ``b``, and call ``F.inq_affine`` /
``F.inq_convolution``, which fix and round ``W`` to powers of two over the node's runs
(``stadyn.ops._nnabla_inq``).  As in NNabla 1.39, the layers' default ``selection_algorithm``
is ``"random"`` (the functions' is ``"largest_abs"``).

Example:
    >>> import stadyn as sd, stadyn.parametric_functions as PF
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     y = PF.inq_affine(sd.Variable((4, 3)), 2, inq_iterations=(10, 20))
    ...     sorted(sd.get_parameters(grad_only=False))
    ['inq_affine/I', 'inq_affine/W', 'inq_affine/b']
"""

from __future__ import annotations

import math
from typing import Sequence

from .. import functions as F
from ..graph import Variable
from . import initializers as I
from ._pf_common import checked_base_axis, count, counts, given_or, parameter, pf_scope

__all__ = ["inq_affine", "inq_convolution"]


def inq_affine(inp: Variable, n_outmaps: int | Sequence[int], base_axis: int = 1,
               num_bits: int = 4, inq_iterations: Sequence[int] = (),
               selection_algorithm: str = "random", seed: int = -1, w_init=None, i_init=None,
               b_init=None, fix_parameters: bool = False, rng=None, with_bias: bool = True,
               name: str | None = None) -> Variable:
    """Affine layer with INQ weights in scope ``inq_affine``: ``W`` of shape
    ``(inmaps, *n_outmaps)`` (Glorot-uniform), ``I`` of the same shape (zeros), ``b``
    (zeros); see the module and ``F.inq_affine``.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     PF.inq_affine(sd.Variable((4, 3)), 5, num_bits=5).shape
        (4, 5)
    """
    out = counts(n_outmaps, "inq_affine", "n_outmaps", True)
    inmaps = inp.size_from_axis(checked_base_axis(base_axis, inp, "inq_affine"))
    with pf_scope(name, "inq_affine"):
        if w_init is None:
            lim = I.calc_uniform_lim_glorot(inmaps, math.prod(out))
            w_init = I.UniformInitializer((-lim, lim), rng=rng)
        w = parameter("W", (inmaps,) + out, w_init, fix_parameters)
        fixed = parameter("I", (inmaps,) + out, given_or(i_init, I.ConstantInitializer(0.0)),
                          need_grad=False, read_by="as_is")
        b = None
        if with_bias:
            b = parameter("b", out, given_or(b_init, I.ConstantInitializer(0.0)), fix_parameters)
        return F.inq_affine(inp, w, fixed, b, base_axis, num_bits, tuple(inq_iterations),
                            selection_algorithm, seed)


def inq_convolution(inp: Variable, outmaps: int, kernel: Sequence[int], pad=None, stride=None,
                    dilation=None, group: int = 1, num_bits: int = 4,
                    inq_iterations: Sequence[int] = (), selection_algorithm: str = "random",
                    seed: int = -1, w_init=None, i_init=None, b_init=None, base_axis: int = 1,
                    fix_parameters: bool = False, rng=None, with_bias: bool = True,
                    name: str | None = None) -> Variable:
    """Convolution layer with INQ weights in scope ``inq_conv``: ``W`` of shape
    ``(outmaps, inmaps, *kernel)`` (Glorot-uniform; as in NNabla 1.39 not divided by
    ``group``, so only ``group=1`` fits), ``I`` of the same shape (zeros), ``b`` (zeros); see
    the module and ``F.inq_convolution``.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     PF.inq_convolution(sd.Variable((2, 3, 8, 8)), 4, (3, 3), pad=(1, 1)).shape
        (2, 4, 8, 8)
    """
    outmaps = count(outmaps, "inq_convolution", "outmaps")
    kernel = counts(kernel, "inq_convolution", "kernel", True)
    inmaps = inp.shape[checked_base_axis(base_axis, inp, "inq_convolution")]
    with pf_scope(name, "inq_conv"):
        if w_init is None:
            lim = I.calc_uniform_lim_glorot(inmaps, outmaps, kernel)
            w_init = I.UniformInitializer((-lim, lim), rng=rng)
        w = parameter("W", (outmaps, inmaps) + kernel, w_init, fix_parameters)
        fixed = parameter("I", (outmaps, inmaps) + kernel,
                          given_or(i_init, I.ConstantInitializer(0.0)),
                          need_grad=False, read_by="as_is")
        b = None
        if with_bias:
            b = parameter("b", (outmaps,), given_or(b_init, I.ConstantInitializer(0.0)),
                          fix_parameters)
        return F.inq_convolution(inp, w, fixed, b, base_axis, pad, stride, dilation, group,
                                 num_bits, tuple(inq_iterations), selection_algorithm, seed)
