"""Rules of NNabla's array functions, gradient shapers and masked writes
(``stadyn/ops/_nnabla_array.py``, ``_nnabla_grad.py``, ``_nnabla_index.py``,
``_nnabla_stateful.py``, ``_nnabla_inq.py``, ``_nnabla_vat.py``, ``_random_more.py``): none
has an ONNX mapping yet; each is one NNabla 1.39 function in ``.nnp`` files, with its
parameters under the same names."""

from __future__ import annotations

from ... import functions as F
from ._nnabla import all_axes, last_axis, nnabla, spatial
from ._table import Unmapped, register_rules

_NOT_YET = Unmapped("not mapped to ONNX yet (NNabla 1.39's function; ONNX has a close op, "
                    "unmapped so far)")


def _shape_slice(node, values):
    # NNabla writes end=0 for "to the last axis" (its default), the catalog's end=None
    return {"start": values["start"], "end": values["end"] or None}


for _f, _nnp in (
        (F.flip, nnabla(F.flip, "Flip", defaults={"axes": lambda e, i, a: [last_axis(e, i, a)]},
                        axes=list)),
        (F.trilu, nnabla(F.trilu, "Trilu", k=int, upper=bool)),
        (F.eye_like, nnabla(F.eye_like, "EyeLike", k=int)),
        (F.einsum, nnabla(F.einsum, "Einsum", equation=str)),
        (F.mod2, nnabla(F.mod2, "Mod2", broadcast=True, fmod=bool)),
        (F.bit_shift, nnabla(F.bit_shift, "BitShift", broadcast=True, direction=str)),
        (F.shape, nnabla(F.shape, "Shape", defaults={"start": 0, "end": 0},
                         convert=_shape_slice, start=int, end=int)),
        (F.scatter_add, nnabla(F.scatter_add, "ScatterAdd", defaults={"axis": 0}, axis=int)),
        (F.bool_fill, nnabla(F.bool_fill, "BoolFill", value=float))):
    register_rules(_f, onnx_export=_NOT_YET, onnx_import=_NOT_YET, nnp_import=_nnp)

_NO_OP = Unmapped("ONNX has no op for this (NNabla 1.39's function)")
for _f, _nnp in (
        (F.linspace, nnabla(F.linspace, "Linspace", start=float, stop=float, num=int)),
        (F.sum_pooling, nnabla(F.sum_pooling, "SumPooling",
                               defaults={"stride": lambda e, i, a: tuple(a["kernel"]),
                                         "pad": lambda e, i, a: (0,) * len(a["kernel"])},
                               kernel=tuple, stride=tuple, ignore_border=bool, pad=tuple,
                               channel_last=bool)),
        (F.confusion_matrix, nnabla(F.confusion_matrix, "ConfusionMatrix",
                                    defaults={"axis": last_axis}, axis=int))):
    register_rules(_f, onnx_export=_NO_OP, onnx_import=_NO_OP, nnp_import=_nnp)

_GRAD = Unmapped("a gradient shaper: ONNX holds forward computations only, and the forward is "
                 "the identity")
for _f, _nnp in (
        (F.clip_grad_by_value, nnabla(F.clip_grad_by_value, "ClipGradByValue")),
        (F.clip_grad_by_norm, nnabla(F.clip_grad_by_norm, "ClipGradByNorm",
                                     defaults={"clip_norm": 1.0, "axes": all_axes},
                                     clip_norm=float, axes=list)),
        (F.top_k_grad, nnabla(F.top_k_grad, "TopKGrad", k=int, abs=bool, base_axis=int))):
    register_rules(_f, onnx_export=_GRAD, onnx_import=_GRAD, nnp_import=_nnp)

_IN_PLACE = Unmapped("updates its running mean in place, which ONNX cannot hold")
register_rules(F.mean_subtraction, onnx_export=_IN_PLACE, onnx_import=_IN_PLACE,
               nnp_import=nnabla(F.mean_subtraction, "MeanSubtraction", base_axis=int,
                                 update_running_mean=bool))

_INQ = Unmapped("fixes and rounds its weights in place over its runs (state the node keeps), "
                "which ONNX cannot hold")
# NNabla's file holds the layer; a loaded node starts its schedule afresh, as NNabla's does
register_rules(F.inq_affine, onnx_export=_INQ, onnx_import=_INQ,
               nnp_import=nnabla(F.inq_affine, "INQAffine", base_axis=int, num_bits=int,
                                 inq_iterations=list, selection_algorithm=str, seed=int))
register_rules(F.inq_convolution, onnx_export=_INQ, onnx_import=_INQ,
               nnp_import=nnabla(F.inq_convolution, "INQConvolution",
                                 defaults={"pad": spatial(0), "stride": spatial(1),
                                           "dilation": spatial(1)},
                                 base_axis=int, pad=tuple, stride=tuple, dilation=tuple,
                                 group=int, num_bits=int, inq_iterations=list,
                                 selection_algorithm=str, seed=int))

_GUI = Unmapped("writes the output gradient into its input w in the backward, which ONNX "
                "cannot hold (NNabla's GUI layer for virtual adversarial training)")
register_rules(F.vat_noise, onnx_export=_GUI, onnx_import=_GUI,
               nnp_import=nnabla(F.vat_noise, "VATNoise", base_axis=int, eps=float))

_RANDOM = Unmapped("a random source: the runtime's generator is not Stadyn's (as rand)")
# In .nnp files a random source is NNabla's function of the same name: the file holds the
# distribution and its seed, each framework draws with its own generator.
for _f, _nnp in (
        (F.rand_binomial, nnabla(F.rand_binomial, "RandBinomial", n=int, p=float, shape=tuple,
                                 seed=int)),
        (F.rand_gamma, nnabla(F.rand_gamma, "RandGamma", k=float, theta=float, shape=tuple,
                              seed=int)),
        (F.rand_beta, nnabla(F.rand_beta, "RandBeta", alpha=float, beta=float, shape=tuple,
                             seed=int))):
    register_rules(_f, onnx_export=_RANDOM, onnx_import=_RANDOM, nnp_import=_nnp)
