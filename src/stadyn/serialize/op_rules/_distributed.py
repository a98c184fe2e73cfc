"""Rules of the ops that communicate (``stadyn/ops/_distributed.py``)."""

from __future__ import annotations

from ... import functions as F
from ._nn import _batch_normalization_onnx
from ._nnp_batch_norm import batch_normalization_nnp_export
from ._table import Unmapped, register_rules


def _sync_batch_normalization_nnp(e, inputs, attrs):
    """BatchNormalization on the running statistics (a file holds no communicator)"""
    if (e.training if attrs["batch_stat"] is None else attrs["batch_stat"]):
        e.unsupported("batch_stat=True: the statistics of every process's batch need a "
                      "communicator, which an .nnp file cannot hold")
    batch_normalization_nnp_export(e, inputs, attrs)


# In inference (what an export is) it is batch normalisation on the running statistics.
register_rules(F.sync_batch_normalization, onnx_export=_batch_normalization_onnx,
               onnx_import=Unmapped("an inference graph has no collectives: BatchNormalization "
                                    "imports as batch_normalization"),
               nnp_export=_sync_batch_normalization_nnp,
               nnp_import=Unmapped("NNabla's SyncBatchNormalization needs a communicator a file "
                                   "cannot hold; the export (BatchNormalization) imports as "
                                   "batch_normalization"))
