"""Model files an older Stadyn wrote for an NDL network load into today's network: the file in
``tests/fixtures/brainscript/ndl_d47d4df`` was written by Stadyn d47d4df (its
``make_model.py``), before a flat ``Times`` weight took its input's dimensions (``W`` (6, 4)
in the file, (3, 2, 4) built) and before parameters made inside an argument were named
``unnamed<n>`` (``anonymous_1/W``, ``anonymous_2/W`` in the file, of one shape; the macro
calls ``Bias(4)`` inside an argument ``unnamed4``, ``unnamed5``, now ``unnamed18``,
``unnamed21``)."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ModelFileError
from stadyn.brainscript import StadynLibrary, build_network, parse_config
from stadyn.brainscript._blocks import command_config
from stadyn.brainscript._command_network import CommandNetwork
from stadyn.brainscript._model_files import load_model_parameters, save_model

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "brainscript",
                       "ndl_d47d4df")


def _writer():
    spec = importlib.util.spec_from_file_location("make_model",
                                                  os.path.join(FIXTURE, "make_model.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_model_file_of_d47d4df_loads_into_todays_ndl_network():
    writer = _writer()
    cmd = command_config(parse_config(writer.CONFIG), "T")
    with sd.parameter_registry(sd.ParameterRegistry()):
        network = CommandNetwork(cmd.network, 0.0)
        params = dict(sd.get_parameters())
        assert {k: v.shape for k, v in params.items()} == \
            {"W": (3, 2, 4), "unnamed9": (1, 4), "unnamed13": (1, 4), "unnamed18.b": (1, 4),
             "unnamed21.b": (1, 4)}
        # (the runner passes the same aliases to load_model_parameters and resume)
        assert network.net.reshaped_weights == {"W"}      # by NDL's Times rule
        load_model_parameters(os.path.join(FIXTURE, "model.dnn"),
                              aliases=network.precompute_aliases,
                              reshaped=network.net.reshaped_weights)
        old = writer.VALUES
        np.testing.assert_array_equal(params["W"].d.reshape(6, 4), old["W"])
        np.testing.assert_array_equal(params["unnamed9"].d, old["anonymous_1/W"])
        np.testing.assert_array_equal(params["unnamed13"].d, old["anonymous_2/W"])
        # the macro calls made inside an argument: d47d4df numbered them unnamed<k> with a
        # count of its own (calls inside arguments, in order), cntk.exe's count is another
        np.testing.assert_array_equal(params["unnamed18.b"].d, old["unnamed4.b"])
        np.testing.assert_array_equal(params["unnamed21.b"].d, old["unnamed5.b"])
        x = np.arange(6, dtype=np.float32).reshape(1, 3, 2) / 10
        network.net.nodes["x"].d = x
        z = network.net.nodes["z"]
        z.forward()
        expected = x.reshape(1, 6) @ old["W"] + old["anonymous_1/W"] + old["anonymous_2/W"] + \
            old["unnamed4.b"] + old["unnamed5.b"]
        np.testing.assert_allclose(z.d.reshape(1, 4), expected, rtol=1e-6)


def test_without_the_old_names_the_same_shaped_parameters_stay_a_loud_error():
    # the shapes alone cannot tell anonymous_1/W from anonymous_2/W: never a guess
    cmd = command_config(parse_config(_writer().CONFIG), "T")
    with sd.parameter_registry(sd.ParameterRegistry()):
        network = CommandNetwork(cmd.network, 0.0)
        with pytest.raises(ModelFileError, match=r"model\.dnn: was written by an older Stadyn"
                                                 r".*anonymous_1/W, anonymous_2/W"):
            load_model_parameters(os.path.join(FIXTURE, "model.dnn"),
                                  reshaped=network.net.reshaped_weights)


def test_old_names_that_are_other_calls_names_today_load_as_one_renaming():
    # net_18_calls.ndl: 18 Bias(4) calls inside arguments; d47d4df named them unnamed18.b ..
    # unnamed35.b by call (make_model_18_calls.py set call k's bias to k), today they are
    # unnamed22.b, unnamed25.b .. unnamed73.b: the file's unnamed22.b (call 5) and others are
    # names of other calls today, so the aliases apply to the file as one renaming
    spec = importlib.util.spec_from_file_location(
        "make_model_18_calls", os.path.join(FIXTURE, "make_model_18_calls.py"))
    writer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(writer)
    cmd = command_config(parse_config(writer.CONFIG), "T")
    with sd.parameter_registry(sd.ParameterRegistry()):
        network = CommandNetwork(cmd.network, 0.0)
        params = dict(sd.get_parameters())
        assert list(params) == [f"unnamed{22 + 3 * k}.b" for k in range(18)]
        load_model_parameters(os.path.join(FIXTURE, "model_18_calls.dnn"),
                              aliases=network.precompute_aliases)
        for call, (name, value) in enumerate(params.items(), start=1):
            np.testing.assert_array_equal(value.d, np.full((1, 4), call, np.float32),
                                          err_msg=name)
        x = np.arange(4, dtype=np.float32).reshape(1, 1, 4)
        network.net.nodes["x"].d = x
        o = network.net.nodes["o"]
        o.forward()
        np.testing.assert_array_equal(o.d.reshape(4), 2 * x.reshape(4) + sum(range(1, 19)))


_LAYER = """{{ x = Input {{{dims}}} ; labels = Input {{2}}
    W = ParameterTensor {{{weight}}}
    z = W * x
    ce = CrossEntropyWithSoftmax (labels, z) ; criterionNodes = (ce) ; outputNodes = (z) }}"""


def test_only_the_weights_ndl_reshaped_load_from_a_flat_value(tmp_path):
    # a BrainScript network whose layer changed from [2 x 6] (input 6) to [2 x 3 x 2] (input
    # 3 x 2): the same number of values, but not a weight NDL's Times rule reshaped, so the
    # model file of the first does not fit the second (a loud error, as before NDL's rule)
    path = str(tmp_path / "layer.dnn")
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(_LAYER.format(dims="6", weight="(2:6)"), StadynLibrary())
        assert net.nodes["W"].shape == (6, 2)
        save_model(path, {"z": net.nodes["z"], "ce": net.nodes["ce"]},
                   {k: net.nodes[k] for k in ("x", "labels")})
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(_LAYER.format(dims="(3:2)", weight="(2:3:2)"), StadynLibrary())
        assert net.nodes["W"].shape == (2, 3, 2)
        with pytest.raises(ModelFileError, match=r"layer\.dnn: parameter 'W' has shape "
                                                 r"\(6, 2\) in the file but \(2, 3, 2\)"):
            load_model_parameters(path)
        assert not net.reshaped_weights
