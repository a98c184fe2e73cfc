"""Models of the 8x8 digits data set, written with ``F`` and ``PF`` (NNabla style)."""

from __future__ import annotations

from typing import Sequence

from .. import functions as F
from .. import parametric_functions as PF
from .._errors import ArgumentError
from ..graph import Variable
from ..parametric import parameter_scope

__all__ = ["digits_cnn", "digits_mlp"]


#: The batch normalisations :func:`digits_cnn` can use, by the name its ``batch_norm`` takes.
BATCH_NORMS = {"local": PF.batch_normalization, "sync": PF.sync_batch_normalization}


def digits_cnn(x: Variable, test: bool = False, scope: str = "cnn",
               batch_norm: str = "local") -> Variable:
    """The "unnecessarily deep" CNN of NNabla's static-vs-dynamic tutorial on the 8x8 digits:
    12 conv+BN+tanh blocks, 2x2 average pooling, affine 1024 + tanh, affine 10.  Parameters
    match NNabla's names (``cnn/conv1/conv/W`` (64,1,3,3) ... ``cnn/classifier/affine/W``
    (1024,10)).

    ``test=True`` normalises with the running statistics (an evaluation graph sharing the
    parameters); otherwise batch normalisation follows the phase (:func:`stadyn.training`):
    batch statistics while training, running statistics under ``sd.training(False)``.
    ``batch_norm="sync"`` normalises with the statistics of all data-parallel workers'
    minibatches (``PF.sync_batch_normalization``, the same parameters) instead of this
    process's (``"local"``).

    Example:
        >>> import stadyn as sd
        >>> from stadyn.models import digits_cnn
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     digits_cnn(sd.Variable((16, 1, 8, 8))).shape
        (16, 10)
    """
    if batch_norm not in BATCH_NORMS:
        raise ArgumentError(f"digits_cnn: batch_norm must be one of {', '.join(BATCH_NORMS)}, "
                            f"got {batch_norm!r}")
    normalize = BATCH_NORMS[batch_norm]

    def block(h, maps):
        return F.tanh(normalize(PF.convolution(h, maps, (3, 3), pad=(1, 1)),
                                batch_stat=False if test else None))

    with parameter_scope(scope):
        with parameter_scope("conv1"):
            h = block(x, 64)
        for i in range(10):
            with parameter_scope(f"conv{i + 2}"):
                h = block(h, 128)
        with parameter_scope("conv_last"):
            h = block(h, 512)
            h = F.average_pooling(h, (2, 2))
        with parameter_scope("fc"):
            h = F.tanh(PF.affine(h, 1024))
        with parameter_scope("classifier"):
            return PF.affine(h, 10)


def digits_mlp(x: Variable, hidden: Sequence[int] = (256, 256), n_classes: int = 10,
               scope: str = "mlp") -> Variable:
    """A small MLP on flattened digits (64-256-256-10 by default), ReLU activations.

    Example:
        >>> import stadyn as sd
        >>> from stadyn.models import digits_mlp
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     digits_mlp(sd.Variable((16, 1, 8, 8))).shape
        (16, 10)
    """
    with parameter_scope(scope):
        h = x
        for i, n in enumerate(hidden):
            with parameter_scope(f"fc{i + 1}"):
                h = F.relu(PF.affine(h, n))
        with parameter_scope("out"):
            return PF.affine(h, n_classes)
