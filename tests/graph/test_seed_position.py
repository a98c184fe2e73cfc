"""An op's own seed is found among its parameters once per op, without keeping the op
(``graph._interpret._seed_position``): an op declared at run time is freed with its spec."""

import gc
import weakref

from stadyn.graph._interpret import _seed_position
from stadyn.graph._spec import OpSpec


def test_the_seed_position_of_an_op_made_at_run_time_does_not_keep_its_spec_alive():
    def draw(x, low=0.0, seed=None):
        return x

    spec = OpSpec.from_function(draw, 1)
    assert _seed_position(spec) == 2
    gone = weakref.ref(spec)
    del spec
    gc.collect()
    assert gone() is None
