"""A stand-in for the part of OpenAI gym that CNTK 203 uses: ``gym.make('CartPole-v0')``.

``tools/cntk_notebooks.py`` copies this file as ``gym.py`` into the folder each framework runs
203 in, so ``import gym`` finds it on both.  It offers the classic (pre-0.26) API the notebook
was written for: ``reset()`` gives the observation, ``step(action)`` gives ``(observation,
reward, done, info)``, ``observation_space.shape == (4,)``, ``action_space.n == 2``,
``render()`` and ``close()`` do nothing.  The dynamics are CartPole's (a pole on a cart pushed
left or right by 10 N, Euler steps of 20 ms; the episode ends when the cart leaves +-2.4 or
the pole tilts past 12 degrees, or after 200 steps, CartPole-v0's limit), its state four
float64 values drawn from +-0.05 at reset.  Each environment draws from its own NumPy
generator, seeded by the order of ``make`` calls, so both frameworks see the same episodes for
the same actions.
"""

import math

import numpy as np

_MADE = [0]


class Box:
    """An observation space: a ``shape`` and the bounds ``low``/``high``."""

    def __init__(self, low, high):
        self.low, self.high = np.asarray(low), np.asarray(high)
        self.shape = self.low.shape


class Discrete:
    """An action space of ``n`` actions, ``0 .. n-1``."""

    def __init__(self, n, rng):
        self.n, self._rng = n, rng

    def sample(self):
        return int(self._rng.randint(self.n))

    def contains(self, action):
        return 0 <= int(action) < self.n


class CartPole:
    """CartPole-v0: reward 1 a step, at most 200 steps an episode."""

    gravity, cart_mass, pole_mass, half_length, force, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    max_x, max_angle, max_steps = 2.4, 12 * 2 * math.pi / 360, 200

    def __init__(self, seed):
        self._rng = np.random.RandomState(seed)
        high = np.array([self.max_x * 2, np.finfo(np.float32).max, self.max_angle * 2,
                         np.finfo(np.float32).max])
        self.observation_space = Box(-high, high)
        self.action_space = Discrete(2, self._rng)
        self.state, self._steps = None, 0

    def seed(self, seed=None):
        self._rng.seed(seed)
        return [seed]

    def reset(self):
        self.state = self._rng.uniform(-0.05, 0.05, 4)
        self._steps = 0
        return np.array(self.state)

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"CartPole: action {action!r} is not 0 or 1")
        x, x_dot, theta, theta_dot = self.state
        push = self.force if action == 1 else -self.force
        total = self.cart_mass + self.pole_mass
        moment = self.pole_mass * self.half_length
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (push + moment * theta_dot ** 2 * sin) / total
        theta_acc = (self.gravity * sin - cos * temp) / (
            self.half_length * (4.0 / 3.0 - self.pole_mass * cos ** 2 / total))
        x_acc = temp - moment * theta_acc * cos / total
        x, x_dot = x + self.tau * x_dot, x_dot + self.tau * x_acc
        theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * theta_acc
        self.state = np.array([x, x_dot, theta, theta_dot])
        self._steps += 1
        fallen = abs(x) > self.max_x or abs(theta) > self.max_angle
        return np.array(self.state), 1.0, bool(fallen or self._steps >= self.max_steps), {}

    def render(self, mode="human"):
        return None

    def close(self):
        return None


def make(name):
    """The environment called ``name``; only ``'CartPole-v0'`` is here."""
    if name != "CartPole-v0":
        raise ValueError(f"gym stand-in: only 'CartPole-v0' is offered, not {name!r}")
    _MADE[0] += 1
    return CartPole(seed=_MADE[0])
