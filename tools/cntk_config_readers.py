"""What ``tools/cntk_config_survey.py`` reports of one command: the short label of what stopped
it (``_label``), its readers' gaps (deserializer types Stadyn lacks, settings it refuses, what
fails when a reader is opened without its data) and a train command's per-minibatch rates with
``truncated = true`` (cntk.exe's error at the first epoch).
"""

from __future__ import annotations

import re

_READERS = {"imagedeserializer", "cntktextformatdeserializer", "cntktextformatreader",
            "cntkbinaryformatdeserializer", "htkfeaturedeserializer", "htkmlfdeserializer",
            "lmsequencereader"}


# (pattern of an error's first line, its label); the first that matches names the gap
_LABELS = (
    (r"unknown function '([^']+)'", "BS function {}"),
    (r"new ComputationNode: operation '([^']+)' is not supported: Stadyn has no node",
     "node {}"),
    (r"NDL function '([^']+)' is not supported", "NDL function {}"),
    (r"unknown identifier '([^']+)'", "BS identifier {}"),
    # BS.Network.Load (...), BS.Seq2Seq.*: namespaces Stadyn's sequences.bs lacks
    (r"record has no member '(Network|Seq2Seq|RNNs)'", "BS.{}"),
    (r"record has no member '(BeamSearchSequenceDecoderFrom|GreedySequenceDecoderFrom)'",
     "BS.Seq2Seq.{}"),
    (r"gradUpdateType = '([^']+)'", "gradUpdateType {}"),
    (r"AutoAdjust: (autoAdjustMinibatch) = true", "AutoAdjust {}"),
    (r"AutoAdjust: autoAdjustLR = (\w+)", "AutoAdjust autoAdjustLR {}"),
    (r"unknown or unsupported SGD key '([^']+)'", "SGD key {}"),
    (r"deserializer type '([^']+)'", "reader {}"),
    (r"unknown variable '\$([^$]+)\$'", "config variable ${}$ undefined"),
    (r"precision = \"(\w+)\"", "precision {}"),
    (r"(BS.Network.Load): the model file .* does not exist", "{} of a file from outside the "
                                                             "config"),
    (r"MEL: (\w+) is not supported", "MEL {}"),     # a MEL command Stadyn does not run
    # SimpleNetworkBuilder's kinds and settings Stadyn does not build (._simple_network)
    (r"SimpleNetworkBuilder: (?:unknown )?(rnnType '\w+'|\w+ '\w+')", "SimpleNetworkBuilder {}"),
)


def _label(exc: BaseException) -> str:
    """A short label for what stopped a config."""
    text = str(exc).splitlines()[0]
    for pattern, label in _LABELS:
        m = re.search(pattern, text)
        if m:
            return label.format(m.group(1))
    text = re.sub(r"^\S+:\d+:\d+: ", "", text)          # drop the location
    text = re.sub(r"\S*/(?=(Tests|Examples)/)", "", text)  # a path within the checkout
    return f"{type(exc).__name__}: {text[:90]}"


def _reader_gaps(reader, what: str) -> list[str]:
    if reader is None:
        return []
    if not reader.deserializers:
        return [f"reader {reader.reader_type or '(none)'}"]
    # a legacy reader's settings Stadyn refuses when it opens the reader (truncated, ...)
    refused = [f"reader {reader.reader_type} {label}" for label, _ in reader.refused]
    return refused + [f"reader {d.type}" for d in reader.deserializers
                      if d.type.lower() not in _READERS]


def _stand_in_deserializer(config):
    """A deserializer of the streams a deserializer block names (by their names, one value a
    step), holding two sequences of three steps: what :func:`_reader_open_gaps` opens the
    reader's source on, in place of the data the survey does not have."""
    import numpy as np

    from stadyn import io as sio
    from stadyn.io._deserializer import pad_sequences

    class StandIn(sio.Deserializer):
        path = config.file

        def __len__(self):
            return 2

        def keys(self):
            return ["a", "b"]

        def sequence_lengths(self):
            return np.array([3, 3])

        def stream_specs(self):
            return {s.name: sio.StreamSpec((1,), np.dtype("f4"), is_sequence=True)
                    for s in config.streams}

        def read_batch(self, ids, rngs):
            return {s.name: pad_sequences([np.zeros((3, 1), "f4") for _ in ids], (1,),
                                          np.dtype("f4")) for s in config.streams}

    return StandIn()


def _reader_open_gaps(reader, pieces: bool) -> list[str]:
    """What opening ``reader`` would refuse on the config alone (``make_source``, as the
    command that reads it opens it; ``pieces``: a train command's): each deserializer made
    from its block (an error that its data file does not exist is what the survey expects,
    and says nothing of the config: a DataError or OSError is passed over, as is what is
    checked only once a file is read), then the source made on stand-in deserializers of the
    block's streams (the reader's settings: ``frameMode``, ``truncated``, windows, seeds, ...).
    Each failure is labelled ``reader opened: <label>``."""
    from stadyn._errors import DataError
    from stadyn.brainscript._deserializer_builders import open_deserializer
    from stadyn.brainscript._readers import make_source

    gaps = []
    for d in reader.deserializers:
        try:
            open_deserializer(d, reader).close()
        except (DataError, OSError):
            continue                # (no data here: the file is not there)
        except Exception as exc:  # noqa: BLE001 - any other failure is a finding
            if "does not exist" not in str(exc):     # (a transform's file: its mean file)
                gaps.append(f"reader opened: {_label(exc)}")
            continue
    if gaps:
        return gaps
    try:
        made = [_stand_in_deserializer(d) for d in reader.deserializers]
        make_source(reader, max_sweeps=1, pieces=pieces, opened=made).close()
    except DataError:
        pass                        # (of the stand-in data: the real data decides)
    except Exception as exc:  # noqa: BLE001
        gaps.append(f"reader opened: {_label(exc)}")
    return gaps


def _truncated_rates_gaps(cmd) -> list[str]:
    """A train command's SGD ``truncated = true`` with a deserializers reader and a rate or
    momentum per minibatch: cntk.exe's RuntimeError (``_sgd_rates.effective_minibatch_size``),
    the error entry of the first epoch that cannot spread it in ``per_sample_epochs``, which
    the runner reads at each epoch's start (``cntk_learning_rate``/``cntk_momentum``,
    SGD.cpp:549, 630)."""
    import dataclasses

    from stadyn.brainscript._bptt_source import is_composite
    from stadyn.brainscript._blocks import sgd_block
    from stadyn.brainscript._sgd_rates import per_sample_epochs

    if cmd.action != "train" or cmd.sgd is None or not is_composite(cmd.reader) or \
            not cmd.reader.deserializers:
        return []
    try:
        if not sgd_block(cmd.record).get_bool("truncated", False, inherited=True):
            return []
        sgd = dataclasses.replace(cmd.sgd, parallel_sequences=0)
        rates, momenta = (per_sample_epochs(sgd, q) for q in ("lr", "momentum"))
    except Exception as exc:  # noqa: BLE001 - any failure is a finding
        return [_label(exc)]
    for epoch in range(sgd.max_epochs):
        for entries in (rates, momenta):
            entry = entries[min(epoch, len(entries) - 1)]
            if isinstance(entry, Exception):
                return [_label(entry)]
    return []
