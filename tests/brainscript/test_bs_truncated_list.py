"""Truncated back-propagation through time for a deserializers list (``truncated = true`` with
``truncationLength``, the reader's or a block's around it): cntk.exe's CompositeDataReader packs
minibatches with its TruncatedBPTTPacker (CompositeDataReader.cpp:57-81, 207-219;
TruncatedBpttPacker.cpp:180: ``max(1, minibatchSize / truncationLength)`` slots), which is CNTK
2.7's ``MinibatchSource(..., truncation_length=N)``; SGD carries the recurrent state from
minibatch to minibatch in each slot.  References: tests/fixtures/bs_truncated_list/refs.json,
made by its make_refs.py under CNTK 2.7 (the packing of seq.ctf, and a tanh recurrence of fixed
parameters trained on it, its loss on every minibatch and its parameters after each epoch)."""

from __future__ import annotations

import io as pyio
import json
import re
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import StadynLibrary, build_network, parse_config, reader_config, run
from stadyn.brainscript._readers import make_source

HERE = Path(__file__).resolve().parent.parent / "fixtures" / "bs_truncated_list"
REFS = json.loads((HERE / "refs.json").read_text())

READER = """reader = {
        randomize = false
        truncationLength = 4
        deserializers = ({
            type = "CNTKTextFormatDeserializer" ; file = "DATA"
            input = { x = { dim = 2 ; format = "dense" } ; y = { dim = 2 ; format = "dense" } }
        })
    }"""


def _config(tmp_path: Path, sgd: str = "learningRatesPerSample = 0.05 ; "
            "momentumAsTimeConstant = 0", top: str = "truncated = true",
            more: str = "") -> Path:
    p = {k: np.array(v, np.float32) for k, v in REFS["params"].items()}
    # CNTK 2.7's x W is W^T * x here: each matrix the transpose, each bias a column (files of
    # their rows, read by initFromFilePath)
    lines = []
    for name, value in (("W", p["W"].T), ("H", p["H"].T), ("V", p["V"].T),
                        ("b", p["b"][:, None]), ("c", p["c"][:, None])):
        np.savetxt(tmp_path / f"{name}.txt", value, fmt="%.9g")
        lines.append(f"        {name} = ParameterTensor {{({value.shape[0]}:{value.shape[1]}), "
                     f"initFromFilePath = \"{tmp_path}/{name}.txt\"}}")
    params = "\n".join(lines)
    text = f"""command = train{":out" if more else ""}
deviceId = -1 ; traceLevel = 1
{top}
{more}
train = {{
    action = "train"
    modelPath = "{tmp_path}/model"
    SGD = {{
        epochSize = 0 ; maxEpochs = 2 ; minibatchSize = 8 ; numMBsToShowResult = 1
        {sgd}
    }}
    BrainScriptNetworkBuilder = {{
        x = Input {{2}} ; y = Input {{2}}
{params}
        h = Tanh (W * x + H * PastValue (3, h, defaultHiddenActivation = 0) + b)
        z = V * h + c
        ce = CrossEntropyWithSoftmax (y, z)
        featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (ce)
    }}
    {READER.replace("DATA", str(HERE / "seq.ctf"))}
}}
"""
    path = tmp_path / "bptt.cntk"
    path.write_text(text)
    return path


@pytest.mark.parametrize("size", [4, 8, 12])
def test_the_packing_is_cntk_27s_truncation_length(size):
    # 1154ef55: ConfigError "truncated = true in a deserializers list ... is not supported yet"
    rec = parse_config("truncated = true\n" + READER.replace("DATA", str(HERE / "seq.ctf")))
    source = make_source(reader_config(rec["reader"]), pieces=True)
    source.start_epoch(0, source.sweep_size, size)
    got = []
    while mb := source.next_minibatch(size):
        got.append({"samples": mb["x"].num_samples, "sequences": mb["x"].num_sequences})
        assert len(source.layout.begins) == mb["x"].num_sequences
    assert got == REFS["packing"][str(size)]
    # a new epoch starts with empty slots (ReaderBase::StartEpoch resets the packer)
    source.start_epoch(1, source.sweep_size, size)
    assert source.next_minibatch(size)["x"].num_samples == REFS["packing"][str(size)][0]["samples"]


