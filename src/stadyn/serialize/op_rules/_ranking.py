"""Rules of CNTK's ranking criteria (``stadyn/ops/_ranking.py``; their columns of a sequence
minibatch, ``cntk_sequence_columns``, too): ONNX has none, and they are
training criteria, not part of an inference graph."""

from __future__ import annotations

from ... import functions as F
from ._cntk_read_others import lambda_rank_cntk, ndcg_cntk
from ._table import Unmapped, register_rules

for _f, _cntk in ((F.lambda_rank, {"LambdaRank": lambda_rank_cntk}),
                  (F.ndcg_at_1, {"NDCG": ndcg_cntk})):
    register_rules(_f, onnx_export=Unmapped("ONNX has no ranking criteria (CNTK's LambdaRank, "
                                            "NDCG@1): export the network that scores"),
                   onnx_import=Unmapped("ONNX has no ranking criteria"), cntk_import=_cntk)

# the columns the criteria read from sequences: CNTK's packing of its minibatch layout
register_rules(F.cntk_sequence_columns,
               onnx_export=Unmapped("ONNX has no dynamic sequence axis, nor CNTK's packing of "
                                    "sequences into parallel streams, which its ranking "
                                    "criteria read"),
               onnx_import=Unmapped("ONNX has no minibatch layout of packed sequences"))
