"""NNabla 1.39's quantisation modifiers (``nnabla.utils.qnn``'s ``QATScheduler`` runs them):

* ``QuantizeNonQNNToRecordingModifier(functions_ranks, config, training)``: before each
  function (not batch normalisation; only ``config.record_layers`` when given; not the
  network's first ``skip_inputs_layers`` and last ``skip_outputs_layers``) a recorder of
  ``config.recorder_activation`` on each data input (``x0``, ``x1``, ...) and of
  ``config.recorder_weight`` on each parameter (``w0``, ``w1``), their parameters in the scope
  ``'<TypeName>-<rank>'`` (``functions_ranks``, from a ``FunctionsRankRecorder``); with
  ``RecorderPosition.BOTH`` also after it, in the next function's scope.  An input already
  recorded is not recorded again; ``Add2`` and ``Concatenate`` share the range of their
  earliest input.
* ``QuantizeRecordingToTrainingModifier(functions_ranks, config)``: on a graph whose recorders
  were removed, each recorded input becomes ``DequantizeLinear(QuantizeLinear(x))`` with the
  recorded range's scale (``config.pow2`` rounding, ``round_mode``, ``narrow_range``,
  ``dtype``) and a zero point of 0, kept as ``scale-``/``zeropoint-`` parameters in the same
  scopes; a bias is quantised with the input's scale times the weight's (``scale-b``,
  ``zeropoint-b``; left as it is with ``skip_bias``); a function's output is quantised with
  the range recorded before the function reading it.  Only ``PrecisionMode.SIM_QNN``.
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from ... import functions as _F
from ..._parameter import get_parameter_or_create
from .....parametric import parameter_scope
from ..._shared_arrays import same_variable
from ._graph_converter import FunctionModifier

__all__ = ["QuantizeNonQNNToRecordingModifier", "QuantizeRecordingToTrainingModifier"]

#: (``nnabla.utils.qnn``'s, defined here so that the modifiers need nothing of ``utils``:
#: ``utils.qnn`` reads this package, not the other way round)
class PrecisionMode(Enum):
    """How a trained graph is quantised: ``SIM_QNN`` (quantise and dequantise around float
    functions, the one NNabla 1.39 implements), ``QNN``, ``MIXED_QNN``.

    Example:
        >>> PrecisionMode.SIM_QNN.value
        1
    """

    QNN = 0
    SIM_QNN = 1
    MIXED_QNN = 2


_BINARY = ("Add2", "Sub2", "Mul2", "Div2", "Pow2")
_WITH_BIAS = ("Affine", "Convolution", "Deconvolution", "DepthwiseConvolution",
              "DepthwiseDeconvolution")


def _n_data_inputs(type_name: str, inputs) -> int:
    """How many of a function's inputs are data (the rest are its parameters)."""
    if type_name in ("Concatenate", "Stack"):
        return len(inputs)
    return 2 if type_name in _BINARY else 1


def _axes(config) -> list:
    return [3] if config.channel_last else [1]


def _made_by(v, type_name: str) -> bool:
    return v.parent is not None and v.parent.info.type_name == type_name


def _readers(v) -> list:
    """The functions that read ``v``, newest first."""
    return list(v.function_references)


def _upstream(f, found: list) -> None:
    for v in f.inputs:
        if v.parent is not None:
            found.append(v.parent)
            _upstream(v.parent, found)


def _downstream(f, found: list) -> None:
    for g in _readers(f.outputs[0]):
        found.append(g)
        _downstream(g, found)


class _Ranked:
    def __init__(self, functions_ranks):
        self.functions_ranks = functions_ranks

    def get_function_rank(self, f) -> int:
        """``f``'s number in ``functions_ranks`` (-1 when it has none)."""
        return self.functions_ranks.get(f, -1)

    def _scope(self, f) -> str:
        return f"{f.info.type_name}-{self.get_function_rank(f)}"


