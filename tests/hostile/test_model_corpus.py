"""Every model, parameter and config loader against every hostile file of ``models/`` (see its
README): each refuses the file with a StadynError naming it — or, where the README says
``info: described``, ``stadyn info`` describes it — within a time and an address-space limit,
and leaves no file behind (in the file's folder, the working folder or the temporary folder).

Each corpus file is tried in a fresh process: a loader that tried to allocate what a file
declares would die there (MemoryError under the limit), not take the test run with it.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

MODELS = Path(__file__).resolve().parent / "models"
SRC = Path(__file__).resolve().parents[2] / "src"
TIME_LIMIT = 240                 # seconds for the four loaders on one file (slow shared CPUs)
HEADROOM = 256 << 20             # address space beyond what the loaders take on a benign file
ALLOCATION_FAILED = re.compile(r"MemoryError|bad_alloc|[Cc]annot allocate|can't allocate")
LOADERS = ("load", "load_parameters", "info", "config")


def _readme() -> dict[str, str]:
    rows = {}
    for line in (MODELS / "README.md").read_text().splitlines():
        m = re.match(r"^\| ([^ |]+) \| (.+) \|$", line)
        if m and m.group(1) != "file" and not m.group(1).startswith("-"):
            rows[m.group(1)] = m.group(2)
    return rows


README = _readme()
CORPUS = sorted(p.name for p in MODELS.iterdir() if p.name not in ("README.md", "make_corpus.py"))


def run_limited(code: str, args: list[str], *, cwd: Path, env: dict[str, str],
                timeout: float = TIME_LIMIT, memory: int | None = None
                ) -> subprocess.CompletedProcess:
    """``python -c code args`` in ``cwd`` with at most ``memory`` bytes of address space, killed
    after ``timeout`` seconds (a hang fails the test as ``subprocess.TimeoutExpired``)."""
    def limit() -> None:
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                          preexec_fn=limit, capture_output=True, text=True, timeout=timeout)


def _environment(tmp: Path) -> dict[str, str]:
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=os.pathsep.join(
        [str(SRC), os.environ.get("PYTHONPATH", "")]),
        OMP_NUM_THREADS="1", MALLOC_ARENA_MAX="2")     # a steady address space, any machine
    env.pop("STADYN_MAX_LOAD_BYTES", None)            # the documented default limit
    return env


def _probe(path: Path, cwd: Path, env: dict[str, str], memory: int | None) -> dict:
    out = run_limited(_PROBE, [str(path), *LOADERS], cwd=cwd, env=env, memory=memory)
    line = next((s for s in out.stdout.splitlines() if s.startswith("RESULTS ")), None)
    assert line is not None, f"the probe died (status {out.returncode}):\n{out.stderr[-3000:]}"
    return json.loads(line[len("RESULTS "):])


@pytest.fixture(scope="module")
def memory_limit(tmp_path_factory) -> int:
    """What the loaders take on a benign model file (peak address space), plus HEADROOM."""
    tmp = tmp_path_factory.mktemp("benign")
    code = ("import sys, stadyn as sd, stadyn.functions as F\n"
            "x = sd.Variable((2, 3))\nsd.save(sys.argv[1], F.relu(x), x)\n")
    subprocess.run([sys.executable, "-c", code, str(tmp / "benign.stadyn")], check=True,
                   env=_environment(tmp), timeout=TIME_LIMIT)
    results = _probe(tmp / "benign.stadyn", tmp, _environment(tmp), None)
    assert results["load"]["ok"] and results["info"]["ok"]
    return results["peak"] + HEADROOM


_PROBE = textwrap.dedent("""
    import contextlib, io, json, sys, traceback
    import h5py, onnx                      # imported up front: the same baseline for every file
    import stadyn as sd
    from stadyn.brainscript import load_config, run_config
    from stadyn.cli import main as cli_main

    def info(path):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = cli_main(["info", path])
        if status == 0:
            return "described"
        text = err.getvalue()
        if "Traceback" in text:
            raise RuntimeError("stadyn info printed a traceback: " + text[-300:])
        raise sd.StadynError(text)         # the CLI prints the StadynError it caught

    loaders = {
        "load": lambda p: sd.load(p),
        "load_parameters": lambda p: sd.load_parameters(p, registry=sd.ParameterRegistry()),
        "info": info,
        "config": lambda p: run_config(load_config(p)),
    }
    path, results = sys.argv[1], {}
    for name in sys.argv[2:]:
        try:
            outcome = loaders[name](path)
            results[name] = {"ok": True, "result": str(outcome)[:300]}
        except BaseException as exc:  # noqa: BLE001 - every outcome is reported
            results[name] = {"ok": False, "type": type(exc).__name__,
                             "stadyn": isinstance(exc, sd.StadynError), "message": str(exc)[:2000],
                             "where": "".join(traceback.format_exception(exc))[-1500:]}
    status = open("/proc/self/status").read()
    results["peak"] = int(status.split("VmPeak:")[1].split()[0]) * 1024
    print("RESULTS " + json.dumps(results))
""")


def test_every_corpus_file_has_a_readme_line_and_every_line_a_file():
    assert CORPUS and set(CORPUS) == set(README)


@pytest.mark.parametrize("name", CORPUS)
def test_every_loader_refuses_the_file_clearly_within_limits(tmp_path, name, memory_limit):
    folder, cwd, tmp = tmp_path / "files", tmp_path / "cwd", tmp_path / "tmp"
    for d in (folder, cwd, tmp):
        d.mkdir()
    path = folder / name
    shutil.copyfile(MODELS / name, path)
    results = _probe(path, cwd, _environment(tmp), memory_limit)
    described = {"info"} if "info: described" in README[name] else set()
    for loader in LOADERS:
        r = results[loader]
        if r["ok"]:
            assert loader in described, f"{loader} accepted {name}: {r['result']}"
            continue
        assert r["stadyn"], f"{loader} on {name}: {r['type']}: {r['message']}\n{r['where']}"
        # a refusal, not an allocation that failed under the limit and was reported as one
        assert not ALLOCATION_FAILED.search(r["message"]), r["message"]
        assert name in r["message"], f"{loader} on {name} does not name the file: {r['message']}"
    assert sorted(os.listdir(folder)) == [name]
    # torch makes its own cache folder (torchinductor_<user>) the first time any op runs, even
    # on meta tensors: that is torch's, not a file a loader left
    assert os.listdir(cwd) == [] and [f for f in os.listdir(tmp)
                                      if not f.startswith("torchinductor_")] == []


def test_an_included_password_file_is_never_quoted(tmp_path):
    passwd = Path("/etc/passwd")
    if not passwd.is_file():
        pytest.skip("no /etc/passwd here")
    from stadyn.brainscript import load_config
    from stadyn import ConfigError
    with pytest.raises(ConfigError) as info:
        load_config(MODELS / "include_passwd.cntk")
    first = passwd.read_text().splitlines()[0]
    assert first[:10] not in str(info.value) and "include_passwd.cntk:2:9" in str(info.value)
