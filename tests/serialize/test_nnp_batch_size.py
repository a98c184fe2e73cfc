"""The batch size of an ``.nnp`` file Stadyn writes is NNabla's variable batch size: a file
saved at one batch size runs at any other, in Stadyn and in the real NNabla 1.39.

NNabla 1.39's ``nnabla.utils.save.save`` writes the batch axis as ``-1``, in the variables'
shapes and in the first size of a ``Reshape`` or ``Broadcast`` to a shape with the batch axis;
its loaders (``NnpLoader.get_network(..., batch_size=n)``, ``nnabla.utils.load.load(...,
batch_size=n)``) put ``n`` in its place.  A ``Reshape`` written at the export's batch size
fails in NNabla's reshape.cpp at any other.  The fixture ``nnabla_files/batch_shapes.nnp`` and
its outputs at batch sizes 2 and 4 were written by NNabla 1.39 (``make_nnp_batch_shapes.py``).
"""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
import peers

import stadyn as sd
import stadyn.functions as F
import stadyn.parametric_functions as PF
from stadyn.serialize import read_legacy_model

HERE = os.path.dirname(os.path.abspath(__file__))
NNABLA_FILE = os.path.join(HERE, "nnabla_files", "batch_shapes.nnp")
REF = dict(np.load(os.path.join(HERE, "nnabla_files", "batch_shapes_reference.npz")))
NNABLA = peers.NNABLA_PYTHON
needs_nnabla = pytest.mark.skipif(
    not os.path.exists(NNABLA),
    reason=f"the real NNabla 1.39 venv is not here ({NNABLA}; set STADYN_NNABLA_PYTHON)")


def _save_stadyns(path):
    """The fixture's network built in Stadyn at batch size 2 with NNabla's parameters."""
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        x = sd.Variable((2, 3, 4))
        y = PF.affine(F.reshape(x, (2, 12)), 5, name="fc")
        z = F.broadcast(F.reshape(F.sum(x, axis=(1, 2)), (2, 1)), (2, 7))
        w = F.reshape(x, (2, -1, 2))
    for name, p in registry.items():
        p.d = REF["param/" + name]
    sd.save_nnp(path, {"y": y, "z": z, "w": w}, {"x": x})
    return path


def _shaped(path):
    """``(type, shape field)`` of each function with a shape, and each variable's shape."""
    net = read_legacy_model(path).networks["network"]
    functions = [(f.type, tuple(f.attrs["shape"])) for f in net.functions
                 if f.type in ("Reshape", "Broadcast")]
    return functions, {n: tuple(v.shape) for n, v in net.variables.items()
                       if n in ("x", "y", "z", "w")}


def test_stadyn_writes_the_batch_axis_of_reshape_and_broadcast_as_nnabla_does(tmp_path):
    mine = _shaped(_save_stadyns(tmp_path / "mine.nnp"))
    theirs = _shaped(NNABLA_FILE)
    assert mine == theirs
    assert mine[0] == [("Reshape", (-1, 12)), ("Reshape", (-1, 1)), ("Broadcast", (-1, 7)),
                       ("Reshape", (-1, 6, 2))]


