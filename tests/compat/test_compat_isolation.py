"""The compat harness runs each case on Stadyn as if it ran alone: whatever process-wide switch a
case sets (CNTK's fixed seed, a global option, a hook, the default context) is put back after
it (``compat_support.stadyn_side``, with ``tests/state_guard.py``)."""

import compat_harness as H
import compat_support
import state_guard
from stadyn._random import fixed_seed


def test_the_compat_harness_puts_back_what_a_case_sets():
    """A case that sets CNTK's fixed seed, a global option or a hook leaves none of it set
    (the cntk random cases left every later case with fixed seed 313)."""
    def case(C, r):
        C.cntk_py.set_fixed_random_seed(5)
        C.set_global_option("align_axis", 1)
        return {"seed": fixed_seed()}

    before = state_guard.snapshot()
    leaky = H.Case("cntk", "leaky", case, (), 1e-5, 1e-6, None, True, None, None, "", None, None)
    results, _ = H.run_case(leaky, compat_support.stadyn_side("cntk"))
    assert results["seed"][1].tolist() == 5                 # set inside the case
    assert fixed_seed() is None
    assert state_guard.changes(before, state_guard.snapshot()) == []


def test_a_case_writes_its_relative_paths_in_a_folder_of_its_own(tmp_path, monkeypatch):
    """What a case writes at a relative path (NNabla's ``load`` makes a dataset's relative
    ``cache_dir`` in the working directory: the digits .nnp's ``digits_training.cache``) goes to
    a temporary folder, removed after it, and the working directory is put back."""
    import os

    def case(nn, r):
        os.makedirs("digits_training.cache")
        return {"where": os.path.basename(os.getcwd())}

    monkeypatch.chdir(tmp_path)
    writer = H.Case("nnabla", "writer", case, (), 1e-5, 1e-6, None, True, None, None, "",
                    None, None)
    results, _ = H.run_case(writer, compat_support.stadyn_side("nnabla"))
    assert os.getcwd() == str(tmp_path) and os.listdir(tmp_path) == []
    assert results["where"][1].startswith("compat_case_")
