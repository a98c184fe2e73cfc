"""CNTK's ``Examples/ReinforcementLearning/DeepQNeuralNetwork.py`` (a DQN agent on an Atari
game: three convolutions and Dense(256) over 4 stacked 84x84 frames, a target network
``clone(CloneMethod.freeze)``, a Huber loss of ``element_select``/``less``/``abs``/``square``
in ``@Function @Signature`` criteria with scalar ``Tensor[()]`` inputs, ``argument_map`` of
``Value.one_hot`` actions, Adam with a variance momentum, a ``TensorBoardProgressWriter`` the
agent also ``write_value``s to) run unchanged on Stadyn at a tiny size on a stand-in game; what
it did is compared with CNTK 2.7's run of the same driver (``cntk_examples_dqn.py``; reference
``refs/cntk27_examples_dqn.json``).

The program is deterministic here (NumPy seeded, CNTK's initial values): every action it
took (300, explored and greedy: the greedy ones are the argmax of the network's Q values), the
TensorBoard scalars (the 51 training minibatches' losses, each episode's mean Q, its spread
and its rewards) and the trained parameters are CNTK 2.7's, to float rounding.

The program is not part of this repository: the test reads it from a copy of CNTK,
``$STADYN_CNTK_SOURCE`` (a checkout, or a bare git repository whose HEAD is archived), by
default the mirror at ``/work/.mirror/yaochengji+CNTK/repo``; without one it skips.
"""

import json
import os
import shutil
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from program_copies import committed_reference, program_copy, run_driver, shared_folder  # noqa: E402

SOURCE = os.environ.get("STADYN_CNTK_SOURCE", "/work/.mirror/yaochengji+CNTK/repo")
PATHS = ("Examples/ReinforcementLearning/DeepQNeuralNetwork.py",)
REFERENCE = "cntk27_examples_dqn.json"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    with shared_folder(tmp_path_factory, "cntk_examples_dqn") as base:
        if (base / "done").exists():
            with open(base / "stadyn.json") as f:
                return json.load(f), committed_reference(REFERENCE)
        source = program_copy(SOURCE, PATHS, base, "Microsoft/CNTK", "STADYN_CNTK_SOURCE")
        if source == SOURCE:              # (a checkout: the program writes beside itself)
            source = str(base / "repo")
            target = os.path.join(source, PATHS[0])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy(os.path.join(SOURCE, PATHS[0]), target)
        out = run_driver("cntk_examples_dqn.py",
                         [os.path.join(source, "Examples"), str(base / "stadyn.json"),
                          "--stadyn"], base / "stadyn.json", REFERENCE, 600)
        (base / "done").write_text("done")
    return out


def _by_tag(scalars):
    out = {}
    for tag, step, value in scalars:
        out.setdefault(tag, []).append((step, value))
    return out


def test_the_agent_takes_cntk_27s_actions(runs):
    mine, real = runs
    assert real["actions_taken"] == mine["actions_taken"] == 300
    assert mine["actions"] == real["actions"]


def test_tensorboard_scalars_are_cntk_27s(runs):
    """The Trainer's per-minibatch loss (training starts after 100 actions, every 4th action:
    51 minibatches) and the agent's own per-episode values, at CNTK 2.7's steps, to float
    rounding (Adam over 51 steps: 1e-4 of each value)."""
    mine, real = (_by_tag(r["scalars"]) for r in runs)
    assert sorted(mine) == sorted(real) == ["Mean Q per ep.", "Mean Std Q per ep.",
                                            "Sum rewards per ep.", "minibatch/avg_loss",
                                            "minibatch/avg_metric"]
    assert len(real["minibatch/avg_loss"]) == 51
    for tag, rows in real.items():
        assert [s for s, _ in mine[tag]] == [s for s, _ in rows], tag
        np.testing.assert_allclose([v for _, v in mine[tag]], [v for _, v in rows],
                                   rtol=1e-4, atol=1e-6, err_msg=tag)


def test_trained_parameters_are_cntk_27s(runs):
    mine, real = runs
    assert [p[:2] for p in mine["parameters"]] == [p[:2] for p in real["parameters"]]
    np.testing.assert_allclose([p[2:] for p in mine["parameters"]],
                               [p[2:] for p in real["parameters"]], rtol=1e-5, atol=1e-5)
    assert mine["last_loss"] == pytest.approx(real["last_loss"], rel=1e-4)
