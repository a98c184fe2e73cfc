"""The ``stadyn`` command as a user types it: options anywhere, ``--version``, choices that are
checked and listed, plain-text help with every option described, warnings on one line, labelled
demo lines, the machine's load in ``stadyn bench`` and ``stadyn convert``'s checks of its
arguments."""

from __future__ import annotations

import argparse
import re
import warnings
from importlib import metadata

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn.bench import ALL_STADYN_MODES, WORKLOADS
from stadyn.cli import build_parser, format_warning, main


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    # argparse keeps sub-parsers in the choices of its (private) sub-parsers action
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


# ---------------------------------------------------------------------------------------------
# options anywhere
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, expected", [
    (["train", "c.cntk", "--nproc", "2", "dataDir=/d"],
     {"config": "c.cntk", "nproc": 2, "overrides": ["dataDir=/d"]}),
    (["train", "c.cntk", "a=1", "--timeout", "5", "b=2", "--nproc", "3", "c=3"],
     {"overrides": ["a=1", "b=2", "c=3"], "timeout": 5.0, "nproc": 3}),
    (["train", "--nproc", "2", "c.cntk", "dataDir=/d"],
     {"config": "c.cntk", "overrides": ["dataDir=/d"]}),
    (["eval", "c.cntk", "x=1", "y=2"], {"config": "c.cntk", "overrides": ["x=1", "y=2"]}),
    (["convert", "m.onnx", "--dim", "batch=4", "m.stadyn"],
     {"input": "m.onnx", "output": "m.stadyn", "dim": ["batch=4"]}),
    (["bench", "mlp", "--rounds", "2", "seed2"], {"workloads": ["mlp", "seed2"], "rounds": 2}),
    (["data", "mapfile", "imgs", "--out", "m.txt", "--relative"],
     {"folder": "imgs", "out": "m.txt", "relative": True}),
])
def test_options_may_stand_between_positional_arguments(argv, expected):
    args = build_parser().parse_args(argv)
    assert {k: getattr(args, k) for k in expected} == expected


def test_version_prints_the_installed_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"stadyn {metadata.version('stadyn')} (torch ")
    assert out.count("\n") == 1


