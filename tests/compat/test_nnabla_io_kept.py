"""compat.nnabla's parameters kept in NNabla 1.39's dtype (``compat/nnabla/_kept_dtypes.py``):
what keeping costs a ``PF`` call, when the kept array is let go, and the files that keep it.
NNabla's numbers are in the harness cases (``compat_cases/nnabla_dtypes_28.py``,
``nnabla_io_35.py``)."""

from __future__ import annotations

import numpy as np

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.parametric_functions as PF
from stadyn.compat.nnabla._kept_dtypes import saved_arrays
from stadyn.parametric import ParameterRegistry


def test_a_pf_call_given_a_float64_initializer_walks_no_registry(monkeypatch):
    # c4441c04 listed every parameter of the scope before and after each such call (twice
    # O(registry) a call, a dynamic-mode loop calling the PF each step paid it each step)
    walks = []
    items = ParameterRegistry.items
    monkeypatch.setattr(ParameterRegistry, "items",
                        lambda self, prefix="": walks.append(prefix) or items(self, prefix))
    x = nn.Variable((2, 3))
    with sd.parameter_registry(ParameterRegistry()):
        for i in range(50):
            sd.get_parameter_or_create(f"other/p{i}", (2,))
        for _ in range(3):          # made by the first call, found by the others
            PF.affine(x, 4, w_init=np.full((3, 4), 1 + 1e-9), name="fc")
        assert walks == []
        kept = saved_arrays(nn.get_parameters())
    assert kept["fc/affine/W"].dtype == np.float64 and kept["fc/affine/W"][0, 0] == 1 + 1e-9
    assert kept["fc/affine/b"].dtype == np.float32
