"""An op's own seed is found among its parameters once per op, without keeping the op
(``OpSpec.position_of``, cached on the spec): an op declared at run time is freed with its
spec."""

import gc
import weakref

from stadyn.graph._spec import OpSpec


def test_the_seed_position_of_an_op_made_at_run_time_does_not_keep_its_spec_alive():
    def draw(x, low=0.0, seed=None):
        return x

    spec = OpSpec.from_function(draw, 1)
    assert spec.position_of("seed") == 2
    gone = weakref.ref(spec)
    del spec
    gc.collect()
    assert gone() is None
