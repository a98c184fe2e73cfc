"""A small training program with dropout, run by test_compile_cache.py: ``python
cached_step_run.py compiled`` trains it three steps with a compiled step (inductor, its cache
where ``TORCHINDUCTOR_CACHE_DIR`` says) and prints the losses and inductor's cache counters as
JSON; :func:`train` ``("static")`` trains it with a static plan.

Its dropouts draw from each kind of generator a compiled step's draws take: a CNTK stream's
(``stadyn_kernels::cntk_draw``, compat.cntk's Dropout) and NNabla's rule with a seed of its own
(``stadyn_kernels::nnabla_draw``, compat.nnabla's ``F.dropout(seed=...)``).
"""

import json
import sys

import numpy as np


def train(mode: str, steps: int = 3) -> list[float]:
    """The losses of ``steps`` training steps in ``mode`` (``"static"`` or ``"compiled"``)."""
    import stadyn as sd
    import stadyn.functions as F
    import stadyn.parametric_functions as PF
    import stadyn.solvers as S
    from stadyn.ops import CNTKStream

    xb = np.random.RandomState(1).rand(4, 8).astype(np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.seed(0)
        x = sd.Variable((4, 8))
        h = F.relu(PF.affine(x, 16, name="fc1"))
        h = F.dropout(h, 0.5, seed=CNTKStream(3))            # CNTK 2.7's mask
        h = F.dropout(h, 0.25, seed=5, rule="nnabla")          # NNabla 1.39's mask
        # (the loss is the mean of what the two masks keep: a classifier and a cross entropy
        # after them were 3 more kernels to compile, ~12 s of the test's CPU, and showed the
        # masks no better)
        loss = F.mean(h)
        solver = S.Sgd(lr=0.5)
        solver.set_parameters(sd.get_parameters())
        step = sd.compile_step(loss, solver) if mode == "compiled" else None
        losses = []
        for _ in range(steps):
            x.d = xb
            if step is not None:
                step()
            else:
                loss.forward(clear_no_need_grad=True)
                solver.zero_grad()
                loss.backward(clear_buffer=True)
                solver.update()
            losses.append(float(loss.d))
    return losses


if __name__ == "__main__":
    losses = train(sys.argv[1])
    from torch._dynamo.utils import counters
    print(json.dumps({"losses": losses, "fxgraph": dict(counters["inductor"])}))
