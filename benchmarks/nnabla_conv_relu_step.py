"""CPU ms per static training step of an NNabla-style network whose ReLUs follow convolutions
(compat.nnabla's ``F.relu``, which a static plan fuses into a channels-last oneDNN convolution):
batch 32, 3x32x32, conv 32 -> relu -> conv 32 -> relu -> affine 10, momentum SGD.  Prints how
many convolutions the plan fused and the median process CPU time of the timed steps.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/nnabla_conv_relu_step.py [STEPS]
"""

import sys
import time

import numpy as np

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.parametric_functions as PF
import stadyn.compat.nnabla.solvers as S


def main(steps: int) -> None:
    nn.clear_parameters()
    rng = np.random.default_rng(0)
    x, t = nn.Variable((32, 3, 32, 32)), nn.Variable((32, 1))
    h = F.relu(PF.convolution(x, 32, (3, 3), pad=(1, 1), name="c1"))
    h = F.relu(PF.convolution(h, 32, (3, 3), pad=(1, 1), name="c2"))
    loss = F.mean(F.softmax_cross_entropy(PF.affine(h, 10, name="fc"), t))
    solver = S.Momentum(0.01, 0.9)
    solver.set_parameters(nn.get_parameters())
    x.d, t.d = rng.standard_normal(x.shape), rng.integers(0, 10, t.shape)

    def step():
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()

    for _ in range(5):
        step()
    times = []
    for _ in range(steps):
        start = time.process_time()
        step()
        times.append(time.process_time() - start)
    fused = loss._plan.code.count("mkldnn._convolution_pointwise")
    print(f"fused convolutions: {fused}, median {np.median(times) * 1e3:.2f} ms of CPU per step")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
