"""A failed or hung worker ends the job with an error naming its rank; a restart resumes from
the last checkpoint rank 0 wrote."""

from __future__ import annotations

import io
import json
import os
import sys
import textwrap
import time

import numpy as np
import pytest

import dist_workers as W
import stadyn.distributed as dist
from _dist_jobs import failure, run_job


@pytest.mark.usefixtures("one_torch_thread")
def test_killed_worker_ends_the_job_and_a_restart_resumes_from_the_checkpoint(tmp_path):
    first = run_job("resume", tmp_path, "--iterations", "16", "--fail-rank", "1",
                    "--fail-at", "10", timeout=60)
    # Code 3 (the killed worker's), not 124: the job ended because of the dead worker, not at
    # the hang timeout (no wall-clock figure needed).
    assert first.returncode == 3, failure(first)
    assert "stadyn.distributed: worker rank 1" in first.stderr
    assert "exited with code 3" in first.stderr
    assert "worker rank 0" not in first.stderr          # rank 0 only saw its peer vanish
    # The checkpoint of iteration 8 is complete; no temporary file is left behind.
    from safetensors import safe_open
    with safe_open(str(tmp_path / "ckpt.safetensors"), framework="pt") as f:
        state = json.loads(f.metadata()["external_state"])
    assert state["iteration"] == 8
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []

    second = run_job("resume", tmp_path, "--iterations", "16", timeout=60)
    assert second.returncode == 0, failure(second)
    assert "[rank 0] resumed at 8" in second.stdout
    assert "[rank 1] resumed at 8" in second.stdout
    # Iterations 12 and 16 were checkpointed, by rank 0 alone.
    assert "[rank 0] checkpoints written by this rank: 2" in second.stdout
    assert "[rank 1] checkpoints written by this rank: 0" in second.stdout
    expected = W.reference_mlp("trainer-cntk", 16)      # one uninterrupted process
    for r in range(2):
        actual = np.load(tmp_path / f"resume-rank{r}.npz")
        for k in expected:
            np.testing.assert_allclose(actual[k], expected[k], rtol=1e-4, atol=1e-6,
                                       err_msg=f"rank {r}: {k}")


def test_hung_worker_ends_the_job_within_the_timeout_naming_it(tmp_path):
    result = run_job("resume", tmp_path, "--iterations", "16", "--fail-rank", "1",
                     "--fail-at", "6", "--how", "hang", timeout=5)
    assert result.returncode == 124, failure(result)      # the launcher's timeout ended it
    line = next(line for line in result.stderr.splitlines()
                if line.startswith("stadyn.distributed:"))
    assert "rank 0 has waited" in line and "rank 1 was last done with" in line
    assert "step 6" in line and "hung?" in line


def _script(tmp_path, body: str) -> list[str]:
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


def test_run_workers_sets_the_rank_environment(tmp_path):
    argv = _script(tmp_path, """
        import os
        keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR"]
        print(" ".join(f"{k}={os.environ[k]}" for k in keys), int(os.environ["MASTER_PORT"]) > 0)
    """)
    out, err = io.StringIO(), io.StringIO()
    assert dist.run_workers(argv, 3, timeout=30, prefix_output=True, stdout=out,
                            stderr=err) == 0, err.getvalue()
    lines = sorted(out.getvalue().splitlines())
    assert lines == [f"[rank {r}] RANK={r} LOCAL_RANK={r} WORLD_SIZE=3 LOCAL_WORLD_SIZE=3 "
                     f"MASTER_ADDR=127.0.0.1 True" for r in range(3)]


def test_a_raising_worker_is_named_with_its_error_and_the_others_are_ended(tmp_path):
    argv = _script(tmp_path, """
        import os, sys, time
        if os.environ["RANK"] == "1":
            raise ValueError("bad batch on rank one")
        time.sleep(60)                      # the others would run on; the launcher ends them
    """)
    out, err = io.StringIO(), io.StringIO()
    status = dist.run_workers(argv, 2, timeout=30, stdout=out, stderr=err, grace=2.0)
    # 1 (the raising worker's code), not the timeout's 124: rank 0, asleep for 60 s, was ended
    # when rank 1 failed
    assert status == 1
    report = err.getvalue()
    assert "worker rank 1" in report and "exited with code 1" in report
    assert "ValueError: bad batch on rank one" in report.split("the job ends.")[1]


