"""``stadyn bench``: Stadyn's modes against PyTorch twins, side by side in one process.

Prints ms/iter (median of interleaved timed iterations after warm-up) for each workload and mode,
the ratio of each against PyTorch eager, and writes a bar chart PNG.  With ``--peers`` the same
networks also run in NNabla 1.39 (static, dynamic) and MXNet 1.9.1 Gluon (imperative,
hybridized), each in its own virtual environment (``make bench-peers`` creates them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import time
import warnings

import torch

from .._extras import require
from .._fileutil import atomic_write
from .._memory import OPT_OUT_ENV, keep_freed_cpu_memory, reason_not_kept
from ..bench import (ALL_STADYN_MODES, ALL_TORCH_MODES, PEER_MODES, PEER_WORKLOADS, STADYN_MODES,
                     TORCH_MODES, WORKLOAD_ALIASES, WORKLOADS, check_peer_pythons, measure_memory,
                     run_cases, run_peers, workload_name)
from . import count, plain

__all__ = ["run_bench", "machine_load", "BUSY_LOAD_PER_CPU", "add_parser"]


def run_bench(workloads=("digits-cnn", "mlp", "cifar"), stadyn_modes=STADYN_MODES,
              torch_modes=TORCH_MODES,
              rounds: int = 5, per_round: int = 4, warmup: int = 3, out: str | None = "runs/bench",
              log=print, peers: bool = False, peer_modes=None,
              peer_python: dict[str, str] | None = None, together: bool = False) -> dict:
    """Measure and print; returns ``{workload: {mode: ms}}``.

    With ``peers`` the NNabla and MXNet peers (:func:`stadyn.bench.run_peers`) run each workload
    halfway through its Stadyn and PyTorch cases' timed rounds and join its row; ``peer_modes`` (names like
    ``nnabla-static``; default all) picks their modes, ``peer_python`` their Pythons (default the
    ``STADYN_*_PYTHON`` variables or ``.venv-peers``).  A missing peer environment is reported
    before anything is timed.  ``together`` times every workload's cases in one interleaved
    run and prints each later workload's ms/iter against the first's, mode by mode.  A workload
    may be given by an earlier name (:data:`stadyn.bench.WORKLOAD_ALIASES`: ``seed2``).
    """
    workloads = [workload_name(w) for w in workloads]
    if out is not None:            # the chart, before anything is timed
        require("matplotlib", "demo", "stadyn bench's chart")
    modes_of_peer = None
    if peers:
        modes_of_peer = _split_peer_modes(peer_modes)
        check_peer_pythons([p for p, ms in modes_of_peer.items() if ms], peer_python)
    log(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {_cpu_name()}")
    # What a static plan does to the process, done first so every case (twins too) runs so
    if keep_freed_cpu_memory():
        log(f"freed CPU memory is kept in the process for reuse, in every case ({OPT_OUT_ENV}=0 "
            "to return it to the system)")
    else:
        log(f"freed CPU memory goes back to the system ({reason_not_kept() or 'mallopt failed'})")
    machine_load(log)
    started = time.monotonic()
    table: dict[str, dict[str, float]] = {}
    versions_logged = False
    measured: dict[str, list] = {}
    if together:
        # Every workload's cases in one interleaved run: ratios between workloads (a network
        # built from BrainScript against the same network from Python) are like for like.
        log("timing " + ", ".join(workloads) + " together (interleaved)")
        cases = [c for name in workloads for c in _cases(WORKLOADS[name], stadyn_modes,
                                                          torch_modes)]
        results = run_cases(cases, warmup=warmup, rounds=rounds, per_round=per_round, log=log)
        for c, m in zip(cases, results):
            measured.setdefault(c.workload, []).append((m.mode, m.ms, m.setup_s, c.first_loss))
    for name in workloads:
        w = WORKLOADS[name]
        log(f"{name}: {w.description}")
        found = []                      # the peers' run for this workload
        peers_here = peers and name in PEER_WORKLOADS
        if peers and not peers_here:
            log(f"  peers: NNabla and MXNet have no twin of {name} (they have "
                f"{', '.join(PEER_WORKLOADS)}); timed without them")

        def run_the_peers():
            found.append(run_peers([name], peer_python, warmup=warmup, rounds=rounds,
                                   per_round=per_round, modes=modes_of_peer, log=log))

        if together:
            rows = measured[name]
        else:
            # The peers run halfway through this workload's rounds (see run_cases).
            cases = _cases(w, stadyn_modes, torch_modes)
            results = run_cases(cases, warmup=warmup, rounds=rounds, per_round=per_round, log=log,
                                between=run_the_peers if peers_here else None)
            rows = [(m.mode, m.ms, m.setup_s, c.first_loss) for c, m in zip(cases, results)]
        if peers_here:
            if not found:               # timed together: the peers run after
                run_the_peers()
            peer_run = found[0]
            if peer_run.versions and not versions_logged:
                log("  peers: " + ", ".join(f"{p} {v}" for p, v in peer_run.versions.items()))
                versions_logged = True
            for mode, ms in peer_run.ms.get(name, {}).items():
                rows.append((mode, ms, peer_run.setup_s[name][mode],
                             peer_run.first_loss[name][mode]))
        table[name] = {mode: ms for mode, ms, _, _ in rows}
        base = table[name].get("torch-eager")
        log(f"  {'mode':24s} {'ms/iter':>9s} {'vs torch-eager':>15s} {'setup s':>8s} "
            f"{'first loss':>11s}")
        for mode, ms, setup_s, first in rows:
            ratio = f"{base / ms:.2f}x faster" if base else "-"
            if mode == "torch-eager":
                ratio = "reference"
            elif base and ms > base:
                ratio = f"{ms / base:.2f}x slower"
            log(f"  {mode:24s} {ms:9.2f} {ratio:>15s} {setup_s:8.1f} {first:11.6f}")
        if peers:
            # bf16 cases compute the same network in another precision: their loss differs.
            losses = [first for mode, _, _, first in rows
                      if first is not None and not mode.endswith("bf16")]
            if losses and max(losses) - min(losses) > 1e-4:
                log(f"  note: the first losses differ by up to {max(losses) - min(losses):.6f} "
                    f"(> 1e-4): not every case computes the same network")
        row = table[name]
        if "stadyn-static" in row and "stadyn-dynamic" in row:
            log(f"  static vs dynamic: {row['stadyn-dynamic'] / row['stadyn-static']:.2f}x")
        if "stadyn-static" in row and "stadyn-static-bf16" in row:
            log(f"  bf16 vs fp32 static: {row['stadyn-static'] / row['stadyn-static-bf16']:.2f}x")
        for peer_mode in ("nnabla-static", "mxnet-hybridized"):
            if "stadyn-static" in row and peer_mode in row:
                log(f"  static vs {peer_mode}: {row[peer_mode] / row['stadyn-static']:.2f}x")
    if together and len(workloads) > 1:
        first = workloads[0]
        for name in workloads[1:]:
            for mode in table[first]:
                if mode.startswith("stadyn") and mode in table[name]:
                    log(f"{name} vs {first}, {mode}: "
                        f"{100 * (table[name][mode] / table[first][mode] - 1):+.1f}% ms/iter")
    if out:
        os.makedirs(out, exist_ok=True)
        atomic_write(os.path.join(out, "bench.json"),
                     lambda tmp: pathlib.Path(tmp).write_text(json.dumps(table, indent=2)))
        _plot(table, os.path.join(out, "bench.png"))
        log(f"written: {os.path.join(out, 'bench.json')}, {os.path.join(out, 'bench.png')}")
    # the timed cases (and peers, run with as many threads) kept this many threads busy; the
    # 1-minute load average has taken in 1 - exp(-t / 60 s) of that after t seconds, so a short
    # run subtracts less: the machine is busy only beyond the run's own share
    ran = time.monotonic() - started
    own = round(torch.get_num_threads() * -math.expm1(-ran / 60.0), 2)
    machine_load(log, "at the end, ", own=own)
    return table


def profile_workloads(workloads, stadyn_modes, steps: int, warmup: int, out: str,
                      log=print, depth: int = 2) -> dict[str, str]:
    """Profile each workload's Stadyn modes (:func:`stadyn.profile`): ``warmup`` steps (at least
    one, which builds the labelled static plans), then ``steps`` recorded; print the time per scope (cut to ``depth`` levels) and write each
    case's Chrome/Perfetto trace to ``out/<workload>-<mode>.json``.  Returns the paths by case.
    """
    from ..inspect import profile
    os.makedirs(out, exist_ok=True)
    written = {}
    for name in (workload_name(w) for w in workloads):
        w = WORKLOADS[name]
        log(f"{name}: {w.description}")
        for mode in (m for m in stadyn_modes if m in w.modes):
            case = w.stadyn_case(mode)
            with profile():         # static plans are built again, labelled: not recorded
                for _ in range(max(1, warmup)):
                    case.step()
            with profile() as prof:
                for _ in range(steps):
                    case.step()
            path = os.path.join(out, f"{name}-{case.mode}.json")
            prof.export_chrome_trace(path)
            written[f"{name}/{case.mode}"] = path
            log(f"  {case.mode}, {steps} step(s):")
            for line in prof.table(by="scope", depth=depth).splitlines():
                log(f"    {line}")
            log(f"  trace: {path}")
    return written


#: Load average per CPU above which ``stadyn bench`` warns that the timings are not reliable.
BUSY_LOAD_PER_CPU = 0.5


def machine_load(log=print, when: str = "", own: float = 0.0) -> float | None:
    """Log the load average and the CPU count, and warn when the load is above
    :data:`BUSY_LOAD_PER_CPU` per CPU: other processes then compete for the cores, and ms/iter
    are slower and noisier than on an idle machine.  ``own`` is the load this run itself put
    on the machine over the last minute (its threads, at the end of a run): it is left out of
    the judgement, so a run on an idle machine does not warn about itself.  Returns the
    1-minute load per CPU of the other processes (None where the platform has no load average).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")      # a busy machine warns
        ...     per_cpu = machine_load(log=lambda line: None)
        >>> per_cpu is None or per_cpu >= 0
        True
    """
    cpus = os.cpu_count() or 1
    try:
        load = os.getloadavg()
    except (AttributeError, OSError):   # no load average on this platform
        log(f"{when}{cpus} CPUs (no load average on this platform)")
        return None
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cpus
    mine = f", {usable} usable by this process" if usable != cpus else ""
    ours = f" (about {own:g} of it this run's own)" if own else ""
    log(f"{when}load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min) on "
        f"{cpus} CPUs{mine}{ours}")
    others = max(load[0] - own, 0.0)
    per_cpu = others / cpus
    if per_cpu > BUSY_LOAD_PER_CPU:
        warnings.warn(f"the machine is busy ({when}load average {load[0]:.2f} on {cpus} "
                      f"CPUs{ours}, more than {BUSY_LOAD_PER_CPU} per CPU): other processes "
                      "compete for the cores, so ms/iter are slower and noisier than on an idle "
                      "machine; compare only timings measured together", RuntimeWarning, stacklevel=2)
    return per_cpu


def _cpu_name() -> str:
    """The CPU's model name (ratios depend on it: AMX, AVX-512 BF16, vendor BLAS paths)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


