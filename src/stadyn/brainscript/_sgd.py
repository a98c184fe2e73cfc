"""A BrainScript ``SGD`` block as a Stadyn learner (:mod:`stadyn.learners`), with CNTK's units.

CNTK's BrainScript trainer keeps every rate **per sample**: ``learningRatesPerMB`` is divided by
the epoch's ``minibatchSize``, and ``momentumPerMB`` becomes the per-sample momentum
``m ** (1 / minibatchSize)`` (so a minibatch of another size decays by the same amount per
sample); ``momentumAsTimeConstant = tc`` is ``exp(-1 / tc)`` per sample.  The update is unit-gain
momentum SGD on the gradient summed over the minibatch: ``v = m v + (1 - m) lr g; w -= v`` with
``m`` raised to the minibatch size.  L2 is ``l2 * M * w`` added to the gradient, L1 a proximal
step, clipping per sample (``clippingThresholdPerSample * M``).  Per-epoch vectors
(``0.01*5:0.005``) become schedules whose epoch is the block's ``epochSize`` (a full sweep when
0), their last value repeating.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import learners as LR
from .. import schedules as SC
from .._errors import ConfigError
from ..distributed import QUANTIZED_BITS, block_momentum_time_constant
from ._blocks import SGDConfig
from ._config import ConfigRecord
from ._sgd_rates import _entry, _trained, per_sample_epochs

__all__ = ["make_learner", "check_sgd_keys", "SUPPORTED_SGD_KEYS", "EpochClock",
           "data_parallel_bits", "quantized_bits", "distributed_reading"]

#: SGD keys the front end reads into :class:`SGDConfig` fields.
_FIELDS = ("maxEpochs", "epochSize", "minibatchSize", "learningRatesPerSample",
           "learningRatesPerMB", "momentumAsTimeConstant", "momentumPerMB", "momentumPerSample",
           "L2RegWeight", "L1RegWeight", "dropoutRate", "numMBsToShowResult",
           "firstMBsToShowResult", "gradientClippingWithTruncation", "clippingThresholdPerSample",
           "batchNormalizationTimeConstant", "batchNormalizationBlendTimeConstant")
#: Further keys this module reads from ``SGDConfig.extra``.
_EXTRA = ("gradUpdateType", "useNAG", "useNAGMomentum", "useAdagrad", "normWithAveMultiplier",
          "varianceTimeConstant", "fsAdagradTargetAvDenom", "rms_gamma", "rms_wgt_inc",
          "rms_wgt_dec", "rms_wgt_max", "rms_wgt_min", "keepCheckPointFiles", "modelPath",
          "ParallelTrain", "disableRegInBatchNormalization", "AutoAdjust",
          "minLearningRatePerSample", "UseAllDataForPreComputedNode",
          # SGD's own (SGD.cpp:2914, configSGD(L"truncated")), read by the runner; written here
          # and not around the reader, the reader keeps its frameMode
          "truncated")
#: CNTK keys that only tune memory use or logging on CNTK's own engine: accepted, no effect.
_NO_EFFECT = ("maxTempMemSizeInSamplesForCNN", "numSubminibatches", "maxSamplesInRAM",
              "numMBsToCUDAProfile", "traceLevel", "disableWkInBatchNormal",
              "useEvalCriterionControlLR",
              # an AutoAdjust option; CNTK read it only inside an AutoAdjust block, so written
              # in the SGD block (ATIS.cntk, G2P.cntk) it had no effect
              "loadBestModel",
              # an old SGD key (PennTreebank's RNNLM configs: unroll = false) that cntk.exe's
              # SGD no longer reads (no "unroll" in Source/SGDLib, Source/ActionsLib)
              "unroll",
              # SGD.cpp's sequence-training settings: it hands them only to a SequenceWithSoftmax
              # criterion (SetSeqParam, training on lattices), which Stadyn does not build
              "hSmoothingWeight", "frameDropThresh", "doReferenceAlign", "seqGammarUsesMBR",
              "seqGammarAMF", "seqGammarLMF", "seqGammarBMMIFactor", "seqGammarWordPen")
SUPPORTED_SGD_KEYS = _FIELDS + _EXTRA + _NO_EFFECT


def check_sgd_keys(sgd: SGDConfig, record: ConfigRecord | None) -> None:
    """Reject an SGD key Stadyn does not know or does not support, naming it where it stands."""
    known = {k.lower() for k in SUPPORTED_SGD_KEYS}
    for key in sgd.extra:
        if key.lower() in known:
            continue
        close = difflib.get_close_matches(key, SUPPORTED_SGD_KEYS, n=2, cutoff=0.7)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else \
            f" (supported: {', '.join(_FIELDS + _EXTRA)})"
        where = _where(record, key)
        raise ConfigError(f"unknown or unsupported SGD key '{key}'{hint}", *where)


def _where(record: ConfigRecord | None, key: str) -> tuple:
    if record is None:
        return ()
    try:
        loc = record.location(key)
    except KeyError:
        loc = record.loc
    return () if loc is None else (loc.path, loc.line, loc.column)


def _extra(sgd: SGDConfig, key: str, default: Any) -> Any:
    for k, v in sgd.extra.items():
        if k.lower() == key.lower():
            return v
    return default


def _extra_bool(sgd: SGDConfig, record: ConfigRecord | None, key: str, default: bool) -> bool:
    value = _extra(sgd, key, None)
    if value is None:
        return default
    text = str(value).strip().lower()
    if text in ("true", "1", "t", "yes"):
        return True
    if text in ("false", "0", "f", "no"):
        return False
    raise ConfigError(f"SGD key '{key}' must be true or false, got '{value}'", *_where(record, key))


class EpochClock:
    """The 0-based epoch a BrainScript training is in, which its progress sets at each epoch's
    start; the momentum of an SGD block made with it follows it.

    >>> clock = EpochClock(); clock.epoch = 2; clock.epoch
    2
    """

    def __init__(self) -> None:
        self.epoch = 0
        #: the parallel sequences the training reader reports at an epoch's start, where
        #: SGD's truncated = true reads them from a CNTKTextFormatReader or ImageReader
        #: (ReaderShim.cpp:79, 352: the rows of the last minibatch read; None: not read)
        self.reader_parallel: Callable[[], int] | None = None
        #: the epoch's momentum per sample computed with them, set at the epoch's start
        self.momentum: float | None = None


class _EpochEntries(SC.Schedule):
    """Per-epoch values per sample (:func:`per_sample_epochs`' entries) read as cntk.exe reads
    them: every minibatch of epoch ``k`` takes entry ``k`` (SGD.cpp:1396,
    ``GetMomentumPerSample(epochNumber, ...)`` in ``TrainOneEpoch``), whatever samples the
    learner has counted (a sequence classifier's learner counts labels, its epochs are reader
    rows); an epoch whose entry is cntk.exe's error raises it (the runner has raised it at the
    epoch's start: :func:`cntk_momentum`).  ``momentum``: the clock's momentum of the epoch,
    where it set one, comes first."""

    def __init__(self, entries: list[float | ConfigError], clock: EpochClock,
                 momentum: bool = True):
        # (the base's values describe the schedule only: every lookup is value_at's)
        super().__init__(_trained(entries) or [1.0], epoch_size=1, minibatch_size=1)
        self._entries, self._clock, self._momentum = list(entries), clock, momentum

    def value_at(self, samples_seen: int) -> float:
        if self._momentum and self._clock.momentum is not None:
            return self._clock.momentum
        return _entry(self._entries, self._clock.epoch)


def _extra_float(sgd: SGDConfig, record: ConfigRecord | None, key: str, default: float,
                 ok: Any = lambda x: x > 0, what: str = "be > 0") -> float:
    value = _extra(sgd, key, None)
    if value is None:
        return default
    try:
        number = float(str(value).strip())
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and ok(number)):
        raise ConfigError(f"SGD key '{key}' must {what}, got '{value}'", *_where(record, key))
    return number


def _update_type(sgd: SGDConfig, record: ConfigRecord | None) -> str:
    """``gradUpdateType`` in lower case (``useAdagrad = true`` is CNTK's older spelling of
    AdaGrad)."""
    kind = str(_extra(sgd, "gradUpdateType", "None")).strip().lower() or "none"
    if kind == "none" and _extra_bool(sgd, record, "useAdagrad", False):
        kind = "adagrad"
    if kind not in ("none", "adagrad", "fsadagrad", "rmsprop"):
        raise ConfigError(f"gradUpdateType = '{_extra(sgd, 'gradUpdateType', '')}' is not known "
                          "(None, AdaGrad, FSAdaGrad or RmsProp)",
                          *_where(record, "gradUpdateType"))
    return kind


def make_learner(parameters: Any, sgd: SGDConfig, record: ConfigRecord | None = None,
                 epoch_size: int | None = None, lr_multiplier: float = 1.0,
                 clock: EpochClock | None = None) -> LR.Learner:
    """The learner an ``SGD`` block describes, for ``parameters``.

    ``parameters`` is a list or a ``{name: Variable}`` mapping (names key the learner's state).
    ``epoch_size`` is the epoch in samples (``None``: one sweep of the data, which the caller
    supplies later with ``learner.resolve_epoch_size``).  ``lr_multiplier`` is the parameters'
    ``learningRateMultiplier``: cntk.exe passes each update the learning rate per sample times
    the node's multiplier, so it scales the rate (also in AdaGrad's, RmsProp's and FSAdaGrad's
    steps and L1's shrinking), not the gradient.  With a ``clock``, a per-epoch momentum is the
    entry of the epoch the clock shows, as cntk.exe sets it at each epoch (without one it moves
    on every ``epoch_size`` samples the learner counts).  ``gradUpdateType`` chooses the update
    as CNTK's ``SGD::UpdateWeights`` did, on the gradient summed over the minibatch with the
    per-sample learning rate:

    * ``None`` (default): unit-gain momentum SGD; ``useNAG = true``: Nesterov momentum;
    * ``AdaGrad`` (also ``useAdagrad = true``): ``adagrad``, ``normWithAveMultiplier`` (default
      true) dividing the step by the mean of the per-element rates;
    * ``FSAdaGrad``: ``fsadagrad`` with the block's momentum (unit gain) and the variance
      averaged over ``varianceTimeConstant`` samples (default 720000, two hours of speech);
    * ``RmsProp``: ``rmsprop`` with ``rms_gamma`` (0.99), ``rms_wgt_inc`` (1.2),
      ``rms_wgt_dec`` (0.75), ``rms_wgt_max`` (10), ``rms_wgt_min`` (0.1) and
      ``normWithAveMultiplier``.

    >>> import numpy as np, stadyn as sd
    >>> from stadyn.brainscript import SGDConfig
    >>> w = sd.Variable.from_numpy_array(np.zeros(3), need_grad=True)
    >>> learner = make_learner([w], SGDConfig(1, learning_rates_per_sample=(0.01,)), epoch_size=100)
    >>> learner.name, learner.learning_rate()
    ('momentum_sgd', 0.009999999776482582)
    """
    check_sgd_keys(sgd, record)
    kind = _update_type(sgd, record)
    entries = per_sample_epochs(sgd, "lr")
    rates = _trained(entries)
    if lr_multiplier != 1.0:       # (double) learnRatePerSample * the node's float multiplier
        rates = [r * float(np.float32(lr_multiplier)) for r in rates]
    # (where the first epoch cannot spread its rate, reading it is that error)
    lr = SC.learning_parameter_schedule_per_sample(rates, epoch_size=epoch_size) if rates else \
        _EpochEntries(entries, clock or EpochClock(), momentum=False)
    common = dict(l1_regularization_weight=sgd.l1_reg_weight,
                  l2_regularization_weight=sgd.l2_reg_weight,
                  gradient_clipping_threshold_per_sample=sgd.clipping_threshold_per_sample,
                  gradient_clipping_with_truncation=sgd.gradient_clipping_with_truncation)
    ave = _extra_bool(sgd, record, "normWithAveMultiplier", True)
    if kind == "adagrad":
        return LR.adagrad(parameters, lr, need_ave_multiplier=ave, **common)
    if kind == "rmsprop":
        return LR.rmsprop(parameters, lr,
                          gamma=_extra_float(sgd, record, "rms_gamma", 0.99),
                          inc=_extra_float(sgd, record, "rms_wgt_inc", 1.2),
                          dec=_extra_float(sgd, record, "rms_wgt_dec", 0.75),
                          max=_extra_float(sgd, record, "rms_wgt_max", 10.0),
                          min=_extra_float(sgd, record, "rms_wgt_min", 0.1),
                          need_ave_multiplier=ave, **common)
    momenta = per_sample_epochs(sgd, "momentum")
    trained = _trained(momenta)
    momentum = SC.momentum_schedule_per_sample(trained, epoch_size=epoch_size) \
        if clock is None and trained else \
        _EpochEntries(momenta, clock or EpochClock())
    if kind == "fsadagrad":
        denom = _extra_float(sgd, record, "fsAdagradTargetAvDenom", 1.0)
        if denom != 1.0:
            raise ConfigError("fsAdagradTargetAvDenom other than 1 is not supported (CNTK kept "
                              "it for old configs only)", *_where(record, "fsAdagradTargetAvDenom"))
        variance = SC.momentum_as_time_constant_schedule(
            _extra_float(sgd, record, "varianceTimeConstant", 2 * 3600 * 100.0))
        return LR.fsadagrad(parameters, lr, momentum, unit_gain=True, variance_momentum=variance,
                            **common)
    nag = _extra_bool(sgd, record, "useNAG", False) or \
        _extra_bool(sgd, record, "useNAGMomentum", False)
    factory = LR.nesterov if nag else LR.momentum_sgd
    return factory(parameters, lr, momentum, unit_gain=True, **common)


def make_learners(parameters: dict[str, Any], sgd: SGDConfig, record: ConfigRecord | None,
                  epoch_size: int | None, unregularized: set[str] = frozenset(),
                  multipliers: dict[str, float] | None = None,
                  clock: EpochClock | None = None) -> list[LR.Learner]:
    """The learners of an ``SGD`` block: :func:`make_learner` for ``parameters``; when the
    block regularises (``L1RegWeight``/``L2RegWeight``), another one without regularisation
    for the parameters named in ``unregularized`` (CNTK's regularisation multiplier 0: the scale
    and bias of batch normalisation with ``disableRegInBatchNormalization``); and one for each
    ``learningRateMultiplier`` other than 1 in ``multipliers`` (parameter name -> multiplier),
    its learning rate scaled by it; ``clock`` as :func:`make_learner`'s.

    >>> import numpy as np, stadyn as sd
    >>> from stadyn.brainscript import SGDConfig
    >>> w, b = (sd.Variable.from_numpy_array(np.zeros(2), need_grad=True) for _ in range(2))
    >>> learners = make_learners({"W": w, "b": b}, SGDConfig(1, learning_rates_per_sample=(0.5,)),
    ...                          None, 100, multipliers={"b": 0.25})
    >>> [(x.parameters[0] is b, x.learning_rate()) for x in learners]
    [(False, 0.5), (True, 0.125)]
    """
    multipliers = multipliers or {}
    regularized = bool(sgd.l1_reg_weight or sgd.l2_reg_weight)
    plain = dataclasses.replace(sgd, l1_reg_weight=0.0, l2_reg_weight=0.0)
    groups: dict[tuple[bool, float], dict[str, Any]] = {}
    for k, v in parameters.items():
        key = (regularized and k in unregularized, float(multipliers.get(k, 1.0)))
        groups.setdefault(key, {})[k] = v
    return [make_learner(group, plain if exempt else sgd, record, epoch_size=epoch_size,
                         lr_multiplier=multiplier, clock=clock)
            for (exempt, multiplier), group in sorted(
                groups.items(), key=lambda item: (item[0][0], item[0][1] != 1.0, item[0][1]))]


def disable_reg_in_batch_norm(sgd: SGDConfig, record: ConfigRecord | None) -> bool:
    """``disableRegInBatchNormalization`` (default false)."""
    return _extra_bool(sgd, record, "disableRegInBatchNormalization", False)


def parallel_train(sgd: SGDConfig, record: ConfigRecord | None, workers: int) -> str | None:
    """Check an ``SGD.ParallelTrain`` block against the job's ``workers``; the line to log.

    In one process CNTK ignored the block ("ParallelTrain config will be ignored"), and so does
    Stadyn.  With ``stadyn train --nproc N`` the workers sum their gradients
    (``DataParallelSGD``: in full precision with ``gradientBits = 32``, its default for float,
    quantized with fewer, :func:`quantized_bits`) or merge their models by block momentum
    (``BlockMomentumSGD``, :func:`block_momentum`); ``ModelAveragingSGD`` is refused there.
    """
    block = _extra(sgd, "ParallelTrain", None)
    if block is None:
        return None
    if workers <= 1:
        return "parallelTrain option is not enabled. ParallelTrain config will be ignored."
    where = _where(record, "ParallelTrain")
    if not isinstance(block, ConfigRecord):
        raise ConfigError("SGD.ParallelTrain must be a block [ parallelizationMethod = ... ]",
                          *where)
    method = str(block.get_str("parallelizationMethod", "None")).strip()
    if method.lower() == "blockmomentumsgd":
        block_momentum(sgd, record, workers)        # (its options checked)
        return None
    if method.lower() != "dataparallelsgd":
        raise ConfigError(f"ParallelTrain: parallelizationMethod = {method} is not supported "
                          "(stadyn train --nproc runs DataParallelSGD or BlockMomentumSGD)",
                          *where)
    data_parallel_bits(sgd, workers)                # (its options checked)
    return None


def quantized_bits(bits: list[int] | None) -> list[int] | None:
    """Each epoch's bits per gradient value (``bits``: :func:`data_parallel_bits`' of a
    ``DataParallelSGD`` block's ``gradientBits``, an array, one entry an epoch, the last for
    the epochs after it: SGD.cpp:3161) where some epoch quantizes: None where every epoch sums
    in full precision (32), or where there are none (one worker, another method).  Below 32,
    cntk.exe's 1-bit SGD (SGD.cpp:2267-2286, InitDistGradAgg: a quantized all-reduce with the
    zero threshold for 1 bit and the worker's own stripe quantized too, the residuals kept from
    one minibatch to the next and started afresh where an epoch's bits change, :517-529):
    :class:`stadyn.distributed.QuantizedAllReduce`.

    Example:
        >>> quantized_bits([32, 1]), quantized_bits([32]), quantized_bits(None)
        ([32, 1], None, None)
    """
    return None if bits is None or all(b == 32 for b in bits) else bits


def data_parallel_bits(sgd: SGDConfig, workers: int) -> list[int] | None:
    """Each epoch's ``gradientBits`` (32 where unset: full precision) of a DataParallelSGD
    ``ParallelTrain`` block on ``workers`` workers, checked; None where the job has one worker
    or another method (cntk.exe's ``InitDistGradAgg`` and its log lines, SGD.cpp:398-402,
    :524-529, :1084, run only for DataParallelSGD)."""
    block = _extra(sgd, "ParallelTrain", None)
    if workers <= 1 or not isinstance(block, ConfigRecord) or \
            str(block.get_str("parallelizationMethod", "None")).strip().lower() != \
            "dataparallelsgd":
        return None
    inner = block.get("DataParallelSGD")
    if not isinstance(inner, ConfigRecord):
        return [32]
    where = _where(inner, "gradientBits")
    bits = [int(b) for b in inner.get_ints("gradientBits", [32])]
    for b in bits:
        if not 1 <= b <= 32:     # (SGD.cpp:3166, CNTK's words)
            raise ConfigError(f"ParallelTrain.DataParallelSGD: gradientBits = {b}: gradientBits "
                              "values must be in the range [1, 32] when using precision=float",
                              *where)
        if b < 32 and b not in QUANTIZED_BITS:
            raise ConfigError(f"ParallelTrain.DataParallelSGD: gradientBits = {b} is not "
                              "supported: Stadyn quantizes gradients to 1, 2, 4, 8 or 16 bits "
                              "(or sums them in full precision: 32)", *where)
    if bool(inner.get_bool("useBufferedAsyncGradientAggregation", False)):
        # cntk.exe runs it, at 32 bits too (SGD.cpp:2292-2294, SimpleDistGradAggregator.h:47-
        # 110): each minibatch's gradients are swapped with the buffered ones of the minibatch
        # before and summed on another thread, so every update applies the sum of the
        # minibatch before (the first applies none), its criterion counts too
        raise ConfigError("ParallelTrain.DataParallelSGD: useBufferedAsyncGradientAggregation "
                          "= True is not supported (cntk.exe's updates then apply the "
                          "gradients of the minibatch before; Stadyn's DataParallelSGD sums "
                          "each minibatch's own: set it to false)",
                          *_where(inner, "useBufferedAsyncGradientAggregation"))
    if 1 in bits and not bool(inner.get_bool("useZeroThresholdFor1BitQuantization", True)):
        key = "useZeroThresholdFor1BitQuantization"
        raise ConfigError(f"ParallelTrain.DataParallelSGD: {key} = False is not supported "
                          f"(Stadyn's quantized all-reduce is cntk.exe's with {key} = true)",
                          *_where(inner, key))
    return bits


#: ``readerType`` values that are cntk.exe's legacy readers (a DataReader of their own, not
#: ReaderShim: ``IsLegacyReader``, Source/Common/Include/DataReader.h:245 against
#: Source/Readers/ReaderLib/ReaderShim.h:86), and of those the ones that can read a worker's
#: share themselves (``SupportsDistributedMBRead``: HTKMLFReader.h, UCIFastReader.h,
#: LibSVMBinaryReader.h)
_DATA_READERS = {"htkmlfreader", "ucifastreader", "libsvmbinaryreader", "lmsequencereader",
                 "lusequencereader", "dssmreader", "sparsepcreader", "kaldi2reader",
                 "binaryreader"}    # (not _legacy_readers.LEGACY_READERS: those Stadyn reads)
_LEGACY_DISTRIBUTED = {"htkmlfreader", "ucifastreader", "libsvmbinaryreader"}


def distributed_reading(sgd: SGDConfig, reader_type: str | None) -> tuple[bool, bool]:
    """cntk.exe's ``(distributed reading, defaulted)`` of a ``ParallelTrain`` block: the
    block's ``distributedMBReading`` (SGD.cpp:3153-3154), where unset true for a reader that
    is not a legacy one, with the line "not explicitly specified, defaulting to 'true'"
    (SGD.cpp:230-237); a legacy reader reads a worker's share only where it can
    (SGD.cpp:1041-1043)."""
    block = _extra(sgd, "ParallelTrain", None)
    if not isinstance(block, ConfigRecord):
        return False, False
    kind = str(reader_type or "").strip().lower()
    legacy = kind in _DATA_READERS
    if block.get("distributedMBReading") is None:
        return not legacy, not legacy
    wanted = block.get_bool("distributedMBReading", False)
    return wanted and (not legacy or kind in _LEGACY_DISTRIBUTED), False


def block_momentum(sgd: SGDConfig, record: ConfigRecord | None, workers: int) -> dict | None:
    """The :class:`stadyn.distributed.BlockMomentum` arguments (and ``reset_after_block``) of
    ``ParallelTrain = [ parallelizationMethod = BlockMomentumSGD ; BlockMomentumSGD = [...] ]``
    on ``workers`` workers, with CNTK's names and defaults (SGD.cpp): ``blockSize`` (all
    workers' samples per block) or ``blockSizePerWorker`` (or its old name ``syncPeriod``),
    by default 120000 per worker; ``blockMomentumAsTimeConstant`` or ``blockMomentumPerSync``
    (by default a momentum of ``1 - 1/workers`` per block); ``blockLearningRate`` (1);
    ``useNesterovMomentum`` (true); ``resetSGDMomentum`` (true).  None when the job has one
    worker or another method.

    Example:
        >>> from stadyn.brainscript._blocks import sgd_config
        >>> from stadyn.brainscript._config import parse_config
        >>> rec = parse_config("SGD = [ maxEpochs = 1 ; learningRatesPerSample = 0.1 ; "
        ...                    "ParallelTrain = [ "
        ...                    "parallelizationMethod = BlockMomentumSGD ; "
        ...                    "BlockMomentumSGD = [ blockSizePerWorker = 64 ] ] ]")["SGD"]
        >>> options = block_momentum(sgd_config(rec), rec, 2)
        >>> options["block_size"], round(options["time_constant"], 2), options["nesterov"]
        (128, 184.66, True)
    """
    block = _extra(sgd, "ParallelTrain", None)
    if workers <= 1 or not isinstance(block, ConfigRecord) or \
            str(block.get_str("parallelizationMethod", "None")).strip().lower() != \
            "blockmomentumsgd":
        return None
    inner = block.get("BlockMomentumSGD")
    inner = inner if isinstance(inner, ConfigRecord) else None
    where = _where(record, "ParallelTrain") if inner is None else \
        _where(block, "BlockMomentumSGD")

    def has(key: str) -> bool:
        return inner is not None and key in inner

    def both(a: str, b: str, message: str) -> None:
        if has(a) and has(b):
            raise ConfigError(f"ParallelTrain.BlockMomentumSGD: {message}", *where)

    both("blockSize", "blockSizePerWorker",
         "It is only allowed to set blockSizePerWorker or blockSize, not both of them")
    for other in ("blockSize", "blockSizePerWorker"):
        both("syncPeriod", other, "syncPeriod is a deprecated alias of blockSizePerWorker. "
             "It is not allowed to specify both of them")
    both("blockMomentumPerSync", "blockMomentumAsTimeConstant", "It is only allowed to set "
         "either blockMomentumPerSync or blockMomentumAsTimeConstant, not both of them")
    if has("blockSize"):
        size = int(inner.get_int("blockSize"))
    else:
        per_worker = "syncPeriod" if has("syncPeriod") else "blockSizePerWorker"
        size = int(inner.get_int(per_worker)) * workers if has(per_worker) else 120000 * workers
    if int(str(block.get_str("parallelizationStartEpoch", "1")).strip()) != 1:
        raise ConfigError("ParallelTrain: parallelizationStartEpoch other than 1 is not "
                          "supported with BlockMomentumSGD (the workers merge from the first "
                          "epoch on)", *where)
    if has("blockMomentumAsTimeConstant"):
        constant = float(inner.get_float("blockMomentumAsTimeConstant"))
    else:
        momentum = float(inner.get_float("blockMomentumPerSync")) if \
            has("blockMomentumPerSync") else 1.0 - 1.0 / workers
        try:
            constant = block_momentum_time_constant(momentum, size)
        except ConfigError as exc:
            raise ConfigError(f"ParallelTrain.BlockMomentumSGD: {exc}", *where) from None
    flag = (lambda key: bool(inner.get_bool(key, True))) if inner is not None else \
        (lambda key: True)
    return {"block_size": size, "time_constant": constant,
            "nesterov": flag("useNesterovMomentum"),
            "block_learning_rate": float(inner.get_float("blockLearningRate", 1.0))
            if inner is not None else 1.0,
            "reset_after_block": flag("resetSGDMomentum")}


def keep_checkpoint_files(sgd: SGDConfig, record: ConfigRecord | None = None) -> bool:
    """``keepCheckPointFiles`` (default false: an epoch's ``.ckp`` replaces the previous one)."""
    return _extra_bool(sgd, record, "keepCheckPointFiles", False)
