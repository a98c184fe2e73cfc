"""Running a two-worker job of ``dist_workers.py`` from a test, with a wall-clock limit."""

from __future__ import annotations

import os

from local_launch import launch

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dist_workers.py")


def run_job(scenario: str, out, *extra: str, nproc: int = 2, timeout: float = 60.0,
            limit: float = 120.0, launcher_args: tuple[str, ...] = ()):
    """Run ``dist_workers.py SCENARIO OUT EXTRA...`` as ``nproc`` workers through
    ``python -m stadyn.distributed.run`` (its ``main``, in this process:
    ``tests/local_launch.py``); returns the CompletedProcess (text output).

    ``timeout`` is the launcher's hang timeout; ``limit`` the test's own wall-clock limit (the
    workers are killed past it, and ``subprocess.TimeoutExpired`` raised).
    """
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
    env.pop("PYTEST_XDIST_WORKER", None)
    return launch(["--nproc", str(nproc), "--timeout", str(timeout), "--prefix-output",
                   *launcher_args, WORKER, scenario, str(out), *extra], env, limit)


def failure(result) -> str:
    """What to show when a job failed: the launcher's report and any fatal-error dump, which a
    plain tail of stderr would cut off."""
    lines = result.stderr.splitlines()
    keep = [line for line in lines if line.startswith("stadyn.distributed")
            or "Error" in line or "error" in line]
    for i, line in enumerate(lines):
        if "Fatal Python error" in line:
            keep += lines[i:i + 60]
    return "\n".join(keep[-200:]) or result.stderr[-3000:]
