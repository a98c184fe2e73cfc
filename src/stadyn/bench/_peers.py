"""Peers for ``stadyn bench --peers``: the same networks in NNabla 1.39 and MXNet 1.9.1.

Neither can live in Stadyn's environment (NNabla's wheels stop at Python 3.10; MXNet 1.9.1 needs
numpy < 1.24), so each runs as a subprocess with the Python of its own virtual environment
(``make bench-peers`` creates them in ``.venv-peers/``).  The scripts in ``peers/`` import only
numpy and their framework.  For each workload this module writes a spec file -- the batch and
the Stadyn model's initial parameters under Stadyn's names, plus the network and solver as JSON
-- and runs each peer on it; a peer prints one JSON line per mode with its median ms/iter and its
inference-phase loss before training, which must equal Stadyn's (the same network).

The peers time their own modes interleaved round by round; they run halfway through the timed
rounds of the workload's Stadyn and PyTorch cases (A-B-A, see :func:`stadyn.bench.run_cases`), not
interleaved step by step with them, so their ratios carry a little more drift.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from .. import solvers as S
from .._errors import StadynError
from ._workloads import WORKLOADS, cifar_layer_names

__all__ = ["PEERS", "PEER_MODES", "PeerSetupError", "PeerResults", "peer_python",
           "check_peer_pythons", "spec_meta", "write_spec", "run_peers"]

#: Each peer's modes, in the order they are run and reported (as ``<peer>-<mode>``).
PEER_MODES: dict[str, tuple[str, ...]] = {
    "nnabla": ("static", "dynamic"),
    "mxnet": ("imperative", "hybridized"),
}
PEERS = tuple(PEER_MODES)

_SCRIPTS = {peer: os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers",
                               f"{peer}_peer.py") for peer in PEERS}
_ENV_VARS = {"nnabla": "STADYN_NNABLA_PYTHON", "mxnet": "STADYN_MXNET_PYTHON"}
_REQUIREMENTS = {"nnabla": "Python 3.10 with nnabla==1.39.0",
                 "mxnet": "mxnet==1.9.1 and numpy==1.23.5"}
_DEFAULT_VENV = ".venv-peers"

#: The network each workload builds in the peers (the solver comes from the workload itself).
_NETWORKS: dict[str, dict] = {
    "digits-cnn": {"network": "digits_cnn"},
    "mlp": {"network": "digits_mlp"},
    "cifar": {"network": "cifar_convnet", "pool_padding": 1, "dropout": 0.5,
              "input_factor": 0.00390625},
    "cifar-bs": {"network": "cifar_convnet", "pool_padding": 0, "dropout": 0.5,
                 "input_factor": 0.00390625},
    "cifar-bs-pad": {"network": "cifar_convnet", "pool_padding": 1, "dropout": 0.5,
                     "input_factor": 0.00390625},
}

#: The workloads the peers have a twin of; ``stadyn bench --peers`` times the others without them.
PEER_WORKLOADS: tuple[str, ...] = tuple(_NETWORKS)


class PeerSetupError(StadynError, RuntimeError):
    """A peer's Python (its virtual environment) is missing or not runnable."""


@dataclass
class PeerResults:
    """What the peers measured, keyed ``[workload][mode]`` with modes like ``nnabla-static``:
    ``ms`` (median ms/iter), ``first_loss`` (inference-phase loss before training), ``setup_s``
    (building, loading the parameters, one step); ``versions`` maps a peer to its framework's
    version; ``failed`` lists ``(workload, peer, message)`` for peers that did not finish."""

    ms: dict[str, dict[str, float]] = field(default_factory=dict)
    first_loss: dict[str, dict[str, float]] = field(default_factory=dict)
    setup_s: dict[str, dict[str, float]] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    failed: list[tuple[str, str, str]] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Pythons
