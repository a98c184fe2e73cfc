"""A deep but finite network description builds, as cntk.exe builds it (its evaluation is C++
recursion, limited by its stack alone): at 2d7f4600 Python's default limit of 1000 frames
stopped it with "evaluation nested too deeply" -- CNTK's own ResNet-34/50/101/152,
ResNet110_CIFAR10 and Inception-ResNet-V1 examples among them (a stack of blocks nests the
evaluation once a block).  Values hand-computed."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import stadyn
from stadyn import ConfigError
from stadyn.brainscript import StadynLibrary, _network, build_network
from stadyn.train import feed


def test_a_recursion_400_deep_builds():
    before = sys.getrecursionlimit()
    net = build_network("{ f(x, k) = if k == 0 then x else f(x, k - 1) + 1 ; r = f(0, 400) }",
                        StadynLibrary())
    assert net.record["r"] == 400
    assert sys.getrecursionlimit() == before        # (raised while evaluating only)


def test_a_stack_of_200_layers_builds():
    # a chain of 200 Plus nodes made by recursion, as the examples' block stacks are
    text = ("{ x = Input {2} ; f(y, k) = if k == 0 then y else f(y + x, k - 1)\n"
            "  z = f(x, 200) ; outputNodes = (z) }")
    net = build_network(text, StadynLibrary())
    feed(net.nodes["x"], np.array([[1.0, 2.0]], np.float32))
    net.nodes["z"].forward()
    np.testing.assert_allclose(net.nodes["z"].d, [[201.0, 402.0]])


def test_a_runaway_recursion_is_still_a_config_error():
    with pytest.raises(ConfigError, match="nested too deeply"):
        build_network("{ f(n) = f(n + 1) ; r = f(0) }", StadynLibrary())


# a runaway recursion through a record member: about 60 bytes of C stack a Python frame
_RUNAWAY_THREAD = """
import threading
from stadyn import ConfigError
from stadyn.brainscript import StadynLibrary, build_network
threading.stack_size(1 << 20)
def go():
    try:
        build_network("{ f(x) = g(x) ; g(x) = [ a = f(x) ].a ; r = f(0) }", StadynLibrary())
    except ConfigError as e:
        print("ConfigError", e)
t = threading.Thread(target=go)
t.start()
t.join()
"""


def test_a_runaway_recursion_in_a_thread_of_1_mb_is_a_config_error():
    # at 2477301f the limit was 20000 frames whatever the thread's stack: this thread of 1 MB
    # ran out of C stack (a segmentation fault) before Python's limit; the limit now is what
    # the stack holds (3072 frames in 1 MB)
    env = {**os.environ, "PYTHONPATH": str(Path(stadyn.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", _RUNAWAY_THREAD], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "ConfigError" in done.stdout and "nested too deeply" in done.stdout, done.stdout


def test_the_limit_follows_the_threads_stack(monkeypatch):
    monkeypatch.setattr(_network, "_stack_bytes", lambda: 8 << 20)
    assert _network._recursion_limit() == 20000
    monkeypatch.setattr(_network, "_stack_bytes", lambda: 1 << 20)
    assert _network._recursion_limit() == 3072
    monkeypatch.setattr(_network, "_stack_bytes", lambda: 256 << 10)
    before = sys.getrecursionlimit()
    assert _network._recursion_limit() == 0        # (the limit set before stays)
    with _network._deep_enough():
        assert sys.getrecursionlimit() == before


def test_evaluations_in_two_threads_restore_the_limit_when_both_end():
    before = sys.getrecursionlimit()
    inside, release = threading.Barrier(2), threading.Event()
    seen = []

    def evaluate():
        with _network._deep_enough():
            inside.wait(timeout=30)
            release.wait(timeout=30)
            seen.append(sys.getrecursionlimit())

    threads = [threading.Thread(target=evaluate) for _ in range(2)]
    for t in threads:
        t.start()
    release.set()
    for t in threads:
        t.join()
    assert len(seen) == 2 and min(seen) > before
    assert sys.getrecursionlimit() == before
