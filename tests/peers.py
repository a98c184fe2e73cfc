"""Where the tests find the real frameworks, and the one switch that hides them all.

The peers are CNTK 2.7 (a Python 3.6 environment and the shim libraries it loads) and NNabla
1.39 (a Python 3.10 environment); ``stadyn bench --peers`` also drives NNabla and MXNet 1.9.1
from ``.venv-peers`` (``make bench-peers``).  Every test that runs one finds its interpreter
here, and skips when that interpreter is missing.  CI has none of them: there the committed
references are what the tests check.  ``STADYN_NO_PEERS=1`` makes every path below one that
does not exist, so a machine that has the peers runs exactly what CI runs::

    STADYN_NO_PEERS=1 make test

Each path is its environment variable's value when set (``STADYN_CNTK_PYTHON`` -- or the older
``CNTK_PYTHON`` --, ``STADYN_CNTK_LIBS``, ``STADYN_NNABLA_PYTHON``), else where this project's
machines keep the peer.

Example (a test module)::

    import peers

    @pytest.mark.skipif(not os.path.exists(peers.CNTK_PYTHON), reason="no CNTK 2.7 here")
    def test_cntk_reads_the_file(tmp_path):
        env = dict(os.environ, LD_LIBRARY_PATH=peers.CNTK_LIBS)
        subprocess.run([peers.CNTK_PYTHON, "-c", "import cntk"], env=env, check=True)
"""

from __future__ import annotations

import os

#: True under ``STADYN_NO_PEERS`` (any value but empty or ``0``): every peer is hidden.
NO_PEERS = os.environ.get("STADYN_NO_PEERS", "") not in ("", "0")

#: What a hidden peer's path starts with (a folder that does not exist).
HIDDEN = "/nonexistent/STADYN_NO_PEERS"


def where(path: str) -> str:
    """``path``, or under ``STADYN_NO_PEERS`` a path that does not exist (naming the switch).

    >>> where("/usr") == ("/nonexistent/STADYN_NO_PEERS/usr" if NO_PEERS else "/usr")
    True
    """
    return HIDDEN + os.path.abspath(path) if NO_PEERS else path


def _configured(names: tuple[str, ...], default: str) -> str:
    return where(next((os.environ[n] for n in names if os.environ.get(n)), default))


#: CNTK 2.7's Python 3.6 (it needs :data:`CNTK_LIBS` on ``LD_LIBRARY_PATH``).
CNTK_PYTHON = _configured(("STADYN_CNTK_PYTHON", "CNTK_PYTHON"),
                          "/work/peers/cntk27/venv36/bin/python")
#: The shim libraries CNTK 2.7's native code loads.
CNTK_LIBS = _configured(("STADYN_CNTK_LIBS",), "/work/peers/cntk27/shimlib")
#: NNabla 1.39's Python 3.10.
NNABLA_PYTHON = _configured(("STADYN_NNABLA_PYTHON",), "/work/peers/nnabla/bin/python")