# ---------------------------------------------------------------------------------------------
def peer_python(peer: str, python_for: dict[str, str] | None = None) -> str:
    """The Python that runs ``peer``: ``python_for[peer]`` if given, else the environment
    variable ``STADYN_NNABLA_PYTHON`` / ``STADYN_MXNET_PYTHON``, else
    ``.venv-peers/<peer>/bin/python`` under the current directory."""
    if peer not in PEER_MODES:
        raise ValueError(f"unknown peer {peer!r}; expected one of {PEERS}")
    if python_for and python_for.get(peer):
        return python_for[peer]
    return os.environ.get(_ENV_VARS[peer]) or os.path.join(_DEFAULT_VENV, peer, "bin", "python")


def check_peer_pythons(peers=PEERS, python_for: dict[str, str] | None = None) -> dict[str, str]:
    """Resolve each peer's Python (:func:`peer_python`) and check that it exists and is
    executable; returns ``{peer: path}``.  Raises :class:`PeerSetupError` naming every missing
    one, what it needs and how to create it."""
    found, problems = {}, []
    for peer in peers:
        path = peer_python(peer, python_for)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            found[peer] = path
        else:
            problems.append(f"{peer}: no Python at {path} (the {peer} peer's virtual environment "
                            f"is missing; it needs {_REQUIREMENTS[peer]}; `make bench-peers` "
                            f"creates it in {_DEFAULT_VENV}/{peer}, or set {_ENV_VARS[peer]} to "
                            f"such a Python)")
    if problems:
        raise PeerSetupError("bench --peers: " + "; ".join(problems))
    return found


# ---------------------------------------------------------------------------------------------
# Spec files
# ---------------------------------------------------------------------------------------------
def _solver_meta(solver: S.Solver) -> dict:
    """The peers' description of a workload's Stadyn solver (Adam or momentum SGD)."""
    h = solver.hyper
    if type(solver) is S.Adam:
        return {"name": "adam", "lr": h["alpha"], "beta1": h["beta1"], "beta2": h["beta2"],
                "eps": h["eps"]}
    if type(solver) is S.Momentum:
        return {"name": "momentum", "lr": h["lr"], "momentum": h["momentum"]}
    raise ValueError(f"the peers have no counterpart of solver {type(solver).__name__}")


def spec_meta(workload: str, seed: int = 0, params: dict | None = None) -> dict:
    """The metadata of a workload's spec: workload name, network (and its options), solver,
    batch size and seed.  The CIFAR ConvNet's also names its layers' parameters in ``params``
    (default: the workload's initial parameters), which the Python layers and BrainScript name
    differently: ``conv_layers`` and ``dense_layers``, ``[weight, bias]`` pairs in the order
    applied (:func:`~stadyn.bench._workloads.cifar_layer_names`)."""
    if workload not in _NETWORKS:
        raise ValueError(f"no peer network for workload {workload!r}; peers know "
                         f"{', '.join(_NETWORKS)}")
    w = WORKLOADS[workload]
    meta = {"workload": workload, **_NETWORKS[workload], "solver": _solver_meta(w.solver()),
            "batch_size": w.batch_size, "seed": seed}
    if meta["network"] == "cifar_convnet":
        convs, dense = cifar_layer_names(w.initial_parameters(seed) if params is None else params)
        meta["conv_layers"] = [list(pair) for pair in convs]
        meta["dense_layers"] = [list(pair) for pair in dense]
    return meta


