"""NNabla's batch normalisation functions in ``.nnp`` files (the rules of ``batch_normalization``,
``fused_batch_normalization`` and ``sync_batch_normalization``, registered in ``_nn.py`` and
``_distributed.py``): ``BatchNormalization`` and ``FusedBatchNormalization`` take the
statistics shaped like ``x`` with 1 on the other axes, and list ``beta``/``gamma`` only when
given (``no_bias``/``no_scale``)."""

from __future__ import annotations

from ... import functions as F

__all__ = ["batch_normalization_nnp", "batch_normalization_nnp_export",
           "fused_batch_normalization_nnp_export"]


def batch_normalization_nnp(node):
    """NNabla's ``BatchNormalization(x, beta, gamma, mean, variance)``, NNabla's rule (the
    batch variance in one pass, ``E[x^2] - mean^2``); ``no_bias`` / ``no_scale`` leave out
    beta / gamma."""
    ins = [node.var(i) for i in range(node.n_inputs)]
    if node.field("no_bias", bool):
        ins.insert(1, None)
    if node.field("no_scale", bool):
        ins.insert(2, None)
    if len(ins) != 5:
        node.unsupported(f"{node.n_inputs} inputs")
    return F.batch_normalization(*ins, axes=tuple(node.field("axes", list)) or (1,),
                                 decay_rate=node.field("decay_rate", float),
                                 eps=node.field("eps", float),
                                 batch_stat=node.field("batch_stat", bool),
                                 rule="nnabla")         # NNabla's one-pass batch variance


def batch_normalization_nnp_export(e, inputs, attrs, type_name="BatchNormalization",
                                   extra=None):
    """BatchNormalization (``batch_stat=None`` as the network's phase); ``type_name`` and
    ``extra`` (its further inputs and fields) for NNabla's variants of it."""
    if attrs["output_stat"]:
        e.unsupported("output_stat=True")
    x, beta, gamma, mean, var = inputs[:5]
    if mean is None or var is None:
        e.unsupported("no running statistics")
    batch_stat = e.training if attrs["batch_stat"] is None else bool(attrs["batch_stat"])
    if batch_stat and attrs.get("time_constant") is not None:
        e.unsupported("time_constant in training (CNTK's running average; NNabla's is a "
                      "decay rate)")
    ndim = len(e.shape(x))
    axes = [int(a) % ndim for a in attrs["axes"]]
    # NNabla wants the statistics shaped like x with 1 on the other axes ((1, C, 1, 1))
    stat = tuple(e.shape(x)[i] if i in axes else 1 for i in range(ndim))
    params = {"axes": axes, "decay_rate": float(attrs["decay_rate"]),
              "eps": float(attrs["eps"]), "batch_stat": batch_stat,
              "no_scale": gamma is None, "no_bias": beta is None}
    more, fields = extra or ([], {})
    e.function(type_name, [x] + [e.reshape(i, stat) for i in (beta, gamma, mean, var)
                                 if i is not None] + more, dict(params, **fields))


def fused_batch_normalization_nnp_export(e, inputs, attrs):
    """FusedBatchNormalization (NNabla's: ``beta``, ``gamma`` and ``z`` are required)"""
    if inputs[1] is None or inputs[2] is None:
        e.unsupported("no beta or gamma (NNabla's FusedBatchNormalization takes both)")
    z = [] if inputs[5] is None else [inputs[5]]
    batch_normalization_nnp_export(e, inputs, attrs, "FusedBatchNormalization",
                                   (z, {"nonlinearity": attrs["nonlinearity"]}))
