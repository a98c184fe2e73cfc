"""``stadyn train CONFIG --profile DIR``: the run recorded by ``sd.profile``, a table by scope and
op, and a trace file Perfetto / chrome://tracing opens."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from stadyn.cli import main as cli_main

ONE_HIDDEN = Path(__file__).resolve().parents[1] / "fixtures" / "brainscript" / "01_OneHidden.cntk"


def _mnist_like(folder: Path, n: int = 128) -> None:
    """The CTF files 01_OneHidden.cntk reads: 784 pixel values and a one-hot label per line."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("Train-28x28_cntk_text.txt", "Test-28x28_cntk_text.txt"):
        rows = []
        for label in rng.integers(0, 10, n):
            image = rng.integers(0, 256, 784)
            onehot = " ".join("1" if k == label else "0" for k in range(10))
            rows.append(f"|labels {onehot} |features {' '.join(map(str, image))}\n")
        (folder / name).write_text("".join(rows))


def test_train_profile_writes_a_table_by_scope_and_a_trace(tmp_path, capsys):
    _mnist_like(tmp_path / "data")
    status = cli_main(["train", str(ONE_HIDDEN), f"dataDir={tmp_path / 'data'}",
                       f"outputDir={tmp_path / 'out'}", "trainNetwork.SGD.epochSize=128",
                       "trainNetwork.SGD.maxEpochs=1", "--profile", str(tmp_path / "prof")])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "Finished Epoch[ 1 of 1]" in out            # the run itself happened, with its log
    table = (tmp_path / "prof" / "profile.txt").read_text()
    assert table in out
    # The config's two DenseLayers are the network's ops: their affine products are in the table.
    rows = [line.split() for line in table.splitlines() if line.strip()]
    assert {("dense", "affine"), ("dense_1", "affine")} <= {tuple(r[:2]) for r in rows}, table
    events = json.loads((tmp_path / "prof" / "trace.json").read_text())["traceEvents"]
    names = {e.get("name", "") for e in events}
    assert any(n.startswith("stadyn::") and n.endswith("/affine") for n in names), \
        sorted(names)[:20]


def test_train_profile_refuses_several_processes(capsys):
    assert cli_main(["train", str(ONE_HIDDEN), "--nproc", "2", "--profile", "p"]) == 1
    assert "--profile records one process" in capsys.readouterr().err
