"""``stadyn bench --peers``: spec files, peer Pythons, failures, and (where the peer environments
exist) the peers' first losses against Stadyn's."""

import json
import os
import stat

import numpy as np
import pytest
import peers

from stadyn.bench import WORKLOADS
from stadyn.bench._workloads import cifar_layer_names
from stadyn.bench._peers import (PEER_MODES, PeerSetupError, check_peer_pythons, peer_python,
                                 run_peers, spec_meta, write_spec)
from stadyn.cli import main
from stadyn.cli.bench import _split_peer_modes


def test_spec_round_trips(tmp_path):
    path = write_spec("mlp", str(tmp_path / "mlp.npz"))
    w = WORKLOADS["mlp"]
    x, t = w.batch(0)
    params = w.initial_parameters(0)
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("__meta__")))
    assert meta["workload"] == "mlp" and meta["network"] == "digits_mlp"
    assert meta["solver"] == {"name": "adam", "lr": 1e-3, "beta1": 0.9, "beta2": 0.999,
                              "eps": 1e-8}
    np.testing.assert_array_equal(arrays.pop("__x__"), x)
    spec_t = arrays.pop("__t__")
    assert spec_t.dtype == np.int32 and spec_t.shape == (16, 1)
    np.testing.assert_array_equal(spec_t, t)
    assert set(arrays) == set(params)
    for name, value in params.items():
        assert arrays[name].dtype == np.float32
        np.testing.assert_array_equal(arrays[name], value.numpy())


def test_the_digits_cnn_spec_holds_the_batch_norm_statistics(tmp_path):
    """The peers create every parameter of NNabla's network, running statistics too, and refuse
    a spec without them (they were left out once with the untrained BrainScript constants)."""
    path = write_spec("digits-cnn", str(tmp_path / "cnn.npz"))
    with np.load(path, allow_pickle=False) as z:
        names = set(z.files) - {"__x__", "__t__", "__meta__"}
        mean, var = z["cnn/conv1/bn/mean"], z["cnn/conv1/bn/var"]
    assert len(names) == 76        # 12 conv+BN blocks (W, b, beta, gamma, mean, var), affine W, b
    assert mean.shape == var.shape == (1, 64, 1, 1)
    np.testing.assert_array_equal(mean, 0.0)
    np.testing.assert_array_equal(var, 1.0)


def test_the_cifar_bs_spec_holds_the_trained_parameters_only(tmp_path):
    """cntk.exe's constants for the config's number operands (``_z...``, and the one ``Normalize
    {featScale}`` makes when applied) are in the registry but not in the twins' spec."""
    path = write_spec("cifar-bs", str(tmp_path / "cifar.npz"))
    with np.load(path, allow_pickle=False) as z:
        shapes = {k: z[k].shape for k in z.files if k not in ("__x__", "__t__", "__meta__")}
    assert not [k for k in shapes if k.startswith("_")]
    assert len(shapes) == 14 and sum(int(np.prod(s)) for s in shapes.values()) == 949834


def test_the_cifar_specs_name_each_layers_parameters(tmp_path):
    """The peers take the ConvNet's parameters by the layer names in the spec: the Python
    layers' (``convolution/W``) or, from BrainScript, cntk.exe's node names (they looked up
    ``convolution/W`` in the cifar-bs spec once: KeyError)."""
    bs_convs = [[f"model.arrayOfFunctions[{i}].W", f"model.arrayOfFunctions[{i}].b"]
                for i in (1, 3, 6, 8)]
    bs_dense = [[f"model.arrayOfFunctions[{i}].arrayOfFunctions[0].W",
                 f"model.arrayOfFunctions[{i}].arrayOfFunctions[0].b"] for i in (11, 14)]
    bs_dense.append(["model.arrayOfFunctions[17].W", "model.arrayOfFunctions[17].b"])
    py_convs = [[f"{n}/W", f"{n}/b"] for n in
                ("convolution", "convolution_1", "convolution_2", "convolution_3")]
    py_dense = [[f"{n}/W", f"{n}/b"] for n in ("dense", "dense_1", "dense_2")]
    for workload, convs, dense in (("cifar-bs", bs_convs, bs_dense),
                                   ("cifar", py_convs, py_dense)):
        path = write_spec(workload, str(tmp_path / f"{workload}.npz"))
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["__meta__"]))
            names = set(z.files)
        assert meta["conv_layers"] == convs and meta["dense_layers"] == dense, workload
        assert {n for pair in convs + dense for n in pair} <= names


