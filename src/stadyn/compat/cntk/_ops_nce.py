"""``cntk.losses.nce_loss``: noise-contrastive estimation (CNTK 2.7's composition, C. Dyer's
notes), written with the compat layer's ops: ``random_sample`` draws the negatives (shared by
the minibatch, new on every evaluation) and the rest is deterministic.

With ``q`` the noise distribution (``noise_distribution`` normalised), ``n`` the number of
samples, ``log_prior = log(n q)``, ``entropy = sum(n q log(n q))`` and ``importance = q /
inclusion`` (``random_sample_inclusion_frequency``), a sample ``x`` with label ``y`` gets::

    l(c)      = W[c] . x + b[c]
    positive  = log_add_exp(l(y), log_prior[y]) - l(y)
    negative  = n * sum_s importance[s] * log_add_exp(l(s), log_prior[s]) - entropy
    loss      = positive + negative          (one number per sample)

where ``s`` runs over the drawn negatives.  ``q``, ``log_prior``, ``entropy`` and ``importance``
are computed once, when the loss is built, as CNTK does (a new noise distribution needs a new
loss).  The negatives are CNTK 2.7's own draws (``random_sample`` with duplicates), so the loss
is CNTK's for any noise distribution (``compat_cases/cntk_random_values.py``).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x, y = C.input_variable(3), C.input_variable(5)
    >>> W = C.parameter((5, 3), init=0.1)
    >>> b = C.parameter((5, 1), init=0.0)
    >>> loss = C.nce_loss(W, b, x, y, np.ones(5, np.float32), num_samples=4, seed=1)
    >>> loss.eval({x: np.ones((2, 3), np.float32), y: np.eye(5, dtype=np.float32)[:2]}).shape
    (2,)
"""

from __future__ import annotations

import numpy as np

from . import _graph as G
from ._adapt import batched, float_arrays, operand, sample_shape
from ._inferred_parameters import infer_times_transpose, pending_shape
from ._ops_math import log_add_exp
from ._ops_nn import SentinelValueForAutoSelectRandomSeed
from ._ops_reduce import reduce_sum
from ._ops_sampling import random_sample, random_sample_inclusion_frequency
from ._ops_shape import reshape
from ._ops_times import times, times_transpose
from ._variables import constant

__all__ = ["nce_loss"]


def _noise(noise_distribution) -> np.ndarray:
    v = noise_distribution
    if hasattr(v, "value"):                      # a CNTK Constant
        v = v.value
    q = np.asarray(v, np.float32)
    if q.ndim != 1:
        raise ValueError(f"nce_loss: noise_distribution must be a vector, got shape {q.shape}")
    if not np.isfinite(q).all() or (q <= 0).any():
        raise ValueError("nce_loss: the entries of noise_distribution must be positive numbers")
    return q


def _infer_input_axis(weights, inputs) -> None:
    """CNTK 2.7's ``NCELoss`` (``Function.cpp``'s NCELoss): a ``weights`` ``(classes, ?)``
    whose input axis is inferred takes the length of the vector ``inputs`` (CNTK builds an
    unused ``Times`` for it); its class axis is never inferred."""
    shape = pending_shape(weights)
    if shape is None or len(shape) != 2 or shape[1] != -1:
        return
    if len(sample_shape(inputs)) == 1:
        infer_times_transpose(weights, inputs)


@float_arrays("inputs", "labels", "noise_distribution")
def nce_loss(weights, biases, inputs, labels, noise_distribution, num_samples: int = 32,
             allow_duplicates: bool = True, seed=SentinelValueForAutoSelectRandomSeed,
             name: str = ""):
    """Noise-contrastive estimation over ``len(noise_distribution)`` classes: ``weights``
    ``(classes, dim)``, ``biases`` ``(classes, 1)``, ``inputs`` ``(dim,)`` and one-hot
    ``labels`` ``(classes,)`` per sample; ``num_samples`` negatives drawn by
    ``noise_distribution`` (positive, not necessarily normalised), shared by the minibatch.
    One number per sample (see the module docstring for the formula).  Weights
    ``(classes, InferredDimension)`` take the length of ``inputs`` there, as CNTK 2.7's do.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x, y = C.input_variable(2), C.input_variable(3)
        >>> W, b = C.parameter((3, 2), init=0.5), C.parameter((3, 1), init=0.0)
        >>> q = np.array([1e-9, 1.0, 1e-9], np.float32)        # every negative is class 1
        >>> loss = C.nce_loss(W, b, x, y, q, num_samples=2, seed=3)
        >>> loss.eval({x: np.zeros((1, 2), np.float32), y: [[1, 0, 0]]}).round(4)
        array([0.8109], dtype=float32)

        (all logits 0: ``2 * log(1 + 2) - 2 * log(2)`` from the negatives, ~0 from the label)
    """
    q = _noise(noise_distribution)
    classes = q.shape[0]
    _infer_input_axis(weights, inputs)
    w, b = operand(weights), operand(biases)
    if len(w.shape) != 2 or int(w.shape[0]) != classes:
        raise ValueError(f"nce_loss: weights must be ({classes}, input dimension), got "
                         f"{tuple(w.shape)}")
    if tuple(b.shape) != (classes, 1):
        raise ValueError(f"nce_loss: biases must be ({classes}, 1), got {tuple(b.shape)}")
    if tuple(sample_shape(labels)) != (classes,):
        raise ValueError(f"nce_loss: labels must be one-hot vectors of {classes} classes, got "
                         f"shape {tuple(sample_shape(labels))}")
    if tuple(sample_shape(inputs)) != (int(w.shape[1]),):
        raise ValueError(f"nce_loss: inputs must be vectors of {int(w.shape[1])}, got shape "
                         f"{tuple(sample_shape(inputs))}")
    n = int(num_samples)

    noise = (q / q.sum(dtype=np.float32)).astype(np.float32)
    prior = np.float32(n) * noise
    log_prior = np.log(prior)
    entropy = np.float32((prior * log_prior).sum(dtype=np.float32))
    inclusion = np.asarray(random_sample_inclusion_frequency(
        constant(noise), n, allow_duplicates, seed).eval(), np.float32)
    importance = constant((noise / inclusion).astype(np.float32).reshape(classes, 1),
                          name="importanceWeights")
    log_prior_column = constant(log_prior.reshape(classes, 1), name="logNoisePrior")

    negatives = random_sample(constant(noise, name="noise"), n, allow_duplicates, seed)
    sampled_importance = reshape(times(negatives, importance), (n,))
    negative_logits = times_transpose(inputs, times(negatives, weights)) + \
        reshape(times(negatives, biases), (n,))                               # (n,) per sample
    negative_priors = reshape(times(negatives, log_prior_column), (n,))
    loss_negative = float(n) * reduce_sum(
        sampled_importance * log_add_exp(negative_logits, negative_priors)) - \
        constant(np.asarray(entropy), name="noisePriorEntropy")

    positive_logits = reduce_sum(inputs * times(labels, weights)) + \
        reshape(times(labels, biases), (1,))
    loss_positive = log_add_exp(positive_logits, reshape(times(labels, log_prior_column),
                                                         (1,))) - positive_logits
    loss = reshape(loss_positive + loss_negative, ())
    if batched(inputs):
        G.set_op_name(loss.variable, "NCE")
    if name:
        loss.variable.name = name
    return loss
