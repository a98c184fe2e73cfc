"""Sources written by the user: ``UserMinibatchSource`` (a subclass gives ``stream_infos()``
and ``next_minibatch(num_samples, number_of_workers, worker_rank, device=None)`` returning
``{StreamInformation: MinibatchData}``) and CNTK's ``StreamInformation(name, stream_id,
storage_format, dtype, shape)`` to describe its streams.  Trainers and ``training_session``
read such a source like any other (``input_map`` / ``model_inputs_to_streams`` map its
streams to inputs).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> class Ones(C.io.UserMinibatchSource):
    ...     def __init__(self):
    ...         self.info = C.io.StreamInformation("x", 0, "dense", np.float32, (2,))
    ...         super().__init__()
    ...     def stream_infos(self):
    ...         return [self.info]
    ...     def next_minibatch(self, num_samples, number_of_workers, worker_rank, device=None):
    ...         data = C.Value(batch=np.ones((num_samples, 2), np.float32))
    ...         return {self.info: C.io.MinibatchData(data, num_samples, num_samples, False)}
    >>> src = Ones()
    >>> src.next_minibatch(3, 1, 0)[src.streams.x].asarray().shape
    (3, 2)
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from .... import io as _io
from .._variables import Record

__all__ = ["UserMinibatchSource", "StreamInformation"]


class StreamInformation(_io.StreamInformation):
    """A stream of a user source, made as CNTK makes it: ``StreamInformation(name, stream_id,
    storage_format, dtype, shape)`` (``storage_format``: ``'dense'`` or ``'sparse'``).

    Example:
        >>> import numpy as np
        >>> info = StreamInformation("labels", 1, "dense", np.float32, (10,))
        >>> info.name, info.stream_id, info.sample_shape, info.storage_format
        ('labels', 1, (10,), 'dense')
    """

    def __init__(self, name: str, stream_id: int, storage_format: str, dtype, shape,
                 defines_mb_size: bool = False):
        if storage_format not in ("dense", "sparse"):
            raise ValueError(f"StreamInformation: storage_format is 'dense' or 'sparse', got "
                             f"{storage_format!r}")
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(
            int(s) for s in shape)
        super().__init__(name, int(stream_id), shape, np.dtype(dtype),
                         storage_format == "sparse", False, bool(defines_mb_size))


def _reading(user_next):
    """The user's ``next_minibatch`` as every reader of a source calls it: the workers
    default to one, and ``input_map`` keys the result by input instead of stream.  A
    ``next_minibatch`` that takes ``input_map`` itself (CNTK's object-detection examples'
    ``ObjectDetectionMinibatchSource``) is called as it is, as CNTK 2.7 calls it."""
    if "input_map" in inspect.signature(user_next).parameters:
        @functools.wraps(user_next)
        def own_map(self, *args, **kwargs):
            return user_next(self, *args, **kwargs)
        own_map._reads_user_source = True
        return own_map

    @functools.wraps(user_next)
    def next_minibatch(self, num_samples, number_of_workers=1, worker_rank=0, device=None,
                       input_map=None, num_data_partitions=None, partition_index=None):
        if num_data_partitions is not None:
            number_of_workers, worker_rank = num_data_partitions, partition_index or 0
        batch = user_next(self, int(num_samples), number_of_workers, worker_rank, device)
        batch = dict(batch or {})
        if input_map is None:
            return batch
        by_name = {info.name: data for info, data in batch.items()}
        out = {}
        for key, stream in input_map.items():
            name = stream if isinstance(stream, str) else stream.name
            if name in by_name:
                out[key] = by_name[name]
        return out
    next_minibatch._reads_user_source = True
    return next_minibatch


class UserMinibatchSource:
    """Base class of minibatch sources written in Python: override ``stream_infos()`` and
    ``next_minibatch(num_samples, number_of_workers, worker_rank, device=None)`` (and, to be
    checkpointed, ``get_checkpoint_state()`` / ``restore_from_checkpoint(state)``); call
    ``super().__init__()`` once the streams are known.  ``streams`` holds them by name."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        user = cls.__dict__.get("next_minibatch")
        if user is not None and not getattr(user, "_reads_user_source", False):
            cls.next_minibatch = _reading(user)

    def __init__(self):
        self.streams = Record(**{info.name: info for info in self.stream_infos()})

    def stream_infos(self) -> list:
        """The streams this source delivers (a list of :class:`StreamInformation`); override
        it."""
        raise NotImplementedError("UserMinibatchSource.stream_infos must be overridden")

    def stream_info(self, name: str):
        """The stream called ``name`` (a ``ValueError`` for none or several)."""
        found = [info for info in self.stream_infos() if info.name == name]
        if len(found) != 1:
            raise ValueError(f"the source has {len(found)} streams named {name!r}")
        return found[0]

    def __getitem__(self, name: str):
        return self.stream_info(name)

    def next_minibatch(self, num_samples, number_of_workers=1, worker_rank=0, device=None):
        """The next ``num_samples`` samples as ``{StreamInformation: MinibatchData}``;
        override it."""
        raise NotImplementedError("UserMinibatchSource.next_minibatch must be overridden")

    def get_checkpoint_state(self) -> dict:
        """The source's position, for a checkpoint (override it to be checkpointed)."""
        return {}

    def restore_from_checkpoint(self, state: dict) -> None:
        """Go back to a position :meth:`get_checkpoint_state` gave."""
        if state:
            raise NotImplementedError("in order to use checkpointing on UserMinibatchSource, "
                                      "you need to implement restore_from_checkpoint(checkpoint)")

    def is_infinite(self) -> bool:
        """Whether the source never ends (False unless overridden)."""
        return False
