"""The catalog ops that compute NNabla 1.39's way only when asked (``rule="nnabla"``), and the
wrapper that asks: ``F.batch_normalization`` and ``F.fused_batch_normalization`` (and the
``PF`` functions of the same names) take the batch variance in one pass, ``mean(x * x) -
mean(x) ** 2``, as NNabla's CPU kernel does (``BatchNormalization::forward_impl_batch``),
where Stadyn's own functions take it in two (case ``nnabla_fidelity_6.batch_norm__one_pass``);
``F.norm`` and ``F.norm_normalization`` compose the norm as NNabla does (its gradient at zeros)
and the latter ignores ``eps``, as NNabla 1.39 does (case ``norm__zeros``); ``F.batch_inv``
of a singular matrix gives what NNabla's LU gives, infinities and NaN, not an error (case
``batch_inv__singular``); ``F.layer_normalization``, ``F.instance_normalization`` and
``F.group_normalization`` (and their ``PF`` functions) are NNabla's batch normalisation over
the kept axes and so take the one-pass variance too, as does ``F.weight_standardization``
(its tensor normalisation over the channels), and ``F.abs``'s gradient is +1 at 0 and NaN
(cases in ``nnabla_fidelity_7``).  ``F.dropout``, ``F.rand``, ``F.randn``, ``F.randint``,
``F.random_flip``, ``F.random_crop``, ``F.random_shift``, ``F.random_choice``,
``F.random_erase`` and ``F.image_augmentation`` draw NNabla's numbers on the CPU: its
``std::mt19937`` and libstdc++'s distributions (cases in ``nnabla_random``,
``nnabla_fidelity_9``).  ``F.max`` and ``F.min`` scan from -1e8 / 1e8 as NNabla's CPU kernels
do: NaN passed by, a row of NaN or of values past the start gives the start (case
``nnabla_nan.nan__max_min_pooling_relu``); ``F.sort``'s backward gathers the gradient by
the sort index, as NNabla's (case ``nnabla_functions_more.sort``).
``F.softmax_cross_entropy``, ``F.categorical_cross_entropy`` and ``F.top_n_error`` truncate
a fractional float class id toward zero, as NNabla 1.39 does, where Stadyn's own refuse it
(case ``nnabla_fidelity_13.class_ids__fractional``).  ``F.leaky_relu`` (``alpha >= 0``)
takes its backward's mask from the output, as NNabla's does, so a written ``y.d`` changes the
gradient (case ``nnabla_review_mends_28.relu_leaky_relu__backward_reads_written_output``);
so do ``F.swish``, ``F.mul_n`` and ``F.prod`` read the output in their backward as NNabla's
kernels do (``ops/_output_grads.py``; case
``nnabla_fidelity_20.written_outputs__swish_mul_n_prod_read_them``).  ``F.sum``,
``F.mean``, ``F.reduce_sum`` and ``F.reduce_mean`` made in ``cpu:half`` compute in float16
and round after each addition, as NNabla's CPU kernels do (``ops/_half_sum.py``; case
``nnabla_half_40.half40__sum_mean_fold``); so do ``F.affine``/``PF.affine`` and the 2-d
``F.convolution``/``PF.convolution``, each product and partial sum rounded
(``ops/_half_matmul.py``, ``ops/_half_conv.py``; cases ``nnabla_half_40b``).
"""

from __future__ import annotations

import functools

#: NNabla's function name -> the ``rule`` its catalog op (or Stadyn's PF function) is given.
RULES = {"batch_normalization": "nnabla", "fused_batch_normalization": "nnabla",
         "norm": "nnabla", "norm_normalization": "nnabla", "batch_inv": "nnabla",
         "layer_normalization": "nnabla", "instance_normalization": "nnabla",
         "group_normalization": "nnabla", "abs": "nnabla", "weight_standardization": "nnabla",
         "dropout": "nnabla", "rand": "nnabla", "randn": "nnabla", "randint": "nnabla",
         "random_flip": "nnabla", "random_crop": "nnabla", "random_shift": "nnabla",
         "random_choice": "nnabla", "random_erase": "nnabla", "image_augmentation": "nnabla",
         "max": "nnabla", "min": "nnabla", "sort": "nnabla", "softmax_cross_entropy": "nnabla",
         "categorical_cross_entropy": "nnabla", "top_n_error": "nnabla", "leaky_relu": "nnabla",
         "swish": "nnabla", "mul_n": "nnabla", "prod": "nnabla", "sum": "nnabla",
         "mean": "nnabla", "affine": "nnabla",
         "convolution": "nnabla"}


def with_nnabla_rule(name: str, fn):
    """``fn`` (the op or PF function ``name``) called with ``rule=RULES[name]``; ``fn`` itself
    where NNabla computes as Stadyn does.

    Example:
        >>> import stadyn.functions as F
        >>> with_nnabla_rule("relu", F.relu) is F.relu
        True
    """
    rule = RULES.get(name)
    if rule is None:
        return fn

    @functools.wraps(fn)
    def call(*args, **kwargs):
        return fn(*args, rule=rule, **kwargs)
    return call
