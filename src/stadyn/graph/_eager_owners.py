"""Which eager plan's run last gave an op's outputs their values, and whether the gradient
marks changed since.

A static graph that runs eagerly (an op that cannot be traced: a ``PythonFunction``, a new
shape's trial run) leaves every inner Variable a tensor with torch's autograd history.  A
backward from an inner Variable that was not a root of that forward (``loss.forward()``, then
``y.backward()``) differentiates that history -- right while no ``need_grad`` changed since the
run.  A leaf switched on since (``x.need_grad = True``) has no history in it: NNabla 1.39 gives
it its gradient (it reads each input's ``need_grad`` when its backward reaches the function:
``y = h * 1.0`` over ``h = Twice()(x * w)``: ``x.g`` is ``[2] * 8``, not zeros; the harness case
``nnabla_review_mends_31``'s ``late_need_grad_*``).  The
runner notes, per run of such a plan, the plan as its nodes' owner (:func:`note_eager_run`);
:func:`marks_changed_since_run` tells the backward that it must run ``y``'s forward again
(replaying the run's draws) instead of reading the stale history.

Example:
    >>> import stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable((2,))
    >>> y = F.sum(x * 2.0)
    >>> marks_changed_since_run(y.parent)    # no eager plan ran it
    False
"""

from __future__ import annotations

import weakref

from ._grad_marks import gradient_marks
from ._eager_plan import EagerPlan
from ._variable import FunctionNode
from ._versions import gradient_marks_version
from ._identity_keys import IdentityKeyDict

__all__ = ["note_eager_run", "marks_changed_since_run"]

#: node -> weak reference to the eager plan whose run last computed its outputs (none where
#: the last plan that ran it was not eager)
_OWNERS: IdentityKeyDict = IdentityKeyDict()


def note_eager_run(plan) -> None:
    """Note ``plan`` (a plan that just ran: an :class:`~stadyn.graph.EagerPlan` with its
    ``marks`` set, or a ``StaticPlan``) as the owner of its nodes' values: a later run of the
    same nodes by a static plan leaves them no eager run's history.  (A ``HookedPlan``, op by
    op, is not noted: its Variables' histories are cut at each op, so a backward from an inner
    Variable must still run its forward again as after the eager run.)

    Example:
        >>> import numpy as np, stadyn as sd
        >>> from stadyn.graph import OpSpec, apply
        >>> spec = OpSpec.from_function(lambda x: x * 2, 1, name="twice2", traceable=False)
        >>> x = sd.Variable.from_numpy_array([1.0, 2.0], need_grad=True)
        >>> y = apply(spec, (x,), {})
        >>> y.forward()                     # the runner notes it
        >>> _OWNERS[y.parent]() is y._plan
        True
    """
    if not isinstance(plan, EagerPlan):
        for node in plan.nodes:
            _OWNERS.pop(node, None)
        return
    ref = weakref.ref(plan)
    for node in plan.nodes:
        _OWNERS[node] = ref


def marks_changed_since_run(node: FunctionNode) -> bool:
    """Whether ``node``'s outputs hold values of an eager plan's run (the last run noted by
    :func:`note_eager_run` was an :class:`~stadyn.graph.EagerPlan`'s) under gradient marks
    other than those of now (a ``need_grad`` set since on a leaf or an output of that plan's
    graph).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import OpSpec, apply
        >>> spec = OpSpec.from_function(lambda x: x * 2, 1, name="twice3", traceable=False)
        >>> x = sd.Variable.from_numpy_array([1.0, 2.0])
        >>> w = sd.Variable.from_numpy_array([1.0, 1.0], need_grad=True)
        >>> h = apply(spec, (x * w,), {})
        >>> loss = F.sum(h)
        >>> loss.forward()
        >>> marks_changed_since_run(h.parent)
        False
        >>> x.need_grad = True
        >>> marks_changed_since_run(h.parent)
        True
    """
    ref = _OWNERS.get(node)
    plan = ref() if ref is not None else None
    if (not isinstance(plan, EagerPlan) or plan.marks is None
            or plan.marks_seen == gradient_marks_version()):
        return False
    return gradient_marks(plan.nodes, plan.leaves) != plan.marks
