"""Run CNTK's ``Examples/ReinforcementLearning/DeepQNeuralNetwork.py`` (of Microsoft/CNTK; not
part of this repository) at a tiny size on a stand-in Atari environment, and write as JSON what
it did: the TensorBoard scalars it wrote with ``-p`` (its Trainer's loss every minibatch, its
own ``write_value`` of each episode's mean Q, Q spread and summed reward), the actions it took,
its parameters' sums after training.  The same file runs on CNTK 2.7 (which made
``refs/cntk27_examples_dqn.json``) and, with ``--stadyn``, on Stadyn (``cntk_examples.py``'s
import hook: only the import differs).

    python tests/examples/cntk_examples_dqn.py EXAMPLES OUT.json [--stadyn]

The reference is this, run on CNTK 2.7 (``LD_LIBRARY_PATH=.../shimlib
.../venv36/bin/python -W ignore tests/examples/cntk_examples_dqn.py EXAMPLES
tests/examples/refs/cntk27_examples_dqn.json``).

EXAMPLES holds CNTK's ``Examples/`` (``git archive HEAD Examples/ReinforcementLearning``).  The
program is cut by literal text (each must be found): 3 "epochs" of 100 actions instead of
250,000, and the agent made with a replay memory of 400, training after 100 actions on
minibatches of 8, its target network copied every 40 actions, its exploration annealed from
1 to 0.1 over 200 actions.  Its network (three convolutions on 4 frames of 84x84, Dense(256))
is the original's.  Stand-ins, the same on both frameworks: ``gym`` (``make`` gives a
deterministic game of 210x160 RGB frames, 6 actions, a paddle moved by actions 2 and 3, reward
1 when it meets a target, episodes of 50 steps) and ``PIL`` (CNTK 2.7's environment has none:
``Image.fromarray(frame).convert('L')`` with Pillow's luma weights, ``resize`` to the nearest
pixel).  ``np.asscalar`` (gone since NumPy 1.23) is put back as ``.item()`` where missing.
NumPy is seeded 0 and CNTK's auto-selected seeds restart at 0 before the program runs.
Parses under Python 3.6 (CNTK 2.7's interpreter runs it too).
"""

from __future__ import print_function

import importlib.machinery
import io
import json
import os
import shutil
import sys
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "compat"))
from cntk_examples import _CntkIsStadyn  # noqa: E402
from compat_harness import event_scalars  # noqa: E402

PROGRAM = "ReinforcementLearning/DeepQNeuralNetwork.py"
ARGV = ["-e", "3", "-p", "Pong-v3"]
CUTS = [
    ("max_steps = args.epoch * 250000", "max_steps = args.epoch * 100"),
    ("agent = DeepQAgent((4, 84, 84), env.action_space.n, monitor=args.plot)",
     "agent = DeepQAgent((4, 84, 84), env.action_space.n, monitor=args.plot, "
     "explorer=LinearEpsilonAnnealingExplorer(1, 0.1, 200), minibatch_size=8, "
     "memory_size=400, train_after=100, target_update_interval=40)"),
    ("from PIL import Image", "from pil_standin import Image"),
]
EPISODE = 50


def _module(name, **attributes):
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)   # (torch looks at specs)
    for key, value in attributes.items():
        setattr(module, key, value)
    return module


class _Space(object):
    def __init__(self, n):
        self.n = n


