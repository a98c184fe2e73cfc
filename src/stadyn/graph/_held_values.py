"""Which intermediates keep their values through a clearing forward or backward: the
``persistent`` ones and the ones the program holds.

NNabla's ``forward(clear_no_need_grad=True)`` and ``backward(clear_buffer=True)`` free the
buffers of the intermediates they pass; a Variable read after that gives whatever NNabla's
memory pool left in the freed block: the last value while nothing else took it, another
array's values once something did (NNabla 1.39, measured: the prediction nnabla-examples'
DARTS reads after ``forward(clear_no_need_grad=True)`` holds its value from the second step
on, not on the first; a small MLP's is another array's).  No program can rely on that, yet
programs read them: DARTS and capsulenet print their training error from ``pred.d`` after the
clearing step.  Stadyn's rule is one a program can rely on: **a Variable the program holds
keeps its value** -- one that a frame of the program's call stack (any code outside Stadyn)
names, directly or as an item of a list, tuple, set or dict it names (of at most
:data:`MAX_ITEMS` items), or as an attribute of an object it names -- and the intermediates it
dropped (``h = F.relu(PF.affine(h, ...))`` in a loop: every ``h`` but the last) are freed, so
the memory a clearing forward saves stays saved where it matters: the many values inside the
network, not the few the program keeps names for.  A static plan reads what the program holds
when it is built (a Variable named only later is freed until the plan is built again: mark
it ``persistent``); a clearing backward reads it as it runs.

:func:`held_variables` is the one place that decides; ``Subgraph.filled`` (what a forward
gives values to), the clearing backwards (a plan's: :func:`free_passed`; autograd's:
``retain_intermediate_grads``) and the reuse of a shared plan ask it.
"""

from __future__ import annotations

import inspect
import sys
import types

from ._location import _PACKAGE
from ._variable import Variable

__all__ = ["held_variables", "keeps_value", "free_passed", "MAX_ITEMS"]

#: A list, tuple, set or dict the program names is looked into up to this many items (a
#: larger one is data, not a list of Variables).
MAX_ITEMS = 1000

_SNAPSHOTS = sys.version_info < (3, 13)
_OPTIMIZED = inspect.CO_OPTIMIZED

_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
           types.MethodType, types.CodeType, types.FrameType)


def _contents(value):
    """The values one step inside ``value``: a container's items, an object's attributes."""
    if isinstance(value, dict):
        return value.values() if len(value) <= MAX_ITEMS else ()
    if isinstance(value, (list, tuple, set, frozenset)):
        return value if len(value) <= MAX_ITEMS else ()
    if not type(value).__dictoffset__ or isinstance(value, _OPAQUE):
        return ()                    # no attributes of its own (a number, an array, a str)
    try:
        attributes = value.__dict__
    except Exception:  # noqa: BLE001 - an object refusing its attributes holds none
        return ()
    return attributes.values() if isinstance(attributes, dict) else ()


def held_variables() -> set[int]:
    """The ``id`` of every Variable the program holds (see the module docstring): named by a
    frame outside Stadyn on the caller's stack, directly or one step inside what it names.
    Before Python 3.13 reading a function's variables fills the dict ``locals()`` returns,
    which is emptied again after (a dict a function took from ``locals()`` earlier and reads
    after a clearing run finds it empty; under a debugger it is left filled).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph._held_values import held_variables
        >>> x = sd.Variable((2,))
        >>> outputs = [F.relu(x)]
        >>> held = held_variables()
        >>> id(x) in held, id(outputs[0]) in held, id(F.tanh(x)) in held
        (True, True, False)
    """
    held: set[int] = set()
    frame = sys._getframe(1)
    while frame is not None:
        if not frame.f_code.co_filename.startswith(_PACKAGE):
            names = frame.f_locals
            for name, value in list(names.items()):
                if name[:2] == "__":         # a module's own (its __builtins__ dict)
                    continue
                if isinstance(value, Variable):
                    held.add(id(value))
                    continue
                for inner in list(_contents(value)):
                    if isinstance(inner, Variable):
                        held.add(id(inner))
            if _SNAPSHOTS and frame.f_code.co_flags & _OPTIMIZED and frame.f_trace is None:
                # Before Python 3.13 a function's f_locals is a dict the frame keeps, a copy
                # of its variables made when asked: left filled, it would keep what the
                # function deletes or rebinds alive until the frame ends (any object: a CNTK
                # Function holds its graph through attributes this search does not look
                # into).  Emptied, it is made again by the next ``locals()``; under a Python
                # tracer (a debugger) it is left, since the tracer writes it back into the
                # variables.
                names.clear()
        frame = frame.f_back
    return held


def keeps_value(v: Variable, held: set[int]) -> bool:
    """Whether a clearing forward or backward leaves ``v``'s value: it is ``persistent`` or
    the program holds it (``held``, from :func:`held_variables`).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph._held_values import keeps_value
        >>> h = F.relu(sd.Variable((2,)))
        >>> keeps_value(h, set()), keeps_value(h, {id(h)})
        (False, True)
    """
    return v._persistent or id(v) in held


def free_passed(variables, given=None) -> None:
    """After a clearing backward: drop the values and gradients of ``variables`` (the
    intermediates it passed through), but a ``persistent`` one's, and the value of one the
    program holds -- or, with ``given``, of one among ``given`` (the Variables a clearing
    forward's plan gives values to: those the program held when it was built), which spares
    a backward the search.

    Example:
        >>> import weakref, numpy as np, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph._held_values import free_passed
        >>> x = sd.Variable.from_numpy_array(np.ones(2))
        >>> h = F.tanh(x)
        >>> y = F.sum(F.sin(h))
        >>> y.forward()
        >>> dropped = weakref.ref(y.parent.inputs[0])     # F.sin(h): the program holds none
        >>> free_passed([h, dropped()])
        >>> h._data is not None, dropped()._data is None
        (True, True)
    """
    held = held_variables() if given is None else {id(v) for v in given}
    for v in variables:
        if not v._persistent:
            v._grad = None
            if id(v) not in held:
                v._data = None
