"""How often a command opens (indexes) its reader's files, and that it leaves none open.

cntk.exe makes one reader a train command and reads it in the pass that pre-computes
``Mean``/``InvStdDev`` and in training alike (SGD.cpp:413, ``PreCompute (net,
trainSetDataReader, ...)``; the reader is made once, TrainActions.cpp:114-123): its files are
indexed once.  Before bs35 Stadyn's pass opened the reader block again and indexed its CTF
files a second time (a 30 MB file: 1.3 s more).  A reader block that fails part way (its second
deserializer's file missing, a key of a bad value) left the files of the deserializers made
before it open; they are closed now.
"""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

import stadyn as sd
from stadyn import ConfigError, DataError
from stadyn.brainscript import parse_config, reader_config, run
from stadyn.brainscript._model_files import load_model_parameters
from stadyn.brainscript._readers import make_source, reader_deserializers, sequence_streams
from stadyn.io import _ctf


def _open_files() -> set[str]:
    """The files this process holds open (Linux: /proc/self/fd's targets)."""
    names = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            names.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return names


def _ctf_data(tmp_path, name="d.ctf", rows=12):
    rng = np.random.default_rng(3)
    x = np.round(rng.standard_normal((rows, 2)) * [1, 4] + [2, -1], 4)
    path = tmp_path / name
    path.write_text("".join(f"|x {a:.4f} {b:.4f} |y {k % 2} {1 - k % 2}\n"
                            for k, (a, b) in enumerate(x)))
    return path, x


def _config(tmp_path, data, reader_extra=""):
    config = tmp_path / "n.cntk"
    config.write_text(f"""command = T ; deviceId = -1 ; makeMode = false ; traceLevel = 1
T = [ action = "train" ; modelPath = "{tmp_path}/m"
  BrainScriptNetworkBuilder = [ x = Input {{2}} ; y = Input {{2}}
    z = DenseLayer {{2}} (MeanVarNorm (x))
    ce = CrossEntropyWithSoftmax (y, z) ; criterionNodes = (ce) ]
  SGD = [ minibatchSize = 5 ; learningRatesPerSample = 0.001 ; maxEpochs = 1 ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "{data}" ; {reader_extra}
             input = [ x = [ dim = 2 ; format = "dense" ] ; y = [ dim = 2 ; format = "dense" ] ] ] ]
""")
    return config


@pytest.mark.parametrize("frame_mode", [False, True])
def test_the_precompute_pass_and_training_index_the_file_once(tmp_path, monkeypatch,
                                                              frame_mode):
    # the CTF index (_Index: the file's line and sequence boundaries) is built once for the
    # pass and training (at c4441c04: twice); frame mode, where nothing looks at the
    # sequences before the command reads, too.  The pass's values are NumPy's over every
    # sample, and training reads the 12 samples from the start (the pass left no position)
    made = []
    real = _ctf._Index

    def index(*args, **kwargs):
        made.append(args[-1])
        return real(*args, **kwargs)
    monkeypatch.setattr(_ctf, "_Index", index)
    data, x = _ctf_data(tmp_path)
    out = io.StringIO()
    run(str(_config(tmp_path, data, "frameMode = true" if frame_mode else "")), out=out)
    assert made == [str(data)], made
    log = out.getvalue()
    assert "Precomputing --> 2 PreCompute nodes found." in log
    assert "[Training] ce = " in log and " * 12; " in log, log
    with sd.parameter_registry(sd.ParameterRegistry()):
        load_model_parameters(str(tmp_path / "m.0"))
        values = sd.get_parameters(grad_only=False)
        (mean,) = [v.d for k, v in values.items() if k.endswith(".mean")]
        (inv,) = [v.d for k, v in values.items() if k.endswith(".invStdDev")]
        np.testing.assert_allclose(mean, x.mean(0), rtol=1e-5)
        np.testing.assert_allclose(inv, 1 / x.std(0), rtol=1e-5)


def _two_deserializers(tmp_path, second_file, extra=""):
    first, _ = _ctf_data(tmp_path, "a.ctf")
    text = f"""reader = {{ randomize = false ; {extra}
        deserializers = ({{ type = "CNTKTextFormatDeserializer" ; file = "{first}"
                            input = {{ x = {{ dim = 2 ; format = "dense" }} }} }} :
                         {{ type = "CNTKTextFormatDeserializer" ; file = "{second_file}"
                            input = {{ y = {{ dim = 2 ; format = "dense" }} }} }}) }}"""
    return reader_config(parse_config(text)["reader"]), str(first)


def test_a_failing_second_deserializer_leaves_the_first_closed(tmp_path, monkeypatch):
    # the first CTF deserializer holds its file open once made (it reads its first sequence);
    # the second's file is missing: make_source raises with the first closed, while the error
    # is held (at c4441c04 it stayed open until the traceback was dropped), and
    # sequence_streams, which finds nothing, closes it (at c4441c04 it left it to the garbage
    # collector: no close)
    reader, first = _two_deserializers(tmp_path, tmp_path / "missing.ctf")
    before = _open_files()
    with pytest.raises(DataError, match="CTF file does not exist") as caught:
        make_source(reader)
    assert first not in _open_files() - before, caught.traceback
    closed = []
    real = _ctf.CTFDeserializer.close

    def close(self):
        closed.append(self.path)
        real(self)
    monkeypatch.setattr(_ctf.CTFDeserializer, "close", close)
    assert sequence_streams(reader) == frozenset()
    assert closed == [first]


