"""Benchmarks: Stadyn's modes against hand-written PyTorch twins, timed side by side.

Run them with ``stadyn bench`` (see :mod:`stadyn.cli.bench`).  Timings are medians over
interleaved rounds in one process, reported with ratios against PyTorch eager; absolute times
drift between machines and runs, ratios measured together are what to compare.
"""

from ._memory import measure_memory
from ._peers import PEER_MODES, PEER_WORKLOADS, check_peer_pythons, run_peers
from ._runner import Case, Measurement, run_cases
from ._workloads import (ALL_STADYN_MODES, ALL_TORCH_MODES, STADYN_MODES, TORCH_MODES,
                         WORKLOAD_ALIASES, WORKLOADS, Workload, workload_name)

__all__ = ["Case", "Measurement", "run_cases", "WORKLOADS", "Workload", "WORKLOAD_ALIASES",
           "workload_name", "STADYN_MODES", "ALL_STADYN_MODES", "TORCH_MODES", "ALL_TORCH_MODES",
           "PEER_MODES", "PEER_WORKLOADS", "check_peer_pythons", "run_peers", "measure_memory"]
