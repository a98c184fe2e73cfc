"""NNabla's 18 solvers off the float32 blocks (the torch path: CUDA, non-contiguous tensors,
a compiled step) against NNabla 1.39 itself, over six steps that mix ``weight_decay``,
``clip_grad_by_norm``, ``scale_grad``, ``set_learning_rate`` and a ``get_states`` /
``set_states`` round trip into a fresh solver (``tests/fixtures/nnabla_solver_sweep/
make_sweep.py`` made the reference with NNabla 1.39; its docstring says how).

Two ways off the blocks: the parameters laid out column-major (the solver's maths and
``weight_decay`` on torch's ops; ``clip_grad_by_norm`` still on the blocks, through a
contiguous copy of the gradient; Lamb's and Lars' norms NNabla's sequential sums), and
``torch.compiler.is_compiling`` answering ``True``
(what a compiled step and a CUDA device see: nothing on the blocks, roots in double).  Each
with ``foreach`` on and off; on contiguous parameters (the blocks) the sweep is NNabla's bit
for bit.

Measured in units in the last place of float32 (ulp) of the parameters and states after each
step: 0 (NNabla's bits) but where a norm is summed in another order (:data:`NORM_BOUND`);
``python tests/solvers/test_nnabla_torch_path_sweep.py /tmp/large.npz`` after ``make_sweep.py
--large /tmp/large.npz`` prints the table over larger tensors.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.solvers as S

HERE = os.path.dirname(os.path.abspath(__file__))
SWEEP = os.path.join(HERE, "..", "fixtures", "nnabla_solver_sweep", "sweep.npz")


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Units in the last place between float32 arrays: the distance of their bit patterns
    in float32's order (0 for equal values, NaN against NaN, and ``+0`` against ``-0``; a NaN
    against a number counts as ``2**31``)."""
    def ordered(a):
        bits = np.ascontiguousarray(a, np.float32).view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    dist = np.abs(ordered(got) - ordered(want))
    both_nan = np.isnan(got) & np.isnan(want)
    one_nan = np.isnan(got) ^ np.isnan(want)
    return np.where(both_nan, 0, np.where(one_nan, 2 ** 31, dist))


def ulps_of_largest(got: np.ndarray, want: np.ndarray) -> float:
    """``max |got - want|`` in units in the last place of ``want``'s largest magnitude (a
    norm summed in another order moves every element by a few of these: an element near 0,
    an ``m`` that nearly cancels, then differs by many of its own); NaN where they differ in
    NaNs."""
    if not np.array_equal(np.isnan(got), np.isnan(want)):
        return float("nan")
    fine = ~np.isnan(want)
    if not fine.any():
        return 0.0
    w = want[fine].astype(np.float64)
    unit = float(np.spacing(np.float32(np.abs(w).max())))
    return float(np.abs(got[fine] - w).max() / unit)


@contextmanager
def _compiling():
    """``torch.compiler.is_compiling()`` is ``True`` inside: the solvers take the path of a
    compiled step (and of tensors on CUDA)."""
    real = torch.compiler.is_compiling
    torch.compiler.is_compiling = lambda: True
    try:
        yield
    finally:
        torch.compiler.is_compiling = real


def _tensor(a: np.ndarray, layout: str) -> torch.Tensor:
    if layout == "contiguous" or a.ndim < 2:
        if layout == "column-major":          # a 1-d parameter: every other element
            wide = np.zeros(2 * a.size, np.float32)
            wide[::2] = a
            return torch.from_numpy(wide)[::2]
        return torch.from_numpy(a.copy())
    back = tuple(reversed(range(a.ndim)))
    return torch.from_numpy(np.ascontiguousarray(a.transpose(back))).permute(back)


