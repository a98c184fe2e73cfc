"""What nnabla-examples' sixth batch of programs needs (``tests/examples/nnabla_examples_6.py``):
YOLO v2's ``train.py`` (``object-detection/yolov2/train_graph.py``) makes its region loss's
targets with a ``PythonFunction`` that defines neither ``grad_depends_output_data`` nor
``grad_depends_input_data``, which NNabla 1.39 calls on every function of a graph; the program
stops there on NNabla 1.39."""

import numpy as np

from compat_harness import nnabla_case


def _root_error(fn):
    """``[the exception's kind, its message]`` that ``fn()`` raised at its root (NNabla's
    Cython layer wraps a Python method's exception in ``SystemError``s, each raised ``from``
    the one below: the root is the method's own), or None."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the kind is the result
        while e.__cause__ is not None:
            e = e.__cause__
        return [type(e).__name__, str(e)]
    return None


def _classes(PythonFunction):
    """A PythonFunction doubling its input, whose backward does nothing (as YOLO v2's
    ``RegionLossTargets``), and three subclasses lacking one or both ``grad_depends_*``."""

    class Twice(PythonFunction):
        @property
        def name(self):
            return "Twice"

        def min_outputs(self):
            return 1

        def setup_impl(self, inputs, outputs):
            outputs[0].reset_shape(inputs[0].shape, True)

        def forward_impl(self, inputs, outputs):
            outputs[0].d = 2 * inputs[0].d

        def backward_impl(self, inputs, outputs, propagate_down, accum):
            pass

    class Complete(Twice):
        def grad_depends_output_data(self, i, o):
            return False

        def grad_depends_input_data(self, i, j):
            return False

    class NoOutputData(Twice):
        def grad_depends_input_data(self, i, j):
            return False

    class NoInputData(Twice):
        def grad_depends_output_data(self, i, o):
            return False

    return [("both", Complete), ("no grad_depends_output_data", NoOutputData),
            ("no grad_depends_input_data", NoInputData), ("neither", Twice)]


@nnabla_case(names=["nnabla.function.PythonFunction.grad_depends_output_data",
                    "nnabla.function.PythonFunction.grad_depends_input_data"])
def examples_python_function_without_grad_depends(nn, F, r):
    """Which step refuses a PythonFunction lacking ``grad_depends_output_data`` or
    ``grad_depends_input_data`` (calling it on a Variable, ``forward``, ``backward``), static
    and dynamic, with the input needing a gradient or not, and the error at its root; the
    output when it runs."""
    r.touch("nnabla.function.PythonFunction.grad_depends_output_data",
            "nnabla.function.PythonFunction.grad_depends_input_data")
    res = {}
    for label, cls in _classes(r.module("nnabla.function").PythonFunction):
        for dynamic in (False, True):
            for need_grad in (True, False):
                key = "%s, %s, input need_grad=%s" % (
                    label, "dynamic" if dynamic else "static", need_grad)
                x = nn.Variable.from_numpy_array(np.array([1.0, -2.0, 3.0], np.float32),
                                                 need_grad=need_grad)
                made = []
                steps = [("call", lambda: made.append(cls()(x))),
                         ("forward", lambda: made[0].forward()),
                         ("backward", lambda: made[0].backward())]
                with nn.auto_forward(dynamic):
                    for step, fn in steps:
                        error = _root_error(fn)
                        if error is not None:
                            res[key] = [step] + error
                            break
                    else:
                        res[key] = ["ran", made[0].d.tolist()]
    return res


@nnabla_case(names=["nnabla.function.PythonFunction.grad_depends_output_data"])
def examples_yolov2_region_loss_targets_refused(nn, F, r):
    """YOLO v2's use: the bounding-box predictions (a concatenation of sigmoids, needing
    gradients) go into a PythonFunction of six outputs whose ``grad_depends_*`` are missing;
    NNabla 1.39 refuses the call that builds it, and the graph is left without it."""
    r.touch("nnabla.function.PythonFunction.grad_depends_output_data")
    PythonFunction = r.module("nnabla.function").PythonFunction

    class Targets(PythonFunction):
        @property
        def name(self):
            return "PythonRegionLossTargets"

        def min_outputs(self):
            return 6

        def setup_impl(self, inputs, outputs):
            for o in outputs:
                o.reset_shape(inputs[0].shape, True)

        def forward_impl(self, inputs, outputs):
            for o in outputs:
                o.data.get_data("w")[...] = 0.5

        def backward_impl(self, inputs, outputs, propagate_down, accum):
            pass

    x = nn.Variable.from_numpy_array(r.randn(2, 5, 4, 2, 2).astype(np.float32),
                                     need_grad=True)
    bbox = F.concatenate(F.sigmoid(x[:, :, :2, ...]), x[:, :, 2:4, ...], axis=2)
    made = []
    res = {"call": _root_error(lambda: made.append(Targets()(bbox, x))),
           "made": len(made)}
    res["bbox still usable"] = None
    loss = F.sum(bbox * bbox)
    loss.forward()
    res["bbox still usable"] = float(loss.d)
    return res
