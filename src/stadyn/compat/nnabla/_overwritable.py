"""Whether NNabla 1.39 lets a function write its input's array in place: ``F.scatter_nd(data,
indices, out=x)`` writes its result into ``x``'s array (NNabla's ``ScatterNd`` declares its
third input ``INPLACE``), which NNabla refuses when it is set up (at the call, in both modes)
if the function that computed ``x`` reads its own output in its backward and one of its inputs
needs a gradient (``CgFunction::check_data_inplace``: ``x`` is then not ``allow_modify_data``).
Stadyn refuses the same calls, with NNabla's error type (``RuntimeError``) and the user's line
(checked on NNabla 1.39, case ``nnabla_fidelity_16.scatter_nd__out_computed_refused``).

Which functions read their output in their backward is NNabla's ``grad_depends_output_data``
(read from NNabla 1.39's headers, ``include/nbla/function/*.hpp``: the transforms' ``DEP_Y``
flags, the functions that override it, and ``Function``'s default ``true`` for those that do
not; ``Meshgrid`` overrides it with ``false``), for output 0 of the function, by its NNabla
name; a ``PythonFunction``'s is its own method's, asked for the output ``x`` is.

NNabla also refuses an ``x`` another function reads ("In-placing at a branching variable is
prohibited"): at the call when one was made on ``x`` before (``_readers.py``), and at a
``forward()`` of a graph holding the in-place call when one was made after it (both checked
on NNabla 1.39, case ``nnabla_fidelity_18.scatter_nd__out_computed_shares``).  An ``x``
allowed holds one array with the result, leaf or computed, static or dynamic
(:func:`write_in_place`, :func:`share_after_forward`).

Example:
    >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> a = nn.Variable.from_numpy_array(np.zeros(3, np.float32), need_grad=True)
    >>> check_overwritable(a * 1.0, "scatter_nd")             # MulScalar: fine
    >>> check_overwritable(F.exp(a), "scatter_nd")
    Traceback (most recent call last):
    ...
    stadyn.compat.nnabla._refusals.NNablaRefusal: scatter_nd: NNabla 1.39 refuses this call: ...
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ...graph import Variable as _Core, data_of, get_auto_forward, hand_out, topological_nodes
from ._function import as_function
from ._own_arrays import holds_input_array
from ._readers import reader_count
from ._refusals import _refuse
from ...graph import IdentityKeyDict

__all__ = ["check_overwritable", "READS_OUTPUT", "check_unbranched", "write_in_place",
           "check_before_forward", "share_after_forward"]


def _always(args: dict) -> bool:
    return True


# NNabla function name -> whether (given its arguments) its backward reads its output 0
READS_OUTPUT: dict[str, Callable[[dict], bool]] = {
    **{name: _always for name in (
        "Exp", "Sigmoid", "Tanh", "Swish", "ReLU", "Softmax", "LogSoftmax", "SpectralNorm",
        "Prod", "MulN", "BatchDet", "BatchInv", "BatchCholesky", "NonZero", "Unique", "Shape",
        "Mod2", "BitShift", "RoiAlign")},
    "LeakyReLU": lambda args: args.get("alpha", 0.1) >= 0,
    "Reshape": lambda args: bool(args.get("inplace", True)),
    "TopKData": lambda args: bool(args.get("with_index", False)),
    "FusedConvolution": lambda args: args.get("nonlinearity") == "relu",
    "FusedBatchNormalization": lambda args: args.get("nonlinearity") == "relu",
}


def check_overwritable(x: Any, name: str) -> None:
    """Refuse, as NNabla 1.39 does, the function ``name`` writing in place the output ``x`` of a
    function whose backward reads it while one of that function's inputs needs a gradient
    (a leaf ``x``, or one computed otherwise, passes)."""
    parent = getattr(x, "parent", None)
    if parent is None:
        return
    fn = as_function(parent)
    if fn.spec.name == "python_function":
        if not _python_reads_output(fn, x):
            return
    else:
        reads = READS_OUTPUT.get(fn.name)
        if reads is None or not reads(dict(fn.info.args)):
            return
        if not any(getattr(v, "need_grad", False) for v in fn.inputs):
            return
    raise _refuse(name, f"out= is the output of {fn.name}, whose gradient reads that output, "
                       f"which {name} would overwrite in place (NNabla: \"Modifying data is "
                       f"prohibited by the parent function\"); pass a copy, F.identity(x), "
                       f"or compute x from inputs that need no gradient")


def _python_reads_output(fn: Any, x: Any) -> bool:
    """Whether the PythonFunction whose node is ``fn`` says (its ``grad_depends_output_data(i,
    o)``) that the gradient of an input ``i`` needing one reads its output ``o``, ``x``."""
    function = fn.attrs["function"].function
    o = next((k for k, v in enumerate(fn.outputs) if v is x), 0)
    return any(getattr(v, "need_grad", False) and function.grad_depends_output_data(i, o)
               for i, v in enumerate(fn.inputs))


def check_unbranched(x: Any, name: str) -> None:
    """Refuse, as NNabla 1.39 does, the function ``name`` writing in place an ``x`` that another
    function reads (one made on ``x`` before, kept or not: ``_readers.py``).

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> x = nn.Variable((3,)); check_unbranched(x, "scatter_nd")
        >>> z = F.add_scalar(x, 1.0); check_unbranched(x, "scatter_nd")
        Traceback (most recent call last):
        ...
        stadyn.compat.nnabla._refusals.NNablaRefusal: scatter_nd: NNabla 1.39 refuses this call: ...
    """
    if reader_count(x) >= 1:
        raise _refuse(name, _BRANCHING.format(name=name))


_BRANCHING = ("out= is read by another function too, and {name} would overwrite it in place "
              "(NNabla: \"In-placing at a branching variable is prohibited\"); pass a copy, "
              "F.identity(x), to one of them")

# The node of each in-place result (``F.scatter_nd(..., out=x)``) -> ``x``, whose array it
# holds; its node reads ``x`` once (the ``stop_gradient`` the result is computed from).
_IN_PLACE: "IdentityKeyDict[Any, Any]" = IdentityKeyDict()


def write_in_place(y: Any, x: Any) -> None:
    """``y`` is the result NNabla computes into ``x``'s array (``F.scatter_nd(..., out=x)``,
    ``x`` holding an array of its own): the two hold one array from now on, ``x`` showing the
    result, a write to either read by the other; each forward writes the result there again
    (:func:`share_after_forward`), and a forward of a graph holding ``y`` refuses once another
    function reads ``x`` (:func:`check_before_forward`).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> x = F.mul_scalar(nn.Variable.from_numpy_array(np.ones(3, np.float32)), 2.0)
        >>> y = F.scatter_nd(nn.Variable.from_numpy_array(np.array([9.0])), [[1]], out=x)
        >>> y.forward(); x.d.tolist()              # (scatter_nd calls write_in_place)
        [2.0, 9.0, 2.0]
        >>> x.d = np.zeros(3, np.float32); y.d.tolist()
        [0.0, 0.0, 0.0]
    """
    _IN_PLACE[y.parent] = x
    holds_input_array(y.parent, x)          # (no array of its own: _own_arrays.py)
    _share(y, x, get_auto_forward())        # (a static graph's runs later)


def _share(y: Any, x: Any, ran: bool) -> None:
    """Make ``y`` hold ``x``'s array, ``x`` showing the result ``y`` holds when it ``ran``."""
    held = data_of(x)
    if held is None:
        held = _Core.data.fget(x)           # (an op output not run yet: zeros)
    t = data_of(y) if ran else None
    if t is not None:
        if (t.shape != held.shape or t.dtype != held.dtype or t.device != held.device
                or t.untyped_storage().data_ptr() == held.untyped_storage().data_ptr()):
            return
        held.data.copy_(t.detach())         # (no version bump: a dynamic graph may read it)
        if t.grad_fn is not None and t._base is None:
            t.data = held.data              # a dynamic result keeps its autograd graph
            return
    _Core.data.fset(y, held.detach())
    if x.parent is not None:
        hand_out(held)                      # each run writes ``x``'s value there, then y's


