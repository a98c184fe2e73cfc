"""Every model, parameter and config loader against every hostile file of ``models/`` (see its
README): each refuses the file with a StadynError naming it — or, where the README says
``info: described``, ``stadyn info`` describes it — within a time and an address-space limit,
and leaves no file behind (in the file's folder, the working folder or the temporary folder).

Each corpus file is tried in a fresh process: a loader that tried to allocate what a file
declares would die there (MemoryError under the limit), not take the test run with it.  The
processes fork from one server per test module that imported Stadyn, h5py and onnx once (an
interpreter start and those imports cost ~2 s of CPU a file); each child then takes the file's
working folder, environment (its own TMPDIR) and address-space limit before it loads anything.
"""

from __future__ import annotations

import json
import os
import re
import select
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


def _environment(tmp: Path) -> dict[str, str]:
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=os.pathsep.join(
        [str(SRC), os.environ.get("PYTHONPATH", "")]),
        OMP_NUM_THREADS="1", MALLOC_ARENA_MAX="2")     # a steady address space, any machine
    env.pop("STADYN_MAX_LOAD_BYTES", None)            # the documented default limit
    return env


class ProbeServer:
    """A Python process that imported what the probe needs once and forks a child per file.

    The child takes the request's working folder, environment (``TMPDIR`` included: Python's
    cached temporary folder is forgotten) and, when given, an address-space limit of ``memory``
    bytes (``RLIMIT_AS``), then runs the probe with its output in two files; the server kills a
    child still running after ``timeout`` seconds."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVER], cwd=tmp,
                                     env=_environment(tmp), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def probe(self, path: Path, cwd: Path, env: dict[str, str], memory: int | None,
              logs: Path, timeout: float = TIME_LIMIT) -> dict:
        logs.mkdir(exist_ok=True)
        out, err = logs / "stdout", logs / "stderr"
        request = {"args": [str(path), *LOADERS], "cwd": str(cwd), "env": env,
                   "memory": memory, "stdout": str(out), "stderr": str(err), "timeout": timeout}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout + 60)
        reply = json.loads(self.proc.stdout.readline() or "null") if ready else None
        assert reply is not None, f"the probe server died (status {self.proc.poll()})"
        if reply["timed_out"]:
            raise subprocess.TimeoutExpired(path.name, timeout)
        lines = out.read_text().splitlines()
        line = next((s for s in lines if s.startswith("RESULTS ")), None)
        assert line is not None, \
            f"the probe died (status {reply['status']}):\n{err.read_text()[-3000:]}"
        return json.loads(line[len("RESULTS "):])

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(60)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = ProbeServer(tmp_path_factory.mktemp("server"))
    yield s
    s.close()


@pytest.fixture(scope="module")
def memory_limit(tmp_path_factory, server) -> int:
    """What the loaders take on a benign model file (peak address space), plus HEADROOM."""
    import stadyn as sd
    import stadyn.functions as F
    tmp = tmp_path_factory.mktemp("benign")
    x = sd.Variable((2, 3))
    sd.save(str(tmp / "benign.stadyn"), F.relu(x), x)      # (written here: no interpreter start)
    results = server.probe(tmp / "benign.stadyn", tmp, _environment(tmp), None, tmp / "logs")
    assert results["load"]["ok"] and results["info"]["ok"]
    return results["peak"] + HEADROOM


_SERVER = textwrap.dedent("""
    import contextlib, io, json, os, resource, sys, tempfile, traceback
    sys.path.insert(0, TESTS_FOLDER)
    from fork_server import answer          # (waits for a child, kills it at its timeout)
    import h5py, onnx                      # imported up front: the same baseline for every file
    import torch._dynamo                   # torch imports it the first time a shape is inferred
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

    def probe(path, names):
        results = {}
        for name in names:
            try:
                outcome = loaders[name](path)
                results[name] = {"ok": True, "result": str(outcome)[:300]}
            except BaseException as exc:  # noqa: BLE001 - every outcome is reported
                results[name] = {"ok": False, "type": type(exc).__name__,
                                 "stadyn": isinstance(exc, sd.StadynError),
                                 "message": str(exc)[:2000],
                                 "where": "".join(traceback.format_exception(exc))[-1500:]}
        status = open("/proc/self/status").read()
        results["peak"] = int(status.split("VmPeak:")[1].split()[0]) * 1024
        print("RESULTS " + json.dumps(results), flush=True)

    def child(request):
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            os.dup2(os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None            # TMPDIR is read again
        if request["memory"] is not None:
            resource.setrlimit(resource.RLIMIT_AS, (request["memory"], request["memory"]))
        probe(request["args"][0], request["args"][1:])

    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            try:
                child(request)
                code = 0
            except BaseException:  # noqa: BLE001 - reported on the child's stderr
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        answer(pid, request["timeout"], poll=0.01)
""").replace("TESTS_FOLDER", repr(str(Path(__file__).resolve().parents[1])))



def test_every_corpus_file_has_a_readme_line_and_every_line_a_file():
    assert CORPUS and set(CORPUS) == set(README)


@pytest.mark.parametrize("name", CORPUS)
def test_every_loader_refuses_the_file_clearly_within_limits(tmp_path, name, memory_limit,
                                                            server):
    folder, cwd, tmp = tmp_path / "files", tmp_path / "cwd", tmp_path / "tmp"
    for d in (folder, cwd, tmp):
        d.mkdir()
    path = folder / name
    shutil.copyfile(MODELS / name, path)
    results = server.probe(path, cwd, _environment(tmp), memory_limit, tmp_path / "logs")
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
