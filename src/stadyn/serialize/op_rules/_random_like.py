"""Rules of the random values of another value's shape and of CNTK's sampling ops
(``stadyn/ops/_random_like.py``).

``rand_like`` and ``randn_like`` are ONNX's ``RandomUniformLike`` and ``RandomNormalLike`` both
ways, ``bernoulli_like`` exports as ``RandomUniformLike`` compared with ``p`` and ``gumbel_like``
as ``loc - scale * log(-log(RandomUniformLike))``.  An ONNX runtime draws from its own
generator: the distributions are the same, the values are not (a seed of the op's own is written
as ONNX's ``seed``).  The sampling ops have no ONNX counterpart.
"""

from __future__ import annotations

from ... import functions as F
from ...cntk_semantics import cannot_run
from ._cntk_read_others import cntk_stream, random_distribution_cntk
from ._table import Unmapped, register_rules


def _seed(attrs) -> dict:
    seed = int(attrs.get("seed", -1))
    return {} if seed == -1 else {"seed": float(seed)}


def _uniform(g, x, low, high, attrs):
    return g.op("RandomUniformLike", [x], low=float(low), high=float(high), **_seed(attrs))


def _rand_like_onnx(g, inputs, attrs):
    """RandomUniformLike"""
    return _uniform(g, inputs[0], attrs["low"], attrs["high"], attrs)


def _randn_like_onnx(g, inputs, attrs):
    """RandomNormalLike"""
    return g.op("RandomNormalLike", [inputs[0]], mean=float(attrs["mu"]),
                scale=float(attrs["sigma"]), **_seed(attrs))


def _bernoulli_like_onnx(g, inputs, attrs):
    """RandomUniformLike < p, as a float"""
    x = inputs[0]
    below = g.op("Less", [_uniform(g, x, 0.0, 1.0, attrs), g.scalar(float(attrs["p"]), x)])
    return g.cast(below, g.dtype(x))


def _gumbel_like_onnx(g, inputs, attrs):
    """loc - scale * log(-log(RandomUniformLike))"""
    x = inputs[0]
    u = g.op("Max", [_uniform(g, x, 0.0, 1.0, attrs), g.scalar(1e-30, x)])
    noise = g.op("Neg", [g.op("Log", [g.op("Neg", [g.op("Log", [u])])])])
    return g.op("Add", [g.op("Mul", [noise, g.scalar(float(attrs["scale"]), x)]),
                        g.scalar(float(attrs["loc"]), x)])


def _seed_of(node) -> int:
    seed = node.attr("seed")
    return -1 if seed is None else int(seed)


def _dtype_given(node):
    if node.attr("dtype") is not None:
        node.unsupported("a dtype other than the input's")


def _import_uniform(node):
    _dtype_given(node)
    return F.rand_like(node.var(0), float(node.attr("low", 0.0)), float(node.attr("high", 1.0)),
                       seed=_seed_of(node))


def _import_normal(node):
    _dtype_given(node)
    return F.randn_like(node.var(0), float(node.attr("mean", 0.0)),
                        float(node.attr("scale", 1.0)), seed=_seed_of(node))


_COMPOSED = Unmapped("exported as RandomUniformLike and element-wise ops, which import one by "
                     "one")
register_rules(F.rand_like, onnx_export=_rand_like_onnx,
               onnx_import={"RandomUniformLike": _import_uniform},
               cntk_import={"RandomDistribution": random_distribution_cntk})
register_rules(F.randn_like, onnx_export=_randn_like_onnx,
               onnx_import={"RandomNormalLike": _import_normal})
register_rules(F.bernoulli_like, onnx_export=_bernoulli_like_onnx, onnx_import=_COMPOSED)
register_rules(F.gumbel_like, onnx_export=_gumbel_like_onnx, onnx_import=_COMPOSED)


def _batched_weights(node, shape: tuple):
    """``node``'s output where its weights have the batch axis (and no sequence axis):
    CNTK 2.7's load succeeds, its evaluation fails naming the weights' node
    (:func:`stadyn.cntk_semantics.cannot_run`)."""
    uid, op = node.producer(0)
    where = f"Node '{uid}' ({op} operation)" if uid else "The weights"
    return cannot_run(node.var(0), shape, where)


def _class_weights(node):
    """A CNTK sampling function's weights as a vector (a row ``(1, n)`` reshaped)."""
    weights = node.var(0)
    if node.lead(0) or len(weights.shape) not in (1, 2) or \
            (len(weights.shape) == 2 and weights.shape[0] != 1):
        node.unsupported(f"weights of shape {tuple(weights.shape)} (a vector of class weights "
                         "is read)")
    if len(weights.shape) == 2:
        weights = F.reshape(weights, (weights.shape[1],))
    return weights


def _inclusion_frequency_cntk(node):
    """CNTK's ``RandomSampleInclusionFrequency``: how often each class is expected among
    ``numSamples`` drawn by the weights (a vector, or a row ``(1, n)``: a row out), with
    duplicates where ``allowDuplicates``, CNTK's estimate drawn from the stream of ``rngSeed``
    moved on by ``rngOffset`` (:func:`cntk_stream`)."""
    if node.lead(0) == 1 and len(node.var(0).shape) == 2:
        return _batched_weights(node, tuple(node.var(0).shape[1:]))
    out = F.random_sample_inclusion_frequency(_class_weights(node),
                                              int(node.attr("numSamples", 1)),
                                              bool(node.attr("allowDuplicates", True)),
                                              seed=cntk_stream(node))
    if len(node.var(0).shape) == 2:
        out = F.reshape(out, (1, out.shape[0]))
    return out


def _random_sample_cntk(node):
    """CNTK's ``RandomSample``: ``numSamples`` classes drawn by the weights (a vector, or a
    row ``(1, n)``), with duplicates where ``allowDuplicates``, from the stream of ``rngSeed``
    moved on by ``rngOffset`` (:func:`cntk_stream`); the draws are Stadyn's (CNTK's generator
    is its own), dense one-hot rows."""
    if node.lead(0) == 1 and len(node.var(0).shape) == 2:
        return _batched_weights(node, (int(node.attr("numSamples", 1)), node.var(0).shape[1]))
    weights = _class_weights(node)
    return F.random_sample(weights, int(node.attr("numSamples", 1)),
                           bool(node.attr("allowDuplicates", True)),
                           seed=cntk_stream(node))


for _f in (F.random_sample, F.random_sample_inclusion_frequency):
    register_rules(_f, onnx_export=Unmapped("ONNX has no weighted sampling of distinct classes "
                                            "(CNTK's random_sample)"),
                   onnx_import=Unmapped("ONNX has no weighted sampling of distinct classes"),
                   cntk_import={"RandomSample": _random_sample_cntk} if _f is F.random_sample
                   else {"RandomSampleInclusionFrequency": _inclusion_frequency_cntk})