@pytest.mark.parametrize("batch", [2, 4])
def test_stadyns_file_runs_in_stadyn_at_any_batch_size_as_nnablas_did(tmp_path, batch):
    net = sd.load(_save_stadyns(tmp_path / "mine.nnp"), batch_size=batch)
    got = net(x=REF[f"b{batch}/x"])
    for name in ("y", "z", "w"):
        np.testing.assert_allclose(got[name], REF[f"b{batch}/{name}"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batch", [2, 4])
def test_nnablas_file_runs_in_stadyn_at_any_batch_size(batch):
    got = sd.load(NNABLA_FILE, batch_size=batch)(x=REF[f"b{batch}/x"])
    for name in ("y", "z", "w"):
        np.testing.assert_allclose(got[name], REF[f"b{batch}/{name}"], rtol=1e-5, atol=1e-6)


_RUN = """
import sys, numpy as np, nnabla as nn
from nnabla.utils.load import load
from nnabla.utils.nnp_graph import NnpLoader
path, ref, out = sys.argv[1:4]
ref, result = np.load(ref), {}
for batch in (2, 4):
    nn.clear_parameters()
    net = NnpLoader(path).get_network("network", batch_size=batch)
    net.inputs["x"].d = ref["b%d/x" % batch]
    nn.forward_all(list(net.outputs.values()))
    result.update(("b%d/%s" % (batch, k), v.d.copy()) for k, v in net.outputs.items())
nn.clear_parameters()
info = load([path], prepare_data_iterator=False, batch_size=4)
info.networks["network"].variables["x"].variable_instance.d = ref["b4/x"]
info.executors["runtime"].forward_target.forward()
for k in ("y", "z", "w"):
    result["load4/" + k] = info.networks["network"].variables[k].variable_instance.d.copy()
np.savez(out, **result)
"""


@needs_nnabla
def test_stadyns_file_runs_in_nnabla_at_another_batch_size(tmp_path):
    """NNabla 1.39 runs Stadyn's file (saved at batch size 2) at 2 and 4 with ``NnpLoader``
    and at 4 with ``nnabla.utils.load``, to the outputs it computed from its own file."""
    path = _save_stadyns(tmp_path / "mine.nnp")
    out = tmp_path / "out.npz"
    proc = subprocess.run([NNABLA, "-c", _RUN, str(path),
                           os.path.join(HERE, "nnabla_files", "batch_shapes_reference.npz"),
                           str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = dict(np.load(out))
    for key in [k for k in REF if k.split("/")[0] in ("b2", "b4", "load4") and k[-1] != "x"]:
        np.testing.assert_allclose(got[key], REF[key], rtol=1e-5, atol=1e-6, err_msg=key)


def _centred(path):
    """``x - mean(x, axis=0)``: a Broadcast back to the batch of a statistic over the batch
    (no input of the Broadcast has the batch axis, but it is computed from the data, so NNabla's
    ``variable_batch_size`` writes its shape with ``-1``)."""
    x = sd.Variable((2, 3))
    y = F.sub2(x, F.broadcast(F.mean(x, axis=0, keepdims=True), (2, 3)))
    sd.save_nnp(path, {"y": y}, {"x": x})
    return path


def test_a_broadcast_over_the_batch_of_a_batch_statistic_takes_any_batch_size(tmp_path):
    path = _centred(tmp_path / "centred.nnp")
    (f,) = [f for f in read_legacy_model(path).networks["network"].functions
            if f.type == "Broadcast"]
    assert tuple(f.attrs["shape"]) == (-1, 3)
    x = np.arange(12, dtype=np.float32).reshape(4, 3) ** 2
    got = sd.load(path, batch_size=4)(x=x)["y"]
    np.testing.assert_allclose(got, x - x.mean(axis=0), rtol=1e-6)


@needs_nnabla
def test_nnabla_runs_a_broadcast_over_the_batch_at_another_batch_size(tmp_path):
    path = _centred(tmp_path / "centred.nnp")
    x = np.arange(12, dtype=np.float32).reshape(4, 3) ** 2
    script = ("import sys, numpy as np, nnabla as nn\n"
              "from nnabla.utils.nnp_graph import NnpLoader\n"
              "net = NnpLoader(sys.argv[1]).get_network('network', batch_size=4)\n"
              "net.inputs['x'].d = np.load(sys.argv[2])\n"
              "net.outputs['y'].forward()\n"
              "np.save(sys.argv[3], net.outputs['y'].d)\n")
    np.save(tmp_path / "x.npy", x)
    proc = subprocess.run([NNABLA, "-c", script, str(path), str(tmp_path / "x.npy"),
                           str(tmp_path / "y.npy")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), x - x.mean(axis=0), rtol=1e-6)


# -- where the batch axis comes from ----------------------------------------------------------
# Networks saved at batch size 3 whose other axes also have size 3: the batch axis is followed
# from the input through the ops, not taken from every first axis of size 3.  Each: the
# network, the Reshape/Broadcast shapes the file must hold, and NumPy's output at any batch size
# (None: the network fixes the batch size -- an axis of the batch's size moved first -- so at
# another one NNabla and Stadyn must fail, not compute a shape silently).
SAVED, OTHER = 3, 5


def _channels_first(F, x):      # (B, 3, 2, 2) -> the channel axis first, its mean per channel
    return F.mean(F.reshape(F.transpose(x, (1, 0, 2, 3)), (3, 12)), axis=1)


def _channels_last(F, x):       # (B, 3, 2, 2) -> (B, 2, 2, 3) -> (B, 12): the batch axis stays
    return F.reshape(F.transpose(x, (0, 2, 3, 1)), (SAVED, 12))


def _gram(F, x):                # (B, 3): x.T @ x is (3, 3) at any batch size
    return F.reshape(F.dot(F.transpose(x, (1, 0)), x), (3, 3, 1))


def _batch_sum(F, x):           # (B, 3): a sum over the batch axis has none
    return F.reshape(F.sum(x, axis=0), (3, 1))


def _per_sample(F, x):          # (B, 3): a sum over the other axis keeps it
    return F.reshape(F.sum(x, axis=1), (SAVED, 1))


def _centring(F, x):            # a statistic over the batch broadcast back to it
    return F.sub2(x, F.broadcast(F.mean(x, axis=0, keepdims=True), (SAVED, 3)))


FOLLOWED = {
    "channels_first": ((3, 2, 2), _channels_first, [("Reshape", (3, 12))], None),
    "channels_last": ((3, 2, 2), _channels_last, [("Reshape", (-1, 12))],
                      lambda x: x.transpose(0, 2, 3, 1).reshape(len(x), 12)),
    "gram": ((3,), _gram, [("Reshape", (3, 3, 1))], lambda x: (x.T @ x).reshape(3, 3, 1)),
    "batch_sum": ((3,), _batch_sum, [("Reshape", (3, 1))], lambda x: x.sum(0).reshape(3, 1)),
    "per_sample": ((3,), _per_sample, [("Reshape", (-1, 1))], lambda x: x.sum(1)[:, None]),
    "centred": ((3,), _centring, [("Broadcast", (-1, 3))], lambda x: x - x.mean(0)),
}


def _followed_file(tmp_path, name):
    shape, build, _, _ = FOLLOWED[name]
    x = sd.Variable((SAVED,) + shape)
    path = tmp_path / f"{name}.nnp"
    sd.save_nnp(path, {"y": build(F, x)}, {"x": x})
    return path


def _followed_input(name, batch):
    return np.random.RandomState(batch).rand(batch, *FOLLOWED[name][0]).astype(np.float32)


@pytest.mark.parametrize("name", sorted(FOLLOWED))
def test_the_batch_axis_is_followed_from_the_input_not_taken_from_sizes(tmp_path, name):
    """Before, every first axis of the batch's size computed from the data was written ``-1``
    (channels_first, gram, batch_sum); NNabla then ran channels_first at batch size 8 to a
    mean of shape (8,) instead of (3,)."""
    net = read_legacy_model(_followed_file(tmp_path, name)).networks["network"]
    shapes = [(f.type, tuple(f.attrs["shape"])) for f in net.functions
              if f.type in ("Reshape", "Broadcast")]
    assert shapes == FOLLOWED[name][2]


@pytest.mark.parametrize("name", sorted(FOLLOWED))
def test_stadyn_runs_the_file_at_another_batch_size_as_numpy_or_fails(tmp_path, name):
    path, want = _followed_file(tmp_path, name), FOLLOWED[name][3]
    x = _followed_input(name, SAVED)
    if want is not None:
        np.testing.assert_allclose(sd.load(path)(x=x)["y"], want(x), rtol=1e-5, atol=1e-6)
    x = _followed_input(name, OTHER)
    if want is None:
        with pytest.raises(Exception, match="Reshape"):
            sd.load(path, batch_size=OTHER)(x=x)
        return
    np.testing.assert_allclose(sd.load(path, batch_size=OTHER)(x=x)["y"], want(x),
                               rtol=1e-5, atol=1e-6)


_RUN_FOLLOWED = """
import sys, numpy as np, nnabla as nn
from nnabla.utils.nnp_graph import NnpLoader
path, x, out = sys.argv[1:4]
x = np.load(x)
try:
    net = NnpLoader(path).get_network("network", batch_size=len(x))
    net.inputs["x"].d = x
    net.outputs["y"].forward()
    np.save(out, net.outputs["y"].d)
except Exception as e:
    print("NNabla failed:", str(e).splitlines()[0] if str(e) else type(e).__name__)
"""


@needs_nnabla
@pytest.mark.parametrize("name", sorted(FOLLOWED))
def test_nnabla_runs_the_file_at_another_batch_size_as_numpy_or_fails(tmp_path, name):
    path, want = _followed_file(tmp_path, name), FOLLOWED[name][3]
    x = _followed_input(name, OTHER)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "y.npy"
    proc = subprocess.run([NNABLA, "-c", _RUN_FOLLOWED, str(path), str(tmp_path / "x.npy"),
                           str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    if want is None:
        assert "NNabla failed" in proc.stdout and not out.exists(), proc.stdout
    else:
        assert out.exists(), proc.stdout + proc.stderr[-2000:]
        np.testing.assert_allclose(np.load(out), want(x), rtol=1e-5, atol=1e-6)


def test_stadyn_reads_nnablas_batch_placeholder_as_the_batch_size_as_nnabla_does():
    """NNabla's loaders put the batch size they build the network with in place of a first size
    ``-1`` of any function's shape (``ProtoFunction.graph_call``), whatever the input's first
    axis is.  NNabla 1.39 wrote ``batch_placeholder.nnp`` at batch size 2 with a Reshape to
    (-1, 2, 1) of a transpose and a Broadcast to (-1, 2) of a mean over the batch
    (``make_nnp_batch_placeholder.py``).  Before, Stadyn put the input's first axis there
    instead: the transpose's 2 (a Reshape of 8 values to (2, 2, 1): an error), and the
    Broadcast kept the mean's 1 (``m`` of shape (1, 2))."""
    ref = dict(np.load(os.path.join(HERE, "nnabla_files", "batch_placeholder_reference.npz")))
    x = ref["x"]
    got = sd.load(os.path.join(HERE, "nnabla_files", "batch_placeholder.nnp"), batch_size=4)(x=x)
    np.testing.assert_allclose(got["y"], x.T.reshape(4, 2, 1))
    np.testing.assert_allclose(got["m"], np.broadcast_to(x.mean(axis=0), (4, 2)), rtol=1e-6)
    for name in ("y", "m", "a"):
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-5, atol=1e-6, err_msg=name)
