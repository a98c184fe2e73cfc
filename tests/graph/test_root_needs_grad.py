"""A root that needs a gradient over leaves that need none still lowers to a static plan.

``z = F.exp(a); z.need_grad = True`` with ``a`` needing no gradient: there is nothing to
differentiate with respect to, and the plan's build asked autograd for the gradients of no
tensor, which it refuses; the graph then ran eagerly with a RuntimeWarning (an error under the
tests' settings, pyproject.toml's filterwarnings: this test failed on that).  Expected values:
NumPy's ``exp``, and ``a``'s gradient stays zero.
"""

import numpy as np

import stadyn as sd
import stadyn.functions as F



def test_a_root_needing_a_gradient_over_leaves_needing_none_lowers():
    a = sd.Variable.from_numpy_array(np.array([0.5, 1.0], np.float32))
    z = F.exp(a)
    z.need_grad = True
    z.forward()
    z.backward()
    np.testing.assert_allclose(z.d, np.exp([0.5, 1.0]), rtol=1e-6)
    np.testing.assert_array_equal(a.g, [0.0, 0.0])
