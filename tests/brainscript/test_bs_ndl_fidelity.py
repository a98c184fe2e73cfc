"""``NDLNetworkBuilder``: more of cntk.exe's rules (the C++ source cited at each test), on NDL
written here."""

from __future__ import annotations

import numpy as np
import pytest

from stadyn._errors import ConfigError
from test_bs_ndl import _build_text, _ndl_config


def test_ndl_times_gives_a_flat_weight_its_inputs_dimensions(tmp_path):
    # LinearAlgebraNodes.h, TimesNodeBase::Validate ("support for legacy models when only the
    # matrix dimensions had to match"): W [4 x 6] times x [2 x 3] patches W to [4 x 2 x 3]
    # (the same values; Stadyn holds a parameter's dims reversed)
    net_text = "x = Input(2, 3)\nW = Parameter(4, 6)\ny = Times(W, x)\nOutputNodes = (y)"
    net, _, params = _build_text(_ndl_config(tmp_path, net_text))
    assert params["W"].shape == (3, 2, 4)
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2) / 10
    net.nodes["x"].reset_shape(x.shape, force=True)
    net.nodes["x"].d = x
    net.output_nodes[0].forward()
    np.testing.assert_allclose(net.output_nodes[0].d.reshape(2, 4),
                               x.reshape(2, 6) @ params["W"].reshape(6, 4), rtol=1e-5)
    # a weight that already fits is left alone; one no leading dims explain is an error
    _, _, params = _build_text(_ndl_config(tmp_path, "x = Input(6)\nW = Parameter(4, 6)\n"
                                                     "y = Times(W, x)"))
    assert params["W"].shape == (6, 4)
    with pytest.raises(ConfigError, match=r"net\.ndl:7:5: .*Times"):
        _build_text(_ndl_config(tmp_path, "x = Input(2, 3)\nW = Parameter(4, 5)\n"
                                          "y = Times(W, x)"))


def _macro_config(tmp_path, body: str, run: str) -> str:
    (tmp_path / "macros.ndl").write_text(f"M(x) = [\n{body}\n]\n")
    (tmp_path / "net.ndl").write_text(f"run = net\nnet = [\n{run}\n]\n")
    return (f"command = T\nT = [\n action = train\n NDLNetworkBuilder = [\n"
            f"  ndlMacros = {tmp_path}/macros.ndl\n  networkDescription = {tmp_path}/net.ndl\n"
            " ]\n]\n")


def test_a_macro_body_does_not_see_a_sections_values(tmp_path):
    # NetworkDescriptionLanguage.h: a macro's names are looked up in its own script, then the
    # global one (NDLNode::FindNode); a section's value is neither: GetScalar's "undefined
    # Variable, '%s' found, must be declared before first use"
    text = _macro_config(tmp_path, "W = Parameter(hidden, 2)\ny = Times(W, x)",
                         "hidden = 3\nx = Input(2)\nh = M(x)")
    with pytest.raises(ConfigError, match=r"macros\.ndl:2:15: NDL: undefined Variable, 'hidden' "
                                          r"found, must be declared before first use"):
        _build_text(text)
    # a section's node it finds by its name in the network (EvaluateParameter's lookup in the
    # computation network, "needed for MEL processing")
    text = _macro_config(tmp_path, "W = Parameter(3, 2)\ny = Plus(Times(W, x), b)",
                         "b = Parameter(3, 1, init = fixedValue, value = 1)\nx = Input(2)\n"
                         "h = M(x)\nOutputNodes = (h)")
    net, _, params = _build_text(text)
    x = np.array([[1.0, 2.0]], np.float32)
    net.nodes["x"].d = x
    net.output_nodes[0].forward()
    np.testing.assert_allclose(net.output_nodes[0].d.reshape(1, 3), x @ params["h.W"] + 1,
                               rtol=1e-5)
