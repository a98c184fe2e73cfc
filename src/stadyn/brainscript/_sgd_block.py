"""The ``SGD`` block of a ``.cntk`` command as a dataclass (:func:`sgd_config`): CNTK's units
and defaults kept (per-sample vs per-minibatch rates, ``epochSize = 0`` as a full sweep,
per-epoch vectors whose last value repeats); keys it does not know stay in ``extra``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._ast import SourceLocation
from ._block_values import _at_least_1, _check, _err, _extra, _fraction, _non_negative, _positive
from ._config import ConfigRecord, to_float, to_int

__all__ = ["SGDConfig", "sgd_config"]


@dataclass(frozen=True)
class SGDConfig:
    """A CNTK ``SGD`` block.  Vectors are per epoch and their last value repeats.

    ``epoch_size`` is ``None`` for ``epochSize = 0`` (one full sweep of the data).  Exactly one
    of the learning-rate vectors is set; at most one of the momentum vectors (none means CNTK's
    default, ``momentumPerMB = 0.9``).
    """

    max_epochs: int
    epoch_size: int | None = None
    minibatch_size: tuple[int, ...] = (256,)
    learning_rates_per_sample: tuple[float, ...] | None = None
    learning_rates_per_mb: tuple[float, ...] | None = None
    momentum_as_time_constant: tuple[float, ...] | None = None
    momentum_per_mb: tuple[float, ...] | None = None
    momentum_per_sample: tuple[float, ...] | None = None
    l2_reg_weight: float = 0.0
    l1_reg_weight: float = 0.0
    dropout_rate: tuple[float, ...] = (0.0,)
    num_mbs_to_show_result: int = 10
    first_mbs_to_show_result: int = 0
    gradient_clipping_with_truncation: bool = True
    clipping_threshold_per_sample: float = math.inf
    # cntk.exe's rule for truncated BPTT with the legacy readers (SGD's truncated = true):
    # learningRatesPerMB and momentumPerMB are per minibatchSize x this many parallel sequences
    # (the reader's nbruttsineachrecurrentiter; minibatchSize is then frames a sequence)
    parallel_sequences: int = 1
    # batchNormalizationTimeConstant / batchNormalizationBlendTimeConstant: per epoch, set on
    # the network's batch normalisations where they change (0, the default: left alone)
    batch_norm_time_constant: tuple[float, ...] = (0.0,)
    batch_norm_blend_time_constant: tuple[float, ...] = (0.0,)
    extra: Mapping[str, Any] = field(default_factory=dict)
    loc: SourceLocation | None = field(default=None, compare=False, repr=False)


_SGD_KEYS = {"maxepochs", "epochsize", "minibatchsize", "learningratespersample",
             "learningratespermb", "momentumastimeconstant", "momentumpermb", "momentumpersample",
             "l2regweight", "l1regweight", "dropoutrate", "nummbstoshowresult",
             "firstmbstoshowresult", "gradientclippingwithtruncation", "clippingthresholdpersample",
             "batchnormalizationtimeconstant", "batchnormalizationblendtimeconstant"}


def _a_number(x: float) -> bool:
    return not math.isnan(x)


#: The ranges of the SGD block's numbers: key, test, what it must be, integer, finite.
_SGD_RANGES = (
    ("maxEpochs", _at_least_1, "be >= 1", True, False),
    ("epochSize", _non_negative, "be >= 0 (0: one sweep of the data)", True, False),
    ("minibatchSize", _at_least_1, "be >= 1", True, False),
    ("learningRatesPerSample", _non_negative, "be >= 0", False, True),
    ("learningRatesPerMB", _non_negative, "be >= 0", False, True),
    ("momentumAsTimeConstant", _non_negative, "be >= 0", False, False),
    ("momentumPerMB", _fraction, "lie in [0, 1)", False, False),
    ("momentumPerSample", _fraction, "lie in [0, 1)", False, False),
    ("L2RegWeight", _non_negative, "be >= 0", False, True),
    ("L1RegWeight", _non_negative, "be >= 0", False, True),
    ("dropoutRate", _fraction, "lie in [0, 1)", False, False),
    ("numMBsToShowResult", _non_negative, "be >= 0", True, False),
    ("firstMBsToShowResult", _non_negative, "be >= 0", True, False),
    ("clippingThresholdPerSample", _positive, "be > 0 (infinity: no clipping)", False, False),
    # a negative time constant is cntk.exe's corpus-level statistics, no forgetting
    # (TrainingNodes.h:2603-2610, ComputeExpAvgFactor: weight M / (M + samples seen before));
    # SGD.cpp:2990 reads the vector unchecked and ComputationNetwork.cpp:585-612 sets it as is
    ("batchNormalizationTimeConstant", _a_number,
     "be a number (negative: corpus-level statistics; infinity: frozen statistics)",
     False, False),
    # (a negative blend the node refuses as it first runs: TrainingNodes.h:2899-2900)
    ("batchNormalizationBlendTimeConstant", _non_negative,
     "be >= 0 (infinity: the running statistics alone)", False, False),
)


def _opt_floats(rec: ConfigRecord, key: str) -> tuple[float, ...] | None:
    values = rec.get_floats(key, None)
    return None if values is None else tuple(values)


def sgd_config(rec: ConfigRecord) -> SGDConfig:
    """Read an ``SGD`` block, with CNTK's defaults and checks.

    >>> from stadyn.brainscript import parse_config
    >>> root = parse_config("SGD = { maxEpochs = 3 ; learningRatesPerMB = 0.1*2:0.05 }")
    >>> sgd = sgd_config(root["SGD"])
    >>> sgd.learning_rates_per_mb, sgd.minibatch_size, sgd.epoch_size
    ((0.1, 0.1, 0.05), (256,), None)
    """
    lr_sample = _opt_floats(rec, "learningRatesPerSample")
    lr_mb = _opt_floats(rec, "learningRatesPerMB")
    if lr_sample is not None and lr_mb is not None:
        raise _err(f"'{rec.path}' sets both learningRatesPerSample and learningRatesPerMB; keep "
                   "one", rec.location("learningRatesPerMB"))
    if lr_sample is None and lr_mb is None:
        raise _err(f"'{rec.path or 'SGD'}' needs learningRatesPerSample or learningRatesPerMB",
                   rec.loc)
    momenta = {k: _opt_floats(rec, k)
               for k in ("momentumAsTimeConstant", "momentumPerMB", "momentumPerSample")}
    given = [k for k, v in momenta.items() if v is not None]
    if len(given) > 1:
        raise _err(f"'{rec.path}' sets both {given[0]} and {given[1]}; keep one",
                   rec.location(given[1]))
    epoch_size = rec.get_int("epochSize", 0)
    sgd = SGDConfig(
        max_epochs=rec.get_int("maxEpochs"),
        epoch_size=epoch_size or None,
        minibatch_size=tuple(rec.get_ints("minibatchSize", [256])),
        learning_rates_per_sample=lr_sample,
        learning_rates_per_mb=lr_mb,
        momentum_as_time_constant=momenta["momentumAsTimeConstant"],
        momentum_per_mb=momenta["momentumPerMB"],
        momentum_per_sample=momenta["momentumPerSample"],
        l2_reg_weight=rec.get_float("L2RegWeight", 0.0),
        l1_reg_weight=rec.get_float("L1RegWeight", 0.0),
        dropout_rate=tuple(rec.get_floats("dropoutRate", [0.0])),
        batch_norm_time_constant=tuple(rec.get_floats("batchNormalizationTimeConstant", [0.0])),
        batch_norm_blend_time_constant=tuple(
            rec.get_floats("batchNormalizationBlendTimeConstant", [0.0])),
        num_mbs_to_show_result=rec.get_int("numMBsToShowResult", 10),
        first_mbs_to_show_result=rec.get_int("firstMBsToShowResult", 0),
        gradient_clipping_with_truncation=rec.get_bool("gradientClippingWithTruncation", True),
        clipping_threshold_per_sample=rec.get_float("clippingThresholdPerSample", math.inf),
        extra=_extra(rec, _SGD_KEYS),
        loc=rec.loc,
    )
    for key, ok, what, integer, finite in _SGD_RANGES:
        _check(rec, key, ok, what, convert=to_int if integer else to_float, finite=finite)
    return sgd
