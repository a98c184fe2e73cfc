"""Normalisation layers as CNTK 2.7 defines them: batch normalisation (CNTK's parameter shapes,
sample count and running-average rule), layer normalisation, and the self-stabiliser."""

from __future__ import annotations

import math

import numpy as np

from .. import functions as F
from ._layers import Layer
from ._options import default_override_or, resolve

__all__ = ["BatchNormalization", "LayerNormalization", "Stabilizer"]


class BatchNormalization(Layer):
    """Batch normalisation: per channel with ``map_rank=1`` (images), per element of a sample
    otherwise.  ``beta``/``gamma`` (CNTK's ``bias``/``scale``) and the running ``mean``/``var``
    are flat vectors, one value per channel or element, and ``count`` the samples seen (CNTK's
    ``aggregate_*``).  The running statistics start at 0; the first training minibatch replaces
    them and later ones blend in with ``1 - exp(-M / normalization_time_constant)`` for M
    samples (see :func:`stadyn.functions.cntk_batch_normalization`); a sequence is normalised
    step by step, with CNTK 2.7's statistics over its steps.  ``sync=True`` normalises
    with the statistics of the global minibatch of all data-parallel workers
    (``F.sync_batch_normalization``, with its momentum rule and ``(1, C, 1, 1)`` statistics);
    ``default_options(sync=True)`` turns it on for a whole model.

    Example:
        >>> import stadyn as sd, stadyn.layers as L
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     bn = L.BatchNormalization(map_rank=1)
        ...     y = bn(sd.Variable((4, 3, 5, 5)))
        ...     y.shape, [p.shape for p in bn.parameters]
        ((4, 3, 5, 5), [(3,), (3,), (3,), (3,), ()])
    """

    def __init__(self, map_rank=default_override_or(None), init_scale=1,
                 normalization_time_constant=default_override_or(5000), blend_time_constant=0,
                 epsilon=default_override_or(1e-5), use_cntk_engine=default_override_or(False),
                 disable_regularization=default_override_or(False), name: str = "",
                 sync=default_override_or(False)):
        super().__init__(name)
        self.sync = bool(resolve("BatchNormalization", "sync", sync))
        self.map_rank = resolve("BatchNormalization", "map_rank", map_rank)
        if self.map_rank not in (None, 1):
            raise ValueError("BatchNormalization: map_rank can be 1 or None")
        self.init_scale = init_scale
        self.time_constant = resolve("BatchNormalization", "normalization_time_constant",
                                     normalization_time_constant)
        self.blend_time_constant = blend_time_constant
        self.epsilon = resolve("BatchNormalization", "epsilon", epsilon)

    def apply(self, x):
        spatial = self.map_rank == 1
        if self.sync:
            return self._sync(x, spatial)
        lengths = x.sequence_lengths        # a sequence: normalised step by step
        lead = 1 if lengths is None else 2
        size = x.shape[lead] if spatial else math.prod(x.shape[lead:])
        beta = self.parameter("beta", (size,), 0.0)
        gamma = self.parameter("gamma", (size,), float(self.init_scale))
        mean = self.parameter("mean", (size,), 0.0, need_grad=False)
        var = self.parameter("var", (size,), 0.0, need_grad=False)
        count = self.parameter("count", (), 0.0, need_grad=False)
        tc = float(self.time_constant) if self.time_constant is not None else 0.0
        return F.cntk_batch_normalization(x, gamma, beta, mean, var, count, lengths, spatial, tc,
                                          float(self.blend_time_constant or 0.0),
                                          float(self.epsilon))

    def _sync(self, x, spatial: bool):
        axes = [1] if spatial else list(range(1, x.ndim))
        shape = tuple(x.shape[i] if i in axes else 1 for i in range(x.ndim))
        beta = self.parameter("beta", shape, 0.0)
        gamma = self.parameter("gamma", shape, float(self.init_scale))
        mean = self.parameter("mean", shape, 0.0, need_grad=False)
        var = self.parameter("var", shape, 1.0, need_grad=False)
        return F.sync_batch_normalization(x, beta, gamma, mean, var, axes=axes,
                                          eps=self.epsilon, batch_stat=None,
                                          time_constant=float(self.time_constant or 0.0))


