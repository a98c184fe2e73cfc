"""A graph's image layout switched: channel first (NCHW) to channel last (NHWC) and back
(``ChannelLastModifier``, ``ChannelFirstModifier``).

Convolutions, batch normalisations, poolings, concatenations and affines (of 4-d inputs) are
rebuilt for the other layout, with their weights transposed into new parameters; the graph's
inputs are replaced by the transposed ones given (or made from the originals' values).  As in
NNabla 1.39 both directions name a convolution's new weight ``W_cl`` (in its scope), an
affine's ``w_cl`` (in the current scope, needing no gradient), and a batch normalisation's
``beta_cl`` ... (``beta_cf`` ... going back).  NNabla 1.39's CPU build cannot run the
channel-last convolutions and poolings this makes; Stadyn's can.
"""

from __future__ import annotations

import numpy as np

from ... import functions as _F
from ..._parameter import get_parameter_or_create
from ..._variable import Variable
from .....parametric import parameter_scope
from ._graph_converter import FunctionModifier

__all__ = ["ChannelLastModifier", "ChannelFirstModifier"]

_CONVERTED = ("Convolution", "Deconvolution", "BatchNormalization", "MaxPooling",
              "AveragePooling", "SumPooling", "Unpooling", "Concatenate", "Affine")


class _LayoutModifier(FunctionModifier):
    """What the two directions share; a subclass sets the layouts' transposes."""

    _to = (0, 2, 3, 1)            # an NCHW array's transpose to the new layout
    _channel_last = True
    _suffix = "cl"

    def __init__(self, inputs, replaced=None):
        super().__init__()
        self._inputs = list(inputs)
        self._given = replaced
        self._replaced = self._prepare(replaced)

    def _prepare(self, replaced):
        if replaced is None:
            replaced = []
            for v in self._inputs:
                d = v.d.copy().transpose(self._to)
                x = Variable(d.shape)
                x.d = d
                replaced.append(x)
        return list(replaced)

    def _start(self):
        for v, new in zip(self._inputs, self._replaced):
            readers = v.function_references
            if readers:
                self.init_map_func_inputs(readers[0], [new])

    def _param(self, name, v, need_grad=True):
        d = v.d.copy().transpose(self._to)
        return get_parameter_or_create(name, d.shape, d, need_grad)

    def _affine_weight(self, shape, w):
        """The values of affine weight ``w`` with its rows (an input sample flattened in the
        old layout) reordered for an input of the new layout, ``shape``."""
        _, d1, d2, d3 = shape                      # (NNabla's, too, takes 4-d inputs only)
        moved = [a - 1 for a in self._to[1:]]      # new axis i is old axis moved[i]
        old = [0, 0, 0]
        for i, size in zip(moved, (d1, d2, d3)):
            old[i] = size
        n = w.shape[1]
        d = np.reshape(w.d.copy(), tuple(old) + (n,)).transpose(moved + [3])
        return np.reshape(d, (-1, n))

    def _channel_axis(self, x):
        return len(x.shape) - 1 if self._channel_last else 1

    def connect(self, fname, inputs, args):
        """The function ``fname`` rebuilt for the new layout on ``inputs``."""
        args = dict(args)
        if fname in ("Convolution", "Deconvolution"):
            args["channel_last"] = self._channel_last
            x, w = inputs[0], inputs[1]
            b = inputs[2] if len(inputs) == 3 else None
            with parameter_scope(self.get_parameter_scope(w)):
                w = self._param("W_cl", w)
            return _F.convolution(x, w, b, **args)
        if fname == "BatchNormalization":
            x = inputs[0]
            args["axes"] = [self._channel_axis(x)]
            args.pop("no_scale", None)
            args.pop("no_bias", None)
            with parameter_scope(self.get_parameter_scope(inputs[1])):
                params = [self._param(f"{n}_{self._suffix}", v, v.need_grad)
                          for n, v in zip(("beta", "gamma", "mean", "var"), inputs[1:5])]
            return _F.batch_normalization(x, *params, **args)
        if fname in ("MaxPooling", "AveragePooling", "SumPooling"):
            args["channel_last"] = self._channel_last
        elif fname == "Concatenate":
            args["axis"] = self._channel_axis(inputs[0])
        elif fname == "Affine":
            x = inputs[0]
            wd = self._affine_weight(x.shape, inputs[1])
            w = get_parameter_or_create("w_cl", wd.shape, wd, False)
            b = inputs[2] if len(inputs) == 3 else None
            return _F.affine(x, w, b, **args)
        return self._call_function(fname, inputs, args)

    def modify(self, f, inputs):
        if f.info.type_name in _CONVERTED:
            return self.connect(f.info.type_name, inputs, f.info.args)
        return None

    def __finish__(self):
        self._replaced = self._prepare(self._given)


class ChannelLastModifier(_LayoutModifier):
    """Make a channel-first (NCHW) graph channel last (NHWC).  ``inputs`` are the graph's
    NCHW inputs; ``inputs_cl`` their NHWC replacements (made from their values when not
    given; after a conversion ``inputs_cl`` holds fresh ones, as NNabla's does).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.parametric_functions as PF
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> x = nn.Variable.from_numpy_array(np.random.rand(1, 2, 4, 4))
        >>> y = PF.convolution(x * 1.0, 3, (3, 3))
        >>> x_cl = nn.Variable.from_numpy_array(x.d.transpose(0, 2, 3, 1))
        >>> z = GC.GraphConverter([GC.ChannelLastModifier([x], [x_cl])]).convert(y)
        >>> y.forward(); z.forward(); z.shape, np.allclose(z.d.transpose(0, 3, 1, 2), y.d)
        ((1, 2, 2, 3), True)
    """

    def __init__(self, inputs, inputs_cl=None):
        super().__init__(inputs, inputs_cl)

    @property
    def inputs_cl(self) -> list:
        """The NHWC inputs."""
        return self._replaced



class ChannelFirstModifier(_LayoutModifier):
    """Make a channel-last (NHWC) graph channel first (NCHW): ``inputs`` are its NHWC
    inputs, ``inputs_cf`` their NCHW replacements (see :class:`ChannelLastModifier`).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> import stadyn.compat.nnabla.experimental.graph_converters as GC
        >>> x = nn.Variable.from_numpy_array(np.random.rand(1, 4, 4, 2))
        >>> y = F.max_pooling(x * 1.0, (2, 2), channel_last=True)
        >>> m = GC.ChannelFirstModifier([x])
        >>> z = GC.GraphConverter([m]).convert(y)
        >>> z.shape, z.parent.info.args["channel_last"]
        ((1, 2, 2, 2), False)
    """

    _to = (0, 3, 1, 2)
    _channel_last = False
    _suffix = "cf"

    def __init__(self, inputs, inputs_cf=None):
        super().__init__(inputs, inputs_cf)

    @property
    def inputs_cf(self) -> list:
        """The NCHW inputs."""
        return self._replaced

