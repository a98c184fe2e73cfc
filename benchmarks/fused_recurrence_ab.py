"""A/B of a recurrence run whole (the fused ops) against the step-by-step ``recurrence`` op:
CPU time per training step of ``Recurrence(step)`` + ``sequence.reduce_sum`` on a minibatch of
ragged sequences, static and dynamic, interleaved round by round.

    PYTHONPATH=src python benchmarks/fused_recurrence_ab.py --steps gru rnn-tanh lstm \
        --batch 64 --hidden 128 --max-length 50 --rounds 5

``return_full_state=True`` takes the step-by-step path for every step kind (a single-state
step returns the same value either way), so the two cases differ only in the path.
"""

import argparse
import statistics
import time

import numpy as np
import torch

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L

STEPS = {"gru": lambda h: L.GRU(h), "rnn-tanh": lambda h: L.RNNStep(h, activation=F.tanh),
         "lstm": lambda h: L.LSTM(h)}


def case(kind, fused, dynamic, a):
    rng = np.random.default_rng(0)
    seqs = [rng.standard_normal((n, a.input)).astype(np.float32)
            for n in rng.integers(5, a.max_length + 1, a.batch)]
    registry = sd.ParameterRegistry()
    x = sd.sequence.input_variable(a.input)
    x.d = seqs

    def build():
        with sd.parameter_registry(registry):
            h = L.Recurrence(STEPS[kind](a.hidden), return_full_state=not fused,
                             name="r")(x)
            h = h[0] if isinstance(h, tuple) else h
            return F.sum(sd.sequence.reduce_sum(h * h))
    if dynamic:
        def step():
            with sd.auto_forward():
                loss = build()
            loss.backward(clear_buffer=True)
        return step
    loss = build()

    def step():
        loss.forward(clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
    return step


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", nargs="+", default=["gru", "rnn-tanh"])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--input", type=int, default=64)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--max-length", type=int, default=50)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    cases = {}
    for kind in a.steps:
        for mode in ("static", "dynamic"):
            for fused in (True, False):
                name = f"{kind} {mode} {'fused' if fused else 'step-by-step'}"
                cases[name] = case(kind, fused, mode == "dynamic", a)
    for step in cases.values():
        step()
        step()
    cpu = {s: [] for s in cases}
    for _ in range(a.rounds):
        for s, step in cases.items():
            c0 = time.process_time()
            step()
            cpu[s].append(time.process_time() - c0)
    for s in cases:
        print(f"{s:32s} cpu {1e3 * statistics.median(cpu[s]):8.1f} ms")


if __name__ == "__main__":
    main()
