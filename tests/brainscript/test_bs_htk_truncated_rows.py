"""SGD ``truncated = true`` over ``readerType = "HTKDeserializers"`` (frameMode = false ;
truncated = true): the parallel sequences SGD spreads a per-minibatch rate over.  cntk.exe is
not runnable here; the expectations are read off its C++ (cited at each test) and computed
by hand."""

from __future__ import annotations

import io as pyio
import re

import numpy as np
import pytest

from stadyn import io
from stadyn.brainscript import run


def _rates(tmp_path, monkeypatch, reader: str, features: str = "features", *,
           truncated: str = "; truncated = true", sgd: str = "minibatchSize = 4",
           mode: str = "; frameMode = false") -> list[float]:
    """Each epoch's "learning rate per sample" of 3 epochs of ``sgd`` (minibatchSize = 4) and
    learningRatesPerMB = 0.4 under ``truncated`` (in the train command), over 4 utterances of
    5 frames read by an HTKDeserializers reader (``mode``: frameMode = false) with ``reader``
    added; ``features``: what ``W`` multiplies."""
    config = _config(tmp_path, monkeypatch, reader, features, truncated=truncated, sgd=sgd,
                     mode=mode)
    log = pyio.StringIO()
    run(str(config), out=log)
    return _logged_rates(log.getvalue())


def _logged_rates(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"Starting Epoch \d+: learning rate per sample = "
                                         r"([\d.]+)", text)]


def _config(tmp_path, monkeypatch, reader: str, features: str = "features", *,
            truncated: str = "; truncated = true", sgd: str = "minibatchSize = 4",
            mode: str = "; frameMode = false"):
    """:func:`_rates`'s config file (and its data, in ``tmp_path``)."""
    monkeypatch.chdir(tmp_path)
    io.write_htk_features("f.htk", np.arange(40, dtype=np.float32).reshape(20, 2) / 10)
    (tmp_path / "f.scp").write_text("".join(f"u{i}=f.htk[{5 * i},{5 * i + 4}]\n"
                                            for i in range(4)))
    (tmp_path / "s.txt").write_text("a\nb\nc\n")
    (tmp_path / "l.mlf").write_text("#!MLF!#\n" + "".join(
        f'"u{i}.lab"\n0 500000 {"abc"[i % 3]}\n.\n' for i in range(4)))
    config = tmp_path / "t.cntk"
    config.write_text(f"""command = train
deviceId = -1 ; traceLevel = 1 ; modelPath = "{tmp_path}/m.dnn"
train = [ action = "train" {truncated}
    BrainScriptNetworkBuilder = [
        features = Input {{2}} ; labels = Input {{3}}
        W = ParameterTensor {{(3:2)}} ; z = W * {features}
        ce = CrossEntropyWithSoftmax (labels, z)
        criterionNodes = (ce) ]
    SGD = [ epochSize = 0 ; maxEpochs = 3 ; {sgd} ; learningRatesPerMB = 0.4 ]
    reader = [ readerType = "HTKDeserializers" ; readMethod = "none" {mode} {reader}
        features = [ dim = 2 ; scpFile = "f.scp" ; type = "real" ]
        labels = [ mlfFile = "l.mlf" ; labelMappingFile = "s.txt" ; labelDim = 3
                   labelType = "category" ] ] ]
""")
    return config


@pytest.mark.parametrize("reader, expected", [
    # nbruttsineachrecurrentiter unset: 1 at epoch 1 (0.4 / 4), then 4 // 2 = 2 slots (0.4 / 8)
    ("; truncationLength = 2", [0.1, 0.05, 0.05]),
    # nbruttsineachrecurrentiter = 3: 3 at epoch 1 (0.4 / 12), then the 2 slots
    ("; truncationLength = 2 ; nbruttsineachrecurrentiter = 3", [0.4 / 12, 0.05, 0.05]),
    # no truncationLength (the "legacy configuration"): 2 slots of minibatchSize steps, 2 from
    # the start (as before rmC39)
    ("; nbruttsineachrecurrentiter = 2", [0.05, 0.05, 0.05]),
])
def test_htkdeserializers_truncated_rates_spread_over_the_last_minibatchs_slots(
        tmp_path, monkeypatch, reader, expected):
    # HTKDeserializers is read through a ReaderShim (its Exports.cpp: HTKMLFReaderShim, which
    # keeps ReaderShim's GetNumParallelSequencesForFixingBPTTMode, ReaderShim.cpp:454-463):
    # it tells SGD nbruttsineachrecurrentiter's first value before it reads (ReaderShim.cpp:
    # 71-79) and then the parallel sequences of the last minibatch read (:352), the truncated
    # packer's slots, max(1, minibatchSize // truncationLength) (TruncatedBpttPacker.cpp:180,
    # a layout of that many rows, gaps too, :230); SGD spreads learningRatesPerMB over
    # minibatchSize x that count at each epoch's start (SGD.cpp:549; SGD.h:142-158).  Until
    # rmC39 Stadyn spread it over nbruttsineachrecurrentiter at every epoch: 0.1 at epochs 2
    # and 3 of the first case (SILENT).
    rate = _rates(tmp_path, monkeypatch, "; truncated = true " + reader)
    np.testing.assert_allclose(rate, expected, rtol=1e-5)


