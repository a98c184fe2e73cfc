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
    # the process's limit, raised once to 20000 frames and left there (an evaluation runs in
    # a thread whose stack holds them: _network._deep_enough)
    assert sys.getrecursionlimit() == max(before, 20000)


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


def test_an_evaluation_runs_in_a_thread_of_its_own_and_hands_back_its_result_or_error():
    # whatever thread asks (here the main one, then one of 256 KB of stack, where 20000
    # frames of the caller's own stack would crash), the description is evaluated in a thread
    # of _STACK_BYTES; one evaluated inside it (a nested build) stays in it.  Context
    # variables are the caller's (the parameter registry the parameters go into)
    import stadyn as sd

    seen = []

    class Where(StadynLibrary):
        def __init__(self):
            super().__init__()
            self.functions["Where"] = lambda: seen.append(threading.current_thread().name) or 1

    results = []

    def evaluate():
        with sd.parameter_registry(sd.ParameterRegistry()):
            net = build_network("{ w = ParameterTensor {2} ; r = Where () }", Where())
            results.append((net.record["r"], list(sd.get_parameters())))
        try:
            build_network("{ f(n) = f(n + 1) ; r = f(0) }", StadynLibrary())
        except ConfigError as e:
            results.append("nested too deeply" in str(e))

    evaluate()
    before = threading.stack_size(256 << 10)
    try:
        small = threading.Thread(target=evaluate)
        small.start()
    finally:
        threading.stack_size(before)
    small.join()
    assert seen == [_network._EVALUATING] * 2
    assert results[0] == (1, ["w"]) and results[1] is True and results[2:] == results[:2]


def test_evaluations_in_two_threads_at_once():
    out = {}

    def evaluate(k):
        net = build_network(f"{{ f(x, k) = if k == 0 then x else f(x, k - 1) + 1 ; "
                            f"r = f({k}, 400) }}", StadynLibrary())
        out[k] = net.record["r"]

    threads = [threading.Thread(target=evaluate, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == {0: 400, 1: 401}
