"""CNTK's older reader block ``readerType = "HTKMLFReader"`` (and HTKDeserializers' truncated
reading) on the configs and data of CNTK's own repository: what the reader delivers is checked
against the files read by hand with NumPy, and its utterance and frame counts against those
cntk.exe printed in its baseline logs (``"LMSequenceReader"``: ``test_bs_lmsequencereader.py``;
the write action: ``test_bs_write_packing.py``).

The configs and data are read from a copy of CNTK (``cntk_repo_files.py``); without one these
tests skip.  (The AN4 feature file is not in CNTK's repository: a stand-in with the frame count
of its script file is written, sparse, with known values in its first utterances.)
"""

from __future__ import annotations

import io as pyio
import os
import re

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn import io
from stadyn._errors import ConfigError
from stadyn.brainscript import load_config, parse_config, reader_config, run, run_config
from stadyn.brainscript._bptt_source import TruncatedSequenceSource
from stadyn.brainscript._command_network import criterion_total
from stadyn.brainscript._readers import make_source
from stadyn.io._deserializer import pad_sequences
from stadyn.train import evaluate_sums

from cntk_repo_files import cntk_file, copy_cntk_file

SPEECH = "Tests/EndToEndTests/Speech"


# ---------------------------------------------------------------------------------------------
# HTKMLFReader: Tests/EndToEndTests/Speech/QuickE2E
# ---------------------------------------------------------------------------------------------
DIM = 363


def _stand_in_features(data, frames: int, filled: int) -> np.ndarray:
    """The AN4 feature file: an HTK header (USER, 10 ms, 363 float32 values a frame) and
    ``frames`` frames, the first ``filled`` with known values (the rest sparse zeros)."""
    values = (np.arange(filled, dtype=np.float32)[:, None] * 1000
              + np.arange(DIM, dtype=np.float32)[None, :])
    os.makedirs(data / "Features")
    with open(data / "Features" / "000000000.chunk", "wb") as f:
        f.write(np.array([frames, 100000], ">i4").tobytes() + np.array([DIM * 4, 9], ">i2")
                .tobytes())
        f.write(values.astype(">f4").tobytes())
        f.truncate(12 + frames * DIM * 4)
    return values