_ABORT_AT_TEARDOWN = """
    import atexit, os, sys
    import stadyn.distributed as dist
    atexit.register(os.abort)          # runs after Stadyn's own exit handler, as torch's would
    dist.init()
    dist.barrier()
    if os.environ["RANK"] == "1" and {fail}:
        raise ValueError("rank one failed")
    if {leave}:
        dist.shutdown()                # the script leaves the group itself (CNTK's finalize())
"""


@pytest.mark.parametrize("leave", [False, True], ids=["left-at-exit", "left-by-the-script"])
def test_an_abort_in_process_group_teardown_after_the_script_finished_is_success(tmp_path, leave):
    argv = _script(tmp_path, _ABORT_AT_TEARDOWN.format(fail=False, leave=leave))
    err = io.StringIO()
    status = dist.run_workers(argv, 2, timeout=30, stdout=io.StringIO(), stderr=err, grace=2.0)
    assert status == 0, err.getvalue()
    assert "finished its script, then aborted" in err.getvalue()


def test_an_abort_after_an_uncaught_exception_is_still_a_failure(tmp_path):
    argv = _script(tmp_path, _ABORT_AT_TEARDOWN.format(fail=True, leave=False))
    err = io.StringIO()
    status = dist.run_workers(argv, 2, timeout=30, stdout=io.StringIO(), stderr=err, grace=2.0)
    assert status == 128 + 6, err.getvalue()
    assert "worker rank 1" in err.getvalue() and "SIGABRT" in err.getvalue()
    assert "ValueError: rank one failed" in err.getvalue()


def test_a_worker_killed_by_a_signal_is_reported_with_the_signal(tmp_path):
    argv = _script(tmp_path, """
        import os, signal, time
        if os.environ["RANK"] == "0":
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)
    """)
    err = io.StringIO()
    status = dist.run_workers(argv, 2, timeout=30, stdout=io.StringIO(), stderr=err, grace=2.0)
    assert status == 128 + 9
    assert "worker rank 0" in err.getvalue() and "SIGKILL" in err.getvalue()


def test_max_restarts_reruns_a_failed_job(tmp_path):
    argv = _script(tmp_path, """
        import os, sys
        attempt = int(os.environ["STADYN_RESTART_COUNT"])
        print("attempt", attempt, "rank", os.environ["RANK"])
        sys.exit(5 if attempt == 0 and os.environ["RANK"] == "1" else 0)
    """)
    out, err = io.StringIO(), io.StringIO()
    assert dist.run_workers(argv, 2, timeout=30, max_restarts=1, stdout=out, stderr=err) == 0
    assert "restarting the job (attempt 2 of 2)" in err.getvalue()
    assert sorted(out.getvalue().splitlines())[-2:] == ["attempt 1 rank 0", "attempt 1 rank 1"]
    # Without restarts the first attempt's failure is the job's status.
    assert dist.run_workers(argv, 2, timeout=30, stdout=io.StringIO(),
                            stderr=io.StringIO()) == 5


@pytest.mark.parametrize("nproc, timeout", [(0, 10.0), (2, 0.0)])
def test_run_workers_rejects_bad_arguments(nproc, timeout):
    with pytest.raises(ValueError):
        dist.run_workers([sys.executable, "-c", "pass"], nproc, timeout)


def test_the_command_line_runs_modules_and_scripts(tmp_path):
    import subprocess
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    (tmp_path / "hello_mod.py").write_text("import os; print('module', os.environ['RANK'])\n")
    result = subprocess.run([sys.executable, "-m", "stadyn.distributed.run", "--nproc", "2",
                             "-m", "hello_mod"], env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split("\n")[:2]) == ["module 0", "module 1"]


