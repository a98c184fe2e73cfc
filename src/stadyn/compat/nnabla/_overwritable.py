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
not), for output 0 of the function, by its NNabla name.

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

from typing import Any, Callable

from ._function import as_function
from ._refusals import _refuse

__all__ = ["check_overwritable", "READS_OUTPUT"]


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
    reads = READS_OUTPUT.get(fn.name)
    if reads is None or not reads(dict(fn.info.args)):
        return
    if not any(getattr(v, "need_grad", False) for v in fn.inputs):
        return
    raise _refuse(name, f"out= is the output of {fn.name}, whose gradient reads that output, "
                       f"which {name} would overwrite in place (NNabla: \"Modifying data is "
                       f"prohibited by the parent function\"); pass a copy, F.identity(x), "
                       f"or compute x from inputs that need no gradient")