def test_a_recurrence_trains_as_cntk_27_with_the_state_carried(tmp_path):
    # each minibatch's criterion (cntk.exe's log line of every minibatch: the mean per sample)
    # and the parameters after the two epochs, against CNTK 2.7's training of the same network
    # on the same minibatches (make_refs.py); the state carried from one minibatch to the
    # next in a slot, reset where a sequence begins (a reset state everywhere, or none carried,
    # gives other losses from the second minibatch on)
    log = pyio.StringIO()
    run(str(_config(tmp_path)), out=log)
    text = log.getvalue()
    for epoch, ref in enumerate(REFS["training"], 1):
        got = [(float(v), int(n)) for v, n in re.findall(
            rf"Epoch\[ {epoch} of 2\]-Minibatch\[.*?ce = (\S+) \* (\d+);", text)]
        assert [n for _, n in got] == [n for _, n in ref["losses"]]
        np.testing.assert_allclose([v for v, _ in got], [s / n for s, n in ref["losses"]],
                                   rtol=2e-6)
    with sd.parameter_registry(sd.ParameterRegistry()):
        build_network(f'{{ m = BS.Network.Load ("{tmp_path}/model") }}', StadynLibrary())
        trained = sd.get_parameters()
        for name, value in REFS["training"][-1]["params"].items():
            # (a [rows x cols] BrainScript matrix is held (cols, rows): CNTK 2.7's own layout)
            value = np.array(value, np.float32)
            np.testing.assert_allclose(trained[name].d.reshape(value.shape), value,
                                       rtol=1e-5, atol=1e-6)


def test_per_minibatch_rates_with_sgd_truncated_are_cntk_exes_runtime_error(tmp_path):
    # SGD's truncated = true (here the top level's) spreads a per-minibatch rate or momentum
    # over minibatchSize x the reader's parallel sequences (SGD.h:142-158); CNTK 2's readers
    # say 0 (CompositeReaderShim, CompositeDataReader/Exports.cpp:26-31): cntk.exe's
    # RuntimeError, also for the default momentumPerMB = 0.9 (SGD.cpp:630 reads it every epoch)
    for sgd in ("learningRatesPerMB = 0.4 ; momentumAsTimeConstant = 0",
                "learningRatesPerSample = 0.05"):
        with pytest.raises(ConfigError, match="Learning rate and momentum are not supported "
                                              "per minibatch, please specify them per sample"):
            run(str(_config(tmp_path, sgd)), out=pyio.StringIO())


def test_a_write_command_with_frame_mode_and_truncated_is_cntk_exes_logic_error(tmp_path):
    # cntk.exe's CompositeDataReader refuses frameMode = true with truncated = true before it
    # looks at the action (CompositeDataReader.cpp:57-63; a write command makes its reader
    # first, EvalActions.cpp:227): LogicError "frameMode and truncated BPTT are mutually
    # exclusive."  At 1154ef55 the write command's reader dropped both and wrote the outputs
    reader = READER.replace("DATA", str(HERE / "seq.ctf"))
    out = f"""out = {{
    action = "write" ; modelPath = "{tmp_path}/model" ; outputPath = "{tmp_path}/out"
    outputNodeNames = (z)
    {reader.replace("randomize = false", "randomize = false ; frameMode = true ; truncated = true")}
}}"""
    config = _config(tmp_path, top="", more=out)
    with pytest.raises(ConfigError, match="frameMode and truncated BPTT are mutually exclusive"):
        run(str(config), out=pyio.StringIO())
    assert (tmp_path / "model").exists() and not list(tmp_path.glob("out*"))
    # either alone writes: frameMode = true (packed in sequences all the same), truncated
    ok = out.replace("frameMode = true ; ", "")
    run(str(_config(tmp_path, top="", more=ok)), out=pyio.StringIO())
    assert list(tmp_path.glob("out*"))


def _with_command(tmp_path: Path, command: str, block: str, **kwargs) -> Path:
    """_config's training followed by ``command`` (its block ``block``)."""
    path = _config(tmp_path, more=block, **kwargs)
    path.write_text(path.read_text().replace("command = train:out", f"command = train:{command}"))
    return path


def _with_cv_reader(path: Path, reader: str) -> Path:
    """The train command of ``path`` with the cvReader ``reader`` (a ``reader = {...}``)."""
    path.write_text(path.read_text().replace(
        "    BrainScriptNetworkBuilder", f"    cvR{reader[1:]}\n    BrainScriptNetworkBuilder", 1))
    return path