def test_workers_end_themselves_when_the_launcher_dies(tmp_path):
    import signal
    import subprocess
    script = tmp_path / "loop.py"
    script.write_text(textwrap.dedent(f"""
        import os, time
        import stadyn.distributed as dist
        dist.init()
        open(os.path.join({str(tmp_path)!r}, "pid%d" % dist.rank()), "w").write(str(os.getpid()))
        while True:
            dist.barrier()
            time.sleep(0.05)
    """))
    launcher = subprocess.Popen([sys.executable, "-m", "stadyn.distributed.run", "--nproc", "2",
                                 "--timeout", "60", str(script)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=dict(os.environ, OMP_NUM_THREADS="1"))
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"pid{r}").exists() for r in range(2)):
            assert time.monotonic() < deadline and launcher.poll() is None, \
                launcher.stderr.read().decode()
            time.sleep(0.1)
        time.sleep(0.5)
        pids = [int((tmp_path / f"pid{r}").read_text()) for r in range(2)]
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
        deadline = time.monotonic() + 20
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in pids), "orphaned workers kept running"
    finally:
        if launcher.poll() is None:
            launcher.kill()
        for pid in pids:          # never leave a worker behind, even when the test fails
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"      # a zombie has ended
    except OSError:
        return False


def test_a_worker_hung_outside_a_collective_after_the_others_finished_ends_the_job(tmp_path):
    """Rank 1 sleeping after rank 0 had finished used to keep the job alive forever, whatever
    the timeout (no collective is waited in).  The test's own limit bounds the old hang."""
    import signal
    import subprocess
    script = _script(tmp_path, f"""
        import os, time
        import stadyn.distributed as dist
        with open(os.path.join({str(tmp_path)!r}, "pid" + os.environ["RANK"]), "w") as f:
            f.write(str(os.getpid()))
        dist.init()
        dist.barrier()
        if os.environ["RANK"] == "1":
            time.sleep(3600)            # not in a collective: no heartbeat says it waits
    """)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    try:
        result = subprocess.run([sys.executable, "-m", "stadyn.distributed.run", "--nproc", "2",
                                 "--timeout", "5", *script[1:]], env=env, capture_output=True,
                                text=True, timeout=240)
    finally:       # a launcher that never ends leaves its sleeping worker behind
        for path in tmp_path.glob("pid*"):
            try:
                os.kill(int(path.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
    assert result.returncode == 124, failure(result)
    report = next(line for line in result.stderr.splitlines()
                  if line.startswith("stadyn.distributed:"))
    assert "rank 1 is still running" in report and "after rank 0 finished (timeout 5 s)" in report
    assert "rank 1 was last done with collective #1 (barrier)" in report
    assert "hung outside a collective?" in report


def test_a_raising_worker_is_named_though_its_peers_collective_failed_first(tmp_path):
    """Rank 1's exit handlers tear the process group down, so rank 0's collective fails and
    rank 0 exits before rank 1 is gone: the report used to name rank 0.  Here rank 1 lingers
    10 s after the teardown (an exit handler that runs after Stadyn's, as torch's may)."""
    argv = _script(tmp_path, """
        import atexit, os, time
        import torch
        import stadyn.distributed as dist
        if os.environ["RANK"] == "1":
            atexit.register(time.sleep, 10)    # runs after Stadyn's own exit handler
        dist.init()
        dist.barrier()
        if os.environ["RANK"] == "1":
            raise ValueError("bad batch on rank one")
        dist.all_reduce_sum(torch.ones(4))     # fails once rank 1 has left the group
    """)
    err = io.StringIO()
    status = dist.run_workers(argv, 2, timeout=60, stdout=io.StringIO(), stderr=err, grace=2.0)
    report = err.getvalue()
    head = next(line for line in report.splitlines() if line.endswith("the job ends."))
    assert head.startswith("stadyn.distributed: worker rank 1 ") and "exited with code 1" in head
    assert status == 1, report
    assert "ValueError: bad batch on rank one" in report.split("the job ends.")[1]
    assert "rank 0 exited with code 1 after a collective failed." in report
