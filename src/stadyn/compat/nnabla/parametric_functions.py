"""``nnabla.parametric_functions`` on Stadyn (NNabla also exports ``get_parameter_or_create``
here, the one of ``nnabla``, the decorator ``parametric_function_api`` and the initialisers
``ConstantInitializer``, ``NormalInitializer``, ``UniformInitializer`` and
``calc_uniform_lim_glorot`` of ``nnabla.initializer``).  The attention layers
(``multi_head_attention``, ``transformer*``) are in ``_pf_attention.py``."""

import contextlib
import functools
import inspect
import math

import numpy as np

from ... import functions as _F
from ..._errors import ArgumentError
from ...parametric import get_parameter, parameter_scope
from ...parametric_functions import *  # noqa: F401,F403
from ...parametric_functions import __all__ as _pf_all
from ...parametric_functions import batch_normalization_parameters as _bn_parameters
from ._float_inputs import as_float32
from ._kept_dtypes import keeping_initializer_arrays
from ._lowrank_dtypes import keeping_factor_dtypes
from ._lstm_cell import LSTMCell
from ._ndarray import accepting_ndarrays as _accepting_ndarrays
from ._parameter import RefusedInitializer, get_parameter_or_create
from ._proto_variable import recording_proto_variables as _recording_proto_variables
from ._bn_stats import with_stats_as_nodes as _with_stats_as_nodes
from ._counters import counting_in_int32 as _counting_in_int32
from ._refusals import check_fused_batch_normalization as _check_fused
from ._rules import with_nnabla_rule as _with_nnabla_rule
from ._pf_attention import (multi_head_attention, transformer, transformer_decode,
                            transformer_encode)
from .initializer import (ConstantInitializer, NormalInitializer, UniformInitializer,
                          WeightNormalizationScaleInitializer, calc_uniform_lim_glorot)

__all__ = list(_pf_all) + ["get_parameter_or_create", "get_parameter", "parametric_function_api",
                           "weight_normalization", "WeightNormalizationScaleInitializer",
                           "mean_subtraction"]
# NNabla's attention layers (``_pf_attention.py``) and stateful LSTM cell (``_lstm_cell.py``).
__all__ += ["LSTMCell", "multi_head_attention", "transformer", "transformer_encode",
            "transformer_decode"]
# NNabla's PF module imports these initialisers, and users reach them as ``PF.<name>``.
__all__ += ["ConstantInitializer", "NormalInitializer", "UniformInitializer",
            "calc_uniform_lim_glorot"]


# NNabla takes a float unit count and truncates it (``PF.convolution(x, C / 2, ...)`` in
# nnabla-examples' MNIST ResNet; 2.5 -> 2); Stadyn's own PF wants ints.  Each PF function with a
# unit count gets it as NNabla would pass it on; a float below 1 stays as given, for Stadyn's
# error to show.
_UNIT_COUNTS = ("n_outmaps", "outmaps")


def _truncated(value):
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and value >= 1:
        return int(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_truncated(v) for v in value)
    return value


