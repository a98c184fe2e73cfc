"""What the acceptance tests of the originals' own programs share (nnabla-examples, CNTK's
``Examples/``): a copy of the programs read from a checkout or a bare git repository (the test
skips without one), and a run of a test's driver under Stadyn whose JSON result it reads."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "examples")


def program_copy(source: str, paths, base, what: str, env_var: str) -> str:
    """A folder holding ``paths`` (folders or files) of ``source``: ``source`` itself when it is
    a checkout with them, else ``git archive HEAD`` of the bare repository ``source``
    extracted under ``base``.  Skips (naming ``env_var``) when there is no ``source`` or its
    HEAD lacks a path."""
    if not os.path.exists(source):
        pytest.skip(f"no copy of {what} at {source} (set {env_var} to a checkout or a bare "
                    "repository to run its programs)")
    if all(os.path.exists(os.path.join(source, p)) for p in paths):
        return source
    out = os.path.join(str(base), "repo")
    os.makedirs(out)
    for path in paths:
        archive = subprocess.run(["git", "--git-dir", source, "archive", "HEAD", path],
                                 capture_output=True, timeout=120)
        if archive.returncode != 0:
            pytest.skip(f"{source}: no {path} in its HEAD")
        subprocess.run(["tar", "-x", "-C", out], input=archive.stdout, check=True, timeout=120)
    return out


def run_driver(driver: str, args, result: str, reference: str, timeout: int, **env_vars):
    """Run ``tests/examples/<driver>`` with ``args`` on Stadyn (one thread, ``env_vars`` set),
    which writes ``result``; return ``(result, the committed reference refs/<reference>)``."""
    env = dict(os.environ, OMP_NUM_THREADS="1", **env_vars,
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "src"),
                                           os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, os.path.join(HERE, driver), *args],
                          capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(result) as f:
        mine = json.load(f)
    with open(os.path.join(HERE, "refs", reference)) as f:
        return mine, json.load(f)


def nnabla_examples_run(tmp_path_factory, driver: str, programs, reference: str, **env_vars):
    """Run the driver ``tests/examples/<driver>`` on Stadyn over ``programs`` of a copy of
    sony/nnabla-examples (``$STADYN_NNABLA_EXAMPLES``, a checkout or a bare repository, by
    default the mirror at ``/work/.mirror/sony+nnabla-examples/repo``; the test skips without
    one); return ``(its result, NNabla 1.39's refs/<reference>)``."""
    source = os.environ.get("STADYN_NNABLA_EXAMPLES", "/work/.mirror/sony+nnabla-examples/repo")
    base = tmp_path_factory.mktemp(driver.rsplit(".", 1)[0])
    examples = program_copy(source, programs, base, "sony/nnabla-examples",
                            "STADYN_NNABLA_EXAMPLES")
    work = base / "work"
    work.mkdir()
    return run_driver(driver, [examples, str(work), str(base / "stadyn.json"), "--stadyn"],
                      base / "stadyn.json", reference, 600, **env_vars)
