"""``cntk.layers.AttentionModel``: Bahdanau-style additive attention of a decoder state over
all the steps of an encoder sequence, with CNTK 2.7's parameters and both of its modes.

``AttentionModel(attention_dim)(h_enc, h_dec)``: ``h_enc`` is a sequence (the encoder's axis),
``h_dec`` a sequence on another axis or one step of a recurrence over it.  For every decoder
step, score each encoder step ``e`` by ``w . tanh(P_enc h_enc[e] + P_dec h_dec)`` (three
bias-free ``Dense`` projections, each after a ``Stabilizer``), softmax the scores over the
encoder's real steps, and return the weighted sum of the encoder states (through a final
``Stabilizer``).  The weights are reachable as ``model.attention_weights``.

With ``attention_span`` and ``attention_axis`` (CNTK's deprecated mode) the encoder states are
the last ``attention_span`` steps of each encoder sequence (``PastValueWindow``) spliced along
``attention_axis``, invalid window slots scored ``-50`` lower, and the result keeps the window's
axes (a value of shape ``(1, 1, h)`` for ``attention_axis=-3``), as in CNTK.
"""

from __future__ import annotations

import warnings

from ... import functions as F
from ... import sequence as S
from ..._errors import StadynError
from ...layers import default_override_or, glorot_uniform, resolve
from . import sequence as seq
from ._adapt import unwrap, wrap
from ._layers import Dense, Label, LayerFunction, Stabilizer, default_options

__all__ = ["AttentionModel"]


class _Attention:
    """The attention computation (see :func:`AttentionModel`)."""

    def __init__(self, attention_dim: int, span, axis, init, go_backwards: bool, stabilize):
        self.span, self.axis, self.go_backwards = span, axis, go_backwards
        with default_options(bias=False):
            self.proj_enc = [Stabilizer(enable_self_stabilization=stabilize),
                             Dense(attention_dim, init=init, input_rank=1)]
            self.proj_dec = [Stabilizer(enable_self_stabilization=stabilize),
                             Dense(attention_dim, init=init, input_rank=1)]
            self.proj_tanh = [Stabilizer(enable_self_stabilization=stabilize),
                              Dense(1, init=init, input_rank=1)]
        self.final = Stabilizer(enable_self_stabilization=stabilize)
        self.label = Label("attention_weights")

    @property
    def parameters(self) -> list:
        """In CNTK 2.7's order (its walk from the output): the final stabilizer's, then each
        projection's weight before its stabilizer's, the tanh's projection first, the
        encoder's last."""
        layers = ([self.final] + self.proj_tanh[::-1] + self.proj_dec[::-1]
                  + self.proj_enc[::-1])
        return [p for layer in layers for p in layer.layer.parameters]

    @staticmethod
    def _apply(layers, x):
        for layer in layers:
            x = layer(x)
        return x

    def __call__(self, h_enc, h_dec):
        enc, dec = wrap(h_enc), wrap(h_dec)
        if self.span is None:
            return unwrap(self._over_all_steps(enc, dec))
        return unwrap(self._over_window(enc, dec))

    def _over_all_steps(self, enc, dec):
        values, valid = S.unpack(unwrap(enc), 0.0)          # (B, Te, h), (B, Te)
        values = wrap(values)
        scores_enc = seq.broadcast_as(self._apply(self.proj_enc, values), dec)
        valid = seq.broadcast_as(wrap(F.stack(valid, axis=-1)), dec)       # (.., Te, 1)
        scores = self._apply(self.proj_tanh,
                             wrap(F.tanh(unwrap(self._apply(self.proj_dec, dec) + scores_enc))))
        # a padded encoder step gets no weight: its score is -1e30 before the softmax
        masked = F.where(F.greater_scalar(unwrap(valid), 0.5), unwrap(scores),
                         F.constant(-1e30, ()))
        weights = self.label(wrap(F.softmax(masked, axis=-2)))
        states = seq.broadcast_as(values, dec)
        attended = F.sum(F.mul2(unwrap(weights), unwrap(states)), axis=-2)
        return self.final(wrap(attended))

    def _over_window(self, enc, dec):
        from ._sequence_layers import PastValueWindow
        from .ops import reduce_sum, softmax
        window, valid = PastValueWindow(self.span, axis=self.axis,
                                        go_backwards=self.go_backwards)(enc).outputs
        scores_enc = seq.broadcast_as(self._apply(self.proj_enc, window), dec)
        valid = seq.broadcast_as(valid, dec)
        scores = self._apply(self.proj_tanh,
                             wrap(F.tanh(unwrap(self._apply(self.proj_dec, dec) + scores_enc))))
        scores = scores + (valid - 1.0) * 50.0
        weights = self.label(softmax(scores, axis=self.axis))
        attended = reduce_sum(seq.broadcast_as(window, dec) * weights, axis=self.axis)
        return self.final(attended)


def AttentionModel(attention_dim: int, attention_span=None, attention_axis=None,
                   init=default_override_or(glorot_uniform()),
                   go_backwards=default_override_or(False),
                   enable_self_stabilization=default_override_or(True),
                   name: str = "") -> LayerFunction:
    """``AttentionModel(attention_dim)(h_enc, h_dec)``: the encoder states weighted by how well
    each matches the decoder state (see the module's text).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> enc = C.sequence.input_variable(3, sequence_axis=C.Axis("inputAxis"))
        >>> dec = C.sequence.input_variable(2, sequence_axis=C.Axis("labelAxis"))
        >>> att = C.layers.AttentionModel(4, name="att")
        >>> y = att(enc, dec)
        >>> out = y.eval({enc: [np.ones((3, 3), np.float32), np.ones((1, 3), np.float32)],
        ...               dec: [np.ones((2, 2), np.float32), np.ones((5, 2), np.float32)]})
        >>> [a.shape for a in out]          # one (h,) per decoder step
        [(2, 3), (5, 3)]
    """
    init = resolve("AttentionModel", "init", init)
    go_backwards = resolve("AttentionModel", "go_backwards", go_backwards)
    stabilize = resolve("AttentionModel", "enable_self_stabilization", enable_self_stabilization)
    if attention_span is None:
        if attention_axis is not None:
            raise ValueError("attention_span cannot be None when attention_axis is not None")
    elif attention_span <= 0:
        raise ValueError("attention_span must be a positive value")
    elif attention_axis is None:
        raise ValueError("attention_axis cannot be None when attention_span is not None")
    else:
        warnings.warn("Specifying non-default values for attention_span and attention_axis has "
                      "been deprecated since version 2.2. These arguments will be removed in the "
                      "future.", DeprecationWarning, stacklevel=2)
    if int(attention_dim) <= 0:
        raise StadynError(f"AttentionModel: attention_dim must be positive, got {attention_dim}")
    return LayerFunction(_Attention(int(attention_dim), attention_span, attention_axis, init,
                                    go_backwards, stabilize), "AttentionModel", name)
