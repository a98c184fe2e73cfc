"""Rules of NNabla's array functions, gradient shapers and masked writes
(``stadyn/ops/_nnabla_array.py``, ``_nnabla_grad.py``, ``_nnabla_index.py``,
``_nnabla_stateful.py``, ``_nnabla_inq.py``, ``_nnabla_vat.py``, ``_random_more.py``): none
has an ONNX mapping yet."""

from __future__ import annotations

from ... import functions as F
from ._table import Unmapped, register_rules

_NOT_YET = Unmapped("not mapped to ONNX yet (NNabla 1.39's function; ONNX has a close op, "
                    "unmapped so far)")
for _f in (F.flip, F.trilu, F.eye_like, F.einsum, F.mod2, F.bit_shift, F.shape, F.scatter_add,
           F.bool_fill):
    register_rules(_f, onnx_export=_NOT_YET, onnx_import=_NOT_YET)

_NO_OP = Unmapped("ONNX has no op for this (NNabla 1.39's function)")
for _f in (F.linspace, F.sum_pooling, F.confusion_matrix):
    register_rules(_f, onnx_export=_NO_OP, onnx_import=_NO_OP)

_GRAD = Unmapped("a gradient shaper: ONNX holds forward computations only, and the forward is "
                 "the identity")
for _f in (F.clip_grad_by_value, F.clip_grad_by_norm, F.top_k_grad):
    register_rules(_f, onnx_export=_GRAD, onnx_import=_GRAD)

_IN_PLACE = Unmapped("updates its running mean in place, which ONNX cannot hold")
register_rules(F.mean_subtraction, onnx_export=_IN_PLACE, onnx_import=_IN_PLACE)

_INQ = Unmapped("fixes and rounds its weights in place over its runs (state the node keeps), "
                "which ONNX cannot hold")
for _f in (F.inq_affine, F.inq_convolution):
    register_rules(_f, onnx_export=_INQ, onnx_import=_INQ)

_GUI = Unmapped("writes the output gradient into its input w in the backward, which ONNX "
                "cannot hold (NNabla's GUI layer for virtual adversarial training)")
register_rules(F.vat_noise, onnx_export=_GUI, onnx_import=_GUI)

_RANDOM = Unmapped("a random source: the runtime's generator is not Stadyn's (as rand)")
for _f in (F.rand_binomial, F.rand_gamma, F.rand_beta):
    register_rules(_f, onnx_export=_RANDOM, onnx_import=_RANDOM)
