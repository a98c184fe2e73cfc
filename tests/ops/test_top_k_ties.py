"""Among equal values, top-k takes the lowest index first, as NNabla 1.39 and CNTK 2.7 do.

For ``[[0, 1, 9, 2, 2], [3, 3, 3, 1, 0]]`` and k = 2 both frameworks, run here, give indices
``[[2, 3], [0, 1]]`` (NNabla's ``F.top_k_data(..., with_index=True)``, CNTK's ``C.top_k``);
``torch.topk`` leaves the order of ties to its kernel and gave ``[[2, 4], [1, 2]]``.
"""

import numpy as np

import stadyn as sd
import stadyn.compat.cntk as C
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as NF
import stadyn.functions as F

DATA = np.array([[0, 1, 9, 2, 2], [3, 3, 3, 1, 0]], np.float32)


def test_native_top_k_data_takes_the_lowest_index_among_ties():
    with sd.auto_forward():
        values, index = F.top_k_data(sd.Variable.from_numpy_array(DATA), 2, with_index=True)
    assert index.d.tolist() == [[2, 3], [0, 1]]
    assert values.d.tolist() == [[9.0, 2.0], [3.0, 3.0]]
    with sd.auto_forward():
        _, smallest = F.top_k_data(sd.Variable.from_numpy_array(DATA), 2, largest=False,
                                   with_index=True)
    assert smallest.d.tolist() == [[0, 1], [4, 3]]


def test_nnabla_and_cntk_top_k_give_their_tie_order():
    x = nn.Variable.from_numpy_array(DATA)
    y = NF.top_k_data(x, 2, reduce=True, base_axis=1, with_index=True)
    y[0].forward()
    assert y[1].d.tolist() == [[2, 3], [0, 1]]
    v = C.input_variable(5)
    t = C.top_k(v, 2)
    out = t.eval({v: DATA})
    assert np.asarray(out[t.outputs[1]]).tolist() == [[2.0, 3.0], [0.0, 1.0]]