class QuantizeNonQNNToRecordingModifier(FunctionModifier, _Ranked):
    """Add range recorders to a float graph (see the module docstring).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> import stadyn.compat.nnabla.parametric_functions as PF
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> from stadyn.compat.nnabla.utils.qnn import QATConfig, FunctionsRankRecorder
        >>> x = nn.Variable.from_numpy_array(np.ones((2, 3)))
        >>> with nn.parameter_scope("doc_rec"):
        ...     y = PF.affine(F.relu(PF.affine(x, 4)), 2, name="fc2")
        >>> config = QATConfig(); config.skip_inputs_layers = config.skip_outputs_layers = []
        >>> ranks = FunctionsRankRecorder(); y.visit(ranks)
        >>> rec = GC.GraphConverter([GC.QuantizeNonQNNToRecordingModifier(
        ...     ranks.functions_ranks, config=config)]).convert(y)
        >>> names = []; rec.visit(lambda f: names.append(f.info.type_name)); names[:4]
        ['MaxMvaRecorder', 'MinMaxMinMaxRecorder', 'MinMaxMinMaxRecorder', 'Affine']
        >>> nn.clear_parameters()
    """

    def __init__(self, functions_ranks, config=None, training=True):
        FunctionModifier.__init__(self)
        _Ranked.__init__(self, functions_ranks)
        self._config = config
        self._training = training

    def _skipped_as_end(self, f) -> bool:
        """Whether ``f`` is one of the network's first ``skip_inputs_layers`` (no function of
        those types before it) or last ``skip_outputs_layers`` (none after it)."""
        first, last = self._config.skip_inputs_layers, self._config.skip_outputs_layers
        if not first and not last:
            return False
        fn = f.info.type_name
        if last and fn in last:
            after: list = []
            _downstream(f, after)
            if not {g.info.type_name for g in after} & set(last):
                return True
        if first and fn in first:
            before: list = []
            _upstream(f, before)
            if not {g.info.type_name for g in before} & set(first):
                return True
        return False

    def check(self, f) -> bool:
        """Whether ``f`` gets recorders."""
        fn = f.info.type_name
        if fn in ("Sink", "BatchNormalization"):
            return False
        if self._config.record_layers and fn not in self._config.record_layers:
            return False
        return not self._skipped_as_end(f)

    def _record(self, recorder, v, name):
        return recorder()(v, axes=_axes(self._config), training=self._training, name=name)

    def add_recorder(self, f, inputs, cfg):
        """``inputs`` with recorders added, in ``f``'s scope."""
        activation = cfg.recorder_activation
        kind = activation().name()
        n = _n_data_inputs(f.info.type_name, inputs)
        out = []
        for i, v in enumerate(inputs[:n]):
            readers = _readers(v)
            if readers and readers[0].info.type_name == kind:
                v = readers[0].outputs[0]             # recorded already: read that recorder
            elif not _made_by(v, kind):
                with parameter_scope(self._scope(f)):
                    v = self._record(activation, v, f"x{i}")
            out.append(v)
        for i, v in enumerate(inputs[n:]):
            with parameter_scope(self._scope(f)):
                out.append(self._record(cfg.recorder_weight, v, f"w{i}"))
        return out

    def share_recorder(self, f, inputs, new_inputs, cfg):
        """For ``Add2`` and ``Concatenate``: every input re-recorded into the range of the
        input of the lowest rank (the first such)."""
        if f.info.type_name not in ("Add2", "Concatenate"):
            return new_inputs
        idx, lowest = 0, inputs[0].rank
        for i, v in enumerate(new_inputs[1:], 1):
            if v.rank < lowest:
                idx, lowest = i, v.rank
        scope = self.get_parameter_scope(new_inputs[idx].parent.inputs[1])
        for i in range(len(new_inputs)):
            if i != idx:
                with parameter_scope(scope):
                    new_inputs[i] = self._record(cfg.recorder_activation,
                                                 new_inputs[i].parent.inputs[0], "x0")
        return new_inputs

    def modify(self, f, inputs):
        if not self.check(f):
            return None
        cfg = self._config
        new_inputs = self.share_recorder(f, inputs, self.add_recorder(f, inputs, cfg), cfg)
        h = self._modify_as_same(f, new_inputs)
        following = _readers(f.outputs[0])[0]
        if cfg.recorder_position == cfg.RecorderPosition.BOTH:
            with parameter_scope(self._scope(following)):
                h = self._record(cfg.recorder_activation, h, "x0")
        return h


