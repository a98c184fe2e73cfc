"""Two of cntk.exe's nodes that CNTK 2.7's Python does not offer, for BrainScript:
``EnvironmentInput`` (the network's phase read at run time) and the column gather of
``GatherPacked`` from a source without a dynamic axis (gaps and cntk.exe's range error)."""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensor

from ..graph import get_current_context, is_training
from ._registry import op

#: the environment properties cntk.exe's EnvironmentInputNode reads (InputAndParamNodes.h:
#: 510-517, ReadOutVariable)
ENVIRONMENT_PROPERTIES = ("isTraining",)


def check_environment_property(name, error: type[Exception] = ValueError) -> None:
    """Refuse an environment property cntk.exe's ``EnvironmentInputNode`` has not (its
    Validate, InputAndParamNodes.h:516, reads it once: :546), in its words, as ``error``
    (BrainScript's: its ``ConfigError``).

    Example:
        >>> check_environment_property("isTraining")
        >>> check_environment_property("isTesting")
        Traceback (most recent call last):
        ...
        ValueError: EnvironmentInput: There is no environment property 'isTesting'
    """
    if name not in ENVIRONMENT_PROPERTIES:
        raise error(f"EnvironmentInput: There is no environment property '{name}'")


def _environment_input_shape(name="isTraining"):
    check_environment_property(name)
    return torch.empty((1,), device="meta")


@op(0, category="misc", shape=_environment_input_shape)
def cntk_environment_input(name="isTraining"):
    """cntk.exe's ``EnvironmentInputNode`` (InputAndParamNodes.h:480-555): a ``(1,)`` value
    read from the network's environment each time it runs -- ``isTraining``, 1 while the
    graph runs in the training phase (:func:`stadyn.training`, what the Trainer sets), else 0
    -- so one graph gives both; no inputs, no gradient.  Another property is refused in
    cntk.exe's words ("There is no environment property ...", :516).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     with sd.training(True):
        ...         a = F.cntk_environment_input("isTraining")
        ...     with sd.training(False):
        ...         b = F.cntk_environment_input("isTraining")
        >>> a.d.tolist(), b.d.tolist()
        ([1.0], [0.0])
    """
    check_environment_property(name)
    return torch.full((1,), float(is_training()), device=get_current_context().device)


def _gather_columns_shape(source, index):
    return torch.empty(tuple(index.shape) + tuple(source.shape[1:]), dtype=source.dtype,
                       device="meta")


@op(2, category="shape", shape=_gather_columns_shape)
def cntk_gather_columns(source, index):
    """cntk.exe's ``DoGatherColumnsOf`` (Source/Math/CPUMatrixImpl.h:643-670), what its
    ``GatherPacked`` does with a source without a dynamic axis: the columns of ``source`` --
    its first axis, CNTK's last -- at ``index`` (numbers, truncated to whole ones), output
    ``index.shape + source.shape[1:]``.  A negative or NaN index is a gap ("negative index
    means gap", :661): zeros there (cntk.exe leaves the column unwritten), and no gradient; an
    index past the last column is cntk.exe's error, "DoGatherColumnsOf: Map out of bounds.
    j >= n" (:664-665), eager and traced on the CPU; traced on CUDA it is not checked (a
    check would sync the host each run) and the last column is taken, where cntk.exe's GPU
    kernel reads past the matrix (GPUMatrix.cu:963-964).  The gradient is added back to the
    columns gathered (``DoScatterColumnsOf``).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     e = sd.Variable.from_numpy_array(np.array([[1.0, 2.0], [3.0, 4.0]]))
        ...     y = F.cntk_gather_columns(e, sd.Variable.from_numpy_array(np.array([1.0, -1.0])))
        >>> y.d.tolist()
        [[3.0, 4.0], [0.0, 0.0]]
    """
    valid = index >= 0                                  # (NaN: False, a gap as well)
    ids = torch.where(valid, index, torch.zeros_like(index)).long()
    columns = source.shape[0]
    beyond = valid & (ids >= columns)
    if isinstance(ids, FakeTensor):     # traced: the check is in the program (CPU)
        if ids.device.type == "cpu":
            torch._assert_async(~beyond.any(), f"DoGatherColumnsOf: Map out of bounds. "
                                               f"(an index) >= {columns}")
    elif not ids.is_meta and bool(beyond.any()):
        first = int(ids[beyond].reshape(-1)[0])
        raise ValueError(f"DoGatherColumnsOf: Map out of bounds. {first} >= {columns}")
    ids = ids.clamp(max=columns - 1)    # (a GPU's past-the-end index, unchecked when traced)
    picked = source[ids.reshape(-1)].reshape(tuple(index.shape) + tuple(source.shape[1:]))
    keep = valid.reshape(tuple(valid.shape) + (1,) * (source.dim() - 1))
    return torch.where(keep, picked, torch.zeros((), dtype=picked.dtype, device=picked.device))
