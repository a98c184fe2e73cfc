"""A ``Mul2`` PythonFunction (``a * b``) shared by the NNabla case modules that probe what a
``PythonFunction``'s ``backward_impl`` sees (``nnabla_late_28``, ``nnabla_fidelity_27b``,
``nnabla_pyfunc_36``), and a one-input ``Square`` (``x ** 2``: ``nnabla_fidelity_22``,
``nnabla_fidelity_23``, ``nnabla_fidelity_27b``, ``nnabla_graph_editing``,
``nnabla_pyfunc_35``).  Not a case module: it registers no case and is not in ``MODULES``.

Each module passes its own ``backward(inputs, outputs, propagate_down, accum)``: what it
records and how it writes the inputs' gradients is what that module's cases compare.

Parses under Python 3.6 like the case modules.
"""


def mul2(PythonFunction, backward, on_forward=None):
    """A new ``Mul2`` (a subclass of the bound ``PythonFunction``): ``outputs[0] = a * b``,
    its backward ``backward(inputs, outputs, propagate_down, accum)``; ``on_forward()``, when
    given, is called at the start of each ``forward_impl``."""
    class Mul2(PythonFunction):
        @property
        def name(self):
            return "Mul2"

        def min_outputs(self):
            return 1

        def grad_depends_output_data(self, i, o):
            return False

        def grad_depends_input_data(self, i, j):
            return True

        def setup_impl(self, inputs, outputs):
            outputs[0].reset_shape(inputs[0].shape, True)

        def forward_impl(self, inputs, outputs):
            if on_forward is not None:
                on_forward()
            outputs[0].d = inputs[0].d * inputs[1].d

        def backward_impl(self, inputs, outputs, propagate_down, accum):
            backward(inputs, outputs, propagate_down, accum)

    return Mul2()


def write_products(inputs, outputs, accum, assign, propagate_down=None):
    """Each input's gradient, ``other.d * outputs[0].g``: added where ``accum`` (and not
    ``assign``), else written; inputs whose ``propagate_down`` is false skipped (when given)."""
    for i in range(2):
        if propagate_down is not None and not propagate_down[i]:
            continue
        g = inputs[1 - i].d * outputs[0].g
        if accum[i] and not assign:
            inputs[i].g += g
        else:
            inputs[i].g = g


def _squares(inputs, outputs):
    outputs[0].d = inputs[0].d ** 2


def square(PythonFunction, backward, name="Square", cls_name="Square", forward=_squares):
    """A new one-input ``PythonFunction`` computing ``x ** 2`` (its class named ``cls_name``,
    NNabla's ``info.type_name``; its ``name`` property ``name``): ``forward(inputs, outputs)``
    (``outputs[0].d = inputs[0].d ** 2`` unless given) and ``backward(inputs, outputs,
    propagate_down, accum)``, each module's own (what it records, how it writes the input's
    gradient)."""
    class Square(PythonFunction):
        @property
        def name(self):
            return name

        def min_outputs(self):
            return 1

        def grad_depends_output_data(self, i, o):
            return False

        def grad_depends_input_data(self, i, j):
            return True

        def setup_impl(self, inputs, outputs):
            outputs[0].reset_shape(inputs[0].shape, True)

        def forward_impl(self, inputs, outputs):
            forward(inputs, outputs)

        def backward_impl(self, inputs, outputs, propagate_down, accum):
            backward(inputs, outputs, propagate_down, accum)

    Square.__name__ = cls_name
    return Square()


def write_square_grad(inputs, outputs, accum, assign=False):
    """The input's gradient, ``2 x * outputs[0].g``: added where ``accum`` (and not
    ``assign``), else written."""
    g = 2 * inputs[0].d * outputs[0].g
    if accum[0] and not assign:
        inputs[0].g += g
    else:
        inputs[0].g = g
