"""What the peer scripts share: reading the spec file and timing steps.

Imported by ``nnabla_peer.py`` and ``mxnet_peer.py`` from their own folder (a script's folder
is on its ``sys.path``); like them it imports only the standard library and numpy, so it runs in
the peers' virtual environments without Stadyn.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from typing import Callable

import numpy as np

__all__ = ["load_spec", "time_cases", "run_peer"]


def load_spec(path: str, who: str) -> tuple[dict, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Read a spec file: returns ``(meta, x, t, params)``; ``who`` names the peer in errors.

    ``.npz``: arrays named by parameter plus ``__x__``, ``__t__`` and ``__meta__`` (a JSON
    string).  ``.json``: one object with the same keys, arrays as nested lists and ``__meta__``
    an object.
    """
    if path.endswith(".json"):
        with open(path) as f:
            raw = json.load(f)
        missing = [k for k in ("__meta__", "__x__", "__t__") if k not in raw]
        if missing:
            raise SystemExit(f"{who}: spec {path} lacks {missing}")
        meta = raw.pop("__meta__")
        x = np.asarray(raw.pop("__x__"), dtype=np.float32)
        t = np.asarray(raw.pop("__t__"), dtype=np.int32)
        params = {k: np.asarray(v, dtype=np.float32) for k, v in raw.items()}
        return meta, x, t, params
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    missing = [k for k in ("__meta__", "__x__", "__t__") if k not in arrays]
    if missing:
        raise SystemExit(f"{who}: spec {path} lacks {missing}")
    meta = json.loads(str(arrays.pop("__meta__")))
    x = arrays.pop("__x__").astype(np.float32)
    t = arrays.pop("__t__").astype(np.int32)
    return meta, x, t, {k: v.astype(np.float32) for k, v in arrays.items()}


def time_cases(steps: dict, warmup: int, rounds: int, per_round: int,
               min_round_s: float = 0.25) -> dict[str, float]:
    """Warm each step up, then time ``rounds`` rounds of each, interleaved round by round (as
    Stadyn's bench runner does: a mode with short steps runs enough of them per round to fill
    about ``min_round_s``, and at least ``per_round``); returns median ms per call per mode."""
    times: dict[str, list[float]] = {m: [] for m in steps}
    counts: dict[str, int] = {}
    for mode, step in steps.items():
        last = 0.0
        for _ in range(warmup):
            start = time.perf_counter()
            step()
            last = time.perf_counter() - start
        counts[mode] = max(per_round, min(1000, int(min_round_s / last) if last > 0 else 1))
    for _ in range(rounds):
        for mode, step in steps.items():
            gc.collect()
            for _ in range(counts[mode]):
                start = time.perf_counter()
                step()
                times[mode].append(time.perf_counter() - start)
    return {m: 1e3 * statistics.median(v) if v else float("nan") for m, v in times.items()}


def run_peer(peer: str, modes: tuple[str, ...], build_case: Callable, version: str,
             argv: list[str] | None = None) -> int:
    """A peer script's main: parse its command line, build each requested mode with
    ``build_case(mode, meta, x, t, params) -> (step, first_loss, setup_s)``, time them together
    and print one JSON line per mode (``{"workload", "mode": "<peer>-<mode>", "ms",
    "first_loss", "version", "setup_s"}``)."""
    p = argparse.ArgumentParser(description=f"{peer} peer for stadyn bench --peers")
    p.add_argument("--spec", required=True, help="spec file (.npz or .json) from stadyn bench")
    p.add_argument("--modes", nargs="+", default=list(modes), choices=modes)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--per-round", type=int, default=4)
    a = p.parse_args(argv)
    meta, x, t, params = load_spec(a.spec, f"{peer}_peer")
    steps, firsts, setups = {}, {}, {}
    for mode in a.modes:
        steps[mode], firsts[mode], setups[mode] = build_case(mode, meta, x, t, params)
    ms = time_cases(steps, a.warmup, a.rounds, a.per_round)
    for mode in a.modes:
        print(json.dumps({"workload": meta["workload"], "mode": f"{peer}-{mode}", "ms": ms[mode],
                          "first_loss": firsts[mode], "version": version,
                          "setup_s": setups[mode]}), flush=True)
    return 0