class LayerNormalization(Layer):
    """Layer normalisation: each sample minus its mean, divided by its standard deviation plus
    ``epsilon``, times ``scale`` plus ``bias`` (learned, of the sample's last axis).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.layers as L
        >>> with sd.parameter_registry(sd.ParameterRegistry()), sd.auto_forward():
        ...     ln = L.LayerNormalization(initial_scale=2, initial_bias=1)
        ...     y = ln(sd.Variable.from_numpy_array(np.array([[4.0, 0.0, 0.0, 4.0]])))
        >>> y.d.round(4).tolist()
        [[3.0, -1.0, -1.0, 3.0]]
    """

    def __init__(self, initial_scale=1, initial_bias=0, epsilon=default_override_or(0.00001),
                 name: str = ""):
        super().__init__(name)
        self.initial_scale = float(initial_scale)
        self.initial_bias = float(initial_bias)
        self.epsilon = float(resolve("LayerNormalization", "epsilon", epsilon))

    def apply(self, x):
        axes = list(range(1, x.ndim))
        shape = (x.shape[-1],)
        scale = self.parameter("scale", shape, self.initial_scale)
        bias = self.parameter("bias", shape, self.initial_bias)
        x0 = F.sub2(x, F.mean(x, axis=axes, keepdims=True))
        return F.add2(F.mul2(F.div2(x0, self.deviation(x0, axes)), scale), bias)

    def deviation(self, x0, axes: list):
        """The divisor of the centred ``x0``: its standard deviation over ``axes`` plus
        ``epsilon`` (where not 0).

        Example:
            >>> import numpy as np, stadyn as sd, stadyn.layers as L
            >>> with sd.auto_forward():
            ...     x0 = sd.Variable.from_numpy_array(np.array([[3.0, -3.0]]))
            ...     L.LayerNormalization(epsilon=1).deviation(x0, [1]).d.tolist()
            [[4.0]]
        """
        std = F.sqrt(F.mean(F.mul2(x0, x0), axis=axes, keepdims=True))
        return F.add_scalar(std, self.epsilon) if self.epsilon else std


class Stabilizer(Layer):
    """The self-stabiliser: ``x`` times a learned scalar ``softplus(alpha, steepness)``
    (``log(1 + exp(steepness * alpha)) / steepness``, 1 at the start).
    ``enable_self_stabilization=False`` makes it the identity.  ``per_element=True`` learns one
    ``alpha`` per element of ``x``'s last axis instead of one scalar (BrainScript's
    ``BS.Parameters.StabilizeElements``; the layers, ``BS.Parameters.Stabilize`` and CNTK's
    ``Stabilizer`` use the scalar).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.layers as L
        >>> with sd.parameter_registry(sd.ParameterRegistry()), sd.auto_forward():
        ...     y = L.Stabilizer()(sd.Variable.from_numpy_array(np.array([[2.0, -1.0]])))
        >>> y.d.round(5).tolist()
        [[2.0, -1.0]]
    """

    def __init__(self, steepness=4, enable_self_stabilization=default_override_or(True),
                 name: str = "", per_element: bool = False):
        super().__init__(name)
        self.steepness = float(steepness)
        self.per_element = bool(per_element)
        self.enabled = bool(resolve("Stabilizer", "enable_self_stabilization",
                                    enable_self_stabilization))

    def apply(self, x):
        if not self.enabled:
            return F.identity(x)
        k = self.steepness
        shape = (x.shape[-1],) if self.per_element else ()
        alpha = self.parameter("alpha", shape, float(np.log(np.expm1(k)) / k))
        beta = F.mul_scalar(F.softplus(F.mul_scalar(alpha, k)), 1.0 / k)
        return F.mul2(beta, x)
