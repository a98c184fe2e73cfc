"""compat.nnabla's parameters kept in NNabla 1.39's dtype (``compat/nnabla/_kept_dtypes.py``):
what keeping costs a ``PF`` call, when the kept array is let go, and the files that keep it.
NNabla's numbers are in the harness cases (``compat_cases/nnabla_dtypes_28.py``,
``nnabla_io_35.py``)."""

from __future__ import annotations

import numpy as np
import pytest

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


def _small_model():
    x = nn.Variable((2, 3))
    h = PF.affine(x, 4, name="fc1")                                   # float32
    y = PF.affine(h, 2, w_init=np.full((4, 2), 1 + 1e-9), name="fc2")  # W kept in float64
    return x, y


def test_an_nnp_save_reads_each_parameter_once_and_writes_the_same_archive(tmp_path,
                                                                           monkeypatch):
    import zipfile

    import stadyn.compat.nnabla._kept_dtypes as kd
    from stadyn.compat.nnabla.utils.save import save
    from stadyn.serialize._nnp_save import parameter_bytes

    reads = []
    saved = kd._saved
    monkeypatch.setattr(kd, "_saved", lambda holder, v: reads.append(v) or saved(holder, v))
    with sd.parameter_registry(ParameterRegistry()):
        x, y = _small_model()
        params = nn.get_parameters(grad_only=False)
        # what c4441c04 wrote: every parameter's value read again after the export, each
        # in its kept dtype (saved_arrays), as parameter.h5
        expected = parameter_bytes({k: (a, params[k].need_grad)
                                    for k, a in saved_arrays(params).items()}, ".h5")
        reads.clear()
        path = tmp_path / "m.nnp"
        save(str(path), {"networks": [{"name": "net", "batch_size": 2, "outputs": {"y": y},
                                       "names": {"x": x}}],
                         "executors": [{"name": "runtime", "network": "net", "data": ["x"],
                                        "output": ["y"]}]})
    # c4441c04 read all four again (the export had read them once); now the kept W only
    assert [v is params["fc2/affine/W"] for v in reads] == [True]
    with zipfile.ZipFile(path) as z:
        assert z.namelist() == ["nnp_version.txt", "network.nntxt", "parameter.h5"]
        assert z.read("parameter.h5") == expected


def test_a_solver_update_lets_go_of_the_kept_float64_copy_at_once(tmp_path):
    # c4441c04 held the float64 copy (8 MB for 1000x1000) until a save or clear_parameters;
    # NNabla's update writes float32 over the array, so after it the copy is dead
    import weakref

    import stadyn.compat.nnabla.functions as F
    import stadyn.compat.nnabla.solvers as S
    from stadyn.compat.nnabla import _kept_dtypes as kd

    with sd.parameter_registry(ParameterRegistry()):
        x = nn.Variable.from_numpy_array(np.ones((2, 300), np.float32))
        y = PF.affine(x, 200, w_init=np.full((300, 200), 1 + 1e-9), name="fc")
        w = nn.get_parameters()["fc/affine/W"]
        entry = kd._KEPT[kd.value_holder(w)]
        copy = weakref.ref(entry.array)
        assert copy() is not None and copy().dtype == np.float64
        del entry
        loss = F.sum(y)
        solver = S.Sgd(0.5)
        solver.set_parameters(nn.get_parameters())
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        assert kd.value_holder(w) not in kd._KEPT and copy() is None    # released now
        nn.save_parameters(str(tmp_path / "after.h5"))
    import h5py
    with h5py.File(tmp_path / "after.h5", "r") as f:
        assert f["fc/affine/W"].dtype == np.float32       # NNabla's after an update
        assert f["fc/affine/b"].dtype == np.float32


@pytest.mark.parametrize("write", ["d", "cast"])
def test_a_write_lets_go_of_the_kept_float64_copy_at_once(tmp_path, write):
    # (so did c4441c04: .d = and cast to another dtype forget it; the solver's update above
    # was the write that did not)
    import weakref

    from stadyn.compat.nnabla import _kept_dtypes as kd

    with sd.parameter_registry(ParameterRegistry()):
        w = nn.parameter.get_parameter_or_create("w", (3,), np.array([1 + 1e-9, 2.0, 3.0]))
        copy = weakref.ref(kd._KEPT[kd.value_holder(w)].array)
        if write == "d":
            w.d = np.array([4.0, 5.0, 6.0], np.float32)
        else:
            w.data.cast(np.float32)
        assert copy() is None
        nn.save_parameters(str(tmp_path / "w.h5"))
    import h5py
    with h5py.File(tmp_path / "w.h5", "r") as f:
        assert f["w"].dtype == np.float32


def test_an_update_looks_at_what_is_kept_not_at_each_parameter_it_wrote(tmp_path, monkeypatch):
    # 4081df7b looked each updated parameter up in the kept registry whenever anything was
    # kept (300 look-ups, ~850 us a step, for one float64 parameter the solver leaves out);
    # the kept entries the update wrote are the ones whose tensor's version moved
    import h5py

    import stadyn.compat.nnabla.solvers as S
    from stadyn.compat.nnabla import _kept_dtypes as kd

    with sd.parameter_registry(ParameterRegistry()):
        fixed = nn.parameter.get_parameter_or_create("fixed", (2,), np.array([1 + 1e-9, 2.0]),
                                                     need_grad=False)
        trained = nn.parameter.get_parameter_or_create("trained", (2,), np.array([1 + 1e-9, 3.0]))
        params = {f"p{i}": nn.parameter.get_parameter_or_create(f"p{i}", (2,)) for i in range(300)}
        params["trained"] = trained
        for v in params.values():
            v.g = np.full(2, 0.5, np.float32)
        solver = S.Adam(0.1)
        solver.set_parameters(params)
        looked = []
        holder = kd.value_holder
        monkeypatch.setattr(kd, "value_holder", lambda v: looked.append(v) or holder(v))
        solver.update()
        assert len(looked) < 10
        assert kd.value_holder(trained) not in kd._KEPT      # written: let go
        assert kd.value_holder(fixed) in kd._KEPT            # not written: still NNabla's
        nn.save_parameters(str(tmp_path / "p.h5"))
    with h5py.File(tmp_path / "p.h5", "r") as f:
        assert f["fixed"].dtype == np.float64 and f["fixed"][0] == 1 + 1e-9
        assert f["trained"].dtype == np.float32
