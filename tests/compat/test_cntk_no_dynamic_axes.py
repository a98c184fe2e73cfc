"""Layers of ``stadyn.compat.cntk`` on an input with no dynamic axes (``dynamic_axes=[]``)
that CNTK 2.7 cannot write a reference for: its Convolution over such an input computes (run
by hand: ``(1, 4, 4)`` with a ``(3, 3)`` filter gives ``(2, 2, 2)``, W ``(2, 1, 3, 3)``) and
then corrupts its heap.  Checked against a NumPy cross-correlation of the sample."""

from pathlib import Path

import numpy as np

import stadyn.compat.cntk as C

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cntk_no_dynamic_axes"


def _correlate(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A valid cross-correlation of one sample ``x`` (channels, h, w) with filters ``w``
    (out, channels, kh, kw)."""
    n, _, kh, kw = w.shape
    oh, ow = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    out = np.zeros((n, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            out[:, i, j] = np.tensordot(w, x[:, i:i + kh, j:j + kw], axes=3)
    return out


def test_convolution_over_an_input_without_dynamic_axes_is_one_sample():
    img = C.input_variable((1, 4, 4), dynamic_axes=[])
    c = C.layers.Convolution((3, 3), 2, init=C.glorot_uniform(seed=3))(img)
    iv = (np.arange(16, dtype=np.float32).reshape(1, 4, 4) - 8) / 8
    assert c.shape == (2, 2, 2) and c.W.shape == (2, 1, 3, 3)
    got = c.eval({img: iv})
    want = _correlate(iv, np.asarray(c.W.value)) + np.asarray(c.b.value)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_layer_over_a_placeholder_without_dynamic_axes_keeps_its_parameters_when_bound():
    p = C.placeholder((3,), dynamic_axes=[])
    f = C.layers.Dense(4, init=C.glorot_uniform(seed=8))(p)
    w, b = np.asarray(f.W.value), np.asarray(f.b.value)
    x = C.input_variable(3, dynamic_axes=[])
    z = f.replace_placeholders({p: x})
    xv = np.array([0.5, -1.0, 2.0], np.float32)
    np.testing.assert_allclose(z.eval({x: xv}), xv @ w + b, rtol=1e-5, atol=1e-6)


def test_batch_normalization_over_an_input_without_dynamic_axes_evaluates_one_sample():
    # CNTK 2.7 (run by hand; its heap is corrupted afterwards, so no reference is written)
    # normalises such an operand with the running statistics when evaluated: for x / 3 of
    # arange(6) as (2, 3), scale 1.5, bias 0.25, mean 0.5, variance 2, it gives
    # [[-0.2803, 0.0732, 0.4268], [0.7803, 1.1339, 1.4874]]: NumPy's (x - m) / sqrt(v + eps)
    shape = (2, 3)
    x = C.input_variable(shape, dynamic_axes=[])
    data = np.arange(6, dtype=np.float32).reshape(shape) / 3.0
    y = C.batch_normalization(x, C.parameter(shape, init=1.5), C.parameter(shape, init=0.25),
                              C.constant(np.full(shape, 0.5, np.float32)),
                              C.constant(np.full(shape, 2.0, np.float32)), spatial=False,
                              running_count=C.constant(0.0))
    assert y.shape == shape and y.output.dynamic_axes == ()
    want = (data - 0.5) / np.sqrt(2.0 + 1e-5) * 1.5 + 0.25
    np.testing.assert_allclose(y.eval({x: data}), want, rtol=1e-5, atol=1e-6)


def test_a_loaded_models_softmax_and_hardmax_of_such_an_input_take_each_row():
    # rows.model and rows.npz written by CNTK 2.7 (fixtures/cntk_no_dynamic_axes/make_models.py)
    f = C.load_model(str(FIXTURES / "rows.model"))
    ref = np.load(FIXTURES / "rows.npz")
    (x,) = f.arguments
    assert x.shape == (3, 4) and x.dynamic_axes == ()
    got = {o.name: v for o, v in f.eval({x: ref["x"]}).items()}
    assert sorted(got) == ["hm", "lse", "sm", "sm0"]
    for name, value in got.items():
        np.testing.assert_allclose(value, ref[name], rtol=1e-5, atol=1e-6, err_msg=name)


def _written_form(path) -> dict:
    """What a CNTK v2 file holds, decoded: its functions' op types (in the file's order, the
    block bodies' too) and its inputs' dynamic axes."""
    from stadyn import serialize
    model = serialize.read_legacy_model(str(path))
    net = model.networks["main"]
    inputs = {v.meta.get("name"): list(v.meta.get("dynamic_axes") or [])
              for v in net.variables.values() if v.meta.get("name") == "x"}
    return {"format": model.format, "inputs": inputs,
            "functions": sorted(f.type for f in net.all_functions())}


def test_a_dense_over_such_an_input_is_saved_in_cntks_format(tmp_path):
    # dense_stadyn.model: written by write_dense.py; dense_read.json: what CNTK 2.7 read of it
    # (read_dense.py): no dynamic axes, a Dense block of Times and Plus, its root the Plus
    import importlib.util
    import json
    spec = importlib.util.spec_from_file_location("write_dense", FIXTURES / "write_dense.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = tmp_path / "dense.model"
    module.write(str(path))
    read = json.loads((FIXTURES / "dense_read.json").read_text())
    assert read["stadyn"] == {**read["own"], "output": read["stadyn"]["output"]}
    assert _written_form(path) == _written_form(FIXTURES / "dense_stadyn.model")
    assert _written_form(path)["inputs"] == {"x": []}
    f = module.dense_model()
    assert f.outputs[0].owner.block_root.op_name == "Plus"
    loaded = C.load_model(str(path))
    (x,) = loaded.arguments
    assert x.dynamic_axes == () and loaded.outputs[0].owner.block_root.op_name == "Plus"
    np.testing.assert_allclose(loaded.eval({x: np.arange(3, dtype=np.float32)}),
                               read["stadyn"]["output"], rtol=1e-6)