def _in_place_of(roots: Sequence[Any]) -> list:
    """The in-place results' nodes among the graph of ``roots``, with their ``x``."""
    if not _IN_PLACE:
        return []
    nodes = {id(n) for n in topological_nodes(list(roots))}
    return [(node, x) for node, x in list(_IN_PLACE.items()) if id(node) in nodes]


def check_before_forward(roots: Sequence[Any]) -> None:
    """Before a forward of the graph of ``roots``: refuse it when it holds an in-place result
    whose ``x`` another function reads now (made after the in-place call), as NNabla 1.39's
    forward checks it again (``verify_during_forward``); else let each such result take the
    run's value in memory of its own (the run writes ``x``'s value into the array after it:
    :func:`share_after_forward` writes the result there then)."""
    pairs = _in_place_of(roots)
    for node, x in pairs:
        if reader_count(x) >= 2:            # (the in-place node reads it once)
            raise _refuse("scatter_nd", _BRANCHING.format(name="scatter_nd")
                          + " (a function made after the in-place call reads it)")
    for node, x in pairs:
        y = node.outputs[0]
        t = data_of(y) if y is not None else None
        if t is not None and t.grad_fn is None:
            _Core.data.fset(y, t.detach())  # (not handed out: the run gives it a tensor)


def share_after_forward(roots: Sequence[Any]) -> None:
    """After a forward of the graph of ``roots``: each in-place result in it holds its ``x``'s
    array again (a run that gave either new memory: a graph built dynamically run again)."""
    for node, x in _in_place_of(roots):
        y = node.outputs[0]
        if y is not None:
            _share(y, x, True)