def _results(text: str) -> list[tuple[float, int]]:
    return [(float(v), int(n)) for v, n in re.findall(r"^Minibatch\[\d+-\d+\]: ce = (\S+) \* (\d+)",
                                                      text, re.M)]


def test_a_test_command_reads_truncated_pieces_with_the_state_carried(tmp_path):
    # cntk.exe's reader packs truncated pieces for every action but write
    # (CompositeDataReader.cpp:65-80), and its evaluator carries the recurrent state from a
    # slot's piece to the next (DelayedValueNode, RecurrentNodes.cpp:335-347, 390-398): a test
    # command of minibatchSize = 12 reads 3 slots of 4 steps, CNTK 2.7's Evaluator over
    # truncation_length = 4 (refs "test"); the pieces add up to the whole sequences' sum
    # ("test_whole").  Until bs38 the test command read whole sequences: minibatches of
    # 10, 9, 9, 8 and 8 samples.  truncationLength is read (the log said it was not until bs38)
    reader = READER.replace("DATA", str(HERE / "seq.ctf"))
    test = f"""test = {{ action = "test" ; modelPath = "{tmp_path}/model" ; minibatchSize = 12
    numMBsToShowResult = 1
    {reader} }}"""
    path = _with_cv_reader(_with_command(tmp_path, "test", test), reader)
    log = pyio.StringIO()
    run(str(path), out=log)
    # the cvReader after each epoch: CNTK 2.7's Evaluator in the training's minibatches of 8
    # (refs "validation"; 7 minibatches, as the whole sequences happened to make too)
    validated = re.findall(r"Final Results: Minibatch\[1-(\d+)\]: ce = (\S+) \* 44;",
                           log.getvalue())[:2]
    assert [int(m) for m, _ in validated] == [len(ref) for ref in REFS["validation"]]
    np.testing.assert_allclose([float(v) for _, v in validated],
                               [sum(s for s, _ in r) / 44 for r in REFS["validation"]], rtol=1e-5)
    got = _results(log.getvalue())
    assert [n for _, n in got] == [n for _, n in REFS["test"]]
    np.testing.assert_allclose([v for v, _ in got], [s / n for s, n in REFS["test"]], rtol=1e-5)
    (whole, count), = REFS["test_whole"]
    final = re.findall(r"Final Results: Minibatch\[1-(\d+)\]: ce = (\S+) \* (\d+)",
                       log.getvalue())[-1]          # (the test command's)
    assert (int(final[0]), int(final[2])) == (len(REFS["test"]), count)
    np.testing.assert_allclose(float(final[1]), whole / count, rtol=1e-5)
    assert "is not used" not in log.getvalue()


def test_a_cv_reader_reads_truncated_pieces_with_the_state_carried(tmp_path):
    # a truncated cvReader is read in pieces too, in minibatches of the epoch's minibatchSize
    # (SGD.cpp's evalforvalidation.Evaluate(..., m_mbSize[i])): here 4, one slot, the
    # parameters kept at their initial values (rate 0, allowed by minLearningRatePerSample = 0),
    # so each epoch's validation is CNTK 2.7's
    # Evaluator on the untrained network (refs "untrained": 11 minibatches; the whole
    # sequences read before bs38 made 8)
    reader = READER.replace("DATA", str(HERE / "seq.ctf"))
    path = _with_cv_reader(_config(tmp_path, "learningRatesPerSample = 0 ; "
                                   "minLearningRatePerSample = 0 ; momentumAsTimeConstant = 0"),
                           reader)
    path.write_text(path.read_text().replace("minibatchSize = 8", "minibatchSize = 4"))
    log = pyio.StringIO()
    run(str(path), out=log)
    ref = REFS["untrained"]
    expected = sum(s for s, _ in ref) / sum(n for _, n in ref)
    finals = re.findall(r"Final Results: Minibatch\[1-(\d+)\]: ce = (\S+) \* (\d+)",
                        log.getvalue())
    assert [(int(m), int(n)) for m, _, n in finals] == [(len(ref), 44)] * 2
    np.testing.assert_allclose([float(v) for _, v, _ in finals], [expected] * 2, rtol=1e-5)