def _mlf_by_hand(text: str, states: list[str]) -> dict[str, np.ndarray]:
    """Utterance key -> class id of each frame (HTK times in 100 ns)."""
    out, key, ids = {}, None, []
    for line in text.splitlines()[1:]:
        if line.startswith('"'):
            key, ids = os.path.splitext(line.strip('"').rsplit("/", 1)[-1])[0], []
        elif line.strip() == ".":
            out[key] = np.array(ids)
        elif line.strip():
            start, end, state = line.split()[:3]
            ids += [states.index(state)] * ((int(end) - int(start)) // 100000)
    return out


@pytest.fixture(scope="module")
def quick_e2e(tmp_path_factory):
    data = tmp_path_factory.mktemp("an4")
    config = copy_cntk_file(data, f"{SPEECH}/QuickE2E/cntk.cntk")
    # its "minibatchSize = 64:256:1024:" ends in a ':' that Stadyn's config reader refuses
    config.write_text(config.read_text().replace("64:256:1024:", "64:256:1024"))
    scp = copy_cntk_file(data, f"{SPEECH}/Data/glob_0000.scp")
    mlf = copy_cntk_file(data, f"{SPEECH}/Data/glob_0000.mlf")
    copy_cntk_file(data, f"{SPEECH}/Data/state.list")
    log = cntk_file(f"{SPEECH}/QuickE2E/baseline.cpu.txt").decode("utf-8", "replace")
    ranges = [tuple(map(int, m)) for m in re.findall(r"\[(\d+),(\d+)\]", scp.read_text())]
    values = _stand_in_features(data, ranges[-1][1] + 1, ranges[2][1] + 1)
    states = [s for s in (data / "state.list").read_text().split() if s]
    return dict(data=data, config=config, ranges=ranges, values=values, log=log,
                labels=_mlf_by_hand(mlf.read_text(), states), keys=[
                    os.path.splitext(ln.split("=")[0].rsplit("/", 1)[-1])[0]
                    for ln in scp.read_text().splitlines()])


def _speech_reader(case, *overrides):
    root = load_config(str(case["config"]), [f"DataDir={case['data']}", "RunDir=/tmp/x",
                                             "DeviceId=-1", *overrides])
    return run_config(root).command("speechTrain").reader


def test_htkmlfreader_block_counts_are_cntk_exes(quick_e2e, monkeypatch):
    # scpFile = "glob_0000.scp" and the script's paths are relative to the run folder
    monkeypatch.chdir(quick_e2e["data"])
    reader = _speech_reader(quick_e2e)
    assert [d.type for d in reader.deserializers] == ["HTKFeatureDeserializer",
                                                      "HTKMLFDeserializer"]
    warnings = []
    source = make_source(reader, warn=warnings.append)
    assert warnings == []                 # readMethod, miniBatchMode, ...: all accounted for
    # "feature set 0: 252734 frames in 948 out of 948 utterances"; "total 132 state names";
    # "reading MLF file ... total 948 entries"
    frames, utterances = map(int, re.search(r"feature set 0: (\d+) frames in (\d+) out of",
                                            quick_e2e["log"]).groups())
    assert len(quick_e2e["ranges"]) == utterances == 948
    assert sum(b - a + 1 for a, b in quick_e2e["ranges"]) == frames
    assert sum(len(v) for v in quick_e2e["labels"].values()) == frames
    assert int(re.search(r"total (\d+) state names", quick_e2e["log"]).group(1)) == 132
    # frame mode (this reader's default): minibatches of 64 frames, as the log's "* 640" a
    # 10 minibatches; 20480 samples an epoch
    counts = [int(n) for n in re.findall(r"Epoch\[ 1 of 3\]-Minibatch\[.*?\* (\d+);",
                                         quick_e2e["log"])]
    assert counts and set(counts) == {640}
    seen = 0
    for _ in range(10):
        mb = source.next_minibatch(64)
        assert mb["features"].num_samples == mb["labels"].num_samples == 64
        assert mb["features"].data.shape == (64, DIM) and mb["labels"].data.shape == (64, 132)
        seen += mb["features"].num_samples
    assert seen == counts[0]


def test_htkmlfreader_frames_and_labels_by_hand(quick_e2e, monkeypatch):
    monkeypatch.chdir(quick_e2e["data"])
    reader = _speech_reader(quick_e2e, 'speechTrain=[reader=[readMethod="none"]]')
    assert reader.randomize is False
    source = make_source(reader)
    first_three = quick_e2e["ranges"][2][1] + 1
    mb = source.next_minibatch(first_three)
    np.testing.assert_array_equal(mb["features"].data, quick_e2e["values"])
    expected = np.concatenate([quick_e2e["labels"][k] for k in quick_e2e["keys"][:3]])
    np.testing.assert_array_equal(mb["labels"].data.argmax(-1), expected)
    assert (mb["labels"].data.sum(-1) == 1).all()


def test_htkmlfreader_sequence_mode_and_what_is_refused(quick_e2e, monkeypatch):
    monkeypatch.chdir(quick_e2e["data"])
    # readerType = "HTKDeserializers" takes the same block; frameMode = false: whole utterances
    reader = _speech_reader(quick_e2e, 'speechTrain=[reader=[readerType="HTKDeserializers"]]',
                            'speechTrain=[reader=[readMethod="none"]]', "frameMode=false")
    mb = make_source(reader).next_minibatch(400)
    a, b = quick_e2e["ranges"][0]
    assert mb["features"].lengths.tolist() == [b - a + 1]
    np.testing.assert_array_equal(mb["features"].data[0], quick_e2e["values"][:b - a + 1])
    for overrides, words in [
            (["frameMode=false", "speechTrain=[reader=[nbruttsineachrecurrentiter=2:4]]"],
             "changing from epoch to epoch"),
            (["frameMode=false", 'speechTrain=[reader=[randomize="abc"]]'],
             "'randomize' must be auto, none or a window size"),
            (["frameMode=false", "speechTrain=[reader=[maxUtteranceLength=0]]"],
             "'maxUtteranceLength' must be a whole number >= 1"),
            (["frameMode=false", 'speechTrain=[reader=[readMethod="rollingWindow"]]'],
             "frameMode = false needs readMethod = \"blockRandomize\""),
            (["truncated=true"], "'truncated' cannot be true in frame mode"),
            (["speechTrain=[reader=[nbruttsineachrecurrentiter=4]]"], "cannot be more than 1 "
             "in frame mode"),
            (["speechTrain=[reader=[randomize=none]]"], "'randomize' cannot be none when "
             "'readMethod' is blockRandomize"),
            (["speechTrain=[reader=[features=[type=\"perceptual\"]]]"], "features are type = "
             "\"real\"")]:
        with pytest.raises(ConfigError, match=words) as info:
            make_source(_speech_reader(quick_e2e, *overrides))   # read, or opened
        assert info.value.line is not None
    # HTKMLFReader's truncated back-propagation (test_bs_truncated_bptt.py)
    truncated = _speech_reader(quick_e2e, "frameMode=false", "truncated=true")
    assert not truncated.refused and isinstance(make_source(truncated, pieces=True),
                                                  io.TruncatedUtteranceSource)
    # read other than by a train command (which carries the state): whole utterances
    whole = make_source(truncated, max_sweeps=1)
    assert type(whole) is io.UtteranceSource and not whole._join_short
    # CNTK's rollingWindow reader takes randomize = none
    assert _speech_reader(quick_e2e, 'speechTrain=[reader=[readMethod="rollingWindow"]]',
                          "speechTrain=[reader=[randomize=none]]").randomize is False


def test_htkdeserializers_truncated_is_cntk_2s_truncated_packer(quick_e2e, monkeypatch):
    # readerType = "HTKDeserializers" (Speech/HTKDeserializers/LSTM/Truncated) is CNTK 2's
    # HTKMLFReader: frameMode = false ; truncated = true packs with its TruncatedBPTTPacker
    # (Source/Readers/HTKDeserializers/HTKMLFReader.cpp:72-99, 179-199), not the old reader's
    # way; until rmA37 refused ("read by readerType = "HTKMLFReader" only")
    monkeypatch.chdir(quick_e2e["data"])
    values, (a, b) = quick_e2e["values"], quick_e2e["ranges"][0]
    first, second = b - a + 1, quick_e2e["ranges"][1][1] - quick_e2e["ranges"][1][0] + 1
    base = ['speechTrain=[reader=[readerType="HTKDeserializers"]]', "frameMode=false",
            'speechTrain=[reader=[readMethod="none"]]', "truncated=true",
            "speechTrain=[reader=[nbruttsineachrecurrentiter=2]]"]
    # no truncationLength, the "legacy configuration": minibatchSize steps in each of
    # nbruttsineachrecurrentiter slots (:186-195)
    reader = _speech_reader(quick_e2e, *base)
    source = make_source(reader, pieces=True)
    assert isinstance(source, TruncatedSequenceSource) and source.parallel == 2
    for step in range(2):
        mb = source.next_minibatch(20)["features"]
        assert mb.lengths.tolist() == [20, 20] and source.layout.begins == [step == 0] * 2
        np.testing.assert_array_equal(mb.data[0], values[20 * step:20 * step + 20])
        np.testing.assert_array_equal(mb.data[1], values[first + 20 * step:
                                                         first + 20 * step + 20])
    # truncationLength = 10: max(1, 40 / 10) = 4 slots of 10 steps (SGD still told 2)
    source = make_source(_speech_reader(quick_e2e, *base, "truncationLength=10"), pieces=True)
    mb = source.next_minibatch(40)["features"]
    assert mb.lengths.tolist() == [10] * 4 and source.parallel == 2
    np.testing.assert_array_equal(mb.data[2], values[first + second:first + second + 10])
    # read other than by a train command: whole utterances
    assert make_source(reader).next_minibatch(first)["features"].lengths.tolist() == [first]
    # a test, eval or cv command and a cvReader read the same pieces (the packing mode is the
    # reader's, whatever the action: HTKMLFReader.cpp:72-86); until rmD38 whole utterances
    source = make_source(reader, evaluating=True)
    assert isinstance(source, TruncatedSequenceSource) and source.parallel == 2
    mb = source.next_minibatch(20)["features"]
    assert mb.lengths.tolist() == [20, 20] and source.layout.begins == [True, True]
    np.testing.assert_array_equal(mb.data[1], values[first:first + 20])


# ---------------------------------------------------------------------------------------------
# HTKMLFReader, frameMode = false: Tests/EndToEndTests/Speech/LSTM (FullUtterance)
# ---------------------------------------------------------------------------------------------
_FULL_UTTERANCE = ["truncated=false", "speechTrain=[reader=[nbruttsineachrecurrentiter=2]]",
                   "speechTrain=[SGD=[epochSize=2560]]", "speechTrain=[SGD=[maxEpochs=2]]",
                   "speechTrain=[SGD=[numMBsToShowResult=1]]"]


def _full_utterance_log() -> tuple[list[list[int]], list[int]]:
    """cntk.exe's FullUtterance run: each minibatch's samples ("* 886") and each epoch's."""
    log = cntk_file(f"{SPEECH}/LSTM/FullUtterance/baseline.cpu.txt").decode("utf-8", "replace")
    per_mb = [[int(n) for n in re.findall(rf"Epoch\[ {e} of 2\]-Minibatch\[.*?\* (\d+);", log)]
              for e in (1, 2)]
    epochs = [int(n) for n in re.findall(r"Finished Epoch\[ \d of 2\]: \[Training\] ce = "
                                          r"\S+ \* (\d+)", log)]
    return per_mb, epochs


def test_htkmlfreader_whole_utterances_are_cntk_exes_minibatches(quick_e2e, monkeypatch):
    monkeypatch.chdir(quick_e2e["data"])
    config = copy_cntk_file(quick_e2e["data"], f"{SPEECH}/LSTM/cntk.cntk", "lstm.cntk")
    root = load_config(str(config), [f"DataDir={quick_e2e['data']}", "RunDir=/tmp/x",
                                     "DeviceId=-1", *_FULL_UTTERANCE])
    reader = run_config(root).command("speechTrain").reader
    source = make_source(reader)
    per_mb, epochs = _full_utterance_log()
    # [886, 226, 526, 946] and [594, 386, 884, 946]: two utterances a minibatch, a third
    # packed behind a short one; epochs of 2584 and 2810 frames for an epochSize of 2560
    assert epochs == [2584, 2810] and [sum(c) for c in per_mb] == epochs
    by_labels = {tuple(v): k for k, v in quick_e2e["labels"].items()}
    seen = []
    for epoch, counts in enumerate(per_mb):
        source.start_epoch(epoch, 2560, 20)
        got = []
        while mb := source.next_minibatch(20):
            feats, labels = mb["features"], mb["labels"]
            assert feats.lengths.tolist() == labels.lengths.tolist()
            assert labels.num_samples == feats.num_samples == int(feats.lengths.sum())
            got.append(feats.num_samples)
            for row, n in zip(labels.data, labels.lengths):     # each sequence: an utterance
                seen.append(by_labels[tuple(row[:n].argmax(-1))])
        assert got == counts
    assert len(seen) == len(set(seen)) == 8 + 10


def test_full_utterance_training_reads_cntk_exes_minibatches(quick_e2e, monkeypatch, tmp_path):
    # the LSTM config's reader and SGD blocks, a small recurrent network (the config's own loads
    # its edit action's model file; the AN4 features are not in CNTK's repository, so the
    # losses are not cntk.exe's): the logged minibatch and epoch sample counts are
    text = cntk_file(f"{SPEECH}/LSTM/cntk.cntk").decode()
    text = text.replace("command = speechCreate:speechTrain", "command = speechTrain:speechTest")
    network = """{
        features = Input ((1 : 363)) ; labels = Input {132}   # fed 363 values a frame
        x = FlattenDimensions (Transpose (features), 1, 2)      # (as the config's network)
        z = DenseLayer {132} (RecurrentLSTMLayer {3} (x))
        ce = CrossEntropyWithSoftmax (labels, z) ; err = ClassificationError (labels, z)
        criterionNodes = (ce) ; evaluationNodes = (err) }"""
    text = text.replace('BS.Network.Load("$modelPath$.initial")', network)
    # a cvReader (and a test command) over the first 6 utterances, one at a time (no buffers
    # to pack)
    reader = text[text.index("    reader = {"):]
    reader = reader[:reader.index("\n    }\n") + 7]
    six = reader.replace("glob_0000.scp", "cv.scp").replace("nbruttsineachrecurrentiter = 32",
                                                            "nbruttsineachrecurrentiter = 1")
    text = text.replace(reader, reader + six.replace("reader = {", "cvReader = {"))
    text += ("speechTest = {\n    action = \"test\"\n    BrainScriptNetworkBuilder = " + network
             + "\n" + six + "}\n")
    scp = (quick_e2e["data"] / "glob_0000.scp").read_text().splitlines()
    (quick_e2e["data"] / "cv.scp").write_text("\n".join(scp[:6]) + "\n")
    config = tmp_path / "lstm_small.cntk"
    config.write_text(text)
    monkeypatch.chdir(quick_e2e["data"])
    log = pyio.StringIO()
    run(str(config), [f"DataDir={quick_e2e['data']}", f"RunDir={tmp_path}", "DeviceId=-1",
                      *_FULL_UTTERANCE], out=log)
    per_mb, epochs = _full_utterance_log()
    ours = log.getvalue()
    assert [[int(n) for n in re.findall(rf"Epoch\[ {e} of 2\]-Minibatch\[.*?\* (\d+);", ours)]
            for e in (1, 2)] == per_mb
    assert [int(n) for n in re.findall(r"Finished Epoch\[ \d of 2\]: \[Training\] ce = \S+ "
                                        r"\* (\d+)", ours)] == epochs
    assert "learningRatePerSample = 0.025" in ours        # 0.5 a minibatch of 20
    # validation counts the frames of the 6 utterances (not the sequences) and sums the
    # per-frame criteria over real frames only: an error rate of at most 1
    frames = sum(b - a + 1 for a, b in quick_e2e["ranges"][:6])
    validated = re.findall(r"\[Validate\] ce = (\S+) \* (\d+); err = (\S+) \* (\d+)", ours)
    assert len(validated) == 2
    for ce, n, err, m in validated:
        assert int(n) == int(m) == frames and 0 <= float(err) <= 1 and 0 < float(ce) < 10
    # so does the test command, over the same utterances with the trained model (in
    # minibatches of 40960 frames, CNTK's default: u0..u4 joined into one sequence, u5)
    final = re.search(r"Final Results: Minibatch\[1-2\]: err = (\S+) \* (\d+); "
                      r"ce = \S+ \* (\d+)", ours)
    assert final and int(final[2]) == int(final[3]) == frames and 0 <= float(final[1]) <= 1


class _Utterances(io.Deserializer):
    """Sequences of given lengths whose every step holds the sequence's number."""

    def __init__(self, lengths):
        self.lengths = np.asarray(lengths)

    def __len__(self):
        return len(self.lengths)

    def sequence_lengths(self):
        return self.lengths

    def stream_specs(self):
        return {"x": io.StreamSpec((1,), np.dtype("f4"), is_sequence=True)}

    def read_batch(self, ids, rngs):
        return {"x": pad_sequences([np.full((self.lengths[i], 1), i, "f4") for i in ids], (1,),
                                   np.dtype("f4"))}


def _epoch(source, epoch, size, request):
    source.start_epoch(epoch, size, request)
    out = []
    while mb := source.next_minibatch(request):
        out.append([[int(s[0, 0]) for s in mb["x"].as_sequences()], mb["x"].num_samples])
    return out


def test_utterance_mode_packing_by_hand():
    # file order, two parallel sequences; cntk.exe's HTKMLFReader.cpp by hand:
    # start: buffers u0, u1.  Minibatch 1 (10 steps): u0, u1; refilled with u2 (the iterator
    # is done), the second buffer keeps u1; u2 fits nowhere (10 + 10 is not < 10).
    # Minibatch 2: u2 and u1 again (cntk.exe counted it twice); then the first buffer is empty
    source = io.UtteranceSource(_Utterances([10, 10, 10]), 2, randomize=False)
    assert _epoch(source, 0, 30, 1) == [[[0, 1], 20], [[2, 1], 20]]
    source.start_epoch(0, 30, 1)           # the sweep ends with the epoch's last minibatch
    assert [source.next_minibatch(1)["x"].end_of_sweep for _ in range(2)] == [False, True]
    # lengths 8, 3, 4, 5, 2: minibatch 1 is 8 steps (u0, u1); the refilled u2 (4) is packed
    # behind u1 (3 + 4 < 8), its buffer refilled with u4 (2: 2 + 7 is not < 8); u3 (5) waits.
    # Minibatch 2: u4 and u3, 5 steps
    source = io.UtteranceSource(_Utterances([8, 3, 4, 5, 2]), 2, randomize=False)
    assert _epoch(source, 0, 22, 1) == [[[0, 1, 2], 15], [[4, 3], 7]]
    # lengths 10, 2, 3, 9: u2 is packed behind u1 and the first buffer, refilled once the
    # iterator is done, is empty: the epoch ends, and u3, waiting in the second buffer, is never
    # read (cntk.exe's end test looks at the first buffer only)
    source = io.UtteranceSource(_Utterances([10, 2, 3, 9]), 2, randomize=False)
    assert _epoch(source, 0, 24, 1) == [[[0, 1, 2], 15]]
    # an epoch takes the utterances that start in its frames: [6, 12) holds the starts of u2
    # (at 6) and u3 (at 9), not u4 (at 13)
    source = io.UtteranceSource(_Utterances([3, 3, 3, 4, 3]), 1, randomize=False)
    assert _epoch(source, 1, 6, 1) == [[[2], 3], [[3], 4]]
    # requests of 9 frames join utterances while they stay below 9 frames together: u0 + u1
    # (6), u2 + u3 (7), u4; each joined pair is one sequence
    assert _epoch(source, 0, 16, 9) == [[[0], 6], [[2], 7], [[4], 3]]
    # utterances longer than maxUtteranceLength are left out (u3: 4 frames > 3)
    short = io.UtteranceSource(_Utterances([3, 3, 3, 4, 3]), 1, randomize=False,
                               max_utterance_length=3)
    assert short.sweep_size == 12 and _epoch(short, 0, 12, 1) == [[[k], 3] for k in (0, 1, 2, 4)]
    source.start_epoch(0, 16, 9)
    assert source.next_minibatch(9)["x"].data[0, :, 0].tolist() == [0, 0, 0, 1, 1, 1]


def test_an_epoch_that_leaves_a_sequence_unread_still_ends_its_sweep_and_is_evaluated_whole():
    # [10, 2, 3, 9] in two buffers (above): u3, the sweep's last, is never read, yet the epoch's
    # one minibatch ends the sweep (before: never flagged, so per-sweep schedules stalled)
    source = io.UtteranceSource(_Utterances([10, 2, 3, 9]), 2, randomize=False)
    source.start_epoch(0, 24, 1)
    assert source.next_minibatch(1)["x"].end_of_sweep and not source.next_minibatch(1)
    # evaluation reads the epoch to its end, as cntk.exe's evaluator did: the repeated
    # sequences take the frames read past the sweep's 271 after two minibatches (276), and the
    # third (125 frames) was dropped before
    lengths = [2, 37, 11, 23, 12, 3, 17, 33, 1, 39, 20, 14, 31, 25, 3]
    source = io.UtteranceSource(_Utterances(lengths), 4, randomize=False)
    read = _epoch(source, 0, source.sweep_size, 20)
    assert source.sweep_size == 271 and [n for _, n in read] == [126, 150, 125]
    x = sd.sequence.input_variable((1,))
    ones = F.add_scalar(F.mul_scalar(x, 0.0), 1.0)         # 1 a real step
    result = evaluate_sums([criterion_total(ones)], io.UtteranceSource(_Utterances(lengths), 4,
                                                             randomize=False),
                           {x: "x"}, minibatch_size=20, count=ones)
    assert result == {"sums": [401.0], "samples": 401, "minibatches": 3}


def test_utterance_order_is_a_permutation_of_the_sweep():
    lengths = np.full(300, 1000)           # chunks of 91 utterances (over 90,000 frames)
    order = io.utterance_order(lengths, 3)
    assert sorted(order.tolist()) == list(range(300))
    assert io.utterance_order(lengths, 3).tolist() == order.tolist()    # a function of the sweep
    assert io.utterance_order(lengths, 4).tolist() != order.tolist()
    near = io.utterance_order(lengths, 3, 200_000)     # a window of about two chunks
    assert sorted(near.tolist()) == list(range(300)) and near.tolist() != order.tolist()


def test_quick_e2e_trains_from_its_htkmlfreader_block(quick_e2e, monkeypatch, tmp_path):
    # its config as CNTK has it: SimpleNetworkBuilder (MeanVarNorm, a prior) and AutoAdjust
    monkeypatch.chdir(quick_e2e["data"])
    log = pyio.StringIO()
    run(str(quick_e2e["config"]), [
        f"DataDir={quick_e2e['data']}", f"RunDir={tmp_path}", "DeviceId=-1",
        "speechTrain=[SGD=[maxEpochs=1]]", "speechTrain=[SGD=[epochSize=640]]",
        "speechTrain=[SGD=[UseAllDataForPreComputedNode=false]]"], out=log)
    ours, theirs = log.getvalue(), quick_e2e["log"]
    # "Training 516740 parameters in 6 out of 6 parameter tensors", 10 minibatches of 64 frames
    # a logged line ("* 640")
    count = re.compile(r"Training (\d+) parameters in (\d+)")
    assert count.findall(ours) == count.findall(theirs)[:1] == [("516740", "6")]
    # SimpleNetworkBuilder's three pre-computed nodes, in cntk.exe's words and order
    pass_lines = re.compile(r"Precomputing --> .*|\t\w+ = (?:Mean|InvStdDev)\(\)")
    first_run = theirs[:theirs.index("Finished Epoch[")]
    assert pass_lines.findall(ours) == pass_lines.findall(first_run) == [
        "Precomputing --> 3 PreCompute nodes found.", "\tMeanOfFeatures = Mean()",
        "\tInvStdOfFeatures = InvStdDev()", "\tPrior = Mean()", "Precomputing --> Completed."]
    assert re.findall(r"Minibatch\[.*?\* (\d+);", ours) == ["640"]
    assert re.search(r"Finished Epoch\[ 1 of 1\]: \[Training\] .* totalSamplesSeen = 640", ours)


@pytest.mark.parametrize("text, message, at", [
    ("frameMode = maybe\n", "'frameMode' must be a boolean (true/false), got 'maybe'", (1, 13)),
    ("x = 1\n", "'reader.truncated' must be a boolean (true/false), got '2'", (2, 54)),
])
def test_a_bad_boolean_is_named_in_the_block_that_sets_it(text, message, at):
    # frameMode and truncated may be set around the reader block (CNTK's Speech configs set
    # them at the top level); one reading of booleans, the config reader's
    with pytest.raises(ConfigError) as err:
        reader_config(parse_config(text + 'reader = { readerType = "HTKMLFReader" ; '
                                   'truncated = 2 ; features = { dim = 3 ; scpFile = "a.scp" } '
                                   '; labels = { mlfFile = "a.mlf" ; labelDim = 2 } }',
                                   "r.cntk")["reader"])
    assert message in str(err.value) and (err.value.line, err.value.column) == at


@pytest.mark.parametrize("labelled", [2, 1])
def test_htkmlfreader_skips_a_few_unlabelled_utterances_and_refuses_most(tmp_path, monkeypatch,
                                                                         labelled):
    # utterancesourcemulti.h: an utterance without an MLF label is skipped, but more than half
    # of them missing is "too many files not found in label set--assuming broken
    # configuration" (cntk.exe's HTKMLFReader; CNTK 2's Bundler has no such limit)
    monkeypatch.chdir(tmp_path)
    io.write_htk_features("f.htk", np.arange(40, dtype=np.float32).reshape(20, 2))
    (tmp_path / "f.scp").write_text("".join(f"u{i}=f.htk[{5 * i},{5 * i + 4}]\n"
                                            for i in range(4)))
    (tmp_path / "s.txt").write_text("a\nb\n")
    (tmp_path / "l.mlf").write_text("#!MLF!#\n" + "".join(
        f'"u{i}.lab"\n0 5 {"ab"[i % 2]}\n.\n' for i in range(labelled)))
    reader = reader_config(parse_config(
        'r = [ readerType = "HTKMLFReader" ; readMethod = "none" ; frameMode = true\n'
        '  features = [ dim = 2 ; scpFile = "f.scp" ; type = "real" ]\n'
        '  labels = [ mlfFile = "l.mlf" ; labelMappingFile = "s.txt" ; labelDim = 2\n'
        '             labelType = "category" ] ]')["r"])
    if labelled == 1:       # 3 of 4 missing: > 4 // 2
        with pytest.raises(ConfigError, match="3 of the 4 utterances have no label.*too many "
                           "files not found in label set"):
            make_source(reader)
        return
    with pytest.warns(UserWarning, match="no sequence for 2 of the 4"):
        source = make_source(reader, max_sweeps=1)
    frames = 0
    while mb := source.next_minibatch(4):
        frames += mb["features"].num_samples
    assert frames == 10           # u0 and u1's five frames each


def test_htkdeserializers_truncated_test_command_reads_pieces_with_the_state_carried(
        quick_e2e, monkeypatch, tmp_path):
    # readerType = "HTKDeserializers" with frameMode = false ; truncated = true packs truncated
    # for a test command too (HTKMLFReader.cpp:72-86): with nbruttsineachrecurrentiter = 2 and
    # no truncationLength, minibatchSize = 100 reads 2 slots of 100 frames, the LSTM's state
    # carried from a slot's piece to the next, so the totals are the whole utterances' (the
    # same test with truncated = false) in more minibatches (until rmD38: whole utterances)
    text = cntk_file(f"{SPEECH}/LSTM/cntk.cntk").decode()
    text = text.replace("command = speechCreate:speechTrain", "command = speechTrain:speechTest")
    network = """{
        features = Input ((1 : 363)) ; labels = Input {132}
        x = FlattenDimensions (Transpose (features), 1, 2)
        z = DenseLayer {132} (RecurrentLSTMLayer {3} (x))
        ce = CrossEntropyWithSoftmax (labels, z) ; err = ClassificationError (labels, z)
        criterionNodes = (ce) ; evaluationNodes = (err) }"""
    text = text.replace('BS.Network.Load("$modelPath$.initial")', network)
    reader = text[text.index("    reader = {"):]
    reader = reader[:reader.index("\n    }\n") + 7]
    six = reader.replace("glob_0000.scp", "cv.scp").replace(
        "nbruttsineachrecurrentiter = 32", "nbruttsineachrecurrentiter = 2").replace(
        'readerType = "HTKMLFReader"', 'readerType = "HTKDeserializers" ; frameMode = false\n'
        "        truncated = TRUNC").replace('"blockRandomize"', '"none"')
    text += ("speechTest = {\n    action = \"test\" ; minibatchSize = 100\n"
             "    numMBsToShowResult = 1\n    BrainScriptNetworkBuilder = " + network
             + "\n" + six + "}\n")
    scp = (quick_e2e["data"] / "glob_0000.scp").read_text().splitlines()
    (quick_e2e["data"] / "cv.scp").write_text("\n".join(scp[:6]) + "\n")
    monkeypatch.chdir(quick_e2e["data"])
    finals = []
    for trunc in ("true", "false"):
        config = tmp_path / f"lstm_{trunc}.cntk"
        config.write_text(text.replace("TRUNC", trunc))
        log = pyio.StringIO()
        run(str(config), [f"DataDir={quick_e2e['data']}", f"RunDir={tmp_path}", "DeviceId=-1",
                          "truncated=false", "speechTrain=[SGD=[epochSize=200]]",
                          "speechTrain=[SGD=[maxEpochs=1]]",
                          "speechTrain=[reader=[nbruttsineachrecurrentiter=2]]"], out=log)
        finals.append(re.findall(r"Final Results: Minibatch\[1-(\d+)\]: err = (\S+) \* (\d+); "
                                 r"ce = (\S+) \* (\d+)", log.getvalue())[-1])
    lengths = [b - a + 1 for a, b in quick_e2e["ranges"][:6]]
    (mbs, err, n, ce, m), whole = finals
    assert int(n) == int(m) == int(whole[2]) == sum(lengths)
    np.testing.assert_allclose([float(err), float(ce)], [float(whole[1]), float(whole[3])],
                               rtol=1e-5)
    assert int(mbs) > int(whole[0])