def replay(data, case: str, layout: str, foreach: bool) -> dict[str, np.ndarray]:
    """Stadyn's run of ``make_sweep.py``'s ``case``: ``{"<k>/<name>": flat values}`` as the
    reference stores them."""
    spec = json.loads(str(data["spec"]))
    cls, kwargs, lr_name = spec["solvers"][case]
    shapes = [tuple(s) for s in spec["shapes"]]
    params = []
    for i, shape in enumerate(shapes):
        v = sd.Variable.from_numpy_array(data[f"w0/{i}"].copy(), need_grad=True)
        v.data = _tensor(data[f"w0/{i}"], layout)
        params.append(v)
    named = {f"p{i}": p for i, p in enumerate(params)}

    def make():
        solver = getattr(S, cls)(**kwargs)
        solver.foreach = foreach
        solver.set_parameters(named)
        return solver

    solver = make()
    out = {}
    for k, calls in enumerate(spec["steps"], 1):
        for i, p in enumerate(params):
            p.grad = _tensor(data[f"g{k}/{i}"], layout)
        with _compiling() if layout == "compiled" else _nothing():
            solver = _calls(solver, calls, make, kwargs[lr_name])
        out[f"{k}/w"] = np.concatenate([p.d.reshape(-1) for p in params])
        states = solver.get_states()
        for key in states["p0"].pstate:
            out[f"{k}/{key}"] = np.concatenate(
                [states[f"p{i}"].pstate[key].d.reshape(-1) for i in range(len(shapes))])
    return out


def _calls(solver, calls, make, lr):
    """One step's calls of the script, then ``update``; the solver that carries on."""
    for call in calls:
        if call[0] == "roundtrip":
            copied = {name: S.SolverState(
                pstate={key: sd.Variable.from_numpy_array(v.d.copy())
                        for key, v in state.pstate.items()}, t=state.t)
                for name, state in solver.get_states().items()}
            solver = make()
            solver.set_states(copied)
        elif call[0] == "set_learning_rate":
            solver.set_learning_rate(lr * call[1])
        else:
            getattr(solver, call[0])(call[1])
    solver.update()
    return solver


@contextmanager
def _nothing():
    yield


def worst(data, case: str, layout: str, foreach: bool, scaled: bool = False
          ) -> tuple[float, str]:
    """The largest distance from NNabla's values over the case's stored arrays, and where:
    in ulp of each element (:func:`ulps`), or with ``scaled`` in ulp of each array's largest
    magnitude (:func:`ulps_of_largest`)."""
    got = replay(data, case, layout, foreach)
    prefix = case + "/"
    top, where = 0.0, ""
    for key in data.files:
        if not key.startswith(prefix):
            continue
        mine, want = got[key[len(prefix):]], data[key]
        if scaled:
            d = ulps_of_largest(mine, want)
            if not d <= top:
                top, where = d, key
        else:
            d = ulps(mine, want)
            if d.size and int(d.max()) > top:
                top, where = int(d.max()), f"{key}[{int(d.argmax())}]"
    return top, where


def _cases():
    with np.load(SWEEP) as data:
        return sorted(json.loads(str(data["spec"]))["solvers"])


@pytest.fixture(scope="module")
def sweep():
    with np.load(SWEEP) as data:
        yield {k: data[k] for k in data.files}


class _Data(dict):
    @property
    def files(self):
        return list(self)


@pytest.mark.parametrize("case", _cases())
def test_blocks_equal_nnabla_bit_for_bit(sweep, case):
    """Contiguous float32 CPU parameters take the blocks: NNabla 1.39's values exactly."""
    top, where = worst(_Data(sweep), case, "contiguous", True)
    assert top == 0, where


#: Where the compiled path is not NNabla's bit for bit: a norm.  NNabla sums ``g*g`` (or ``w*w``,
#: ``r*r``) one float32 addition after another, torch in another order; with NNabla's order
#: the path is exact on every case here (measured by swapping ``torch._foreach_norm`` for a
#: sequential sum).  A norm an ulp or two off moves the elements it scales by as much *of the
#: largest element* (:func:`ulps_of_largest`), an element near 0 by many of its own ulps.
#: Bounds: this fixture's largest, rounded up.  Over ``LARGE`` (64,500 values, ``__main__``
#: below) the sums drift further apart: Lamb 0.5; Lars 209 (its ``v`` 1.5e-5 relative: the
#: local rate follows the two norms); compiled, where ``clip_grad_by_norm``'s norm is torch's
#: too: 1.5-3.4 for most, RMSpropGraves 35, Lion 32, Adadelta 71, Lars 208.
NORM_BOUND = {"Lamb": 2.0, "Lamb_bias_correction": 2.0, "Lars": 2.0}
COMPILED_BOUND = {"Lion": 8.0}


