"""``nnabla.utils.qnn`` on Stadyn: NNabla 1.39's quantisation-aware training (QAT).

A float network trains as usual; at step ``config.niter_to_recording`` a
:class:`QATScheduler` adds range recorders before its functions (the graph computes the same
values and records the ranges of activations and weights), and at ``niter_to_training`` it
replaces them by simulated int8 quantisation (``QuantizeLinear`` then ``DequantizeLinear``
with the recorded ranges' scales) and scales the solver's learning rate by
``learning_rate_scale``.  The conversions are ``nnabla.experimental.graph_converters``'
``QuantizeNonQNNToRecordingModifier`` and ``QuantizeRecordingToTrainingModifier``.

The recorders (``MinMaxMinMaxRecorder``, ``MinMaxMvaRecorder``, ``AbsMaxRecorder``,
``MaxMaxRecorder``, ``MaxMvaRecorder``), their functions and ``...Callback`` classes are in
``_qnn_recorders``; ``QATConfig`` and the enums in ``_qnn_config``.  Checked against NNabla
1.39: cases in ``tests/compat/compat_cases/nnabla_qnn.py``.

Differences from NNabla 1.39: ``QATScheduler.save(..., deploy=True)`` is refused (NNabla
1.39 fails on it too, reading a ``QNNState`` member it lacks).

Example:
    >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> import stadyn.compat.nnabla.parametric_functions as PF, stadyn.compat.nnabla.solvers as S
    >>> from stadyn.compat.nnabla.utils.qnn import QATScheduler, QATConfig
    >>> x = nn.Variable.from_numpy_array(np.linspace(-1, 1, 12).reshape(2, 6))
    >>> with nn.parameter_scope("doc_qat"):
    ...     y = PF.affine(F.relu(PF.affine(x, 4, name="a")), 3, name="b")
    >>> solver = S.Sgd(0.1); solver.set_parameters(nn.get_parameters())
    >>> config = QATConfig(); config.niter_to_recording, config.niter_to_training = 0, 2
    >>> qat = QATScheduler(config=config, solver=solver); qat(y)
    >>> for step in range(3):
    ...     qat.step(); y.forward()      # doctest: +ELLIPSIS
    QNNState.NON_QNN -> QNNState.RECORDING: graph=...
    QNNState.RECORDING -> QNNState.TRAINING: graph=...
    >>> qat.state, round(solver.learning_rate(), 6)
    (<QNNState.TRAINING: 2>, 0.01)
    >>> nn.clear_parameters()
"""

from __future__ import annotations

from typing import Any

from ..experimental import graph_converters as GC
from .._shared_arrays import same_variable
from ..parameter import get_parameters
from ._qnn_config import (FunctionsRankRecorder, PrecisionMode, QATConfig, QATTensorRTConfig,
                          QNNState, qat_default_config)
from ._qnn_recorders import (AbsMaxRecorder, AbsMaxRecorderCallback, MaxMaxRecorder,
                             MaxMaxRecorderCallback, MaxMvaRecorder, MaxMvaRecorderCallback,
                             MinMaxMinMaxRecorder, MinMaxMinMaxRecorderCallback,
                             MinMaxMvaRecorder, MinMaxMvaRecorderCallback, abs_max_recorder,
                             max_max_recorder, max_mva_recorder, minmax_minmax_recorder,
                             minmax_mva_recorder)

__all__ = ["MinMaxMinMaxRecorder", "MinMaxMvaRecorder", "AbsMaxRecorder", "MaxMaxRecorder",
           "MaxMvaRecorder", "minmax_minmax_recorder", "minmax_mva_recorder", "abs_max_recorder",
           "max_max_recorder", "max_mva_recorder", "MinMaxMinMaxRecorderCallback",
           "MinMaxMvaRecorderCallback", "AbsMaxRecorderCallback", "MaxMaxRecorderCallback",
           "MaxMvaRecorderCallback", "PrecisionMode", "QNNState", "QATConfig",
           "QATTensorRTConfig", "qat_default_config", "FunctionsRankRecorder", "QATScheduler"]


def _leaf_of(pred, given):
    """The leaf of ``pred``'s graph that reads ``given`` (a converted graph reads unlinked
    copies of the network's inputs); ``given`` itself when none does."""
    found: list = []

    def look(f):
        found.extend(v for v in f.inputs if v.parent is None and same_variable(v, given))
    pred.visit(look)
    return found[0] if found else given