def test_a_future_value_loop_over_truncated_pieces_is_cntk_exes_logic_error(tmp_path):
    # a test command over a truncated list with a FutureValue loop: a piece whose sequence
    # goes on needs the next minibatch's frames; cntk.exe's LogicError "The delay node tries
    # to access future values that are out of bound" (RecurrentNodes.cpp:351-356).  Trained
    # on whole sequences (no truncated at the top), tested on pieces; until bs38 the test
    # command read whole sequences and gave a number
    reader = READER.replace("DATA", str(HERE / "seq.ctf"))
    truncated = reader.replace("randomize = false", "randomize = false ; truncated = true")
    test = f"""test = {{ action = "test" ; modelPath = "{tmp_path}/model" ; minibatchSize = 8
    {truncated} }}"""
    path = _with_command(tmp_path, "test", test, top="")
    path.write_text(path.read_text().replace("PastValue (3, h", "FutureValue (3, h").replace(
        "maxEpochs = 2", "maxEpochs = 1"))
    with pytest.raises(ConfigError, match="FutureValue loop"):
        run(str(path), out=pyio.StringIO())
    assert (tmp_path / "model").exists()


def test_a_per_minibatch_rate_is_refused_at_the_epoch_whose_minibatch_size_needs_it(tmp_path):
    # cntk.exe spreads each epoch's per-minibatch rate and momentum at that epoch's start
    # (SGD.cpp:549, 630; FixUpEffectiveMBSize, SGD.h:142-158, spreads a minibatchSize of 1 over
    # itself): with minibatchSize = 1:8 the first epoch trains and writes model.1, the second
    # stops with the RuntimeError.  Until bs38 Stadyn refused it before the first epoch
    path = _config(tmp_path, "learningRatesPerMB = 0.4 ; momentumAsTimeConstant = 0")
    path.write_text(path.read_text().replace("minibatchSize = 8", "minibatchSize = 1:8"))
    log = pyio.StringIO()
    with pytest.raises(ConfigError, match="Learning rate and momentum are not supported "
                                          "per minibatch, please specify them per sample"):
        run(str(path), out=log)
    assert "Finished Epoch[ 1 of 2]" in log.getvalue()
    assert "Starting Epoch 2" not in log.getvalue()
    assert (tmp_path / "model.1").exists() and not (tmp_path / "model").exists()
    # the default momentumPerMB = 0.9 likewise, after the check of the epoch's rate
    path = _config(tmp_path, "learningRatesPerSample = 0.05")
    path.write_text(path.read_text().replace("minibatchSize = 8", "minibatchSize = 1:8"))
    for old in tmp_path.glob("model*"):
        old.unlink()
    log = pyio.StringIO()
    with pytest.raises(ConfigError, match="Learning rate and momentum are not supported"):
        run(str(path), out=log)
    assert (tmp_path / "model.1").exists() and "Finished Epoch[ 1 of 2]" in log.getvalue()


def test_a_past_value_outside_a_loop_is_tested_on_whole_sequences(tmp_path):
    # a delay outside a loop carries no state in Stadyn's pieces (_state_carry), while
    # cntk.exe's carries it: its values are those of the whole sequences, which a test command
    # over the truncated list then reads (the same total and count as the same test over the
    # reader without truncated); the first version of bs38's pieces refused it with "cannot
    # carry its state"
    reader = READER.replace("DATA", str(HERE / "seq.ctf"))
    totals = []
    for extra in (" ; truncated = true", ""):
        test = f"""test = {{ action = "test" ; modelPath = "{tmp_path}/model" ; minibatchSize = 8
    {reader.replace("randomize = false", "randomize = false" + extra)} }}"""
        path = _with_command(tmp_path, "test", test, top="")
        path.write_text(path.read_text().replace(
            "H * PastValue (3, h, defaultHiddenActivation = 0)",
            "W * PastValue (2, x, defaultHiddenActivation = 0)").replace(
            "maxEpochs = 2", "maxEpochs = 1"))
        log = pyio.StringIO()
        run(str(path), out=log)
        final = re.findall(r"Final Results: Minibatch\[1-\d+\]: ce = (\S+) \* (\d+)",
                           log.getvalue())[-1]
        totals.append((float(final[0]), int(final[1])))
    assert totals[0][1] == totals[1][1] == 44
    np.testing.assert_allclose(totals[0][0], totals[1][0], rtol=1e-6)