class _SimulatedQNN(_Ranked):
    """``PrecisionMode.SIM_QNN``: quantise and dequantise around float functions."""

    def __init__(self, functions_ranks, modifier, config):
        super().__init__(functions_ranks)
        self._config = config
        self._modifier = modifier
        self._quantised: dict = {}

    def _settings(self):
        cfg = self._config
        return cfg.round_mode, cfg.narrow_range, cfg.dtype

    def _quantize(self, x, scale, zero_point):
        if scale is None:
            return x
        return _F.quantize_linear(x, scale, zero_point, *self._settings())

    @staticmethod
    def _dequantize(x, scale, zero_point):
        return x if scale is None else _F.dequantize_linear(x, scale, zero_point)

    def _scale(self, recorder, v, name):
        cfg = self._config
        return recorder.get_scale_zeropoint(v, axes=_axes(cfg), narrow_range=cfg.narrow_range,
                                            round_method=cfg.pow2.value, name=name)

    def _quantize_output(self, f, h):
        scale = zero_point = None
        for following in _readers(f.outputs[0]):
            fn = following.info.type_name
            if fn == "Sink":
                return h
            name = "x0"
            if fn in _BINARY:
                for i, v in enumerate(following.inputs):
                    if same_variable(v, f.outputs[0]):
                        name = f"x{i}"
            with parameter_scope(self._scope(following)):
                scale, zero_point = self._scale(self._config.recorder_activation, h, name)
            if scale is not None:
                break
        h = self._quantize(h, scale, zero_point)
        self._quantised[h] = (scale, zero_point)
        return h

    @staticmethod
    def _quantization_of(v):
        if _made_by(v, "QuantizeLinear"):
            return v.parent.inputs[1].d, v.parent.inputs[2].d
        return None, None

    def _requantize_bias(self, f, inputs, scope):
        if f.info.type_name not in _WITH_BIAS or len(inputs) != 3:
            return inputs
        x, w, b = inputs
        sx, zpx = self._quantization_of(x)
        sw, _ = self._quantization_of(w)
        if sx is None or sw is None:
            return inputs
        with parameter_scope(scope):
            sb = get_parameter_or_create(
                "scale-b", (1,), np.reshape(np.array(sx), (1,)) * np.reshape(np.array(sw), (1,)),
                False)
            zpb = get_parameter_or_create("zeropoint-b", (1,),
                                          np.reshape(np.array(zpx), (1,)), False)
            if _made_by(b, "QuantizeLinear"):
                b = b.parent.inputs[0]
                if not self._config.skip_bias:
                    b = _F.quantize_linear(b, sb, zpb, *self._settings())
                inputs[2] = b
        return inputs

    def _quantize_inputs(self, f, inputs, scope):
        cfg = self._config
        n = _n_data_inputs(f.info.type_name, inputs)
        out = []
        for i, v in enumerate(inputs[:n]):
            if v.rank == 0:
                with parameter_scope(scope):
                    s, zp = self._scale(cfg.recorder_activation, v, f"x{i}")
                    v = self._quantize(v, s, zp)
                    self._quantised[v] = (s, zp)
            out.append(v)
        for i, v in enumerate(inputs[n:]):
            with parameter_scope(scope):
                s, zp = self._scale(cfg.recorder_weight, v, f"w{i}")
                out.append(self._quantize(v, s, zp))
        return self._requantize_bias(f, out, scope)

    def _dequantize_inputs(self, inputs):
        for i, v in enumerate(inputs):
            for g in _readers(v):
                if g.info.type_name == "DequantizeLinear":
                    v = g.outputs[0]
                    break
            s = zp = None
            if _made_by(v, "QuantizeLinear"):
                s, zp = v.parent.inputs[1:3]
            inputs[i] = self._dequantize(v, s, zp)
        return inputs

    def _share(self, f, inputs):
        if f.info.type_name not in ("Add2", "Concatenate"):
            return inputs
        idx, lowest = 0, inputs[0].rank
        for i, v in enumerate(inputs[1:], 1):
            if _made_by(v, "DequantizeLinear") and v.rank < lowest:
                idx, lowest = i, v.rank
        s = zp = None
        if _made_by(inputs[idx], "DequantizeLinear"):
            s, zp = inputs[idx].parent.inputs[1:3]
        for i in range(len(inputs)):
            if i == idx:
                continue
            if _made_by(inputs[i], "DequantizeLinear"):
                inputs[i] = inputs[i].parent.inputs[0].parent.inputs[0]
            inputs[i] = self._dequantize(self._quantize(inputs[i], s, zp), s, zp)
        return inputs

    def modify(self, f, inputs):
        scope = self._scope(f)
        inputs = self._share(f, self._dequantize_inputs(self._quantize_inputs(f, inputs, scope)))
        h = self._modifier._modify_as_same(f, inputs)
        if f.info.type_name == "Sink":
            return h
        return self._quantize_output(f, h)

    def finish(self):
        self._quantised = {}


