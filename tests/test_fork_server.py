"""tests/fork_server.py: a forked run in a folder of its own is refused where
``stadyn.compat.nnabla`` would have read another ``nnabla.conf`` than the server's, and runs as
it would alone otherwise."""

import os
import sys
from pathlib import Path

import pytest

import fork_server
from fork_server import ForkServer

ROOT = Path(__file__).resolve().parents[1]

_PROGRAM = """\
from stadyn.compat.nnabla.config import nnabla_config
print(nnabla_config.get("MISC", "misc_show_progress"))
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    s = ForkServer([sys.executable, fork_server.__file__, "stadyn.compat.nnabla"],
                   tmp_path_factory.mktemp("server"), env)
    yield s
    s.close()


def _run(server, folder: Path):
    (folder / "prog.py").write_text(_PROGRAM)
    return server.run([str(folder / "prog.py")], folder, folder / "logs", 60)


def test_a_run_without_nnabla_conf_reads_the_defaults(server, tmp_path):
    status, out, err = _run(server, tmp_path)
    assert (status, out) == (0, "True\n"), err         # NNabla's default: show progress


def test_a_run_beside_an_nnabla_conf_is_refused(server, tmp_path):
    # alone, this program prints False (its folder's nnabla.conf); forked, it would print the
    # server's True
    (tmp_path / "nnabla.conf").write_text("[MISC]\nmisc_show_progress = False\n")
    status, out, err = _run(server, tmp_path)
    assert status == 2 and out == ""
    assert str(tmp_path / "nnabla.conf") in err and "process of its own" in err