def test_make_source_closes_the_deserializers_when_a_key_is_bad(tmp_path):
    # the deserializers are made, then randomizationSeed is refused: those made and those
    # handed over (OpenedReaders.take's) are closed (at c4441c04 both stayed open)
    second, _ = _ctf_data(tmp_path, "b.ctf")
    reader, first = _two_deserializers(tmp_path, second, "randomizationSeed = \"abc\"")
    before = _open_files()
    with pytest.raises(ConfigError, match="randomizationSeed must be an integer"):
        make_source(reader)
    assert not {first, str(second)} & (_open_files() - before)
    handed = reader_deserializers(reader)
    for d in handed:                 # (read: each holds its file open)
        d.read(0)
    assert {first, str(second)} <= _open_files() - before
    with pytest.raises(ConfigError, match="randomizationSeed must be an integer"):
        make_source(reader, opened=handed)
    assert not {first, str(second)} & (_open_files() - before)


def test_a_train_command_of_a_failing_reader_leaves_no_file_open(tmp_path):
    # the whole run: the reader's second file is missing; the error names it and the first
    # file is closed when the run has stopped
    (tmp_path / "missing").mkdir()
    reader, first = _two_deserializers(tmp_path, tmp_path / "missing" / "b.ctf")
    config = tmp_path / "r.cntk"
    config.write_text(f"""command = T ; deviceId = -1
T = [ action = "train" ; modelPath = "{tmp_path}/m"
  BrainScriptNetworkBuilder = [ x = Input {{2}} ; y = Input {{2}}
    z = DenseLayer {{2}} (x) ; ce = CrossEntropyWithSoftmax (y, z) ; criterionNodes = (ce) ]
  SGD = [ minibatchSize = 5 ; learningRatesPerSample = 0.001 ; maxEpochs = 1 ]
  reader = [ randomize = false
    deserializers = ([ type = "CNTKTextFormatDeserializer" ; file = "{first}"
                       input = [ x = [ dim = 2 ; format = "dense" ] ] ] :
                     [ type = "CNTKTextFormatDeserializer" ; file = "{tmp_path}/missing/b.ctf"
                       input = [ y = [ dim = 2 ; format = "dense" ] ] ]) ] ]
""")
    before = _open_files()
    with pytest.raises(DataError, match="CTF file does not exist") as caught:
        run(str(config), out=io.StringIO())
    assert first not in _open_files() - before, caught.traceback


def test_a_restart_without_a_checkpoint_counts_its_sweep_through_the_same_index(
        tmp_path, monkeypatch):
    # a restart from modelPath.1 whose .ckp is gone, epochSize = 0 and an Input of sequences:
    # the sweep's samples are counted by reading the reader once more, through the training
    # source's deserializers (at c4441c04 the reader block was opened and its file indexed a
    # second time).  Sequences of 3, 2 and 4 steps with a label each step: 9 samples a sweep
    lines = []
    for s, n in enumerate([3, 2, 4]):
        lines += [f"{s} |x {s + k} {k} |y {k % 2} {1 - k % 2}" for k in range(n)]
    data = tmp_path / "s.ctf"
    data.write_text("\n".join(lines) + "\n")
    config = tmp_path / "s.cntk"
    config.write_text(f"""command = T ; deviceId = -1 ; traceLevel = 1
T = [ action = "train" ; modelPath = "{tmp_path}/m"
  BrainScriptNetworkBuilder = [ x = Input {{2}} ; y = Input {{2}}
    h = x + PastValue (0, x) ; z = DenseLayer {{2}} (h)
    ce = CrossEntropyWithSoftmax (y, z) ; criterionNodes = (ce) ]
  SGD = [ minibatchSize = 16 ; learningRatesPerSample = 0.001 ; maxEpochs = 2 ; epochSize = 0 ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "{data}" ; randomize = false
             input = [ x = [ dim = 2 ; format = "dense" ] ; y = [ dim = 2 ; format = "dense" ] ] ] ]
""")
    run(str(config), out=io.StringIO())
    os.remove(tmp_path / "m")            # (m.1 keeps no .ckp: cntk.exe deletes it too)
    assert (tmp_path / "m.1").exists() and not (tmp_path / "m.1.ckp").exists()
    made = []
    real = _ctf._Index

    def index(*args, **kwargs):
        made.append(args[-1])
        return real(*args, **kwargs)
    monkeypatch.setattr(_ctf, "_Index", index)
    out = io.StringIO()
    run(str(config), out=out)
    log = out.getvalue()
    assert "Checkpoint file is missing" in log, log
    assert "Finished Epoch[ 2 of 2]: [Training] ce = " in log and " * 9; " in log, log
    assert made == [str(data)], made
