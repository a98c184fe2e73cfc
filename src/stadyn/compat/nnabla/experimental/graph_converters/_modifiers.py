"""The modifiers that keep a graph's structure: ``IdentityModifier`` (an input replaced),
``NoGradModifier`` (parameters read without gradients), ``RemoveFunctionModifier`` (functions
skipped), ``BatchNormBatchStatModifier`` and ``TestModeModifier`` (batch normalisation with
its running statistics)."""

from __future__ import annotations

from ..._parameter import get_parameters
from ..._shared_arrays import same_variable
from ._graph_converter import FunctionModifier

__all__ = ["IdentityModifier", "NoGradModifier", "RemoveFunctionModifier",
           "BatchNormBatchStatModifier", "TestModeModifier"]


class IdentityModifier(FunctionModifier):
    """Rebuild every function as it is; ``inputs`` maps an input of the graph to the Variable
    to use instead (``copy_value=True`` copies the old input's value and gradient into it).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> x = nn.Variable.from_numpy_array(np.array([1.0, 2.0]))
        >>> x2 = nn.Variable.from_numpy_array(np.array([5.0, 6.0]))
        >>> y = GC.GraphConverter([GC.IdentityModifier({x: x2})]).convert(F.relu(x) * 2.0)
        >>> y.forward(); y.d.tolist()
        [10.0, 12.0]
    """

    def __init__(self, inputs=None, copy_value=False):
        super().__init__()
        self._input_dict = dict(inputs or {})
        self._copy_value = copy_value

    def modify(self, f, inputs):
        if inputs[0].parent is not None or not self._input_dict:
            return None
        old = f.inputs[0]
        new = next((v for k, v in self._input_dict.items() if same_variable(k, old)), None)
        if new is None:
            return None
        if self._copy_value:
            if tuple(new.shape) != tuple(old.shape):
                raise ValueError(f"IdentityModifier(copy_value=True): the replacing input's "
                                 f"shape {tuple(new.shape)} differs from the original's "
                                 f"{tuple(old.shape)}")
            new.d = old.d.copy()
            new.g = old.g.copy()
        replaced = [new] + list(inputs[1:])
        self.init_map_func_inputs(f, replaced)
        return self._call_function(f.info.type_name, replaced, f.info.args)

    def __finish__(self):
        self._input_dict = {}
        self._copy_value = False


class NoGradModifier(FunctionModifier):
    """Rebuild every function with its parameters read through Variables that need no
    gradient (the parameters themselves are unchanged).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.parametric_functions as PF
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> x = nn.Variable.from_numpy_array(np.ones((2, 3)))
        >>> y = GC.GraphConverter([GC.NoGradModifier()]).convert(PF.affine(x * 1.0, 2))
        >>> [v.need_grad for v in y.parent.inputs]
        [False, False, False]
    """

    def modify(self, f, inputs):
        params = list(get_parameters(grad_only=False).values())
        new = [v.get_unlinked_variable(need_grad=False)
               if any(same_variable(p, v) for p in params) else v for v in inputs]
        return self._call_function(f.info.type_name, new, f.info.args)


class RemoveFunctionModifier(FunctionModifier):
    """Skip the functions whose type is in ``rm_funcs``: each one's first input stands for
    its output (see :meth:`modify` for NNabla's case of a first function's output named
    ``'x'``).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> x = nn.Variable.from_numpy_array(np.array([-1.0, 2.0]))
        >>> z = GC.GraphConverter([GC.RemoveFunctionModifier(["ReLU"])]).convert(
        ...     F.relu(x * 1.0) * 3.0)
        >>> z.forward(); z.d.tolist()
        [-3.0, 6.0]
    """

    def __init__(self, rm_funcs=()):
        super().__init__()
        self._rm_funcs = list(rm_funcs)

    def modify(self, f, inputs):
        if f.info.type_name not in self._rm_funcs:
            return None
        # NNabla 1.39's special case: a removed first function (rank 0) whose next reader's
        # first input is named 'x' hands that reader that input, appended to its input list
        # (the reader of the removed output then has only its first input: a function of two
        # inputs fails, "needs at least 2 inputs (given 1)", as NNabla's does)
        next_func = f.outputs[0].function_references[0]
        first = next_func.inputs[0]
        if f.rank == 0 and first.name == "x":
            self._map_func_inputs.setdefault(next_func, []).append(first)
        return inputs[0]


_BATCH_NORMS = {"BatchNormalization": "batch_normalization",
                "FusedBatchNormalization": "fused_batch_normalization",
                "SyncBatchNormalization": "sync_batch_normalization"}


class BatchNormBatchStatModifier(FunctionModifier):
    """Rebuild batch normalisations (``BatchNormalization``, ``FusedBatchNormalization``,
    ``SyncBatchNormalization``) with ``batch_stat=False``: normalised with the running mean
    and variance.

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.parametric_functions as PF
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> x = nn.Variable.from_numpy_array(np.ones((2, 3)))
        >>> y = GC.GraphConverter([GC.BatchNormBatchStatModifier()]).convert(
        ...     PF.batch_normalization(x * 1.0))
        >>> y.parent.info.args["batch_stat"]
        False
    """

    def modify(self, f, inputs):
        name = _BATCH_NORMS.get(f.info.type_name)
        if name is None:
            return None
        args = dict(f.info.args, batch_stat=False)
        args.pop("no_scale", None)
        args.pop("no_bias", None)
        return self._call_function(f.info.type_name, inputs, args)


class TestModeModifier:
    """The modifiers that put a graph in test mode: ``[BatchNormBatchStatModifier(),
    RemoveFunctionModifier(rm_funcs)]`` (a list, as NNabla's ``TestModeModifier(...)`` is).

    Example:
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> [type(m).__name__ for m in GC.TestModeModifier(rm_funcs=["Dropout"])]
        ['BatchNormBatchStatModifier', 'RemoveFunctionModifier']
    """

    __test__ = False        # (not a pytest class)

    def __new__(cls, rm_funcs=()):
        return [BatchNormBatchStatModifier(), RemoveFunctionModifier(rm_funcs=rm_funcs)]
