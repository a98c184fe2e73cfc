"""NNabla's recurrent parametric functions: ``lstm_cell`` (one step, on ``affine``) and the
stacked ``lstm``, ``gru``, ``rnn`` (on the fused ops ``F.lstm`` / ``F.gru`` / ``F.rnn``), with
NNabla's scopes (``lstm``, ``gru``, ``rnn``), parameter names (``weight_l0``, ``weight``,
``bias``; ``lstm_cell``'s ``affine/W``, ``affine/b``), shapes and Glorot-uniform defaults drawn
separately for the input and recurrent halves, as NNabla draws them.
"""

from __future__ import annotations

import numpy as np

from .. import functions as F
from .._errors import ShapeError
from ..graph import Variable
from . import initializers as I
from ._pf import affine
from ._pf_common import given_or, parameter, pf_scope
from ._registry import parameter_scope

__all__ = ["lstm_cell", "lstm", "gru", "rnn"]


def lstm_cell(x: Variable, h: Variable, c: Variable, state_size: int, w_init=None,
              b_init=None, fix_parameters: bool = False, name: str | None = None
              ) -> tuple[Variable, Variable]:
    """One LSTM step on ``(B, I)`` input and ``(B, state_size)`` states: an affine map of
    ``[x, h]`` to the gates (input, output, forget, cell: NNabla's order); returns ``(h, c)``.
    The parameters are in scope ``lstm``, inside ``name`` when given (NNabla's rule:
    ``name="cell"`` creates ``cell/lstm/affine/W``).

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     h, c = PF.lstm_cell(sd.Variable((2, 3)), sd.Variable((2, 4)),
        ...                         sd.Variable((2, 4)), 4)
        ...     h.shape, sd.get_parameters()["lstm/affine/W"].shape
        ((2, 4), (7, 4, 4))
    """
    with pf_scope(name, "lstm"):
        gates = affine(F.concatenate(x, h, axis=1), (4, state_size), w_init=w_init,
                       b_init=b_init, fix_parameters=fix_parameters)
        i_t, o_t, f_t, cell = F.split(gates, axis=1)
        c_t = F.sigmoid(f_t) * c + F.sigmoid(i_t) * F.tanh(cell)
        return F.sigmoid(o_t) * F.tanh(c_t), c_t


def _glorot(shape_in: tuple, shape_rec: tuple, fan_in: int, hidden: int, rng) -> np.ndarray:
    """NNabla's default: input and recurrent weights drawn apart, joined on the last axis."""
    a = I.UniformInitializer(_lim(fan_in, hidden), rng)(shape_in)
    b = I.UniformInitializer(_lim(hidden, hidden), rng)(shape_rec)
    return np.concatenate([a, b], axis=-1)


def _lim(inmaps: int, outmaps: int) -> tuple[float, float]:
    lim = I.calc_uniform_lim_glorot(inmaps, outmaps)
    return (-lim, lim)


def _stacked(fn: str, x: Variable, h: Variable, gates: tuple, bias_gates: tuple, w0_init,
             w_init, b_init, bidirectional: bool, rng, with_bias: bool,
             fix_parameters: bool):
    """The parameters of a stacked recurrent op (in the current scope)."""
    if x.ndim != 3 or h.ndim != 4:
        raise ShapeError(f"PF.{fn}: x must be (T, B, I) and h (L, D, B, H); got {x.shape} "
                         f"and {h.shape}")
    inputs, layers, hidden = x.shape[2], h.shape[0], h.shape[3]
    directions = 2 if bidirectional else 1
    if h.shape[1] != directions:
        raise ShapeError(f"PF.{fn}: h has {h.shape[1]} directions; bidirectional="
                         f"{bidirectional} needs {directions}")
    lead = (directions,) + gates + (hidden,)
    if w0_init is None:
        w0_init = _glorot(lead + (inputs,), lead + (hidden,), inputs, hidden, rng)
    w0 = parameter("weight_l0", lead + (inputs + hidden,), w0_init, fix_parameters)
    w = None
    if layers > 1:
        upper = (layers - 1,) + lead
        if w_init is None:
            w_init = _glorot(upper + (directions * hidden,), upper + (hidden,),
                             directions * hidden, hidden, rng)
        w = parameter("weight", upper + (directions * hidden + hidden,), w_init,
                      fix_parameters)
    b = None
    if with_bias:
        b = parameter("bias", (layers, directions) + bias_gates + (hidden,),
                      given_or(b_init, I.ConstantInitializer(0.0)), fix_parameters)
    return w0, w, b, layers


def lstm(x: Variable, h: Variable, c: Variable, w0_init=None, w_init=None, b_init=None,
         num_layers: int = 1, dropout: float = 0.0, bidirectional: bool = False,
         training: bool = True, rng=None, with_bias: bool = True,
         fix_parameters: bool = False, name: str = "lstm"):
    """Stacked LSTM (``F.lstm``) with ``weight_l0`` ``(D, 4, H, I+H)``, ``weight``
    ``(L-1, D, 4, H, D*H+H)``, ``bias`` ``(L, D, 4, H)``; the layer count is ``h.shape[0]``.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y, hn, cn = PF.lstm(sd.Variable((5, 2, 3)), sd.Variable((2, 1, 2, 4)),
        ...                         sd.Variable((2, 1, 2, 4)))
        ...     y.shape, sorted(sd.get_parameters())
        ((5, 2, 4), ['lstm/bias', 'lstm/weight', 'lstm/weight_l0'])
    """
    with parameter_scope(name):
        w0, w, b, layers = _stacked("lstm", x, h, (4,), (4,), w0_init, w_init, b_init,
                                    bidirectional, rng, with_bias, fix_parameters)
        return F.lstm(x, h, c, w0, w, b, layers, dropout, bidirectional, training)


def gru(x: Variable, h: Variable, w0_init=None, w_init=None, b_init=None, num_layers: int = 1,
        dropout: float = 0.0, bidirectional: bool = False, training: bool = True, rng=None,
        with_bias: bool = True, fix_parameters: bool = False, name: str = "gru"):
    """Stacked GRU (``F.gru``) with ``weight_l0`` ``(D, 3, H, I+H)`` and ``bias``
    ``(L, D, 4, H)``.  Example: ``y, hn = PF.gru(x, h)``."""
    with parameter_scope(name):
        w0, w, b, layers = _stacked("gru", x, h, (3,), (4,), w0_init, w_init, b_init,
                                    bidirectional, rng, with_bias, fix_parameters)
        return F.gru(x, h, w0, w, b, layers, dropout, bidirectional, training)


def rnn(x: Variable, h: Variable, w0_init=None, w_init=None, b_init=None, num_layers: int = 1,
        nonlinearity: str = "tanh", dropout: float = 0.0, bidirectional: bool = False,
        training: bool = True, rng=None, with_bias: bool = True, fix_parameters: bool = False,
        name: str = "rnn"):
    """Stacked Elman RNN (``F.rnn``) with ``weight_l0`` ``(D, H, I+H)`` and ``bias``
    ``(L, D, H)``.  Example: ``y, hn = PF.rnn(x, h, nonlinearity="relu")``."""
    with parameter_scope(name):
        w0, w, b, layers = _stacked("rnn", x, h, (), (), w0_init, w_init, b_init,
                                    bidirectional, rng, with_bias, fix_parameters)
        return F.rnn(x, h, w0, w, b, layers, nonlinearity, dropout, bidirectional, training)