def _cases(w, stadyn_modes, torch_modes) -> list:
    """The Stadyn and PyTorch cases of workload ``w``, built (and each run once); a workload
    runs only in its Stadyn ``modes`` and its ``torch_modes`` (``lstm`` has no compiled or
    bf16 modes, ``cifar-cntk`` no dynamic one): the others are skipped."""
    return [w.stadyn_case(m) for m in stadyn_modes if m in w.modes] \
        + [w.torch_case(m) for m in torch_modes if m in w.torch_modes]


def _split_peer_modes(peer_modes) -> dict[str, tuple[str, ...]]:
    """``["nnabla-static", "mxnet-hybridized"]`` to ``{"nnabla": ("static",), "mxnet":
    ("hybridized",)}``; ``None`` gives every peer mode.  Raises ValueError for an unknown one."""
    if peer_modes is None:
        return dict(PEER_MODES)
    known = [f"{p}-{m}" for p, ms in PEER_MODES.items() for m in ms]
    unknown = [m for m in peer_modes if m not in known]
    if unknown:
        raise ValueError(f"unknown peer mode(s) {unknown}; known: {', '.join(known)}")
    return {p: tuple(m for m in ms if f"{p}-{m}" in peer_modes) for p, ms in PEER_MODES.items()}


def _plot(table: dict[str, dict[str, float]], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    n_modes = max((len(row) for row in table.values()), default=1)
    fig, axes = plt.subplots(1, len(table), figsize=(5 * len(table), max(3.6, 0.35 * n_modes + 1)),
                             squeeze=False)
    for ax, (name, row) in zip(axes[0], table.items()):
        base = row.get("torch-eager")
        modes = list(row)
        speed = [base / row[m] if base else 1.0 for m in modes]
        colors = [_color(m) for m in modes]
        ax.barh(modes, speed, color=colors)
        ax.axvline(1.0, color="gray", lw=0.8)
        for i, (m, s) in enumerate(zip(modes, speed)):
            ax.text(s, i, f" {row[m]:.1f} ms", va="center", fontsize=8)
        ax.set_title(name)
        ax.set_xlabel("speed vs PyTorch eager (higher is faster)")
        ax.invert_yaxis()
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    plt.close(fig)


def _color(mode: str) -> str:
    """Bar colour by system: Stadyn blue, PyTorch orange, NNabla green, MXNet grey."""
    for prefix, color in (("torch", "tab:orange"), ("nnabla", "tab:green"),
                          ("mxnet", "tab:gray")):
        if mode.startswith(prefix):
            return color
    return "tab:blue"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("bench", help="time Stadyn's modes against PyTorch twins",
                              description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    aliases = ", ".join(f"{old} = {new}" for old, new in WORKLOAD_ALIASES.items())
    p.add_argument("workloads", nargs="*", default=list(WORKLOADS),
                   help=f"workloads to run (default: all; known: {', '.join(WORKLOADS)}; "
                        f"earlier names: {aliases})")
    p.add_argument("--stadyn-modes", nargs="+", default=list(STADYN_MODES),
                   choices=ALL_STADYN_MODES, metavar="MODE",
                   help=f"Stadyn modes to time (default: {' '.join(STADYN_MODES)}; "
                        f"known: {', '.join(ALL_STADYN_MODES)})")
    p.add_argument("--torch-modes", nargs="+", default=list(TORCH_MODES),
                   choices=ALL_TORCH_MODES, metavar="MODE",
                   help=f"PyTorch twin modes to time (default: {' '.join(TORCH_MODES)}; "
                        f"known: {', '.join(ALL_TORCH_MODES)})")
    p.add_argument("--rounds", type=count(), default=5,
                   help="timed rounds; the cases take turns within each (default 5)")
    p.add_argument("--per-round", type=count(), default=4,
                   help="timed steps of each case per round, at least (default 4)")
    p.add_argument("--warmup", type=count(0), default=3,
                   help="untimed steps of each case first (default 3)")
    p.add_argument("--out", default="runs/bench",
                   help="folder for bench.json and bench.png (default runs/bench)")
    p.add_argument("--memory", action="store_true",
                   help="measure the memory of NNabla's tutorial digits CNN under NNabla's "
                        "buffer flags instead")
    p.add_argument("--memory-batch", type=count(), default=256,
                   help="with --memory: the batch size measured (default 256)")
    p.add_argument("--peers", action="store_true",
                   help="also run NNabla 1.39 and MXNet 1.9.1 on the same networks, each in its "
                        "own virtual environment ('make bench-peers' creates them in "
                        ".venv-peers; STADYN_NNABLA_PYTHON / STADYN_MXNET_PYTHON override)")
    peer_modes = [f"{peer}-{mode}" for peer, modes in PEER_MODES.items() for mode in modes]
    p.add_argument("--peer-modes", nargs="+", default=None, choices=peer_modes, metavar="MODE",
                   help=f"with --peers: the peer modes to run (default and known: "
                        f"{' '.join(peer_modes)})")
    p.add_argument("--profile", metavar="DIR", default=None,
                   help="instead of timing, profile each workload's Stadyn modes for --per-round "
                        "steps after --warmup: print the time per scope (forward and backward) "
                        "and write a Chrome/Perfetto trace per case into DIR")
    p.add_argument("--together", action="store_true",
                   help="time all the workloads' cases in one interleaved run and compare each "
                        "workload with the first (e.g. 'cifar cifar-bs-pad': BrainScript against "
                        "Python)")

    def run(a):
        if a.memory:
            measure_memory(a.memory_batch)
            return 0
        unknown = [w for w in a.workloads if workload_name(w) not in WORKLOADS]
        if unknown:   # not argparse choices: with nargs="*" those refuse the empty default
            p.error(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(WORKLOADS)} "
                    f"(earlier names: {aliases})")
        if a.profile:
            profile_workloads(a.workloads, a.stadyn_modes, a.per_round, a.warmup, a.profile)
            return 0
        run_bench(a.workloads, a.stadyn_modes, a.torch_modes, a.rounds, a.per_round, a.warmup,
                  a.out, peers=a.peers, peer_modes=a.peer_modes, together=a.together)
    p.set_defaults(func=run)