def write_spec(workload: str, path: str, seed: int = 0) -> str:
    """Write the peers' spec for ``workload`` to ``path`` (an ``.npz``): the initial parameters
    under Stadyn's names (float32), the batch as ``__x__`` (float32) and ``__t__`` (int32,
    (B, 1)), and ``__meta__`` (:func:`spec_meta` as a JSON string: for the CIFAR ConvNet, which
    parameters are which layer's).  Returns ``path``."""
    w = WORKLOADS[workload]
    params = w.initial_parameters(seed)
    meta = spec_meta(workload, seed, params)
    x, t = w.batch(seed)
    arrays = {name: value.detach().cpu().float().numpy() for name, value in params.items()}
    clash = [n for n in arrays if n.startswith("__")]
    if clash:
        raise ValueError(f"parameter names {clash} clash with the spec's reserved names")
    arrays.update(__x__=x.astype(np.float32), __t__=t.astype(np.int32),
                  __meta__=np.array(json.dumps(meta)))
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    return path


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------
def _peer_env() -> dict[str, str]:
    """The peers' environment: ours with OMP_NUM_THREADS set to this process's torch thread
    count (same compute for every system) and without PYTHONPATH/PYTHONHOME (which could put
    Stadyn's packages, numpy 2 among them, in front of the peer's own)."""
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(torch.get_num_threads())
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    return env


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _run_peer(peer: str, python: str, spec: str, modes, warmup: int, rounds: int, per_round: int,
              timeout: float | None) -> list[dict]:
    """Run one peer script on one spec; returns its JSON records (one per mode).  Raises
    RuntimeError with the tail of its stderr if it fails, times out or reports no mode."""
    cmd = [python, _SCRIPTS[peer], "--spec", spec, "--modes", *modes, "--warmup", str(warmup),
           "--rounds", str(rounds), "--per-round", str(per_round)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=_peer_env(),
                              timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr
        raise RuntimeError(f"timed out after {timeout} s\n{_tail(err or '')}") from None
    except OSError as exc:
        raise RuntimeError(f"could not start {python}: {exc}") from None
    if proc.returncode != 0:
        raise RuntimeError(f"exit status {proc.returncode}\n{_tail(proc.stderr)}")
    records = []
    for line in proc.stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and {"mode", "ms", "first_loss"} <= set(rec):
            records.append(rec)
    wanted = {f"{peer}-{m}" for m in modes}
    missing = wanted - {r["mode"] for r in records}
    if missing:
        raise RuntimeError(f"no result for {sorted(missing)}\n{_tail(proc.stderr)}")
    return [r for r in records if r["mode"] in wanted]


def run_peers(workloads, python_for: dict[str, str] | None = None, warmup: int = 3,
              rounds: int = 5, per_round: int = 4, modes: dict[str, tuple[str, ...]] | None = None,
              log: Callable[[str], None] = print, seed: int = 0,
              timeout: float | None = None) -> PeerResults:
    """Run the peers on each workload: write its spec to a temporary folder, run each peer's
    script with that peer's Python (:func:`check_peer_pythons`; a missing one raises
    :class:`PeerSetupError` before anything runs), collect ms/iter and first losses.

    ``modes`` maps a peer to the modes to run (default :data:`PEER_MODES`; a peer left out or
    given no modes is not run).  A peer that fails is logged with the tail of its stderr and
    skipped (listed in ``failed``); the others still run.
    """
    modes = dict(PEER_MODES if modes is None else modes)
    for peer, peer_modes in modes.items():
        if peer not in PEER_MODES:
            raise ValueError(f"unknown peer {peer!r}; expected one of {PEERS}")
        bad = [m for m in peer_modes if m not in PEER_MODES[peer]]
        if bad:
            raise ValueError(f"unknown {peer} mode(s) {bad}; expected {PEER_MODES[peer]}")
    active = [p for p in PEERS if modes.get(p)]
    pythons = check_peer_pythons(active, python_for)
    results = PeerResults()
    with tempfile.TemporaryDirectory(prefix="stadyn-peers-") as tmp:
        for name in workloads:
            spec = write_spec(name, os.path.join(tmp, f"{name}.npz"), seed)
            for peer in active:
                log(f"  running {peer} peer ({pythons[peer]}): {', '.join(modes[peer])}")
                try:
                    records = _run_peer(peer, pythons[peer], spec, modes[peer], warmup, rounds,
                                        per_round, timeout)
                except RuntimeError as exc:
                    log(f"  {peer} peer failed on {name}, skipped: {exc}")
                    results.failed.append((name, peer, str(exc)))
                    continue
                for rec in records:
                    mode = rec["mode"]
                    results.ms.setdefault(name, {})[mode] = float(rec["ms"])
                    results.first_loss.setdefault(name, {})[mode] = float(rec["first_loss"])
                    results.setup_s.setdefault(name, {})[mode] = float(rec.get("setup_s", 0.0))
                    if rec.get("version"):
                        results.versions[peer] = str(rec["version"])
    return results