class QATScheduler:
    """Runs quantisation-aware training: register the network's outputs (``scheduler(pred)``,
    ``scheduler(vpred, training=False)`` for an evaluation graph), call :meth:`step` once per
    training step; the registered outputs are rewired in place (``rewire_on``) onto the
    recording graph at step ``config.niter_to_recording`` and to the quantised one at
    ``config.niter_to_training``.  ``niter_to_training`` must be > 0 and >
    ``niter_to_recording`` >= 0 (a ``ValueError``, as NNabla's).

    Example:
        >>> QATScheduler(config=QATConfig())
        Traceback (most recent call last):
        ...
        ValueError: Please set niter_to_recording and niter_to_training correctly! ...
    """

    def __init__(self, config: Any = qat_default_config, solver: Any = None):
        self.config = config
        if config.niter_to_training <= 0 or config.niter_to_recording < 0:
            raise ValueError("Please set niter_to_recording and niter_to_training correctly! "
                             "niter_to_recording should be greater than or equal to 0. "
                             "niter_to_training should be greater than 0 (got "
                             f"{config.niter_to_recording} and {config.niter_to_training})")
        if config.niter_to_training - config.niter_to_recording <= 0:
            raise ValueError("Please set niter_to_recording and niter_to_training correctly! "
                             "niter_to_training must come after niter_to_recording, by more "
                             "steps than one epoch has (got "
                             f"{config.niter_to_recording} and {config.niter_to_training})")
        self.solver = solver
        self.counter = 0
        self.state = QNNState.NON_QNN
        self.registry: list = []

    def __call__(self, pred, training=True) -> None:
        """Register the output ``pred`` of a graph to quantise (``training=False``: an
        evaluation graph, whose recorders do not record)."""
        self.registry.append((pred, training))

    def _register_params(self) -> None:
        if self.solver and (self.config.bn_folding or self.config.bn_self_folding):
            self.solver.set_parameters(get_parameters(grad_only=True))

    def _fold_bn(self, pred):
        cfg = self.config
        modifiers: list = []
        if cfg.bn_folding:
            modifiers += [GC.BatchNormalizationFoldingModifier(opposite=False,
                                                               channel_last=cfg.channel_last),
                          GC.BatchNormalizationFoldingModifier(opposite=True,
                                                               channel_last=cfg.channel_last)]
        if cfg.bn_self_folding:
            modifiers.append(GC.BatchNormalizationSelfFoldingModifier())
        if modifiers:
            pred.rewire_on(GC.GraphConverter([GC.UnfusedBatchNormalizationModifier()]
                                             + modifiers).convert(pred))
        return pred

    def _to_recording(self) -> None:
        for i, (pred, training) in enumerate(self.registry):
            pred = self._fold_bn(pred)
            ranks = FunctionsRankRecorder()
            pred.visit(ranks)
            pred.rewire_on(GC.GraphConverter([GC.QuantizeNonQNNToRecordingModifier(
                ranks.functions_ranks, config=self.config, training=training)]).convert(pred))
            pred.need_grad = False
            self._register_params()
            self.registry[i] = (pred, training)
            self.state = QNNState.RECORDING
            print(f"QNNState.NON_QNN -> QNNState.RECORDING: graph={pred}")

    def _to_training(self) -> None:
        cfg = self.config
        for i, (pred, training) in enumerate(self.registry):
            pred.rewire_on(GC.GraphConverter([GC.RemoveFunctionModifier(
                rm_funcs=[cfg.recorder_activation().name(), cfg.recorder_weight().name()])]
            ).convert(pred))
            ranks = FunctionsRankRecorder()
            pred.visit(ranks)
            pred.rewire_on(GC.GraphConverter([GC.QuantizeRecordingToTrainingModifier(
                ranks.functions_ranks, config=cfg)]).convert(pred))
            self._register_params()
            self.solver.set_learning_rate(self.solver.learning_rate() * cfg.learning_rate_scale)
            self.registry[i] = (pred, training)
            self.state = QNNState.TRAINING
            print(f"QNNState.RECORDING -> QNNState.TRAINING: graph={pred}")

    def step(self) -> None:
        """Count a training step; at ``niter_to_recording`` / ``niter_to_training`` convert
        the registered graphs (printing the change of state, as NNabla)."""
        if self.counter == self.config.niter_to_recording:
            self._to_recording()
        elif self.counter == self.config.niter_to_training:
            self._to_training()
        self.counter += 1

    def save(self, fname, inputs, batch_size=1, net_name="net", deploy=False) -> None:
        """Save each registered evaluation graph (``training=False``) to the ``.nnp`` file
        ``fname`` as the network ``net_name`` with ``inputs`` named ``x0``, ``x1``, ... and
        its outputs ``y0``, ...; an executor ``runtime`` runs it.  ``deploy=True`` is refused."""
        if deploy:
            raise NotImplementedError("QATScheduler.save(deploy=True): the deployment "
                                      "conversion is not implemented (nor in NNabla 1.39)")
        from .save import save

        def as_list(o):
            return list(o) if isinstance(o, (list, tuple)) else [o]

        for pred, training in self.registry:
            if training:
                continue
            names = {f"x{i}": _leaf_of(pred, v) for i, v in enumerate(as_list(inputs))}
            outputs = {f"y{i}": v for i, v in enumerate(as_list(pred))}
            save(fname, {"networks": [{"name": net_name, "batch_size": batch_size,
                                       "outputs": outputs, "names": names}],
                         "executors": [{"name": "runtime", "network": net_name,
                                        "data": list(names), "outputs": list(outputs)}]})
