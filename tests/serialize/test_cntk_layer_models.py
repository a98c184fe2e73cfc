"""CNTK 2.7 model files of CNTK's layers library: one small model per layer of ``cntk.layers``
(recurrent and sequence layers too) and a few ops each of ``cntk.ops`` and ``cntk.sequence``,
each saved by CNTK 2.7 with its inputs and CNTK's outputs on them
(``tests/fixtures/legacy/cntk_layers/``, made by ``make_cntk_layers.py``).  Each file is loaded
by ``load_cntk`` and run on the same inputs; a case Stadyn cannot load yet is a strict xfail
with the reason."""

from __future__ import annotations

import os

import numpy as np
import pytest

from stadyn.serialize import load_cntk

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "legacy",
                      "cntk_layers")
REFERENCE = dict(np.load(os.path.join(FOLDER, "outputs.npz")))
CASES = sorted({k.split("/")[0] for k in REFERENCE})

KNOWN: dict[str, str] = {}     # case -> why Stadyn cannot load it yet (none now)


def _split(value, lengths):
    return np.split(value, np.cumsum(lengths)[:-1], 0)


def _run(name):
    net = load_cntk(os.path.join(FOLDER, name + ".model"))
    feed = {}
    for k in net.inputs:
        value, lengths = REFERENCE[f"{name}/in/{k}"], REFERENCE.get(f"{name}/len/{k}")
        feed[k] = value if lengths is None else _split(value, lengths)
    return list(net(**feed).values())


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(
    strict=True, reason=KNOWN[n])) if n in KNOWN else n for n in CASES])
def test_cntk_layer_model_gives_cntks_outputs(name):
    outputs = _run(name)
    assert len(outputs) == len([k for k in REFERENCE if k.startswith(f"{name}/out/")])
    for i, value in enumerate(outputs):
        want = REFERENCE[f"{name}/out/{i}"]
        lengths = REFERENCE.get(f"{name}/outlen/{i}")
        value = np.asarray(value)
        if lengths is not None:          # a sequence output: padded, each cut to its length
            value = np.concatenate([value[b, :n] for b, n in enumerate(lengths)], 0)
        assert value.shape == want.shape, f"output {i}"
        np.testing.assert_allclose(value, want, rtol=1e-4, atol=1e-5, err_msg=f"output {i}")


def test_the_fixture_covers_every_layer_of_cntk_layers():
    """Every layer class of ``cntk.layers`` has a case (by its name's prefix), but those CNTK
    2.7 itself cannot build here (group and dilated convolutions on a CPU, ``RNNUnit``,
    ``SequentialConvolution`` on ragged sequences: the generator lists them)."""
    layers = ["Activation", "AttentionModel", "AveragePooling", "BatchNormalization",
              "Convolution", "Convolution1D", "Convolution2D", "Convolution3D",
              "ConvolutionTranspose", "ConvolutionTranspose1D", "ConvolutionTranspose2D",
              "ConvolutionTranspose3D", "Delay", "Dense", "Dropout", "Embedding", "Fold", "For",
              "GlobalAveragePooling", "GlobalMaxPooling", "Label", "LayerNormalization",
              "MaxPooling", "MaxUnpooling", "PastValueWindow", "Recurrence", "RecurrenceFrom",
              "ResNetBlock", "Sequential", "SequentialClique", "Stabilizer", "UnfoldFrom"]
    missing = [n for n in layers if not any(c == n or c.startswith(n + "_") for c in CASES)]
    assert missing == []