def _rewriting_arguments(func, rewrites: dict):
    """``func`` with named arguments rewritten before each call: ``rewrites`` maps a parameter
    name to what its value becomes (one ``bind_partial`` per call for all of them); ``func``
    itself where none of the names is its parameter."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return func
    rewrites = {n: f for n, f in rewrites.items() if n in signature.parameters}
    if not rewrites:
        return func

    @functools.wraps(func)
    def call(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs)
        for n, rewrite in rewrites.items():
            if n in bound.arguments:
                bound.arguments[n] = rewrite(bound.arguments[n])
        return func(*bound.args, **bound.kwargs)
    return call


# NNabla 1.39's parametric functions read an int32 input as float32 data, as its functions do
# (``PF.affine``, ``PF.convolution``, ``PF.batch_normalization`` of int32 ``x`` give float32:
# case ``nnabla_fidelity_5.pf_integer_inputs__float32``); ``PF.embed`` reads it as indices.
_DATA_ARGS = ("inp", "x", "h", "c", "z", "w")


# NNabla 1.39 makes a parameter from an initializer that is None, a NumPy array or callable
# and refuses anything else when the parameter is made (``ValueError``): a number
# (``w_init=0.5``), a list or tuple of values, an NdArray or Variable, inside ``param_init``'s
# dict too (case ``nnabla_fidelity_11.pf_initializers_neither_arrays_nor_callable``).
# Stadyn's own PF functions fill the parameter with a number and take a list as an array.
def _refused_unless_initializer(value):
    if value is None or isinstance(value, np.ndarray) or callable(value):
        return value
    return RefusedInitializer(value)


def _refused_unless_initializers(value):
    """``param_init``: a dict of initializers by parameter name, each checked."""
    if isinstance(value, dict):
        return {k: _refused_unless_initializer(v) for k, v in value.items()}
    return value


def _nnabla_arguments(name: str, func):
    """``func`` (the parametric function ``name``) taking its arguments as NNabla 1.39 does:
    float unit counts truncated, initializers neither arrays nor callable refused, data inputs
    read as float32 (``embed``'s are indices)."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return func
    rewrites = dict.fromkeys(_UNIT_COUNTS, _truncated)
    rewrites.update((n, _refused_unless_initializer) for n in params
                    if n.endswith("_init") or n == "initializer")
    if "param_init" in params:
        rewrites["param_init"] = _refused_unless_initializers
    if name != "embed":
        rewrites.update(dict.fromkeys(_DATA_ARGS, as_float32))
    return keeping_initializer_arrays(keeping_factor_dtypes(name,
                                                            _rewriting_arguments(func, rewrites)))


# Given an ``nn.NdArray`` (``rrdb_net(val_lq, ...)`` on an NdArray in nnabla-examples' ESRGAN
# validation), NNabla 1.39's parametric functions compute at once, as its functions do: the
# parameters are made (registered Variables) or found as with a Variable, and the output is an
# NdArray, no graph (``_ndarray.py``'s imperative mode; case
# ``nnabla_examples_5.examples_pf_on_ndarrays``).
for _name in _pf_all:
    if inspect.isfunction(globals()[_name]):
        globals()[_name] = _with_nnabla_rule(_name, globals()[_name])  # (``_rules.py``)
        globals()[_name] = _nnabla_arguments(_name, globals()[_name])
        globals()[_name] = _accepting_ndarrays(globals()[_name])
        # given an nn.ProtoVariable, the call is recorded in the proto graph (on stand-ins)
        globals()[_name] = _recording_proto_variables(globals()[_name])
del _name
# (NNabla's PF.batch_normalization calls its F.batch_normalization: the same assertion and
# statistics nodes, ``_bn_stats.py``)
batch_normalization = _with_stats_as_nodes("batch_normalization",
                                           batch_normalization)  # noqa: F405


def _refusing_several_axes(fn):
    """``fn`` (``PF.fused_batch_normalization``) refusing what NNabla 1.39's refuses over
    several axes (its PF calls its ``F.fused_batch_normalization``: ``_refusals.py``)."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        given = signature.bind(*args, **kwargs)
        given.apply_defaults()
        a = given.arguments
        inp, axes = a.get("inp"), a.get("axes", (1,))
        made = None                     # the shape NNabla's PF gives beta and gamma
        if inp is not None:
            made = [1] * len(inp.shape)
            for i in (axes if isinstance(axes, (list, tuple)) else [axes]):
                made[i] = inp.shape[i]
            made = np.empty(made, np.float32)
        try:
            _check_fused(inp, None if a.get("no_bias") else made,
                         None if a.get("no_scale") else made, z=a.get("z"), axes=axes,
                         batch_stat=a.get("batch_stat", True),
                         nonlinearity=a.get("nonlinearity", "relu"),
                         output_stat=a.get("output_stat", False))
        except (AssertionError, RuntimeError, ValueError):
            # NNabla's PF has made its parameters when its F fails, and no forward writes its
            # running statistics: an integer param_init's stay integers, whatever batch_stat
            # (as made for batch_stat=False; case nnabla_fidelity_26.
            # PF_fused_batch_normalization__refused_integer_statistics)
            _bn_parameters(inp, axes, a["fix_parameters"],
                           _refused_unless_initializers(a["param_init"]), a["no_scale"],
                           a["no_bias"], batch_stat=False, name=a["name"],
                           fn="fused_batch_normalization")
            raise
        return fn(*args, **kwargs)
    return call


fused_batch_normalization = _refusing_several_axes(fused_batch_normalization)  # noqa: F405


def parametric_function_api(scope_name=None, param_desc=None):
    """Decorator for a parametric function of one's own (NNabla's): the function is called in
    the parameter scope ``scope_name`` (default: its own name; NNabla 1.39 fails with a
    ``NameError`` without one), and gets a keyword ``name``
    that opens a scope above it.  ``param_desc`` (NNabla's docstring material) is accepted and
    unused.  The function must take ``fix_parameters``, as NNabla requires.

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla.parametric_functions as PF
        >>> @PF.parametric_function_api("scaled")
        ... def scaled(x, fix_parameters=False):
        ...     return x * PF.get_parameter_or_create("s", (1,), PF.ConstantInitializer(2.0))
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = scaled(sd.Variable((2,)), name="l1")
        ...     list(sd.get_parameters())
        ['l1/scaled/s']
    """
    def decorate(func):
        scope = scope_name if scope_name is not None else func.__name__
        if "fix_parameters" not in inspect.signature(func).parameters:
            raise ArgumentError(f"parametric_function_api: {func.__name__} must take "
                                "fix_parameters, as NNabla requires of a parametric function")

        @functools.wraps(func)
        def call(*args, name=None, **kwargs):
            if name is None:
                with parameter_scope(scope):
                    return func(*args, **kwargs)
            with parameter_scope(name), parameter_scope(scope):
                return func(*args, **kwargs)
        call.__scope_name__ = scope
        return call
    return decorate


def weight_normalization(v, dim=0, eps=1e-12, g_init=None, fix_parameters=False, name=None):
    """NNabla's ``PF.weight_normalization``: ``F.weight_normalization(v, g, dim, eps)`` with the
    scale ``wn/g`` of shape ``(v.shape[dim],)``, by default initialised to the norms of ``v``'s
    slices (:class:`~stadyn.compat.nnabla.initializer.WeightNormalizationScaleInitializer`),
    so the weights keep their magnitude at first.  Typically ``PF.affine(..., apply_w=lambda w:
    PF.weight_normalization(w, dim=1))``.  ``name`` opens a scope above ``wn``.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     w = sd.Variable.from_numpy_array(np.array([[3.0, 4.0], [0.0, 1.0]]))
        ...     y = PF.weight_normalization(w)
        ...     sd.get_parameters()["wn/g"].d.tolist()
        [5.0, 1.0]
    """
    with contextlib.ExitStack() as scopes:
        if name is not None:
            scopes.enter_context(parameter_scope(name))
        scopes.enter_context(parameter_scope("wn"))
        if g_init is None:
            g_init = WeightNormalizationScaleInitializer(v, dim, eps)
        g = get_parameter_or_create("g", (v.shape[dim],), g_init, need_grad=True,
                                    as_need_grad=not fix_parameters)
    return _F.weight_normalization(v, g, dim, eps)


def mean_subtraction(inp, base_axis=1, update_running_mean=True, fix_parameters=False,
                     name=None):
    """NNabla's ``PF.mean_subtraction``: ``F.mean_subtraction`` with the running mean
    ``mean_subtraction/mean`` (``inp.shape[base_axis:]``, zeros) and the batch counter
    ``mean_subtraction/t`` (``(1,)``, zero; int32 from the first forward on, as NNabla's:
    ``_counters.py``), neither trained.  ``name`` opens a scope above.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = PF.mean_subtraction(sd.Variable((4, 3)))
        ...     sorted(sd.get_parameters(grad_only=False))
        ['mean_subtraction/mean', 'mean_subtraction/t']
    """
    with contextlib.ExitStack() as scopes:
        if name is not None:
            scopes.enter_context(parameter_scope(name))
        scopes.enter_context(parameter_scope("mean_subtraction"))
        mean = get_parameter_or_create("mean", tuple(inp.shape[base_axis:]), None,
                                       need_grad=False)
        t = get_parameter_or_create("t", (1,), None, need_grad=False)
    # (t is cast to int32 at each forward that updates, as NNabla's: _counters.py)
    return _MEAN_SUBTRACTION(inp, mean, t, base_axis=base_axis,
                             update_running_mean=update_running_mean)


_MEAN_SUBTRACTION = _counting_in_int32("mean_subtraction", _F.mean_subtraction)

# the PF functions outside the catalog's list record themselves too, given nn.ProtoVariables
# (NNabla's are made of recording F functions: PF.mean_subtraction records a MeanSubtraction)
for _name in ("weight_normalization", "mean_subtraction", "multi_head_attention",
              "transformer", "transformer_encode", "transformer_decode"):
    globals()[_name] = _recording_proto_variables(globals()[_name])
del _name