def _check_test_epoch(tmp_path, reader: str, epoch: int, ref) -> None:
    """A test command of ``epochSize = epoch`` over ``reader`` logs CNTK 2.7's minibatches
    ``ref`` (``[sum, samples]`` each) and their Final Results line."""
    test = f"""test = {{ action = "test" ; modelPath = "{tmp_path}/model" ; minibatchSize = 12
    epochSize = {epoch} ; numMBsToShowResult = 1
    {reader} }}"""
    log = pyio.StringIO()
    run(str(_with_command(tmp_path, "test", test)), out=log)
    got = _results(log.getvalue())[-len(ref):]
    assert [n for _, n in got] == [n for _, n in ref]
    np.testing.assert_allclose([v for v, _ in got], [s / n for s, n in ref], rtol=1e-5)
    final = re.findall(r"Final Results: Minibatch\[1-(\d+)\]: ce = (\S+) \* (\d+)",
                       log.getvalue())[-1]
    assert (int(final[0]), int(final[2])) == (len(ref), sum(n for _, n in ref))
    np.testing.assert_allclose(float(final[1]), sum(s for s, _ in ref) / int(final[2]),
                               rtol=1e-5)


@pytest.mark.parametrize("epoch", [20, 50])
def test_a_test_commands_epoch_size_over_a_truncated_list_is_cntk_exes_epoch(tmp_path, epoch):
    # a test command's epochSize starts the reader's epoch of that many samples with no sweep
    # limit (SimpleEvaluator.h:97-99, ReaderShim.cpp:108-112, Reader.h:49): CNTK 2.7's
    # Evaluator over MinibatchSource(max_samples=epochSize, truncation_length=4) (refs
    # "test_epochs").  20: 24 samples (the slots' sequences finish); 50, past the sweep's 44:
    # 51 samples in 5 minibatches, the second sweep's first sequence too (until rmD38 Stadyn's
    # test stopped at the sweep's end: 44 samples, 5 minibatches of other values)
    reader = READER.replace("DATA", str(HERE / "seq.ctf"))
    _check_test_epoch(tmp_path, reader, epoch, REFS["test_epochs"][str(epoch)])


@pytest.mark.parametrize("epoch", [20, 50])
def test_a_test_commands_epoch_size_over_whole_sequences_has_no_sweep_limit(tmp_path, epoch):
    # the same over a reader of whole sequences (no truncationLength): cntk.exe's evaluator
    # starts the epoch of epochSize samples with no sweep limit either (SimpleEvaluator.h:97-99,
    # ReaderShim.cpp:108-112, Reader.h:49), CNTK 2.7's Evaluator over
    # MinibatchSource(max_samples=epochSize) (refs "test_epochs_whole").  20: 10, 9 and 5 samples
    # (the whole sequence that crosses the 20th); 50: the sweep's 44 in 5 minibatches, then the
    # second sweep's first sequence (7 samples, 51 in all).  Until bsepoch38 Stadyn's test read
    # one sweep only: 44 samples in 5 minibatches, a different mean, no error
    # (truncated = false: the config's top-level truncated = true is the training's)
    reader = READER.replace("DATA", str(HERE / "seq.ctf")).replace(
        "truncationLength = 4", "truncated = false")
    assert "truncationLength" not in reader
    _check_test_epoch(tmp_path, reader, epoch, REFS["test_epochs_whole"][str(epoch)])


def _text_reader_epoch_starts(tmp_path: Path, ce: str = "W * x + b",
                              reader_extra: str = "") -> list[tuple[str, ...]]:
    """The "Starting Epoch" lines of 3 epochs of minibatchSize = 6, learningRatesPerMB = 0.3
    and SGD's truncated = true, read by a CNTKTextFormatReader from sequences of 5, 1, 3, 2, 1
    steps (``ce``: the criterion's second argument)."""
    rng = np.random.RandomState(3)
    data = tmp_path / "rows.ctf"
    with open(data, "w") as f:
        for s, n in enumerate([5, 1, 3, 2, 1]):
            for _ in range(n):
                x, y = rng.uniform(-1, 1, 2), rng.randint(0, 2)
                f.write(f"{s} |x {x[0]:.3f} {x[1]:.3f} |y {1 - y} {y}\n")
    path = tmp_path / "rows.cntk"
    path.write_text(f"""command = train
deviceId = -1 ; traceLevel = 1
train = {{
    action = "train" ; modelPath = "{tmp_path}/model" ; truncated = true
    SGD = {{ epochSize = 0 ; maxEpochs = 3 ; minibatchSize = 6 ; learningRatesPerMB = 0.3 }}
    BrainScriptNetworkBuilder = {{
        x = Input {{2}} ; y = Input {{2}}
        W = ParameterTensor {{(2:2), initValueScale = 1}} ; b = ParameterTensor {{2}}
        ce = CrossEntropyWithSoftmax (y, {ce})
        featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (ce)
    }}
    reader = {{ readerType = "CNTKTextFormatReader" ; file = "{data}" ; randomize = false
        {reader_extra}
        input = {{ x = {{ dim = 2 ; format = "dense" }} ; y = {{ dim = 2 ; format = "dense" }} }} }}
}}
""")
    log = pyio.StringIO()
    run(str(path), out=log)
    return re.findall(r"Starting Epoch (\d): learning rate per sample = (\S+)  effective "
                      r"momentum = (\S+)  momentum as time constant = (\S+) samples",
                      log.getvalue())


