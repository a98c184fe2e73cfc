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
