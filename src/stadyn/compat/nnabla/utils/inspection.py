"""``nnabla.utils.inspection`` on Stadyn: ``pprint``, the graph printed function by function.

``pprint(v)`` visits the functions ``v`` depends on in forward order and prints, for each, its
name and type (with the parameter scope of its second input when that is a registered
parameter: ``fc/affine/Affine(Affine)``), its depth (its ``rank``: 1 more once a forward has
run it, as in NNabla), arguments, input and output shapes and which inputs need a gradient;
with ``summary=True`` also the median, mean, standard deviation, minimum and maximum of every
input's and output's values and gradients (the intermediates' gradients are those the last
``backward()`` left, as in NNabla).  ``forward=True`` /
``backward=True`` run the graph first.

Also here, for ``forward``/``backward``'s ``function_pre_hook``/``function_post_hook``
(``_tracers.py``): ``NanInfTracer``, ``TimeProfiler``, ``CpuTimerCallback`` and their base
``FunctionHookCallbackBase``.  The arguments printed are Stadyn's declaration of each op's
attributes (``_function.py``).

Example:
    >>> import contextlib, io
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn
    >>> import stadyn.compat.nnabla.functions as F
    >>> from stadyn.compat.nnabla.utils.inspection import pprint
    >>> x = nn.Variable.from_numpy_array(np.array([[1.0, -2.0]]))
    >>> out = io.StringIO()
    >>> with contextlib.redirect_stdout(out):
    ...     pprint(F.relu(x) * 2.0, forward=True)
    >>> for line in out.getvalue().splitlines()[:7]:
    ...     print(line.replace(chr(9), "  "))
    ReLU(ReLU)
      Depth = 1
      Args: ['inplace=False']
      Inputs: [(1, 2)]
      Outputs: [(1, 2)]
      Backward Inputs: [False]
    MulScalar(MulScalar)
"""

from __future__ import annotations

import numpy as np

from ....graph import data_of, value_holder
from .._function import as_function
from .._parameter import get_parameters
from ._tracers import CpuTimerCallback, FunctionHookCallbackBase, NanInfTracer, TimeProfiler

__all__ = ["pprint", "FunctionHookCallbackBase", "NanInfTracer", "TimeProfiler",
           "CpuTimerCallback"]

_STATS = (("Med", np.median), ("Ave", np.mean), ("Std", np.std), ("Min", np.min),
          ("Max", np.max))


class _Printer:
    """The callback ``pprint`` visits the graph with (NNabla's ``PrettyPrinter``): prints each
    function; with ``hidden``, keeps ``functions``: ``{"name", "inputs", "outputs"}`` each."""

    def __init__(self, summary: bool = False, hidden: bool = False):
        self._summary, self._hidden = summary, hidden
        self.functions: list[dict] = []
        self._params = [(p, name.rsplit("/", 1)[0] if "/" in name else None)
                        for name, p in get_parameters().items()]

    def _scope_of(self, v):
        """The scope of the parameter ``v`` is, as NNabla's ``v in params.values()`` finds
        it: the registered Variable, or one handed out over its value (what
        ``get_parameter_or_create`` returns)."""
        holder, value = value_holder(v), data_of(v)
        for p, scope in self._params:
            if p is v or value_holder(p) is holder:
                return scope
            d = data_of(p)
            if value is not None and d is not None and d.data_ptr() == value.data_ptr() \
                    and tuple(d.shape) == tuple(value.shape):
                return scope
        return None

    def __call__(self, f) -> None:
        inputs, outputs = f.inputs, f.outputs
        scope = self._scope_of(inputs[1]) if len(inputs) > 1 else None
        name = (f"{scope}/{f.name}({f.info.type_name})" if scope
                else f"{f.name}({f.info.type_name})")
        print(name)
        print(f"\tDepth = {f.rank}")
        print("\tArgs:", [f"{k}={v}" for k, v in f.info.args.items()])
        print("\tInputs:", [i.shape for i in inputs])
        print("\tOutputs:", [o.shape for o in outputs])
        print("\tBackward Inputs:", [i.need_grad for i in inputs])
        if self._summary:
            for title, vs, what in (("Input Data", inputs, "d"), ("Output Data", outputs, "d"),
                                    ("Input Grads", inputs, "g"),
                                    ("Output Grads", outputs, "g")):
                print(f"\t{title}:")
                for label, stat in _STATS:
                    # NNabla's list of NumPy scalars as NumPy 1 printed it: ``[0.027189132]``
                    # (NumPy 2's repr would be ``[np.float32(0.027189132)]``)
                    values = ", ".join(str(stat(getattr(v, what))) for v in vs)
                    print(f"\t\t{label}: ", f"[{values}]")
        if self._hidden:
            self.functions.append({"name": name, "inputs": list(inputs),
                                   "outputs": list(outputs)})


def pprint(v, forward: bool = False, backward: bool = False, summary: bool = False,
           hidden: bool = False, printer: bool = False):
    """Print the functions ``v`` depends on (see the module docstring); returns the printer
    (its ``functions`` filled with ``hidden=True``) when ``printer`` is True."""
    if forward:
        v.forward()
    if backward:
        v.backward()
    p = _Printer(summary, hidden)
    v.visit(lambda f: p(as_function(f)))
    return p if printer else None