class PaddleGame(object):
    """A stand-in Atari game: a paddle in one of 10 rows (action 2 moves it up, 3 down, the
    others leave it), a target row drawn from the game's own generator every 10 steps; reward
    1 when the paddle is on the target's row, else 0; an episode is 50 steps."""

    def __init__(self, seed):
        self._rng = np.random.RandomState(seed)
        self.action_space = _Space(6)
        self.env = self

    def _frame(self):
        frame = np.zeros((210, 160, 3), np.uint8)
        frame[:, :, 2] = 40
        frame[self._paddle * 21:self._paddle * 21 + 21, 140:150] = (200, 180, 60)
        frame[self._target * 21:self._target * 21 + 21, 10:20] = (90, 220, 120)
        return frame

    def reset(self):
        self._paddle, self._target, self._t = 5, int(self._rng.randint(10)), 0
        return self._frame()

    def step(self, action):
        action = int(action)
        if action == 2:
            self._paddle = max(0, self._paddle - 1)
        elif action == 3:
            self._paddle = min(9, self._paddle + 1)
        self._t += 1
        if self._t % 10 == 0:
            self._target = int(self._rng.randint(10))
        reward = 1.0 if self._paddle == self._target else 0.0
        return self._frame(), reward, self._t >= EPISODE, {}


class _Picture(object):
    def __init__(self, pixels):
        self.pixels = pixels

    def convert(self, mode):
        assert mode == "L" and self.pixels.ndim == 3, mode
        p = self.pixels.astype(np.int64)          # Pillow's ITU-R 601-2 luma, rounded
        return _Picture(((p[..., 0] * 19595 + p[..., 1] * 38470 + p[..., 2] * 7471
                          + 0x8000) >> 16).astype(np.uint8))

    def resize(self, size):
        rows = (np.arange(size[1]) * self.pixels.shape[0]) // size[1]
        cols = (np.arange(size[0]) * self.pixels.shape[1]) // size[0]
        return _Picture(self.pixels[rows][:, cols])

    def __array__(self, dtype=None, copy=None):
        return self.pixels if dtype is None else self.pixels.astype(dtype)


def standins(made):
    """``gym`` and ``pil_standin`` modules (see the module docstring); ``made`` collects the
    games ``gym.make`` made."""
    def make(name):
        game = PaddleGame(len(made))
        made.append(game)
        return game
    image = _module("pil_standin.Image", fromarray=_Picture)
    return {"gym": _module("gym", make=make), "pil_standin": _module("pil_standin", Image=image),
            "pil_standin.Image": image}


def run(examples):
    path = os.path.join(examples, PROGRAM)
    with io.open(path, encoding="utf-8") as f:
        source = f.read()
    for old, new in CUTS:
        if old not in source:
            raise SystemExit("%s: not in the program: %r" % (PROGRAM, old))
        source = source.replace(old, new)
    made = []
    sys.modules.update(standins(made))
    if not hasattr(np, "asscalar"):
        np.asscalar = lambda a: a.item()
    folder = os.path.dirname(path)
    shutil.rmtree(os.path.join(folder, "metrics"), ignore_errors=True)   # (an earlier run's)
    os.chdir(folder)
    np.random.seed(0)
    import cntk
    cntk.cntk_py.reset_random_seed(0)
    module = types.ModuleType("__main__")
    module.__file__ = path
    saved_main, sys.modules["__main__"] = sys.modules["__main__"], module
    sys.argv = [path] + ARGV
    actions = []
    step = PaddleGame.step

    def recorded_step(game, action):
        actions.append(int(action))
        return step(game, action)
    PaddleGame.step = recorded_step
    try:
        exec(compile(source, path, "exec"), module.__dict__)
    finally:
        sys.modules["__main__"] = saved_main
        PaddleGame.step = step
    agent = module.__dict__["agent"]
    agent._metrics_writer.close()
    params = [[p.name, list(p.shape), float(np.sum(p.value, dtype=np.float64)),
               float(np.sum(np.abs(p.value), dtype=np.float64))]
              for p in agent._action_value_net.parameters]
    return {"actions": actions,
            "scalars": event_scalars(os.path.join(folder, "metrics")),
            "parameters": params,
            "last_loss": float(agent._trainer.previous_minibatch_loss_average),
            "actions_taken": agent._num_actions_taken}


def main(argv):
    examples, out_path = (os.path.abspath(a) for a in argv[:2])
    if "--stadyn" in argv:
        sys.meta_path.insert(0, _CntkIsStadyn())
    result = run(examples)
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
