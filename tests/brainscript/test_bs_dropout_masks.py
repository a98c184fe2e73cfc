"""BrainScript ``Dropout`` draws cntk.exe's masks.  cntk.exe's ``DropoutNode`` draws from CNTK's
CPU engine: ``CPUMatrix::SetUniformRandomMask`` drops a value where Boost's
``uniform_real_distribution<float>(0, 1)`` of the node's ``std::mt19937_64`` is ``<= rate``
(column by column: sample by sample, each sample's values in order), keeps it times ``1 / (1 -
rate)``, and moves the node's offset on by the mask's size.  At the start of each epoch SGD.cpp
calls ``ComputationNetwork::SetIRngUserSeed(net, criterion, worker x maxEpochs + epoch)``,
which gives the ``n`` random nodes of the criterion, in evaluation order (children first,
inputs in order), seeds ``base x n + i`` at offset 0.

The expectation is that rule written here in NumPy over the engine's numbers
(:class:`stadyn._mt19937.MT19937_64`, ``std::mt19937_64``); the same rule gives CNTK 2.7's own
``C.dropout(x, 0.5, seed=s)`` masks for seeds 0, 1, 3 (checked with CNTK 2.7 when this was
written).  On 2f8d9b80 the masks were torch's."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from stadyn._mt19937 import MT19937_64
from stadyn.brainscript import run

RATE = 0.5
_LINE = re.compile(r"Epoch\[ *(\d+) of \d+\]-Minibatch\[ *(\d+)- *\d+(?:, [\d.]+%)?\]: "
                   r"ce = (\S+) \* (\d+);")


def _keep(rng: MT19937_64, count: int) -> np.ndarray:
    """``count`` values of SetUniformRandomMask's mask (1 kept, 0 dropped)."""
    out = []
    while len(out) < count:
        # Boost's generate_uniform_real for an integer engine: float(x - min) / (float(max -
        # min) + 1), in float; a result that rounds up to 1 is drawn again
        u = np.float32(np.float32(int(rng())) / np.float32(2.0 ** 64))
        if u < 1:
            out.append(0.0 if u <= np.float32(RATE) else 1.0)
    return np.array(out)


def test_dropout_masks_are_cntk_exes_seeded_per_epoch_in_evaluation_order(tmp_path):
    x = ((np.arange(40) * 0.37) % 3.0 - 1.0).reshape(10, 4).astype(np.float32)
    (tmp_path / "data.txt").write_text(
        "".join("|features " + " ".join(f"{v:.6f}" for v in row) + "\n" for row in x))
    # sq is defined first but evaluated second: cntk.exe seeds by evaluation order
    (tmp_path / "cmd.cntk").write_text(f"""command = train
deviceId = -1 ; traceLevel = 1
modelPath = "{tmp_path}/Models/net"
train = [ action = "train"
  BrainScriptNetworkBuilder = [
    features = Input {{4}}
    w = ParameterTensor {{1, initValue = 0}}
    sq = Dropout (features .* features)
    d = Dropout (features)
    ce = ReduceSum (d) + ReduceSum (sq) + w
    criterionNodes = (ce) ]
  SGD = [ epochSize = 0 ; minibatchSize = 4 ; learningRatesPerSample = 0.000001
          maxEpochs = 2 ; dropoutRate = {RATE} ; numMBsToShowResult = 1 ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "{tmp_path}/data.txt"
    randomize = false ; input = [ features = [ dim = 4 ; format = "dense" ] ] ] ]
""")
    out = io.StringIO()
    run(tmp_path / "cmd.cntk", out=out)
    lines = [(int(e), int(m), float(v), int(n)) for e, m, v, n in _LINE.findall(out.getvalue())]
    expected = []
    xs = x.astype(np.float64)
    scale = float(np.float32(1.0 / (1.0 - RATE)))
    for epoch in (0, 1):
        d, sq = MT19937_64(epoch * 2 + 0), MT19937_64(epoch * 2 + 1)
        for m, first in enumerate((0, 4, 8)):
            rows = xs[first:first + 4]
            total = (_keep(d, rows.size).reshape(rows.shape) * rows).sum() * scale + \
                (_keep(sq, rows.size).reshape(rows.shape) * rows ** 2).sum() * scale
            expected.append((epoch + 1, m + 1, total / len(rows), len(rows)))
    assert [(e, m, n) for e, m, _, n in lines] == [(e, m, n) for e, m, _, n in expected]
    assert [v for _, _, v, _ in lines] == pytest.approx([v for _, _, v, _ in expected],
                                                        abs=1e-4)   # (w moves ~1e-5)
