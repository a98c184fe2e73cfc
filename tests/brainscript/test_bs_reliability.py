"""Configs that are hostile or merely unlucky: deep nesting, long variable chains, huge repeat
counts, files that are not configs (never quoted), files that never end, a ``maxEpochs`` of
1e23, and outputs that cannot be written.  Each is one located ConfigError (or a run that goes
ahead), never a traceback, a hang or a huge allocation."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stadyn._errors import ConfigError, StadynError
from stadyn.brainscript import load_config, parse_config, sgd_config
from stadyn.brainscript._runner import run
from stadyn.cli import main as cli_main
from test_bs_runner import ONE_HIDDEN, _write_mnist_ctf

SECRET = "s3cret-line:x:0:0:do not print me"
NESTING_LIMIT = 100        # the documented limit (stadyn.brainscript._config_reader)


def _nested(depth: int) -> str:
    return "a = " + "{ b = " * depth + "1" + " }" * depth + "\n"


# ---------------------------------------------------------------------------------------------
# Nesting
# ---------------------------------------------------------------------------------------------
def test_the_nesting_limit_is_the_documented_one():
    from stadyn.brainscript import _config_reader
    assert _config_reader.NESTING_LIMIT == NESTING_LIMIT
    assert ":data:`NESTING_LIMIT`" in _config_reader.__doc__


def test_deep_nesting_in_a_file_is_a_located_error(tmp_path):
    path = tmp_path / "deep.cntk"
    path.write_text("command = T\n" + _nested(300))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    e = info.value
    # the 101st '{' of line 2: "a = " then 100 times "{ b = "
    assert (e.path, e.line, e.column) == (str(path), 2, 5 + 6 * NESTING_LIMIT)
    assert f"nested more than {NESTING_LIMIT} levels deep" in e.reason
    assert parse_config(_nested(NESTING_LIMIT))["a"]["b"] is not None   # the limit reads


def test_deep_nesting_in_a_command_line_override_is_a_located_error(tmp_path):
    path = tmp_path / "ok.cntk"
    path.write_text("x = 1\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, ["a=" + "[b=" * 300 + "1" + "]" * 300])
    e = info.value
    assert (e.path, e.line, e.column) == ("<command line 1>", 1, 3 + 3 * NESTING_LIMIT)


@pytest.mark.parametrize("text, where, message", [
    (".".join(["k"] * 300) + " = 1", (1, 1), "blocks nested more than"),
    ("a = " + "(" * 300 + "1" + ")" * 300, (1, 5 + NESTING_LIMIT), "brackets nested more than"),
    ("\n".join(f"v{i} = $v{i + 1}$" for i in range(300)) + "\nv300 = 1",
     (NESTING_LIMIT + 1, 1), "variable references"),
])
def test_other_deep_structures_are_located_errors(text, where, message):
    with pytest.raises(ConfigError) as info:
        cfg = parse_config(text, "n.cntk")
        cfg["v0"]                                  # variables resolve when read
    e = info.value
    assert (e.path, e.line, e.column) == ("n.cntk", *where) and message in e.reason


def test_stadyn_train_reports_deep_nesting_without_a_traceback(tmp_path, capsys):
    assert cli_main(["train", str(ONE_HIDDEN), "a=" + "{b=" * 1000 + "1" + "}" * 1000]) == 1
    err = capsys.readouterr().err
    assert "<command line 1>:1:" in err and "Traceback" not in err and "Recursion" not in err
    assert len(err) < 2000                          # the excerpt of a long line is clipped


def test_a_huge_repeat_count_is_a_located_error_not_an_allocation():
    cfg = parse_config("SGD = { maxEpochs = 1\n learningRatesPerMB = 0.1*1e12 }", "r.cntk")
    with pytest.raises(ConfigError) as info:
        sgd_config(cfg["SGD"])
    e = info.value
    assert (e.path, e.line) == ("r.cntk", 2) and "longer than 1,048,576 values" in e.reason


# ---------------------------------------------------------------------------------------------
# Files that are not configs
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["secret", "/etc/passwd"])
def test_an_included_file_that_is_not_a_config_is_not_quoted(tmp_path, target):
    if target == "secret":
        (tmp_path / "secret.txt").write_text(SECRET + "\nmore: lines\n")
        target = str(tmp_path / "secret.txt")
    elif not os.path.isfile(target):
        pytest.skip(f"{target} does not exist here")
    first_line = Path(target).read_text().splitlines()[0]
    cfg = tmp_path / "inc.cntk"
    cfg.write_text(f'x = 1\ninclude "{target}"\n')
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    e = info.value
    assert (e.path, e.line, e.column) == (str(cfg), 2, 9)
    assert f"cannot include '{target}': not a config file" in e.reason
    assert first_line[:10] not in str(e)


def test_a_file_included_into_brainscript_that_is_not_brainscript_is_not_quoted(tmp_path):
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    (tmp_path / "lib.bs").write_text("// a library\nf(x) = x * / 2\n")
    cfg = tmp_path / "net.cntk"
    cfg.write_text('T = { BrainScriptNetworkBuilder = {\n  include "secret.txt"\n  x = 1 } }\n'
                   'U = { BrainScriptNetworkBuilder = {\n  include "lib.bs"\n  y = 2 } }\n')
    with pytest.raises(ConfigError) as info:
        load_config(cfg)["T"]["BrainScriptNetworkBuilder"].parse()
    e = info.value
    assert (e.path, e.line, e.column) == (str(cfg), 2, 11) and "s3cret" not in str(e)
    assert "not a BrainScript file (line 1, column 7 " in e.reason    # the "-"
    with pytest.raises(ConfigError) as info:       # BrainScript with a mistake: quoted
        load_config(cfg)["U"]["BrainScriptNetworkBuilder"].parse()
    e = info.value
    assert (e.path, e.line, e.column) == (str(tmp_path / "lib.bs"), 2, 12)
    assert "f(x) = x * / 2" in str(e)


def test_a_config_file_with_a_mistake_is_still_quoted(tmp_path):
    (tmp_path / "part.cntk").write_text("x = 1\ny = = 2\n")
    (tmp_path / "main.cntk").write_text('include "part.cntk"\n')
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "main.cntk")
    assert info.value.line == 2 and "y = = 2" in str(info.value)


def test_a_top_level_file_that_is_not_a_config_is_not_quoted(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text(SECRET + "\n")
    with pytest.raises(ConfigError, match="not a config file") as info:
        load_config(path)
    assert "s3cret" not in str(info.value)


def test_a_fifo_or_a_huge_file_is_refused_without_reading_it(tmp_path):
    fifo = tmp_path / "pipe.cntk"
    os.mkfifo(fifo)
    big = tmp_path / "big.cntk"
    with open(big, "wb") as f:
        f.truncate(17 << 20)                        # sparse: takes no disk
    code = textwrap.dedent("""
        import sys
        from stadyn.brainscript import load_config
        for path in sys.argv[1:]:
            try:
                load_config(path)
            except Exception as exc:
                print(type(exc).__name__, exc)
    """)
    out = subprocess.run([sys.executable, "-c", code, str(fifo), str(big)], capture_output=True,
                         text=True, timeout=120)
    lines = out.stdout.splitlines()
    assert lines == [f"ConfigError cannot read config file {fifo}: is a FIFO (named pipe), "
                     "not a regular file",
                     f"ConfigError config file '{big}' is larger than 16 MiB; not a config file"
                     ], out.stderr[-2000:]


# ---------------------------------------------------------------------------------------------
# The runner
# ---------------------------------------------------------------------------------------------
_FIRST_EPOCH = textwrap.dedent("""
    import io, sys
    from stadyn.brainscript._runner import run
    class Stop(Exception):
        pass
    def stop(command, epoch):
        raise Stop
    log = io.StringIO()
    try:
        run(sys.argv[1], sys.argv[2:], out=log, epoch_callback=stop)
    except Stop:
        pass
    print(log.getvalue())
