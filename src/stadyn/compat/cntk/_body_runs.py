"""How ``@C.Function`` runs a Python function's body, as CNTK 2.7 runs it: once, as it is
decorated (twice where the walk of the result meets the arguments out of the Python order:
``_signature``), over its arguments -- inputs for the typed ones, placeholders for the
others, on which the ops wait for their shapes (``_deferred.Deferred``) -- and never again
for a call or ``update_signature``, which build that waiting graph on their operands
(:func:`replayable` says where Stadyn can; elsewhere the body runs again on them).

Example:
    >>> import stadyn.compat.cntk as C
    >>> runs = []
    >>> def f(x):
    ...     runs.append(1)
    ...     return C.relu(x)
    >>> type(run_body(f, [C.placeholder(name="x")], True, [])).__name__, len(runs)
    ('Deferred', 1)
"""

from __future__ import annotations

import types

from ._adapt import ShapelessPlaceholderError
from ._deferred_operands import PROBING, _layer_function
from ._step_checks import NOT_BUILT, constructing
from ._user_clones import body_run

__all__ = ["run_body", "replayable", "REPLAYED_LAYERS"]

#: the layers a graph built again on a call's operands may apply: none reads a Python
#: function of the user's, whose closure may hold values the body made over its placeholders
REPLAYED_LAYERS = frozenset({"Dense", "Embedding", "Convolution", "ConvolutionTranspose",
                             "MaxPooling", "AveragePooling", "GlobalMaxPooling",
                             "GlobalAveragePooling", "BatchNormalization",
                             "LayerNormalization", "Dropout", "Stabilizer"})


def run_body(f, arguments: list, untyped: bool, first: list):
    """``f`` run on its ``arguments`` (inputs and placeholders; ``untyped``: some are
    placeholders), the ops on placeholders waiting for their shapes, the user functions it
    makes recorded in ``first`` (``_user_clones``); :data:`NOT_BUILT` where an op that
    cannot wait read a placeholder (the Function is built when applied)."""
    probing = PROBING[0]
    PROBING[0] = False
    try:
        with constructing(arguments), body_run(first, cloned=False):
            return f(*arguments)
    except ShapelessPlaceholderError:
        return NOT_BUILT
    except Exception:       # noqa: BLE001 - (told apart by the probe below)
        if not untyped:
            raise
        return _probed(f, arguments)
    finally:
        PROBING[0] = probing


def replayable(fn) -> bool:
    """Whether a waiting op calling ``fn`` is built on a call's operands as the body would
    build it: a CNTK op of this package, or a layer of :data:`REPLAYED_LAYERS` (a
    recurrence's step, a ``Sequential`` of the user's functions, a nested ``@C.Function``
    may read what the body made over its placeholders: the body runs again for those).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> replayable(C.relu), replayable(C.layers.Dense(2))
        (True, True)
        >>> replayable(C.layers.Recurrence(C.layers.GRU(2)))
        False
    """
    if isinstance(fn, _layer_function()):
        return getattr(fn, "kind", "") in REPLAYED_LAYERS
    return isinstance(fn, types.FunctionType) and \
        getattr(fn, "__module__", "").startswith(__package__ + ".")


def _probed(f, arguments: list):
    """After a run of ``f`` over its untyped ``arguments`` raised: :data:`NOT_BUILT` where
    it needs their shapes before the error (an op reading one raises
    ``ShapelessPlaceholderError`` as it probes: the error comes when the Function is
    applied, as before this module), else that error again."""
    probing = PROBING[0]
    PROBING[0] = True
    try:
        with constructing(arguments):
            f(*arguments)
    except ShapelessPlaceholderError:
        return NOT_BUILT
    finally:
        PROBING[0] = probing
    raise RuntimeError(f"{getattr(f, '__name__', '')}: its body raised on one run and not "
                       "on the next")
