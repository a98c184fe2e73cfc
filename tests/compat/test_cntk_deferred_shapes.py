"""An op over a waiting op of known shape (``times(plus(placeholder(), x), W)``) is built on
stand-ins once for both its shape and its dynamic axes: it was built twice (1d1a81d4), once
for each."""

import stadyn.compat.cntk as C
from stadyn.compat.cntk._deferred import Deferred


def test_an_op_over_a_waiting_op_is_built_once_for_its_shape_and_axes(monkeypatch):
    x = C.input_variable(3, name="x")
    f = C.times(C.plus(C.placeholder(), x), C.parameter((3, 2), init=1.0))
    built = []
    replay = Deferred._replay

    def counted(self, *args, **kwargs):
        built.append(self is f)
        return replay(self, *args, **kwargs)

    monkeypatch.setattr(Deferred, "_replay", counted)
    assert f.shape == (2,) and len(f.dynamic_axes) == 1     # (CNTK 2.7's: (2,), [#])
    assert built.count(True) == 1