""")


def test_max_epochs_1e23_starts_training_at_once(tmp_path):
    _write_mnist_ctf(tmp_path / "mnist", n_train=64, n_test=16)
    out = subprocess.run(
        [sys.executable, "-c", _FIRST_EPOCH, str(ONE_HIDDEN), f"dataDir={tmp_path / 'mnist'}",
         f"outputDir={tmp_path / 'out'}", "trainNetwork.SGD.epochSize=64",
         "trainNetwork.SGD.maxEpochs=1e23"], capture_output=True, text=True, timeout=300)
    assert "Finished Epoch[ 1 of 99999999999999991611392]: [Training] ce = " in out.stdout, \
        out.stderr[-3000:]
    assert (tmp_path / "out" / "Models" / "01_OneHidden.1").is_file()


@pytest.mark.parametrize("override, key, line", [
    ("modelPath={blocker}/Models/net", "modelPath", None),
    ("stderr={blocker}/logs/out", "stderr", None),
    ("outputDir={blocker}", "modelPath", 13),     # modelPath = "$outputDir$/Models/..."
])
def test_an_output_that_cannot_be_written_is_a_located_error_before_training(
        tmp_path, capsys, override, key, line):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    item = override.format(blocker=blocker)
    before = sorted(os.listdir(tmp_path))
    status = cli_main(["train", str(ONE_HIDDEN), f"dataDir={tmp_path}/no_data", item])
    err = capsys.readouterr().err
    assert status == 1 and "Traceback" not in err
    where = f"{ONE_HIDDEN}:{line}:" if line else "<command line 2>:1:"
    assert f"error: {where}" in err and "cannot write the " in err and f"({key})" in err, err
    assert f"'{blocker}' is a file, not a folder" in err
    assert sorted(os.listdir(tmp_path)) == before            # nothing made, nothing left


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="permissions do not stop root")
def test_a_read_only_model_folder_is_a_located_error(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(ConfigError, match=r"cannot write the model file \(modelPath\)"):
            run(ONE_HIDDEN, [f"dataDir={tmp_path}", f"modelPath={folder}/net"], out=io.StringIO())
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("show, logged", [(2, "Minibatch"), (100, "Finished Epoch")])
def test_a_nan_criterion_stops_training_as_cntk_did_after_the_line_that_shows_it(
        tmp_path, show, logged):
    """CNTK checks the criterion where it logs: after a ``Minibatch[...]`` line (every
    ``numMBsToShowResult`` minibatches) or the ``Finished Epoch`` line, so the line with ``nan``
    is printed and then training stops; the epoch's model file is not written."""
    _write_mnist_ctf(tmp_path / "mnist", n_train=64, n_test=16)
    log = io.StringIO()
    with pytest.raises(StadynError, match=r"^The training criterion is not a number \(NAN\)\.$"):
        run(ONE_HIDDEN, [f"dataDir={tmp_path / 'mnist'}", f"outputDir={tmp_path / 'out'}",
                         "trainNetwork.SGD.epochSize=256", "trainNetwork.SGD.maxEpochs=2",
                         "trainNetwork.SGD.learningRatesPerSample=1e30",
                         f"trainNetwork.SGD.numMBsToShowResult={show}"], out=log)
    last = log.getvalue().rstrip("\n").splitlines()[-1]
    assert logged in last and "ce = nan * " in last, log.getvalue()[-2000:]
    if logged == "Minibatch":      # the first window: minibatches 1-2 of epoch 1
        assert last.startswith(" Epoch[ 1 of 2]-Minibatch[   1-   2, ")
    models = tmp_path / "out" / "Models"
    assert sorted(os.listdir(models)) == ["01_OneHidden.0"]      # the untrained model only


