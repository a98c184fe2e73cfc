"""A CNTK user function over a sequence, saved and loaded back (Stadyn's model file: CNTK 2.7's
writer has no form for it): rebuilt by its class's ``deserialize`` on the file's sequence
input, it computes what it did (a sequence of that input's lengths; its ``infer_outputs``
sees the input's sample shape, as when it was built).  The values compared are the
hand-computed sums of squares."""

import warnings

import numpy as np

import stadyn.compat.cntk as C

MODULE = '''
import stadyn.compat.cntk as C


class Square(C.ops.functions.UserFunction):
    def __init__(self, a, name="Square"):
        super().__init__([a], name=name)

    def forward(self, argument, device=None, outputs_to_retain=None):
        return argument, [s * s for s in argument]

    def backward(self, state, root_gradients):
        return [2 * s * g for s, g in zip(state, root_gradients)]

    def infer_outputs(self):
        x = self.inputs[0]
        return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]

    @staticmethod
    def deserialize(inputs, name, state):
        return Square(inputs[0], name=name)
'''


def test_a_sequence_user_function_loads_back(tmp_path, monkeypatch):
    (tmp_path / "stadyn_test_square_uf.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import stadyn_test_square_uf as mod
    s = C.sequence.input_variable(2)
    z = C.sequence.reduce_sum(C.user_function(mod.Square(s)))
    data = [np.full((3, 2), 1.0, np.float32), np.full((1, 2), 2.0, np.float32)]
    expected = [[3.0, 3.0], [4.0, 4.0]]
    assert z.eval({s: data}).tolist() == expected
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (a Stadyn model file, not CNTK v2's: said so)
        z.save(str(tmp_path / "square.model"))
    loaded = C.load_model(str(tmp_path / "square.model"))
    assert loaded.eval({loaded.arguments[0]: data}).tolist() == expected
