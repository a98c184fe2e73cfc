"""cntk.exe's ``HTKMLFReader`` screens the utterances of its feature list before it reads them
(``minibatchutterancesourcemulti``'s constructor, utterancesourcemulti.h):

* an utterance whose frame count differs between two feature streams (scp files) is skipped
  ("skipping N-th file due to inconsistency in duration in different feature streams"), an
  i-vector stream (``expandToUtterance``, one frame) aside; more than half of them is an
  error, "too many files with inconsistent durations, assuming broken configuration";
* an utterance without a label in the MLF is skipped (``[no labels for KEY]``; the joined
  source warns about those);
* an utterance whose label duration (the end of its last label range) differs from its frame
  count by any number of frames is skipped, with ``[duration mismatch (L in label vs. F in
  feat file), skipping KEY]`` (there is no tolerance: ``labframes != uttframes``);
* both count towards ``nomlf``; more of them than half of the list is an error, "too many
  files not found in label set--assuming broken configuration".

CNTK 2's deserializers (``readerType = "HTKDeserializers"``, the ``deserializers`` list) have
none of these rules and are not screened here.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import io
from ._ast import config_error
from ._blocks import ReaderConfig

__all__ = ["screen_utterances"]


class _KeptUtterances(io.Deserializer):
    """The utterances ``kept`` (positions) of a deserializer, in its order."""

    def __init__(self, inner: io.Deserializer, kept: np.ndarray):
        self.inner = inner
        self.kept = np.asarray(kept, dtype=np.int64)
        self.path = inner.path
        self.randomizer = inner.randomizer

    @property
    def broadcast(self) -> bool:
        return bool(getattr(self.inner, "broadcast", False))

    @property
    def frames_in_frame_mode(self) -> bool:  # type: ignore[override]
        return self.inner.frames_in_frame_mode

    def stream_specs(self) -> dict[str, io.StreamSpec]:
        return self.inner.stream_specs()

    def __len__(self) -> int:
        return len(self.kept)

    def keys(self) -> list[Any] | None:
        keys = self.inner.keys()
        return None if keys is None else [keys[int(i)] for i in self.kept]

    def sequence_lengths(self) -> np.ndarray | None:
        lengths = self.inner.sequence_lengths()
        return None if lengths is None else np.asarray(lengths)[self.kept]

    def read_batch(self, ids: Sequence[int], rngs: Sequence[Any]) -> dict[str, io.StreamBatch]:
        return self.inner.read_batch(self.kept[np.asarray(ids, dtype=np.int64)], rngs)

    def read_steps(self, ids: Sequence[int], steps: np.ndarray,
                   rngs: Sequence[Any]) -> dict[str, io.StreamBatch]:
        return self.inner.read_steps(self.kept[np.asarray(ids, dtype=np.int64)], steps, rngs)

    def close(self) -> None:
        self.inner.close()


def _say(warn: Callable[[str], None] | None, message: str) -> None:
    if warn is not None:
        warn(message)
    else:
        warnings.warn(message, stacklevel=5)


def _inconsistent(reader: ReaderConfig, made: list[io.Deserializer], keys: list[str],
                  frames: np.ndarray, label_types: set[str],
                  warn: Callable[[str], None] | None) -> np.ndarray:
    """The utterances whose frame count another (not broadcast) feature stream does not
    share."""
    bad = np.zeros(len(keys), dtype=bool)
    others: list[np.ndarray] = []
    for d, config in zip(made, reader.deserializers):
        if config.type.lower() in label_types or getattr(d, "broadcast", False) or not d.keys():
            continue
        streams = getattr(d, "stream_lengths", None)
        for lengths in (streams().values() if streams is not None
                        else [d.sequence_lengths()]):
            if d is made[0]:        # its streams are paired with the first by position
                others.append(np.asarray(lengths, dtype=np.int64))
            else:
                where = {str(k): int(n) for k, n in zip(d.keys(), lengths)}
                others.append(np.array([where.get(k, -1) for k in keys], dtype=np.int64))
    for other in others:
        for i in range(len(keys)):
            if other[i] >= 0 and other[i] != int(frames[i]) and not bad[i]:
                bad[i] = True
                _say(warn, f"HTKMLFReader: skipping {i}-th file due to inconsistency in "
                           f"duration in different feature streams ({int(frames[i])} vs "
                           f"{int(other[i])} frames)")
    if int(bad.sum()) > len(keys) // 2:
        raise config_error(f"HTKMLFReader: {int(bad.sum())} of the {len(keys)} utterances have "
                     "another frame count in another feature stream (cntk.exe: too many files "
                     "with inconsistent durations, assuming broken configuration)",
                     reader.deserializers[0].loc)
    return bad


def screen_utterances(reader: ReaderConfig, made: list[io.Deserializer],
                      label_types: set[str],
                      warn: Callable[[str], None] | None) -> list[io.Deserializer]:
    """``made`` (the feature deserializer first) with the utterances cntk.exe's HTKMLFReader
    skips for frame counts that differ between feature streams or from the label duration
    left out of the features, each reported through ``warn`` (a Python warning without it); a
    ConfigError at the reader block when more than half of the utterances are inconsistent
    between feature streams, or have no label or a mismatched one."""
    features = made[0]
    keys = features.keys()
    frames = features.sequence_lengths()
    if not keys or frames is None:
        return made
    keys = [str(k) for k in keys]
    inconsistent = _inconsistent(reader, made, keys, frames, label_types, warn)
    skipped = inconsistent.copy()
    for d, config in zip(made[1:], reader.deserializers[1:]):
        if config.type.lower() not in label_types or not d.keys():
            continue
        durations = {str(k): int(n) for k, n in zip(d.keys(), d.sequence_lengths())}
        missing = np.array([k not in durations for k in keys]) & ~inconsistent
        mismatched = [i for i, k in enumerate(keys)
                      if k in durations and durations[k] != int(frames[i]) and not skipped[i]]
        for i in mismatched:
            _say(warn, f"HTKMLFReader: [duration mismatch ({durations[keys[i]]} in label vs. "
                       f"{int(frames[i])} in feat file), skipping {keys[i]}]")
        skipped[mismatched] = True
        if int(((skipped & ~inconsistent) | missing).sum()) > len(keys) // 2:
            where = getattr(d, "path", None) or config.file
            raise config_error(f"HTKMLFReader: {int(missing.sum())} of the {len(keys)} utterances "
                         f"have no label in '{where}' and {int((skipped & ~inconsistent).sum())} "
                         "a label duration that is not their frame count (cntk.exe: too many "
                         "files not found in label set--assuming broken configuration)",
                         config.loc)
    if not skipped.any():
        return made
    return [_KeptUtterances(features, np.flatnonzero(~skipped))] + made[1:]