_INTERRUPTED_BUILD = textwrap.dedent("""
    import os, signal, threading, time
    # (Python keeps SIGINT ignored where its parent ignored it, as a shell does for a job it
    # starts in the background: the Ctrl-C of an interactive session is what is tested)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import stadyn as sd
    from stadyn.brainscript import StadynLibrary, build_network
    def evaluating():
        return [t for t in threading.enumerate() if t.name == "stadyn-brainscript-evaluation"]
    def ctrl_c():         # the signal a Ctrl-C sends, once the build has made some parameters
        while not evaluating() or len(sd.get_parameters()) < 20:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=ctrl_c, daemon=True).start()
    try:
        build_network("{ z = Splice (array[1..100000] (i => ParameterTensor {(1)})) }",
                      StadynLibrary())
        print("built")
    except KeyboardInterrupt:
        made = len(sd.get_parameters())
        running = len(evaluating())
        time.sleep(1.0)
        print("interrupted", running, len(sd.get_parameters()) - made)
""")


def test_ctrl_c_during_a_network_build_stops_its_evaluation_thread():
    # the description is evaluated in a thread of its own (_network._deep_enough); a Ctrl-C
    # (SIGINT: KeyboardInterrupt in the main thread, which waits for it) left that thread
    # building the network and adding parameters after the KeyboardInterrupt (before bs38:
    # "interrupted 1 <a growing count>"); now it is stopped before the KeyboardInterrupt goes on
    out = subprocess.run([sys.executable, "-c", _INTERRUPTED_BUILD], capture_output=True,
                         text=True, timeout=300)
    assert out.stdout.split() == ["interrupted", "0", "0"], out.stderr[-3000:]


def test_stopping_an_evaluation_thread_that_ended_without_finishing_returns():
    # a Ctrl-C's KeyboardInterrupt raised into the evaluation thread while it was already
    # leaving (in its handlers, before it set ``finished``) ends it without ``finished``:
    # _network._stop then raised into no thread every second, forever (a CI run's
    # test_ctrl_c_during_a_network_build_stops_its_evaluation_thread timed out after 300 s)
    import threading
    from stadyn.brainscript._network import _stop
    finished = threading.Event()
    worker = threading.Thread(target=lambda: None)
    worker.start()
    worker.join()
    stopper = threading.Thread(target=_stop, args=(worker, finished), daemon=True)
    stopper.start()
    stopper.join(10.0)
    assert not stopper.is_alive() and not finished.is_set()
