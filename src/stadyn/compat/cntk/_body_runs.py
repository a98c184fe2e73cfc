"""How ``@C.Function`` runs a Python function's body, as CNTK 2.7 runs it: once, as it is
decorated (twice where the walk of the result meets the arguments out of the Python order:
``_signature``), over its arguments -- inputs for the typed ones, placeholders for the
others, on which the ops wait for their shapes (``_deferred.Deferred``) -- and never again
for a call or ``update_signature``, which build that waiting graph on their operands
(:func:`replayable` says which ops Stadyn can build so; where the graph holds another, or
a layer's Python function reads what the body made, the body runs again on them).

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

import os
import types
from typing import Any

from . import _graph as G
from ._adapt import ShapelessPlaceholderError, unwrap
from ._deferred_operands import PROBING, _layer_function
from ._step_checks import NOT_BUILT, constructing
from ._user_clones import body_run

__all__ = ["run_body", "replayable", "OVER_SHAPELESS"]


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
    except OVER_SHAPELESS:     # (told apart by the probe below)
        if not untyped:
            raise
        return _probed(f, arguments)
    finally:
        PROBING[0] = probing


#: what a body run over placeholders of unknown shape may raise because of their shapes: an
#: op refusing them (Stadyn's errors subclass ValueError and RuntimeError, as CNTK's), NumPy
#: or Python arithmetic on a shape (TypeError, IndexError); anything else is the body's own
#: error, raised from its one run (CNTK 2.7 runs the body once)
OVER_SHAPELESS = (ValueError, RuntimeError, TypeError, IndexError)


def replayable(fn) -> bool:
    """Whether a waiting op calling ``fn`` is built on a call's operands as the body would
    build it: a CNTK op of this package, or a layer (``Dense``, a ``Sequential``, a
    ``Recurrence`` over its step: applied again to the call's operands, its parameters
    shared) none of whose Python functions reads, from its closure, what the body made over
    its placeholders (an attention step over the body's ``encoded``: the body runs again for
    those, as for a user's own Python function).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> replayable(C.relu), replayable(C.layers.Recurrence(C.layers.GRU(2)))
        (True, True)
        >>> def over(x):        # (as a body makes it: its lambda reads x)
        ...     return C.layers.Sequential([C.layers.Dense(2), lambda t: t + x])
        >>> replayable(over(C.placeholder(name="x")))
        False
    """
    if isinstance(fn, _layer_function()):
        return not _reads_the_body(fn, 8, set())
    return isinstance(fn, types.FunctionType) and \
        getattr(fn, "__module__", "").startswith(__package__ + ".")


_STADYN = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def _reads_the_body(obj: Any, depth: int, seen: set) -> bool:
    """Whether ``obj`` (a layer, its attributes, items and sublayers, ``depth`` levels down)
    holds a Python function of the user's whose closure or defaults hold a value a body may
    have made over its placeholders: a placeholder, or an op waiting for one's shape."""
    if depth == 0 or id(obj) in seen or obj is None or \
            isinstance(obj, (str, bytes, int, float, type)):
        return False
    seen.add(id(obj))
    if isinstance(obj, types.FunctionType):
        if obj.__code__.co_filename.startswith(_STADYN):
            held = list(obj.__defaults__ or ())
        else:
            held = [c.cell_contents for c in obj.__closure__ or ()
                    if c.cell_contents is not c] + list(obj.__defaults__ or ())
            if any(_of_a_body(v) for v in held):
                return True
        return any(_reads_the_body(v, depth - 1, seen) for v in held)
    items = list(obj) if isinstance(obj, (list, tuple)) else \
        list(obj.values()) if isinstance(obj, dict) else \
        list(vars(obj).values()) if hasattr(obj, "__dict__") and \
        type(obj).__module__.startswith("stadyn") else []
    return any(_reads_the_body(v, depth - 1, seen) for v in items)


def _of_a_body(value: Any) -> bool:
    """Whether ``value`` may be what a body made over its placeholders: a placeholder, or an
    op (or its output) waiting for the shapes of some."""
    from ._deferred import Deferred     # (lazy: _deferred's parts import this package's ops)
    if isinstance(value, Deferred) or isinstance(getattr(value, "waiting", None), Deferred):
        return True
    try:
        return G.kind_of(unwrap(value)) == "placeholder"
    except (AttributeError, TypeError):
        return False


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
