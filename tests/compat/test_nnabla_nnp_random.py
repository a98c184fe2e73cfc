"""An NNabla ``.nnp`` file loaded through compat.nnabla draws NNabla 1.39's random numbers.

``tests/fixtures/nnp_random/random.nnp`` (written by the real NNabla 1.39, ``make_nnp.py``
there) holds a network of ``Dropout``, ``Randn`` (the global generator), ``Rand`` with a seed of
its own (7), ``RandomFlip`` and ``RandomCrop``; ``random.npz`` holds what NNabla 1.39 draws with
it after ``nn.seed(313)``, two forwards of each output in turn, through ``NnpLoader`` and
through ``nnabla.utils.load.load``'s executor.  Before, the file's functions drew torch's
numbers (every output but the flip of the first forward differed).  Stadyn's own
``stadyn.load_nnp`` keeps drawing torch's numbers, as Stadyn's ops do.  ``augment.nnp`` and
``augment.npz`` (the same script) do the same for ``ImageAugmentation``.
"""

from __future__ import annotations

import os

import numpy as np

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.functions as SF
from stadyn.compat.nnabla.utils.load import load
from stadyn.compat.nnabla.utils.nnp_graph import NnpLoader

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "nnp_random")
PATH = os.path.join(FIXTURES, "random.nnp")
ORDER = ("y", "n", "u", "f", "c")


def _data():
    return np.load(os.path.join(FIXTURES, "random.npz"))


def test_an_nnp_loader_network_draws_nnablas_numbers():
    data = _data()
    net = NnpLoader(PATH).get_network("net", batch_size=2)
    net.inputs["x"].d = data["x"]
    nn.seed(313)
    for k in range(2):
        for name in ORDER:
            out = net.outputs[name]
            out.forward()
            np.testing.assert_array_equal(out.d, data[f"{name}{k}"], err_msg=f"{name}{k}")


def test_an_executor_of_nnabla_utils_load_draws_nnablas_numbers():
    data = _data()
    # a network of the same file built and run before: its Rand(seed=7) has a generator of its
    # own, which the executor's Rand must not continue (NNabla seeds one per function)
    first = NnpLoader(PATH).get_network("net", batch_size=2)
    first.inputs["x"].d = data["x"]
    first.outputs["u"].forward()
    ex = load([PATH]).executors["runtime"]
    ex.network.variables["x"].variable_instance.d = data["x"]
    nn.seed(313)
    for k in range(2):
        for name in ORDER:
            v = ex.network.variables[name].variable_instance
            v.forward()
            np.testing.assert_array_equal(v.d, data[f"exec_{name}{k}"], err_msg=f"{name}{k}")


def test_stadyn_load_nnp_keeps_drawing_torchs_numbers():
    # Stadyn's own loader draws as Stadyn's ops draw: the dropout mask F.dropout makes after
    # the same seed, not NNabla's
    data = _data()
    net = sd.load_nnp(PATH)
    sd.seed(313)
    y = net(x=data["x"])["y"]
    sd.seed(313)
    with sd.auto_forward():
        expected = SF.dropout(sd.Variable.from_numpy_array(data["x"]), 0.5).d
    np.testing.assert_array_equal(y, expected)
    assert not np.array_equal(y, data["y0"])


def test_a_loaded_nnp_files_image_augmentation_draws_nnablas_numbers():
    # augment.nnp (NNabla 1.39, make_nnp.py's augment()): ImageAugmentation from the global
    # generator and with a seed of its own, two forwards each after nn.seed(313) (before: the
    # file's ImageAugmentation drew torch's numbers)
    data = np.load(os.path.join(FIXTURES, "augment.npz"))
    net = NnpLoader(os.path.join(FIXTURES, "augment.nnp")).get_network("net", batch_size=2)
    net.inputs["xi"].d = data["xi"]
    nn.seed(313)
    for k in range(2):
        for name in ("g", "s"):
            out = net.outputs[name]
            out.forward()
            np.testing.assert_allclose(out.d, data[f"{name}{k}"], rtol=1e-5, atol=1e-6,
                                       err_msg=f"{name}{k}")
