"""What NNabla 1.39's stacked recurrent functions (``F.rnn``, ``F.lstm``, ``F.gru``) refuse
when they are set up: the shapes of ``x``, ``h`` (and ``c``), ``weight_l0``, ``weight`` and
``bias`` (``src/nbla/function/generic/rnn.cpp:28-114``, ``lstm.cpp``, ``gru.cpp``, each
``setup_impl``).

NNabla's Python wrapper hands the C++ function ``weight`` and ``bias`` as the inputs after
``weight_l0``, leaving out the ones not given, and the C++ side tells a lone fourth input by
its rank: with ``num_layers == 1`` it must have the bias's rank (so a bias of another rank,
``(L, H)`` for ``rnn``'s ``(L, D, H)``, is "Weight argument cannot be passed"), with more
layers the weight's.  Stadyn's ops would compute some of these silently (a bias of the wrong
rank or number of layers, a ``weight`` with one layer, which they ignored): here they are
refused, as NNabla's ``RuntimeError`` (case ``nnabla_user_28.user28_recurrent_misuse``).

``_refusals.py`` raises what :func:`recurrent_problem` names, given the call's arguments by
name: it binds them with the signature of the function called (``inspect.signature(fn).bind``),
so an argument given by position (``F.rnn(x, h, w0, None, None, 1, 'tanh', 0.0, True)``: a
bidirectional one) is read as that function reads it.

Example:
    >>> import stadyn.compat.nnabla as nn
    >>> x, h = nn.Variable((4, 2, 3)), nn.Variable((1, 1, 2, 5))
    >>> print(recurrent_problem("rnn", x, h, weight_l0=nn.Variable((1, 5, 8)),
    ...                         bias=nn.Variable((1, 5))))
    Weight argument cannot be passed when num_layers == 1 (a lone fourth input must be the \
bias, of rank 3; got rank 2)
"""

from __future__ import annotations

from typing import Any

__all__ = ["recurrent_problem", "RECURRENT"]

#: Per function: the gate axis of ``weight_l0``/``weight`` (None: none) and the bias's.
_GATES = {"rnn": (None, None), "lstm": (4, 4), "gru": (3, 4)}


def _shape(v: Any) -> tuple | None:
    shape = getattr(v, "shape", None)
    return None if shape is None else tuple(int(s) for s in shape)


class _Refused(Exception):
    """What NNabla refuses, the message (turned into ``_refusals``' error by the caller)."""


def _expect(what: str, shape: tuple, wanted: tuple, layout: str) -> None:
    if len(shape) != len(wanted) or any(w is not None and s != w
                                        for s, w in zip(shape, wanted)):
        raise _Refused(f"input {what} must be a {len(wanted)} dimensional array with a shape "
                       f"of ({layout}), got {shape}")


def recurrent_problem(name: str, x: Any = None, h: Any = None, **arguments: Any
                      ) -> str | None:
    """Why NNabla 1.39's ``setup_impl`` refuses these arguments of its ``rnn``, ``lstm`` or
    ``gru`` (``name``), or None where it takes them: ``x`` and ``h``, the others by their
    names in the function's signature (``c``, ``weight_l0``, ``weight``, ``bias``,
    ``num_layers``, ``bidirectional``; the rest unread).

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> x, h = nn.Variable((4, 2, 3)), nn.Variable((1, 1, 2, 5))
        >>> recurrent_problem("gru", x, h, weight_l0=nn.Variable((1, 3, 5, 8)),
        ...                   bias=nn.Variable((1, 1, 4, 5))) is None
        True
        >>> recurrent_problem("gru", x, h, weight_l0=nn.Variable((1, 3, 5, 8)),
        ...                   weight=nn.Variable((1, 1, 3, 5, 10)))
        'Weight argument cannot be passed when num_layers == 1 (a lone fourth input must be \
the bias, of rank 4; got rank 5)'
    """
    try:
        _check(name, x, h, arguments)
    except _Refused as refused:
        return str(refused)
    return None


def _check(name: str, x: Any, h: Any, given: dict) -> None:
    c, w0 = given.get("c"), given.get("weight_l0")
    weight, bias = given.get("weight"), given.get("bias")
    layers = given.get("num_layers", 1)
    bidirectional = given.get("bidirectional", False)
    xs, hs, w0s = _shape(x), _shape(h), _shape(w0)
    if xs is None or hs is None or w0s is None or not isinstance(layers, int):
        return                          # the op's own checks name the problem
    gate, bias_gate = _GATES[name]
    directions = 2 if bidirectional else 1
    if len(xs) != 3:
        raise _Refused(f"input x must be a 3 dimensional array with a shape of (steps, "
                            f"batch_size, input_size), got {xs}")
    steps, batch, inputs = xs
    _expect("h", hs, (layers, directions, batch, None),
            "num_layers, num_directions, batch_size, hidden_size")
    hidden = hs[3]
    if name == "lstm" and _shape(c) is not None and _shape(c) != hs:
        raise _Refused(f"input c must have the same shape as input h: c {_shape(c)}, "
                            f"h {hs}")
    g = () if gate is None else (gate,)
    gl = "" if gate is None else f"{gate}, "
    _expect("w0", w0s, (directions, *g, hidden, inputs + hidden),
            f"num_directions, {gl}hidden_size, input_size + hidden_size")
    optional = [v for v in (weight, bias) if v is not None]
    weight_rank = 4 + (gate is not None)
    bias_rank = 3 + (bias_gate is not None)
    if len(optional) == 1:
        rank = len(_shape(optional[0]) or ())
        if layers > 1 and rank != weight_rank:
            raise _Refused("Weight argument must be passed when num_layers > 1 (a lone "
                                f"fourth input of rank {rank} is not a weight)")
        if layers == 1 and rank != bias_rank:
            raise _Refused("Weight argument cannot be passed when num_layers == 1 (a "
                                f"lone fourth input must be the bias, of rank {bias_rank}; "
                                f"got rank {rank})")
        weight, bias = (optional[0], None) if layers > 1 else (None, optional[0])
    elif len(optional) == 2 and layers == 1:
        raise _Refused("Weight argument cannot be passed when num_layers == 1")
    if weight is not None:
        _expect("w", _shape(weight),
                (layers - 1, directions, *g, hidden, directions * hidden + hidden),
                f"num_layers - 1, num_directions, {gl}hidden_size, "
                f"num_directions * hidden_size + hidden_size")
    if bias is not None:
        bg = () if bias_gate is None else (bias_gate,)
        bgl = "" if bias_gate is None else f"{bias_gate}, "
        _expect("b", _shape(bias), (layers, directions, *bg, hidden),
                f"num_layers, num_directions, {bgl}hidden_size")


#: The three functions this module checks.
RECURRENT = tuple(_GATES)