# ---------------------------------------------------------------------------------------------
# choices are checked and listed
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, words", [
    (["bench", "mlp", "--stadyn-modes", "statc"],
     "argument --stadyn-modes: invalid choice: 'statc' (choose from 'dynamic', 'static', "
     "'compiled', 'static-bf16', 'compiled-bf16')"),
    (["bench", "--torch-modes", "jit"],
     "invalid choice: 'jit' (choose from 'eager', 'compile', 'eager-cl', 'compile-cl', "
     "'eager-bf16', 'eager-cl-bf16')"),
    (["bench", "--peers", "--peer-modes", "nnabla-fast"],
     "invalid choice: 'nnabla-fast' (choose from 'nnabla-static', 'nnabla-dynamic', "
     "'mxnet-imperative', 'mxnet-hybridized')"),
    (["bench", "mlp", "resnet"], "unknown workload(s) resnet; known: digits-cnn, mlp, cifar"),
    (["demo", "--modes", "fast"], "invalid choice: 'fast' (choose from 'static', 'dynamic'"),
    (["demo", "--dtype", "float8"],
     "invalid choice: 'float8' (choose from 'float32', 'bfloat16', 'float16')"),
    (["convert", "a.stadyn", "b.onnx", "--opset", "16"],
     "argument --opset: invalid choice: 16 (choose from 17, 18, 19, 20, 21)"),
])
def test_a_bad_choice_is_a_usage_error_listing_the_choices(argv, words, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and words in err and "Traceback" not in err


def test_the_help_lists_the_modes(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for mode in ALL_STADYN_MODES + ("eager", "compile", "nnabla-static", "mxnet-hybridized"):
        assert mode in text


# ---------------------------------------------------------------------------------------------
# help: plain text, every option described
# ---------------------------------------------------------------------------------------------
_MARKUP = re.compile(r"``|:(?:func|class|mod|meth|data|attr):|`[^`\n]+`|\w::\s*$", re.M)
_SUBCOMMANDS = sorted(set(_subparsers(build_parser())) - {"data"})   # data: cli/data.py


@pytest.mark.parametrize("name", _SUBCOMMANDS)
def test_help_is_plain_text_and_every_option_is_described(name):
    parser = _subparsers(build_parser())[name]
    text = parser.format_help()
    assert not _MARKUP.findall(text), f"stadyn {name} --help shows markup: {_MARKUP.findall(text)}"
    undescribed = [a.option_strings or a.dest for a in parser._actions
                   if not (a.help and a.help.strip())]
    assert not undescribed, f"stadyn {name}: options without a description: {undescribed}"


def test_the_top_level_help_describes_every_command():
    parser = build_parser()
    text = parser.format_help()
    assert "--version" in text
    for name in _subparsers(parser):
        assert re.search(rf"^\s+{name}\s+\S", text, re.M), name


# ---------------------------------------------------------------------------------------------
# warnings on one line
# ---------------------------------------------------------------------------------------------
def test_warnings_print_as_one_clean_line(tmp_path, monkeypatch, capsys):
    import stadyn.serialize

    def noisy_info(path):   # warnings as Stadyn's own code raises them
        warnings.warn_explicit("the first line\n   and the second", UserWarning, sd.__file__, 1)
        warnings.warn_explicit("an old name", DeprecationWarning, sd.__file__, 2)
        return "fine"
    monkeypatch.setattr(stadyn.serialize, "model_info", noisy_info)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert main(["info", str(tmp_path / "m.stadyn")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["stadyn: warning: the first line and the second",
                   "stadyn: warning: an old name (DeprecationWarning)"]
    assert warnings.showwarning is not None and "stadyn" not in repr(warnings.showwarning)


def test_a_warning_from_a_library_names_it():
    import torch
    line = format_warning(UserWarning("slow path"), UserWarning, torch.__file__, 3)
    assert line == "stadyn: warning: slow path (from torch)\n"


# ---------------------------------------------------------------------------------------------
# the demo's epoch lines
# ---------------------------------------------------------------------------------------------
def test_demo_epoch_lines_say_what_they_hold():
    from stadyn.cli.demo import train_digits_cnn
    from stadyn.io._digits import load_digits_source
    lines: list[str] = []
    train = load_digits_source().subset(np.arange(40))
    result, _ = train_digits_cnn("dynamic", train, epochs=2, batch_size=16, log=lines.append)
    pattern = re.compile(r"^\[dynamic\] epoch (\d)/2: training loss (\S+) \(mean softmax "
                         r"cross-entropy over (\d+) iterations\)$")
    found = [pattern.match(line) for line in lines]
    assert all(found), lines
    assert [m.group(1) for m in found] == ["1", "2"]
    assert [float(m.group(2)) for m in found] == pytest.approx(result.epoch_losses, rel=1e-5)
    assert [int(m.group(3)) for m in found] == result.epoch_iters


# ---------------------------------------------------------------------------------------------
# stadyn bench: the machine's load
# ---------------------------------------------------------------------------------------------
def test_bench_prints_the_load_and_warns_when_the_machine_is_busy(monkeypatch):
    from stadyn.cli import bench
    monkeypatch.setattr(bench.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(bench.os, "getloadavg", lambda: (3.1, 2.5, 0.75))
    lines: list[str] = []
    with pytest.warns(RuntimeWarning, match=r"the machine is busy \((at the end, )?load average "
                                            r"3.10 on 4 CPUs, more than 0.5 per CPU\)"):
        table = bench.run_bench(("mlp",), stadyn_modes=(), torch_modes=("eager",), rounds=1,
                                per_round=1, warmup=0, out=None, log=lines.append)
    assert list(table) == ["mlp"]
    assert any(re.match(r"load average 3.10 2.50 0.75 \(1, 5, 15 min\) on 4 CPUs", line)
               for line in lines), lines
    assert lines[-1].startswith("at the end, load average 3.10")


def test_bench_workloads_are_named_for_what_they_are_and_seed2_still_works(monkeypatch):
    """``digits-cnn`` is the NNabla tutorial's deep CNN; ``seed2``, its earlier name, runs it."""
    from stadyn.cli import bench
    monkeypatch.setattr(bench.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert list(WORKLOADS) == ["digits-cnn", "mlp", "cifar", "cifar-bs", "cifar-bs-pad",
                               "cifar-cntk", "lstm", "lstm-tagger"]
    assert "NNabla's static-vs-dynamic tutorial" in WORKLOADS["digits-cnn"].description
    assert "CNTK's CIFAR-10 ConvNet" in WORKLOADS["cifar"].description
    rows = {}
    for name in ("seed2", "digits-cnn"):
        lines: list[str] = []
        table = bench.run_bench((name,), stadyn_modes=(), torch_modes=("eager",), rounds=1,
                                per_round=1, warmup=0, out=None, log=lines.append)
        assert list(table) == ["digits-cnn"]
        assert "digits-cnn: the deep CNN of NNabla's static-vs-dynamic tutorial" in "\n".join(lines)
        rows[name] = [line.split()[-1] for line in lines if line.strip().startswith("torch-eager")]
    assert len(rows["seed2"]) == 1 and rows["seed2"] == rows["digits-cnn"]   # the same first loss
    ran = []
    monkeypatch.setattr(bench, "run_bench", lambda workloads, *a, **k: ran.append(workloads))
    assert main(["bench", "seed2", "mlp", "--out", "unused"]) == 0
    assert ran == [["seed2", "mlp"]]


def test_bench_is_quiet_on_an_idle_machine(monkeypatch):
    from stadyn.cli import bench
    monkeypatch.setattr(bench.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(bench.os, "getloadavg", lambda: (1.9, 1.0, 1.0))
    lines: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bench.machine_load(lines.append) == pytest.approx(0.475)
    assert lines[0].startswith("load average 1.90 1.00 1.00 (1, 5, 15 min) on 4 CPUs")


def test_bench_leaves_its_own_load_out_at_the_end(monkeypatch):
    # a one-thread run on an idle 2-CPU machine makes the 1-minute load about 1.1 by itself:
    # only the load beyond its own threads says the machine is busy
    from stadyn.cli import bench
    monkeypatch.setattr(bench.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(bench.os, "getloadavg", lambda: (1.09, 0.92, 0.45))
    lines: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bench.machine_load(lines.append, "at the end, ", own=1) == pytest.approx(0.045)
    assert lines[0].endswith("on 2 CPUs (about 1 of it this run's own)")
    mine = r"load average 2.30 on 2 CPUs \(about 1 of it this run's own\)"
    with pytest.warns(RuntimeWarning, match=mine):
        monkeypatch.setattr(bench.os, "getloadavg", lambda: (2.3, 2.0, 1.0))
        assert bench.machine_load(lines.append, "at the end, ", own=1) == pytest.approx(0.65)
    with pytest.warns(RuntimeWarning, match="machine is busy"):   # without: the run warns on itself
        monkeypatch.setattr(bench.os, "getloadavg", lambda: (1.09, 0.92, 0.45))
        bench.machine_load(lines.append, "at the end, ")


# ---------------------------------------------------------------------------------------------
# stadyn convert: extensions and --dim
# ---------------------------------------------------------------------------------------------
def _model(tmp_path):
    x = sd.Variable((2, 3))
    path = tmp_path / "m.stadyn"
    sd.save(path, {"y": F.relu(x)}, {"x": x})
    return path


def test_convert_refuses_an_unknown_output_extension(tmp_path, capsys):
    src = _model(tmp_path)
    assert main(["convert", str(src), str(tmp_path / "m.txt")]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'm.txt'}: unknown extension .txt for the output; known: .onnx (ONNX " \
           "model), .stadyn (Stadyn model file)" in err
    assert not (tmp_path / "m.txt").exists()
    (tmp_path / "notes.txt").write_text("not a model")
    assert main(["convert", str(tmp_path / "notes.txt"), str(tmp_path / "n.onnx")]) == 1
    assert "notes.txt: neither a Stadyn model file nor an ONNX model" in capsys.readouterr().err


@pytest.mark.parametrize("dim, words", [
    ("batch=1e12", "--dim batch=1e12: SIZE must be a whole number from 1 to 2147483647, "
                   "got '1e12'"),
    ("batch=1000000000000", "from 1 to 2147483647, got '1000000000000'"),
    ("batch=0", "from 1 to 2147483647, got '0'"),
    ("batch=-3", "got '-3'"),
    ("=4", "--dim expects NAME=SIZE, got '=4'"),
])
def test_convert_checks_dims(dim, words, tmp_path, capsys):
    src = _model(tmp_path)
    assert main(["convert", str(src), str(tmp_path / "m.onnx")]) == 0
    capsys.readouterr()
    assert main(["convert", "--dim", dim, str(tmp_path / "m.onnx"), str(tmp_path / "b.stadyn")]) \
        == 1
    assert words in capsys.readouterr().err
    assert not (tmp_path / "b.stadyn").exists()


def test_bench_profile_prints_time_per_scope_and_writes_a_trace_per_case(tmp_path, capsys):
    import json
    assert main(["bench", "mlp", "--stadyn-modes", "static", "dynamic", "--profile",
                 str(tmp_path), "--warmup", "1", "--per-round", "1"]) in (0, None)
    out = capsys.readouterr().out
    for mode in ("stadyn-static", "stadyn-dynamic"):
        events = json.loads((tmp_path / f"mlp-{mode}.json").read_text())["traceEvents"]
        names = {e.get("name", "") for e in events}
        assert {"stadyn::mlp/fc1/affine/affine", "stadyn::mlp/out/affine/affine"} <= names, mode
        assert f"  {mode}, 1 step(s):" in out
    scopes = [line.split()[0] for line in out.splitlines() if line.startswith("    mlp/")]
    assert sorted(set(scopes)) == ["mlp/fc1", "mlp/fc2", "mlp/out"]