def test_the_cifar_layer_rule_refuses_another_network():
    with pytest.raises(ValueError, match="expected 4 convolutions and 3 dense layers"):
        cifar_layer_names({"a/W": np.zeros((2, 3)), "a/b": np.zeros(3)})
    with pytest.raises(ValueError, match=r"no bias \['a/b'\]"):
        cifar_layer_names({"a/W": np.zeros((2, 3))})


def test_spec_meta_of_the_cifar_workloads():
    assert spec_meta("cifar")["solver"] == {"name": "momentum", "lr": 0.01, "momentum": 0.9}
    assert spec_meta("cifar")["pool_padding"] == 1
    assert spec_meta("cifar-bs")["pool_padding"] == 0
    assert spec_meta("cifar")["input_factor"] == 0.00390625
    with pytest.raises(ValueError, match="no peer network"):
        spec_meta("no-such-workload")


def test_peer_python_resolution(tmp_path, monkeypatch):
    monkeypatch.delenv("STADYN_NNABLA_PYTHON", raising=False)
    monkeypatch.setenv("STADYN_MXNET_PYTHON", "/opt/mx/bin/python")
    assert peer_python("nnabla") == os.path.join(".venv-peers", "nnabla", "bin", "python")
    assert peer_python("mxnet") == "/opt/mx/bin/python"
    assert peer_python("mxnet", {"mxnet": "/x/python"}) == "/x/python"
    with pytest.raises(ValueError, match="unknown peer"):
        peer_python("caffe")


