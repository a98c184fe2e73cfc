"""Two CPU workers (Gloo over loopback) train to the same parameters as one process on the same
global minibatches.

Why they must agree: each worker gets half of every global minibatch of 32 (16 + 16, the
positions ``p % 2 == rank`` of one shared seeded order).  With the Trainer the loss is *summed*
(CNTK), ``synchronize`` sums the gradients and sample counts over the workers, so the learners
see the gradient of the sum over all 32 samples and M = 32 — what one process computes on the
global minibatch.  In the hand-written loop each worker's loss is the mean over its 16 samples;
averaging the two means (``all_reduce_gradients(average=True)``) is the mean over 32 because the
halves have equal size.  Synchronised batch normalisation normalises with the mean and variance
of all 32 samples and updates the running statistics with them, as local batch normalisation
does in the single process.  Only the order of floating-point sums differs: fp32 tolerances.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import dist_workers as W
from _dist_jobs import failure, run_job

MODES = ("trainer-cntk", "trainer-adam", "loop")
MLP_ITERATIONS = CNN_ITERATIONS = 8


def _assert_same_parameters(actual: dict, expected: dict, initial: dict, rtol: float,
                            atol: float, label: str) -> None:
    names = sorted(k for k in expected)
    assert sorted(k for k in actual if not k.startswith("_")) == names
    moved = max(float(np.abs(expected[k] - initial[k]).max()) for k in names)
    assert moved > 100 * atol, f"{label}: training hardly moved the parameters ({moved})"
    for k in names:
        np.testing.assert_allclose(actual[k], expected[k], rtol=rtol, atol=atol,
                                   err_msg=f"{label}: {k}")


def test_digits_mlp_two_workers_equal_one_process(tmp_path, one_torch_thread):
    """One job trains the three ways in turn (one start-up of the workers), 8 minibatches each
    (24 before): the parameters move by 0.008-0.12 in 8 steps against tolerances of 1e-5-1e-4,
    and the loop without ``all_reduce_gradients`` fails at 8 (74% of a weight off)."""
    result = run_job("mlp", tmp_path, "--iterations", str(MLP_ITERATIONS))
    assert result.returncode == 0, failure(result)
    for mode in MODES:
        expected = W.reference_mlp(mode, MLP_ITERATIONS)
        initial = W.reference_mlp(mode, 0)
        ranks = [dict(np.load(tmp_path / f"{mode}-rank{r}.npz")) for r in range(2)]
        for r, actual in enumerate(ranks):
            # atol 1e-5: a ReLU whose input lies within rounding of 0 for one sample may switch
            # (seen once, 4.5e-6); one training step moves the weights by ~1e-3.
            _assert_same_parameters(actual, expected, initial, rtol=1e-4, atol=1e-5,
                                    label=f"{mode} rank {r}")
        for k in expected:   # the workers hold identical parameters
            np.testing.assert_array_equal(ranks[0][k], ranks[1][k], err_msg=f"{mode}: {k}")
        if mode == "loop":   # dynamic graph: buckets started during backward (3 per step)
            assert int(ranks[0]["_overlapped"]) >= 3 * (MLP_ITERATIONS - 1)


@pytest.mark.slow
def test_digits_cnn_with_sync_batch_norm_two_workers_equal_one_process(tmp_path, one_torch_thread):
    # 8 minibatches (24 before: a step of the CNN is ~0.1 s of CPU a worker and in the
    # reference); in 8, the workers' local batch normalisation in place of the synchronised one
    # fails the comparison (a weight: 10141 of 10240 elements), the running statistics move by
    # 0.038 or more.
    result = run_job("cnn", tmp_path, "--iterations", str(CNN_ITERATIONS))
    assert result.returncode == 0, failure(result)
    expected = W.reference_cnn(CNN_ITERATIONS)
    initial = W.reference_cnn(0)
    ranks = [dict(np.load(tmp_path / f"cnn-rank{r}.npz")) for r in range(2)]
    assert any(k.endswith("bn/mean") for k in expected)
    for r, actual in enumerate(ranks):
        # Parameters and running statistics alike.
        _assert_same_parameters(actual, expected, initial, rtol=1e-4, atol=1e-6,
                                label=f"rank {r}")
        for k in expected:
            if k.endswith(("bn/mean", "bn/var")):
                assert np.abs(expected[k] - initial[k]).max() > 1e-3, k
    # A static graph holding sync_batch_normalization runs with torch autograd, so the
    # gradient buckets start during backward.
    assert int(ranks[0]["_overlapped"]) > 0


def _write_images(folder, n: int) -> str:
    """``n`` 32x32 PNGs; image k has blue = k, green = 20 * label, red = 7; label k % 10."""
    from PIL import Image
    folder.mkdir()
    lines = []
    for k in range(n):
        rgb = np.zeros((32, 32, 3), np.uint8)
        rgb[..., 0], rgb[..., 1], rgb[..., 2] = 7, 20 * (k % 10), k
        path = folder / f"{k:03d}.png"
        Image.fromarray(rgb, "RGB").save(path)
        lines.append(f"{path}\t{k % 10}\n")
    map_file = folder / "map.txt"
    map_file.write_text("".join(lines))
    return str(map_file)


def test_convnet_trainer_map_file_every_sample_once_per_sweep(tmp_path):
    n, sweeps, minibatch = 40, 2, 16
    map_file = _write_images(tmp_path / "images", n)
    result = run_job("convnet", tmp_path, "--map-file", map_file, "--sweeps", str(sweeps),
                     "--minibatch", str(minibatch))
    assert result.returncode == 0, failure(result)
    seen = [json.loads((tmp_path / f"seen-rank{r}.json").read_text()) for r in range(2)]
    batches = [s["batches"] for s in seen]
    assert len(batches[0]) == len(batches[1]) == n * sweeps // minibatch
    # Worker r's j-th sample of global minibatch b sits at global position b*16 + 2j + r.
    at_position: dict[int, int] = {}
    for r in range(2):
        for b, batch in enumerate(batches[r]):
            assert len(batch["ids"]) == minibatch // 2
            assert batch["labels"] == [i % 10 for i in batch["ids"]]
            for j, sample in enumerate(batch["ids"]):
                at_position[b * minibatch + 2 * j + r] = sample
    assert sorted(at_position) == list(range(n * sweeps))
    orders = [[at_position[p] for p in range(s * n, (s + 1) * n)] for s in range(sweeps)]
    for order in orders:
        assert sorted(order) == list(range(n)), "a sweep must hold every sample exactly once"
    assert orders[0] != orders[1] and orders[0] != list(range(n)), "randomised per sweep"
    # Global sample counts, identical parameters, progress from rank 0 only.
    assert [s["samples"] for s in seen] == [n * sweeps] * 2
    params = [dict(np.load(tmp_path / f"convnet-rank{r}.npz")) for r in range(2)]
    for k in params[0]:
        np.testing.assert_array_equal(params[0][k], params[1][k], err_msg=k)
    lines = result.stdout.splitlines()
    minibatch_lines = [line for line in lines if "Minibatch[" in line]
    assert len(minibatch_lines) == n * sweeps // minibatch
    assert all(line.startswith("[rank 0]") for line in minibatch_lines)
    assert f"* {minibatch}," in minibatch_lines[0]        # the global minibatch's count
    assert not any(line.startswith("[rank 1]") and "Finished" in line for line in lines)
