"""A CNTK initialiser of a scale that is not positive, or NaN, ends as CNTK 2.7 ends it.

CNTK 2.7 refuses a scale ``<= 0`` when the initializer is made (``CreateInitializer``,
Source/CNTKv2LibraryDll/Variable.cpp:269-272) and a standard deviation ``<= 0`` when it draws
(``SetGaussianRandomValue`` / ``SetTruncatedNormalRandomValue``,
Source/Math/CPUMatrixImpl.h:1077-1103); its truncated normal rejects a value only when it is
``< low`` or ``> high`` (CPUMatrixImpl.h:1119), so a NaN scale gives NaNs.  The real side of
each is the compat case ``initializer__scale_not_positive`` /
``initializer__truncated_normal_nan_scale`` (tests/compat/compat_cases/cntk_cleanup_32.py).
Stadyn's truncated draws kept only values within the bounds, and so drew for ever for a
negative or NaN scale: each draw here runs in a child process under a time limit.
"""

import json
import os
import subprocess
import sys

import pytest

_LIMIT_S = 120


def _run(code: str) -> dict:
    """What ``code`` (Python that prints one JSON line) printed, run in a child process that
    must end within the limit."""
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=_LIMIT_S, env=dict(os.environ), check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the draw did not end within {_LIMIT_S} s")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


_DRAW = """
import json, numpy as np
from stadyn.layers import CNTKInitializer, truncated_normal
out = {}
for dt in (np.float32, np.float64):
    v = truncated_normal(float("nan"), seed=3)((3, 2), 1, 1, dtype=dt)
    out["nan " + dt.__name__] = [bool(np.isnan(v).all()), list(v.shape), str(v.dtype)]
    for kind in ("truncated", "normal"):
        try:
            CNTKInitializer(kind, -1.0, "none", 1.0, seed=1)((3, 2), 1, 1, dtype=dt)
            out[kind + " -1 " + dt.__name__] = None
        except ValueError as e:
            out[kind + " -1 " + dt.__name__] = str(e)
print(json.dumps(out))
"""


def test_a_truncated_normal_of_a_nan_or_negative_scale_ends():
    got = _run(_DRAW)
    for dt in ("float32", "float64"):
        assert got["nan " + dt] == [True, [3, 2], dt]
        # an initialiser made directly is refused where CNTK draws (CPUMatrixImpl.h)
        assert got["truncated -1 " + dt] == ("SetTruncatedNormalRandomValue: sigma must be "
                                             "a positive value.")
        assert got["normal -1 " + dt] == "SetGaussianRandomValue: sigma must be a positive value."


@pytest.mark.parametrize("name,cntk_name", [
    ("glorot_uniform", "glorotUniform"), ("glorot_normal", "glorotNormal"), ("xavier", "xavier"),
    ("he_uniform", "heUniform"), ("he_normal", "heNormal"), ("uniform", "uniform1"),
    ("normal", "normal"), ("truncated_normal", "TruncNormal")])
@pytest.mark.parametrize("scale", [-1, 0, -0.5])
def test_a_scale_not_positive_is_refused_when_the_initializer_is_made(name, cntk_name, scale):
    import stadyn.layers as L
    with pytest.raises(ValueError, match=rf"^CreateInitializer: scale value for initializer "
                                         rf"'{cntk_name}' cannot be 0\.$"):
        getattr(L, name)(scale)