class QuantizeRecordingToTrainingModifier(FunctionModifier):
    """Quantise a recorded graph for training (see the module docstring); its recorders must
    have been removed first (``RemoveFunctionModifier``).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> import stadyn.compat.nnabla.parametric_functions as PF
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> from stadyn.compat.nnabla.utils.qnn import QATConfig, FunctionsRankRecorder
        >>> def converted(y, modifier_class, **kw):
        ...     ranks = FunctionsRankRecorder(); y.visit(ranks)
        ...     return GC.GraphConverter([modifier_class(ranks.functions_ranks, **kw)]).convert(y)
        >>> x = nn.Variable.from_numpy_array(np.linspace(-1, 1, 6).reshape(2, 3))
        >>> with nn.parameter_scope("doc_train"):
        ...     y = PF.affine(F.relu(PF.affine(x, 4)), 2, name="fc2")
        >>> config = QATConfig(); config.skip_inputs_layers = config.skip_outputs_layers = []
        >>> rec = converted(y, GC.QuantizeNonQNNToRecordingModifier, config=config)
        >>> rec.forward()                                     # records the ranges
        >>> plain = GC.GraphConverter([GC.RemoveFunctionModifier(
        ...     ["MaxMvaRecorder", "MinMaxMinMaxRecorder"])]).convert(rec)
        >>> q = converted(plain, GC.QuantizeRecordingToTrainingModifier, config=config)
        >>> names = []; q.visit(lambda f: names.append(f.info.type_name)); names[-4:]
        ['DequantizeLinear', 'QuantizeLinear', 'DequantizeLinear', 'Affine']
        >>> nn.clear_parameters()
    """

    def __init__(self, functions_ranks, config=None):
        super().__init__()
        if config.precision_mode != PrecisionMode.SIM_QNN:
            raise NotImplementedError(
                f"QuantizeRecordingToTrainingModifier: precision_mode {config.precision_mode} "
                "is not implemented (NNabla 1.39 implements only PrecisionMode.SIM_QNN)")
        self._mode = _SimulatedQNN(functions_ranks, self, config)

    def modify(self, f, inputs):
        return self._mode.modify(f, inputs)

    def __finish__(self):
        self._mode.finish()