def test_missing_peer_venv_is_named_with_its_remedy(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STADYN_NNABLA_PYTHON", raising=False)
    monkeypatch.delenv("STADYN_MXNET_PYTHON", raising=False)
    with pytest.raises(PeerSetupError) as err:
        check_peer_pythons()
    msg = str(err.value)
    assert "make bench-peers" in msg
    assert os.path.join(".venv-peers", "nnabla", "bin", "python") in msg
    assert os.path.join(".venv-peers", "mxnet", "bin", "python") in msg
    assert "STADYN_NNABLA_PYTHON" in msg and "nnabla==1.39.0" in msg


def test_cli_reports_a_missing_peer_venv_before_timing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("STADYN_NNABLA_PYTHON", str(tmp_path / "none" / "bin" / "python"))
    monkeypatch.setenv("STADYN_MXNET_PYTHON", str(tmp_path / "none" / "bin" / "python"))
    rc = main(["bench", "mlp", "--peers", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 1
    assert "make bench-peers" in err and "nnabla" in err and "mxnet" in err
    assert not (tmp_path / "out").exists()


def test_peer_modes_are_checked():
    assert _split_peer_modes(["nnabla-static", "mxnet-hybridized"]) == {
        "nnabla": ("static",), "mxnet": ("hybridized",)}
    assert _split_peer_modes(None) == PEER_MODES
    with pytest.raises(ValueError, match="nnabla-fast"):
        _split_peer_modes(["nnabla-fast"])
    with pytest.raises(ValueError, match="unknown peer"):
        run_peers(["mlp"], modes={"caffe": ("static",)})


def test_a_failing_peer_is_skipped_with_its_stderr(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'peer broke: no such module' >&2\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    lines = []
    found = run_peers(["mlp"], {"nnabla": str(fake)}, warmup=1, rounds=1, per_round=1,
                      modes={"nnabla": ("static",)}, log=lines.append)
    assert found.ms == {}
    assert [(w, p) for w, p, _ in found.failed] == [("mlp", "nnabla")]
    assert any("nnabla peer failed on mlp" in line and "peer broke" in line for line in lines)


@pytest.mark.parametrize("workload", ["mlp", "cifar", "cifar-bs", "digits-cnn"])
@pytest.mark.parametrize("peer", list(PEER_MODES))
def test_peer_first_loss_equals_stadyns(peer, workload):
    """(The NNabla peer failed on ``cifar`` once Stadyn's convolution bias became CNTK's
    (C, 1, 1): NNabla's convolution wants (C,); on ``cifar-bs`` once BrainScript's parameters
    took cntk.exe's node names.)"""
    python = peers.where(peer_python(peer))          # (hidden under STADYN_NO_PEERS)
    if not os.path.isfile(python):
        pytest.skip(f"no {peer} peer environment at {python} (make bench-peers creates it)")
    found = run_peers([workload], warmup=1, rounds=1, per_round=1,
                      modes={peer: PEER_MODES[peer]}, log=lambda _: None)
    assert not found.failed, found.failed
    stadyn_first = WORKLOADS[workload].stadyn_case("static").first_loss
    assert set(found.first_loss[workload]) == {f"{peer}-{m}" for m in PEER_MODES[peer]}
    for mode, first in found.first_loss[workload].items():
        assert abs(first - stadyn_first) < 1e-4, (mode, first, stadyn_first)
        assert found.ms[workload][mode] > 0


@pytest.mark.parametrize("rounds", [0, 1, 4, 5])
def test_the_peers_run_halfway_through_the_timed_rounds(rounds):
    """A-B-A: the peers' run falls between the first and the second half of every case's
    timed rounds, each case takes one untimed step after it, and it runs exactly once."""
    from stadyn.bench import Case, run_cases
    events: list[str] = []

    def stepper(name):
        return lambda: events.append(name)

    cases = [Case("w", "a", stepper("a")), Case("w", "b", stepper("b"))]
    results = run_cases(cases, warmup=1, rounds=rounds, per_round=1, log=lambda *_: None,
                        min_round_s=0.0, between=lambda: events.append("peers"))
    assert events.count("peers") == 1
    timed = events[2:]                        # after one warm-up step each
    at = timed.index("peers")
    before, after = timed[:at], timed[at + 1:]
    assert before == ["a", "b"] * (rounds // 2)
    assert after[:2] == ["a", "b"] if rounds else after == []          # the untimed steps
    assert after[2:] == ["a", "b"] * (rounds - rounds // 2)
    assert [len(m.times) for m in results] == [rounds, rounds]


def test_each_case_is_timed_after_a_collection_and_the_heap_is_unfrozen_after():
    """Fair timing: a full collection (generation 2) precedes every case's timed steps, so no
    case pays for garbage another left; the heap the rounds froze (so that those collections
    walk only new objects) is unfrozen afterwards, also when a step fails."""
    import gc

    from stadyn.bench import Case, run_cases
    events: list[str] = []

    def seen(phase, info):
        if phase == "start" and info["generation"] == 2:
            events.append("gc")

    def stepper(name):
        return lambda: events.append(name)

    cases = [Case("w", "a", stepper("a")), Case("w", "b", stepper("b"))]
    gc.callbacks.append(seen)
    try:
        run_cases(cases, warmup=1, rounds=2, per_round=1, log=lambda *_: None, min_round_s=0.0)
        assert gc.get_freeze_count() == 0
        timed = events[events.index("b") + 1:]            # after the warm-up steps
        assert timed == ["gc"] + ["gc", "a", "gc", "b"] * 2
        calls: list[int] = []

        def fails_when_timed():
            calls.append(1)
            if len(calls) > 1:                            # the warm-up step passes
                raise ZeroDivisionError
        with pytest.raises(ZeroDivisionError):
            run_cases([Case("w", "c", fails_when_timed)], warmup=1, rounds=1, per_round=1,
                      log=lambda *_: None, min_round_s=0.0)
    finally:
        gc.callbacks.remove(seen)
    assert gc.get_freeze_count() == 0


def test_a_workload_without_a_peer_twin_is_timed_without_the_peers(tmp_path):
    """``stadyn bench --peers`` over every workload (its default) failed on the first one the
    peers have no network for (``cifar-cntk``) after minutes of timing: such a workload is
    now timed without the peers, with a line saying so, and the peers are never started."""
    from stadyn.bench import PEER_WORKLOADS
    from stadyn.cli.bench import run_bench
    assert "lstm" not in PEER_WORKLOADS and "cifar-cntk" not in PEER_WORKLOADS
    marker = tmp_path / "peer-ran"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    lines: list[str] = []
    table = run_bench(["lstm"], stadyn_modes=("static",), torch_modes=("eager",), rounds=1,
                      per_round=1, warmup=1, out=None, log=lines.append, peers=True,
                      peer_python={"nnabla": str(fake), "mxnet": str(fake)})
    assert set(table["lstm"]) == {"stadyn-static", "torch-eager"}
    assert not marker.exists()
    assert any("no twin of lstm" in line for line in lines)
