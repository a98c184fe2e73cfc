"""Worker processes: errors come back located, deaths and hangs are reported, nothing leaks."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
from _io_helpers import DyingDeserializer, RaisingDeserializer, SlowDeserializer

from stadyn._errors import DataError
from stadyn.io import (ImageDeserializer, MinibatchSource, NumpyDeserializer, StreamDef,
                       StreamDefs, WorkerError)
from stadyn.io import transforms as T


def slot_names(src: MinibatchSource) -> set[str]:
    """The shared-memory segments the source's workers reported (as /dev/shm names)."""
    return {shm.name.lstrip("/") for w in src._pool.workers for shm in w.slots.values()}


def test_a_bad_image_in_a_worker_is_a_located_data_error(ten_images):
    lines = (ten_images / "map.txt").read_text().splitlines()
    lines[6] = lines[6].replace("06.png", "missing.png")
    (ten_images / "map.txt").write_text("\n".join(lines) + "\n")
    des = ImageDeserializer(ten_images / "map.txt", StreamDefs(
        features=StreamDef(field="image", transforms=[T.scale(8, 8, 3)]),
        labels=StreamDef(field="label", shape=5)))
    with MinibatchSource(des, randomize=False, num_workers=2) as src:
        assert src.next_minibatch(4)["features"].num_samples == 4  # samples 0-3 are fine
        with pytest.raises(DataError) as err:
            src.next_minibatch(4)  # samples 4-7 include line 7
        assert (err.value.path, err.value.line) == (str(ten_images / "map.txt"), 7)
        assert "missing.png" in str(err.value) and "does not exist" in str(err.value)


def test_workers_use_the_limits_of_the_process_that_started_them(ten_images):
    from stadyn.io import set_limits
    des = ImageDeserializer(ten_images / "map.txt", StreamDefs(
        features=StreamDef(field="image"), labels=StreamDef(field="label", shape=5)))
    old = set_limits(image_pixels=40 * 40 - 1)          # the images are 40x40
    try:
        with MinibatchSource(des, randomize=False, num_workers=1) as src:
            with pytest.raises(DataError) as err:
                src.next_minibatch(2)
    finally:
        set_limits(**old)
    assert (err.value.path, err.value.line) == (str(ten_images / "map.txt"), 1)
    assert "declares 40x40 = 1,600 pixels, over the limit of 1,599" in str(err.value)


def test_a_worker_that_dies_is_reported_at_once():
    # "At once" without a clock: a death noticed only when the workers' timeout ran out would
    # be reported as that timeout ("no minibatch from the reader workers in 60 s"), not as the
    # worker's exit.
    with MinibatchSource(DyingDeserializer(40, die_at=13), randomize=False, num_workers=2,
                         worker_timeout=60.0) as src:
        src.next_minibatch(8)
        with pytest.raises(WorkerError, match=r"exited with code 3"):
            for _ in range(5):
                src.next_minibatch(8)
        with pytest.raises(WorkerError):  # the source stays failed
            src.next_minibatch(8)


def test_an_unexpected_exception_comes_back_with_the_worker_traceback():
    with MinibatchSource(RaisingDeserializer(10, bad=2), randomize=False, num_workers=1) as src:
        with pytest.raises(WorkerError) as err:
            src.next_minibatch(5)
    assert "ZeroDivisionError" in str(err.value) and "worker traceback" in str(err.value)
    assert "_io_helpers.py" in str(err.value)


def test_a_stuck_worker_times_out():
    # The worker sleeps 30 s per batch: without the timeout the minibatch would come (late)
    # and nothing would be raised.
    with MinibatchSource(SlowDeserializer(10, seconds=30), num_workers=1,
                         worker_timeout=1.0) as src:
        with pytest.raises(WorkerError, match="no minibatch from the reader workers in 1 s"):
            src.next_minibatch(2)


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_other_start_methods(method):
    data = {"x": np.arange(30, dtype=np.float32).reshape(10, 3)}
    want = MinibatchSource(NumpyDeserializer(data), randomization_seed=2).next_minibatch(25)
    with MinibatchSource(NumpyDeserializer(data), randomization_seed=2, num_workers=1,
                         start_method=method) as src:
        got = src.next_minibatch(25)
    assert np.array_equal(got["x"].data, want["x"].data)


def test_workers_after_torch_and_opencv_threads_ran_here(ten_images):
    torch = pytest.importorskip("torch")
    import cv2
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        _ = torch.randn(300, 300) @ torch.randn(300, 300)  # start torch's pool
    finally:
        torch.set_num_threads(threads)  # other tests in this process expect theirs
    big = np.random.default_rng(0).integers(0, 255, (1500, 1500, 3), dtype=np.uint8)
    cv2.resize(big, (700, 700))  # start OpenCV's pool (a forked child would hang on it)
    des = ImageDeserializer(ten_images / "map.txt", StreamDefs(
        features=StreamDef(field="image", transforms=[T.scale(16, 16, 3, "cubic")])))
    want = MinibatchSource(des, randomization_seed=5).next_minibatch(10)["features"].data
    with MinibatchSource(des, randomization_seed=5, num_workers=2, worker_timeout=60) as src:
        assert np.array_equal(src.next_minibatch(10)["features"].data, want)