def _spread_over(rows_per_epoch: tuple[int, ...]) -> list[tuple[str, ...]]:
    """The "Starting Epoch" values of 0.3 per minibatch and CNTK's default momentum 0.9 per
    minibatch spread over 6 x each epoch's rows (the effective momentum logged per
    minibatchSize = 6)."""
    expected = []
    for epoch, rows in enumerate(rows_per_epoch, 1):
        per_sample = np.float32(0.9) ** (1 / (6 * rows))
        expected.append((str(epoch), f"{np.float32(0.3) / (6 * rows):f}",
                         f"{per_sample ** 6:f}", f"{-1 / np.log(per_sample):.1f}"))
    return expected


def test_sgd_truncated_with_a_text_reader_spreads_rates_over_the_last_minibatchs_rows(tmp_path):
    # readerType = "CNTKTextFormatReader" packs whole sequences; SGD's truncated = true spreads
    # a per-minibatch rate and momentum over minibatchSize x the parallel sequences its shim
    # reports at each epoch's start (SGD.cpp:549, 630): 1 before any minibatch
    # (ReaderShim.cpp:79), then the rows of the last one read (ReaderShim.cpp:352), the
    # first-fit packing of its sequences (Sequences.h:202-250).  Sequences of 5, 1, 3, 2, 1
    # steps in minibatches of 6 samples are [5, 1] and [3, 2, 1] (CNTK 2.7's MinibatchSource
    # gives 2 and 3 sequences of 6 samples), the last packed in 2 rows (3 | 2 + 1).  So epoch 1
    # takes 0.3 / 6 per sample and a momentum of 0.9 per 6 samples, epochs 2 and 3 0.3 / 12 and
    # 0.9 per 12 samples (the effective momentum logged, per minibatchSize = 6: 0.9 ** 0.5).
    # Until rmD38 every epoch took epoch 1's.
    assert _text_reader_epoch_starts(tmp_path) == _spread_over((1, 2, 2))


def test_sgd_truncated_epoch_1_takes_the_precomputing_passs_last_rows(tmp_path):
    # a Mean node's pre-computing pass reads the training reader (SGD.cpp:1769-1779: one
    # reader shim, minibatches of minibatchSize[0] over the epoch, here a sweep): its last
    # minibatch, [3, 2, 1] (as above), leaves the shim's count at 2 rows (ReaderShim.cpp:352),
    # which epoch 1 spreads its rate and momentum over (SGD.cpp:549, 630).  Until bs39
    # Stadyn's epoch 1 took 1 row (0.05 per sample, twice the 0.025 of cntk.exe): SILENT.
    assert _text_reader_epoch_starts(tmp_path, ce="W * (x - Mean (x)) + b") == \
        _spread_over((2, 2, 2))


def test_sgd_truncated_epoch_1_takes_the_readers_nbruttsineachrecurrentiter(tmp_path):
    # before its first minibatch a CNTKTextFormatReader's shim reports the first value of the
    # reader block's nbruttsineachrecurrentiter (ReaderShim.cpp:71-79, looked up in the blocks
    # around it too, Config.h:971-989): 4 rows at epoch 1 here (0.3 / 24 per sample), then the
    # last minibatch's 2.  Until bs39 Stadyn took 1 (the key's default) whatever it said.
    assert _text_reader_epoch_starts(tmp_path, reader_extra="nbruttsineachrecurrentiter = 4:1") \
        == _spread_over((4, 2, 2))