def test_htkdeserializers_truncated_epoch_1_takes_the_precomputing_passs_slots(
        tmp_path, monkeypatch):
    # the Mean pass reads the training reader (one shim: SGD.cpp:1767-1779) in its truncated
    # pieces of minibatchSize[0], so at epoch 1 the shim says that packer's 2 slots, not
    # nbruttsineachrecurrentiter's 1: 0.4 / 8 at every epoch.  Until rmC39 Stadyn's epoch 1 was
    # 0.1 (before: every epoch).
    rate = _rates(tmp_path, monkeypatch, "; truncated = true ; truncationLength = 2",
                  "(features - Mean (features))")
    np.testing.assert_allclose(rate, [0.05] * 3, rtol=1e-5)


def test_sgd_truncated_over_htkdeserializers_in_frame_mode_takes_the_last_minibatchs_frames(
        tmp_path, monkeypatch):
    # SGD's own truncated = true (SGD.cpp:2914 reads it from the SGD block; the reader, beside
    # it, keeps its default frameMode = true): the shim's rows are nbruttsineachrecurrentiter's
    # 1 before any read, then the frames of the last minibatch read, each a sequence
    # (FramePacker.cpp:26-28, Sequences.h:419-434: one row each).  20 frames in minibatches of
    # 8 end with 4: 0.4 / 8 at epoch 1, 0.4 / (8 x 4) after.  Until rmC39 Stadyn refused the
    # key ("unknown or unsupported SGD key 'truncated'").
    rate = _rates(tmp_path, monkeypatch, "", truncated="", mode="",
                  sgd="minibatchSize = 8 ; truncated = true")
    np.testing.assert_allclose(rate, [0.05, 0.0125, 0.0125], rtol=1e-5)


@pytest.mark.parametrize("features, expected", [
    # no pre-computing pass: nbruttsineachrecurrentiter's 1 at epoch 1 (0.4 / 6), then this
    # worker's share of the 3 slots, 2 (0.4 / 12)
    ("features", [0.4 / 6, 0.4 / 12, 0.4 / 12]),
    # the Mean pass reads every slot (0.4 / 18 at epoch 1), then the share (0.4 / 12)
    ("(features - Mean (features))", [0.4 / 18, 0.4 / 12, 0.4 / 12]),
])
def test_data_parallel_truncated_rates_take_the_workers_share_after_epoch_1(
        tmp_path, monkeypatch, capsys, features, expected):
    # stadyn train --nproc 2 (gloo, CPU), rank 0's log.  An epoch's reading is distributed
    # (SGD.cpp:1046, StartDistributedMinibatchLoop): the truncated packer of worker r of N
    # packs slots / N (+ 1 where r < slots % N) of the max(1, 6 // 2) = 3 slots
    # (TruncatedBpttPacker.cpp:180-189): rank 0's 2, which the shim reports for epochs 2-3
    # (ReaderShim.cpp:352).  The pre-computing pass is not (SGD.cpp:1767-1769,
    # StartMinibatchLoop: ReaderShim.cpp:93-97 makes it worker 0 of 1), so epoch 1 after it
    # takes every slot, 3 (SGD.cpp:549 reads the count before the epoch's reading starts).
    # Stadyn's TruncatedSequenceSource.slots() gives all 3 there, as cntk.exe (checked by
    # bs40: no change was needed; this pins it).
    from stadyn.cli import main as cli_main
    config = _config(tmp_path, monkeypatch, "; truncated = true ; truncationLength = 2",
                     features, sgd="minibatchSize = 6")
    capsys.readouterr()
    assert cli_main(["train", str(config), "--nproc", "2", "--timeout", "120"]) == 0
    out = capsys.readouterr().out
    assert "Data-parallel training on 2 workers." in out
    np.testing.assert_allclose(_logged_rates(out), expected, atol=5e-7)   # (%f: 6 places)