def test_shared_memory_is_released_and_workers_restart_after_close(ten_images):
    des = ImageDeserializer(ten_images / "map.txt", StreamDefs(
        features=StreamDef(field="image", transforms=[T.scale(32, 32, 3)])))
    src = MinibatchSource(des, num_workers=2, prefetch=3)
    src.next_minibatch(5)
    pids = [w.process.pid for w in src._pool.workers]
    names = slot_names(src)
    assert names and all(os.path.exists(f"/dev/shm/{n}") for n in names)
    src.close()
    assert not any(os.path.exists(f"/dev/shm/{n}") for n in names)
    assert not any(os.path.exists(f"/proc/{pid}") and
                   open(f"/proc/{pid}/stat").read().split()[2] != "Z" for pid in pids)
    assert src.next_minibatch(5)["features"].num_samples == 5  # workers start again
    names = slot_names(src)
    src.close()
    assert not any(os.path.exists(f"/dev/shm/{n}") for n in names)


def test_a_killed_worker_leaves_no_shared_memory(ten_images):
    # 7 images of 3x16x16 float32: slots of a size no other test uses, to spot them in /dev/shm
    des = ImageDeserializer(ten_images / "map.txt", StreamDefs(
        features=StreamDef(field="image", transforms=[T.scale(16, 16, 3)])))
    slot_size = int(7 * 3 * 16 * 16 * 4 * 1.25) + 4096
    src = MinibatchSource(des, num_workers=2, prefetch=2)
    src.next_minibatch(7)
    time.sleep(1.0)  # the workers finish their prefetched batches; answers wait unread
    names = slot_names(src)
    victim = src._pool.workers[0].process
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(5)
    with pytest.raises(WorkerError, match="killed by signal 9"):
        for _ in range(10):
            src.next_minibatch(7)
    src.close()
    assert not any(os.path.exists(f"/dev/shm/{n}") for n in names)
    ours = [n for n in os.listdir("/dev/shm") if n.startswith("psm_")
            and os.path.getsize(f"/dev/shm/{n}") == slot_size]
    assert ours == []


def test_a_script_without_a_main_guard_gets_the_reason_not_a_bootstrap_error(tmp_path):
    import subprocess
    import sys
    (tmp_path / "d.ctf").write_text("".join(f"|x {i} {i}\n" for i in range(20)))
    script = tmp_path / "train.py"
    script.write_text(
        "from stadyn.io import MinibatchSource, CTFDeserializer, StreamDef, StreamDefs\n"
        "src = MinibatchSource(CTFDeserializer('d.ctf', StreamDefs(x=StreamDef(shape=2))),\n"
        "                      num_workers=1)\n"
        "src.next_minibatch(4)\n")
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert "exited with code 1 before its first minibatch" in last
    assert 'if __name__ == "__main__":' in last
    # the worker itself says why, instead of multiprocessing's bootstrapping RuntimeError
    assert "WorkerError: reader workers start by importing the main script" in run.stderr
    assert "bootstrapping phase" not in run.stderr



_DROPPED_SOURCE = """
import gc
import numpy as np
from stadyn.io import MinibatchSource, NumpyDeserializer, _composite
data = NumpyDeserializer({"x": np.arange(20, dtype=np.float32).reshape(10, 2)})
first = MinibatchSource(data, randomize=False, num_workers=1, start_method="fork")
first.next_minibatch(4)
first.cycle = first
collect = _composite.Composite.materialize
def materialize(self, *args):   # (the forked worker collects its garbage first)
    gc.collect()
    return collect(self, *args)
_composite.Composite.materialize = materialize
gc.disable()
del first                       # (garbage, not yet collected, when the second source forks)
with MinibatchSource(data, randomize=False, num_workers=1, start_method="fork") as second:
    print(second.next_minibatch(4)["x"].data.shape)
"""


def test_a_forked_worker_that_collects_a_dropped_source_leaves_its_pool_alone():
    # a source dropped in a reference cycle (as compat.cntk's are) is still garbage when the
    # next source forks its workers; a worker that collected it ran the dropped pool's
    # close(), which joined another process's children: "AssertionError: can only join a
    # child process", printed as an ignored exception at the worker's exit (a subprocess:
    # pytest's own hook would keep a forked child's unraisable exception to itself)
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "src")]
        + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    done = subprocess.run([sys.executable, "-c", _DROPPED_SOURCE], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "(4, 2)", done.stderr
    assert "can only join a child process" not in done.stderr
    assert "Exception ignored" not in done.stderr
