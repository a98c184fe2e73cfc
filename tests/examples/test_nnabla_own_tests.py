"""NNabla 1.39's own pytest files (sony/nnabla's ``python/test/``) run on Stadyn, unchanged: a
``conftest.py`` above them makes ``import nnabla...`` load ``stadyn.compat.nnabla`` (the finder
of ``examples/nnabla/on_stadyn.py``), and they run in a pytest of their own.

The files chosen pass whole on NNabla 1.39 and on Stadyn and are cheap: Variable and NdArray
arithmetic (every operator against NumPy; ``nn.functions`` reached from ``import nnabla``
alone), the imperative ``F`` calls on NdArrays, the initializers, parameter files' save and
load, and ``nnabla.random``'s seed; and five of ``function/test_*.py``, whose
``nbla_test_utils.function_tester`` drives each function through NNabla's Function API
(``f.setup/forward/backward(inputs, outputs, accum)`` on other Variables, half precision,
recomputation) and ``backward_function_tester`` its double backward
(``nnabla.backward_functions.registry``) against NNabla's NumPy references.  Each must pass
every test NNabla 1.39 collects there (the counts below are NNabla 1.39's own run of these
files).  Which other files fail, and why,
is in ``docs/nnabla-names.md`` ("NNabla's own test files").

The files are not part of this repository: the test reads them from a copy of sony/nnabla,
``$STADYN_NNABLA_REPO`` (a checkout, or a bare git repository whose HEAD is archived), by
default the mirror at ``/work/.mirror/sony+nnabla/repo``; without one it skips.
"""

import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from program_copies import program_copy  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
SOURCE = os.environ.get("STADYN_NNABLA_REPO", "/work/.mirror/sony+nnabla/repo")

# file -> the tests NNabla 1.39 passes there (python -m pytest on NNabla 1.39.0, CPU)
PASSED_BY_NNABLA = {
    "test_variable_arithmetic_ops.py": 29,
    "test_ndarray_arithmetic_ops.py": 78,
    "test_imperative.py": 3,
    "test_initializer.py": 27,
    "test_save_load_parameters.py": 1,
    "test_random.py": 1,
    "function/test_cos.py": 3,
    "function/test_sigmoid.py": 3,
    "function/test_constant.py": 13,
    "function/test_confusion_matrix.py": 6,
    "function/test_clip_by_value.py": 9,
}

# Above NNabla's own conftest.py (which imports nnabla): the finder is in place first.  ``six``
# (two of the files and nbla_test_utils import from it) where it is not installed: the names
# they use.
_CONFTEST = f"""
import sys, types
sys.path.insert(0, {os.path.join(ROOT, "examples", "nnabla")!r})
import on_stadyn
on_stadyn.install()
try:
    import six  # noqa: F401
except ImportError:
    six = types.ModuleType("six")
    six.exec_ = lambda code, globs=None, locs=None: exec(code, globs, locs)
    six.iteritems = lambda d: iter(d.items())
    six.moves = types.ModuleType("six.moves")
    six.moves.range, six.moves.filter = range, filter
    sys.modules["six"], sys.modules["six.moves"] = six, six.moves
"""


def test_nnabla_test_files_pass_on_stadyn(tmp_path):
    paths = (["python/test/conftest.py", "python/test/nbla_test_utils.py"]
             + ["python/test/" + f for f in PASSED_BY_NNABLA])
    source = program_copy(SOURCE, paths, tmp_path, "sony/nnabla", "STADYN_NNABLA_REPO")
    (tmp_path / "conftest.py").write_text(_CONFTEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    tests = os.path.join(source, "python", "test")
    if source == SOURCE:                # (a checkout: a copy under the conftest above)
        tests = str(tmp_path / "python" / "test")
        os.makedirs(tests)
        for p in paths:
            kept = os.path.join(tests, os.path.relpath(p, "python/test"))
            os.makedirs(os.path.dirname(kept), exist_ok=True)
            shutil.copy(os.path.join(source, p), kept)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-rfE", "--rootdir", str(tmp_path)]
                          + [os.path.join(tests, f) for f in PASSED_BY_NNABLA],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True,
                          timeout=600)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.match(rf"{sum(PASSED_BY_NNABLA.values())} passed\b", summary), summary
