"""Freed CPU memory stays in the process once a static plan is built (stadyn/_memory.py): a 30 MB
tensor then lives on glibc's heap and its pages stay there when it is freed, where by default
glibc maps it on its own and unmaps it on free (and the next step faults its pages in again).

Each case runs in a fresh interpreter: the setting is process-wide, and glibc's default
threshold moves with what the process freed before."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap

import pytest

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc"
    or tuple(int(p) for p in platform.libc_ver()[1].split(".")[:2]) < (2, 33),
    reason="glibc's malloc (2.33+, for mallinfo2) is what the setting changes")

_PROBE = textwrap.dedent("""
    import ctypes, json, sys
    import numpy as np
    import stadyn as sd, stadyn.functions as F
    import stadyn._memory as memory

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in
                    "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks "
                    "keepcost".split()]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    if sys.argv[1] == "plan":             # what a user does: build and run a static graph
        x = sd.Variable.from_numpy_array(np.ones((2, 3), np.float32), need_grad=True)
        y = F.sum(F.relu(x))
        y.forward()
    import torch
    block = torch.empty(30 << 18)         # 30 MB
    block.fill_(1.0)
    during = libc.mallinfo2()
    del block
    after = libc.mallinfo2()
    print(json.dumps({"kept": memory.keep_freed_cpu_memory(),
                      "reason": memory.reason_not_kept(),
                      "mapped_while_alive": during.hblkhd, "free_in_heap_after": after.fordblks}))
""")


def _probe(tmp_path, what: str, **env) -> dict:
    script = tmp_path / "probe.py"
    script.write_text(_PROBE)
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("MALLOC_", "GLIBC_TUNABLES", "STADYN_KEEP_CPU_MEMORY"))}
    clean.update(env, PYTHONPATH=os.path.abspath(SRC))
    done = subprocess.run([sys.executable, str(script), what], env=clean, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


MB = 1 << 20


def test_a_static_plan_keeps_freed_memory_on_the_heap(tmp_path):
    r = _probe(tmp_path, "plan")
    assert r["kept"] and r["reason"] is None
    assert r["mapped_while_alive"] < 30 * MB        # the block came from the heap ...
    assert r["free_in_heap_after"] >= 30 * MB       # ... and its pages stayed there


def test_the_opt_out_leaves_glibc_to_map_and_unmap_a_large_block(tmp_path):
    """glibc's default, which the test above departs from."""
    r = _probe(tmp_path, "plan", STADYN_KEEP_CPU_MEMORY="0")
    assert not r["kept"] and r["reason"] == "STADYN_KEEP_CPU_MEMORY=0"
    assert r["mapped_while_alive"] >= 30 * MB
    assert r["free_in_heap_after"] < 30 * MB


@pytest.mark.parametrize("env, reason", [
    ({"STADYN_KEEP_CPU_MEMORY": "off"}, "STADYN_KEEP_CPU_MEMORY=0"),
    ({"MALLOC_TRIM_THRESHOLD_": "131072"}, "MALLOC_TRIM_THRESHOLD_ is set"),
    ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"}, "GLIBC_TUNABLES is set"),
    ({"LD_PRELOAD": "/usr/lib/libjemalloc.so.2"}, "another allocator is preloaded"),
    ({}, None),
], ids=["opt-out", "user's glibc setting", "user's tunables", "other allocator", "default"])
def test_the_user_can_turn_it_off_and_their_own_settings_win(monkeypatch, env, reason):
    from stadyn._memory import reason_not_kept
    for k in list(os.environ):
        if k.startswith(("STADYN_KEEP_CPU_MEMORY", "MALLOC_", "GLIBC_TUNABLES", "LD_PRELOAD")):
            monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert reason_not_kept() == reason