@pytest.mark.parametrize("foreach", [True, False], ids=["foreach", "per-tensor"])
@pytest.mark.parametrize("case", _cases())
def test_torch_path_equals_nnabla(sweep, case, foreach):
    """Non-contiguous parameters (the solvers' torch path; ``weight_decay`` and
    ``clip_grad_by_norm`` on the blocks, Lamb's and Lars' norms summed as NNabla sums them):
    NNabla 1.39's bits.  Before rmnnsolv41 Lamb's and Lars' norms were torch's (up to 2 ulp
    of the largest element here).
    Before: ``1 - beta2`` and ``1 - beta1`` in double (AdaBound, AMSBound, Lamb, AdaBelief:
    ``var`` 214-217 ulp off after one step, AMSBound's ``w`` 2176 after six), products fused
    into their sums and step sizes in double (RMSpropGraves 275 ulp, Adamax 65, RMSprop 31,
    SgdW 24, Sgd 3), ``weight_decay`` as one multiply-add."""
    top, where = worst(_Data(sweep), case, "column-major", foreach)
    assert top == 0, where


@pytest.mark.parametrize("foreach", [True, False], ids=["foreach", "per-tensor"])
@pytest.mark.parametrize("case", _cases())
def test_compiled_path_equals_nnabla_but_for_norms(sweep, case, foreach):
    """Nothing on the blocks (``torch.compiler.is_compiling()``: a compiled step's path, and
    CUDA's): ``clip_grad_by_norm``'s norm is torch's sum too."""
    top, where = worst(_Data(sweep), case, "compiled", foreach, scaled=True)
    assert top <= max(COMPILED_BOUND.get(case, 2.0), NORM_BOUND.get(case, 0.0)), where


def _tensor_scalars(scalars):
    return {k: [torch.tensor(float(x)) for x in v] if isinstance(v, list)
            else torch.tensor(float(v)) for k, v in scalars.items()}


@pytest.mark.parametrize("case", _cases())
def test_compiled_step_scalars_as_tensors(sweep, case):
    """A compiled step feeds the scalars as 0-d float32 tensors (``compile/_step.py``): the
    same numbers as the floats, on the path a compiled step takes."""
    spec = json.loads(str(sweep["spec"]))
    cls, kwargs, _ = spec["solvers"][case]
    results = []
    for convert in (dict, _tensor_scalars):
        solver = getattr(S, cls)(**kwargs)
        ws = [torch.from_numpy(sweep[f"w0/{i}"].copy()) for i in range(3)]
        states = {k: [torch.zeros_like(w) for w in ws] for k in solver._state_names}
        with _compiling():
            for t in (1, 2):
                grads = [torch.from_numpy(sweep[f"g{t}/{i}"].copy()) for i in range(3)]
                solver.apply_step(ws, grads, states, convert(solver._scalars([t] * 3)))
        results.append([w.numpy() for w in ws])
    for got, want in zip(*results):
        np.testing.assert_array_equal(got, want)


if __name__ == "__main__":           # measure: python this.py LARGE.npz
    with np.load(sys.argv[1]) as f:
        big = _Data({k: f[k] for k in f.files})
    print("%-28s %14s %14s %14s" % ("case", "ulp", "ulp of largest", "compiled"))
    for name in sorted(json.loads(str(big["spec"]))["solvers"]):
        row = (worst(big, name, "column-major", True)[0],
               worst(big, name, "column-major", True, scaled=True)[0],
               worst(big, name, "compiled", True, scaled=True)[0])
        print("%-28s %14d %14.2f %14.2f" % (name, *row), flush=True)
