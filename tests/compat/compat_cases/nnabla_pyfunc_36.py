"""NNabla 1.39 fidelity (session 36): what a ``PythonFunction``'s ``backward_impl`` sees in
``inputs[i].grad`` for an input needing no gradient.

NNabla hands ``backward_impl`` the Variables themselves (``backward_callback`` in
python/src/nnabla/function.pyx.tmpl wraps the C++ inputs, ``to_unsafe_variables``): an
input needing no gradient (``propagate_down[i]`` False) shows its Variable's gradient as it
stands (``c.g = 7`` set before: [7, 7, 7], float32, the input's shape; zeros when never set or
zeroed), and what ``backward_impl`` writes there stays in ``c.g``.  Stadyn handed it a fresh
array of zeros, and what was written there was lost.

Several PythonFunctions over an intermediate and other inputs, reading shared inputs, run
in NNabla's order (graph/_reader_leaves.py ``arrange_mixed``; case
``python_function__groups_over_shared_inputs``).  As merged from nnpy36 the group ran all at
once when the first of its intermediates' gradients was complete, so a function whose
backward torch had not run yet was never run: ``sum(Mul2(Mul2(h, z), z))``, ``h = 2x``, left
``x.g`` [1, 1, 1], NNabla's [19, 33, 9]; ``Mul2(h, z)`` beside ``Mul2(3h, z)`` or ``Mul2(2x,
z)`` beside ``Mul2(3x, z)`` lost one the same way.
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_pyfunc_helpers import mul2, write_products


def _mul2(PythonFunction, seen):
    def backward(inputs, outputs, propagate_down, accum):   # writes 99 into inputs[1].grad
        g1 = inputs[1].g
        seen.append(([bool(p) for p in propagate_down], [bool(a) for a in accum],
                     inputs[0].g.copy(), g1.copy(), str(g1.dtype), list(g1.shape)))
        inputs[0].g = inputs[1].d * outputs[0].g
        inputs[1].g = 99.0

    return mul2(PythonFunction, backward)


# c's gradient before the backward -> how it is set (None: never)
_SETS = {"c.g = 7": 7.0, "c never given a gradient": None, "c.grad.zero()": "zero",
         "c.g = 7, read first by c * 2": 7.0}


@nnabla_case(names=["nnabla.function.PythonFunction", "nnabla.Variable.backward"],
             note="x = [0.5, -1, 2] (need_grad), c = [2, 3, 4] (need_grad False), "
                  "sum(Mul2(x, c)) (Mul2 a PythonFunction x * c whose backward_impl writes "
                  "99 into inputs[1].g too), c.g set to 7, never set, zeroed, or 7 with "
                  "sum(c * 2) added first; h = c * 2 (no gradient) in Mul2(x, h), h.g = 5 "
                  "after the forward, backward with clear_buffer or not; static and "
                  "dynamic: propagate_down, accum, inputs[0].g, inputs[1].g (values, dtype, "
                  "shape) backward_impl sees, c.g / h.g and x.g after")
def python_function__input_needing_no_gradient(nn, F, PF, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    r.touch("nnabla.function.PythonFunction", "nnabla.Variable.backward")
    res = {}
    for how in sorted(_SETS) + ["h = c * 2, h.g = 5", "h = c * 2, h.g = 5, clear_buffer"]:
        for dynamic in (False, True):
            key = "%s: %s: " % (how, "dynamic" if dynamic else "static")
            seen = []
            nn.set_auto_forward(dynamic)
            try:
                x = nn.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32),
                                                 need_grad=True)
                c = nn.Variable.from_numpy_array(np.array([2.0, 3.0, 4.0], np.float32),
                                                 need_grad=False)
                given = _SETS.get(how)
                if given == "zero":
                    c.grad.zero()
                elif given is not None:
                    c.g = given
                other = c * 2.0 if how.startswith("h") else c
                loss = F.sum(_mul2(PythonFunction, seen)(x, other))
                if how.endswith("read first by c * 2"):
                    loss = F.sum(c * 2.0) + loss
            finally:
                nn.set_auto_forward(False)
            if not dynamic:
                loss.forward()
            if other is not c:
                other.g = 5.0
            loss.backward(clear_buffer=how.endswith("clear_buffer"))
            for k, (down, accum, g0, g1, dtype, shape) in enumerate(seen):
                res[key + "backward_impl %d" % k] = [down, accum, dtype, shape]
                res[key + "backward_impl %d inputs[0].g" % k] = g0
                res[key + "backward_impl %d inputs[1].g" % k] = g1
            res[key + "x.g"] = x.g.copy()
            res[key + ("h.g" if other is not c else "c.g")] = other.g.copy()
    return res


def _mul2_tagged(PythonFunction, seen, assign, tag=None):
    def backward(inputs, outputs, propagate_down, accum):   # adds where accum or always writes
        seen.append(((tag,) if tag is not None else ())
                    + ([bool(a) for a in accum], inputs[0].g.copy(), inputs[1].g.copy()))
        write_products(inputs, outputs, accum, assign)

    return mul2(PythonFunction, backward)


# name -> loss made by (F, M(assign), x, z); x, z leaves needing a gradient
_MIXED = {
    "z * 3x, then assigning Mul2(2x, z)":
        lambda F, M, x, z: F.sum(z * (x * 3.0)) + F.sum(M(True)(x * 2.0, z)),
    "z * 3x, then adding Mul2(2x, z)":
        lambda F, M, x, z: F.sum(z * (x * 3.0)) + F.sum(M(False)(x * 2.0, z)),
    "assigning Mul2(2x, z), then z * 3x":
        lambda F, M, x, z: F.sum(M(True)(x * 2.0, z)) + F.sum(z * (x * 3.0)),
    "h * z, then assigning Mul2(h, z), h = 2x":
        lambda F, M, x, z: (lambda h: F.sum(h * z) + F.sum(M(True)(h, z)))(x * 2.0),
    "assigning Mul2(h, z), then h * z, h = 2x":
        lambda F, M, x, z: (lambda h: F.sum(M(True)(h, z)) + F.sum(h * z))(x * 2.0),
    "h * z, assigning Mul2(h, z), h * 3, h = 2x":
        lambda F, M, x, z: (lambda h: F.sum(h * z) + F.sum(M(True)(h, z))
                            + F.sum(h * 3.0))(x * 2.0),
    "assigning Mul2(x, z), then tanh(x * z)":
        lambda F, M, x, z: F.sum(M(True)(x, z)) + F.sum(F.tanh(x * z)),
    "h * 3, then adding Mul2(h, g), h = 2x, g = 3z":
        lambda F, M, x, z: (lambda h, g: F.sum(h * 3.0) + F.sum(M(False)(h, g)))(
            x * 2.0, z * 3.0),
    "g * 5, then assigning Mul2(h, g), h = 2x, g = 3z":
        lambda F, M, x, z: (lambda h, g: F.sum(g * 5.0) + F.sum(M(True)(h, g)))(
            x * 2.0, z * 3.0),
}
_LATE_LEAF_READER = (
    "graph/_reader_leaves.py (arrange_mixed) runs Mul2(2x, z) when 2x's gradient is complete; "
    "NNabla runs z * 3x (rank 2, found first) before it, torch's autograd only after (its node "
    "is older), so backward_impl sees z.g [10, 10, 10] (the user's), NNabla's [11.5, 7, 16] "
    "(z * 3x's part added); the adding one leaves z.g [11, 8, 14], NNabla [12.5, 5, 20]: "
    "matching needs the backward run op by op in NNabla's order, not torch's")
_TWO_INNER_STATIC = (
    "graph/_reader_leaves.py (arrange_mixed) runs Mul2(h, g) (two inner inputs) when the "
    "first of h's and g's gradients is complete; a static plan makes the autograd nodes in "
    "its topological order, so torch completes one inner input before a reader of the other "
    "that NNabla runs first (h * 3: backward_impl sees h.g at 0 with accum False, NNabla's "
    "[3, 3, 3] with accum True, and the adding one leaves x.g [19, 25, -11], NNabla's "
    "[25, 31, -5]; g * 5: g.g at 0, NNabla's [5, 5, 5]); the dynamic graph's order agrees "
    "with NNabla's: matching needs the backward run op by op in NNabla's order")
_KNOWN_MIXED = dict(
    [("%s: %s: %s" % (g, m, k), _LATE_LEAF_READER)
     for g in ("z * 3x, then assigning Mul2(2x, z)", "z * 3x, then adding Mul2(2x, z)")
     for m in ("static", "dynamic")
     for k in ("backward_impl 0 inputs[1].g",)]
    + [("z * 3x, then adding Mul2(2x, z): %s: z.g" % m, _LATE_LEAF_READER)
       for m in ("static", "dynamic")]
    + [("h * 3, then adding Mul2(h, g), h = 2x, g = 3z: static: " + k, _TWO_INNER_STATIC)
       for k in ("backward_impl 0", "backward_impl 0 inputs[0].g", "x.g")]
    + [("g * 5, then assigning Mul2(h, g), h = 2x, g = 3z: static: " + k, _TWO_INNER_STATIC)
       for k in ("backward_impl 0", "backward_impl 0 inputs[1].g")])


@nnabla_case(names=["nnabla.function.PythonFunction", "nnabla.Variable.backward"],
             note="x = [0.5, -1, 2] (x.g = 1), z = [3, 4, -2] (z.g = 10); Mul2 (a "
                  "PythonFunction a * b, adding where accum or always writing) beside builtin "
                  "ops reading the same inputs (z * 3x before or after Mul2(2x, z); h * z and "
                  "Mul2(h, z), h = 2x, in either order, with h * 3; Mul2(x, z) and "
                  "tanh(x * z)), and over two inner inputs h = 2x, g = 3z after h * 3 or "
                  "g * 5; static and dynamic: the accum, inputs[0].g and inputs[1].g each "
                  "backward_impl sees, x.g and z.g",
             known=_KNOWN_MIXED)
def python_function__beside_builtin_readers(nn, F, PF, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    r.touch("nnabla.function.PythonFunction", "nnabla.Variable.backward")
    res = {}
    for name in sorted(_MIXED):
        for dynamic in (False, True):
            key = "%s: %s: " % (name, "dynamic" if dynamic else "static")
            seen = []
            nn.set_auto_forward(dynamic)
            try:
                x = nn.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32),
                                                 need_grad=True)
                z = nn.Variable.from_numpy_array(np.array([3.0, 4.0, -2.0], np.float32),
                                                 need_grad=True)
                loss = _MIXED[name](
                    F, lambda assign: _mul2_tagged(PythonFunction, seen, assign), x, z)
            finally:
                nn.set_auto_forward(False)
            if not dynamic:
                loss.forward()
            x.g = 1.0
            z.g = 10.0
            loss.backward()
            res[key + "x.g"] = x.g.copy()
            res[key + "z.g"] = z.g.copy()
            for k, (accum, g0, g1) in enumerate(seen):
                res[key + "backward_impl %d" % k] = accum
                res[key + "backward_impl %d inputs[0].g" % k] = g0
                res[key + "backward_impl %d inputs[1].g" % k] = g1
    return res


# name -> loss made by (F, M(tag, assign), x, z, assign); x, z leaves needing a gradient
_GROUPS = {
    "three Mul2(h, z) after h * 3, h = 2x":
        lambda F, M, x, z, s: (lambda h: F.sum(h * 3.0) + F.sum(M("a", s)(h, z))
                               + F.sum(M("b", s)(h, z)) + F.sum(M("c", s)(h, z)))(x * 2.0),
    "Mul2(Mul2(h, z), z) after h * 3, h = 2x":
        lambda F, M, x, z, s: (lambda h: F.sum(h * 3.0)
                               + F.sum(M("b", s)(M("a", s)(h, z), z)))(x * 2.0),
    "Mul2(Mul2(Mul2(h, z), z), z) after h * 3, h = 2x":
        lambda F, M, x, z, s: (lambda h: F.sum(h * 3.0) + F.sum(
            M("c", s)(M("b", s)(M("a", s)(h, z), z), z)))(x * 2.0),
    "Mul2(Mul2(h, z), h), h = 2x":
        lambda F, M, x, z, s: (lambda h: F.sum(M("b", s)(M("a", s)(h, z), h)))(x * 2.0),
    "Mul2(Mul2(h, z), z), Mul2(3h, z) after h * 3, h = 2x":
        lambda F, M, x, z, s: (lambda h: F.sum(M("b", s)(M("a", s)(h, z), z))
                               + F.sum(M("c", s)(h * 3.0, z)) + F.sum(h * 3.0))(x * 2.0),
    "Mul2(h, z), Mul2(3h, z), Mul2(tanh(3h), z), h = 2x":
        lambda F, M, x, z, s: (lambda h: F.sum(M("a", s)(h, z)) + F.sum(M("b", s)(h * 3.0, z))
                               + F.sum(M("c", s)(F.tanh(h * 3.0), z)))(x * 2.0),
    "Mul2(h, g), Mul2(g, h), h = 2x, g = 3z":
        lambda F, M, x, z, s: (lambda h, g: F.sum(M("a", s)(h, g))
                               + F.sum(M("b", s)(g, h)))(x * 2.0, z * 3.0),
    "Mul2(h, z), Mul2(h, x) after h * 3, h = 2x":
        lambda F, M, x, z, s: (lambda h: F.sum(M("a", s)(h, z)) + F.sum(M("b", s)(h, x))
                               + F.sum(h * 3.0))(x * 2.0),
    "sum(Mul2(h, z) * 2), Mul2(exp(h), z), h = 2x":
        lambda F, M, x, z, s: (lambda h: F.sum(M("a", s)(h, z) * 2.0)
                               + F.sum(M("b", s)(F.exp(h), z)))(x * 2.0),
    "Mul2(2x, z), Mul2(3x, z)":
        lambda F, M, x, z, s: F.sum(M("a", s)(x * 2.0, z)) + F.sum(M("b", s)(x * 3.0, z)),
    "Mul2(2x, z), Mul2(3z, x)":
        lambda F, M, x, z, s: F.sum(M("a", s)(x * 2.0, z)) + F.sum(M("b", s)(z * 3.0, x)),
    "two Mul2(h, z), Mul2(x, z), h = 2x":
        lambda F, M, x, z, s: (lambda h: F.sum(M("a", s)(h, z)) + F.sum(M("b", s)(h, z))
                               + F.sum(M("c", s)(x, z)))(x * 2.0),
    "Mul2(h, h), two Mul2(h, z), h = 2x":
        lambda F, M, x, z, s: (lambda h: F.sum(M("a", s)(h, z)) + F.sum(M("b", s)(h, z))
                               + F.sum(M("c", s)(h, h)))(x * 2.0),
}
_TORCH_ORDER = (
    "graph/_reader_leaves.py (arrange_mixed) walks a group's kept backwards in NNabla's order "
    "as its inner inputs' gradients complete, but a function NNabla runs first whose backward "
    "torch runs after another's input is complete runs after it: Mul2(2x, z) after "
    "Mul2(3x, z) (or Mul2(3z, x), a group of its own), Mul2(Mul2(h, z), z) after "
    "Mul2(3h, z) (3h's gradient complete first); the order of "
    "the backward_impl calls is torch's (the gradients agree for a backward adding where "
    "accum; the overwriting Mul2(2x, z), Mul2(3x, z) leave z.g [1, -2, 4], the one run "
    "last's, NNabla [1.5, -3, 6])")
_READ_BY_OTHERS = (
    "graph/_reader_leaves.py (read_by_others) leaves a group of PythonFunctions over an "
    "intermediate and other inputs to run as torch's autograd reaches them when another kept "
    "op (Mul2(x, z) of leaves alone, Mul2(h, h) of one input) reads their inputs: the second "
    "Mul2(h, z) sees h.g at 0 with accum False, NNabla the first's part with accum True; the "
    "assigning ones leave x.g [15, 20, -10] (Mul2(x, z)), [15, 13, 1] (Mul2(h, h)), NNabla "
    "[9, 12, -6], [7, 9, -3]: matching needs the backward run op by op in NNabla's order")


# graph -> the keys that differ, of the assigning and the adding Mul2s (static and dynamic)
_GROUP_KNOWN = {
    "Mul2(2x, z), Mul2(3x, z)": (_TORCH_ORDER, (
        ["backward_impl 0", "backward_impl 1", "backward_impl 1 inputs[1].g", "z.g"],
        ["backward_impl 0", "backward_impl 1", "backward_impl 1 inputs[1].g"])),
    "Mul2(2x, z), Mul2(3z, x)": (_TORCH_ORDER, (
        ["backward_impl %d%s" % (k, s) for k in (0, 1) for s in ("", " inputs[1].g")],) * 2),
    "Mul2(Mul2(h, z), z), Mul2(3h, z) after h * 3, h = 2x": (_TORCH_ORDER, (
        ["backward_impl 0", "backward_impl 1", "backward_impl 1 inputs[1].g",
         "backward_impl 2 inputs[1].g"],
        ["backward_impl 0", "backward_impl 1", "backward_impl 1 inputs[1].g"])),
    "two Mul2(h, z), Mul2(x, z), h = 2x": (_READ_BY_OTHERS, (
        ["backward_impl 0", "backward_impl 1", "backward_impl 1 inputs[0].g",
         "backward_impl 1 inputs[1].g", "backward_impl 2 inputs[1].g", "x.g"],
        ["backward_impl 0", "backward_impl 1", "backward_impl 1 inputs[0].g",
         "backward_impl 1 inputs[1].g"])),
    "Mul2(h, h), two Mul2(h, z), h = 2x": (_READ_BY_OTHERS, (
        ["backward_impl 1", "backward_impl 1 inputs[0].g", "backward_impl 2",
         "backward_impl 2 inputs[0].g", "backward_impl 2 inputs[1].g", "x.g", "z.g"],
        ["backward_impl 1", "backward_impl 1 inputs[0].g", "backward_impl 2",
         "backward_impl 2 inputs[0].g", "backward_impl 2 inputs[1].g"])),
}


@nnabla_case(names=["nnabla.function.PythonFunction", "nnabla.Variable.backward"],
             note="x = [0.5, -1, 2] (x.g = 1), z = [3, 4, -2] (z.g = 10); Mul2 (a "
                  "PythonFunction a * b, assigning or adding where accum) several times over "
                  "shared inputs: three over one intermediate, chained (one's output another's "
                  "input), over intermediates of several ranks, two inner inputs swapped, "
                  "other leaves, beside Mul2(x, z) or Mul2(h, h); static and dynamic: the tag, "
                  "accum, inputs[0].g and inputs[1].g each backward_impl sees (in the order "
                  "called), x.g and z.g",
             known=dict(("%s: %s: %s: %s" % (g, how, mode, k), why)
                        for g, (why, keys) in _GROUP_KNOWN.items()
                        for how, ks in zip(("assigning", "adding"), keys)
                        for mode in ("static", "dynamic") for k in ks))
def python_function__groups_over_shared_inputs(nn, F, PF, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    r.touch("nnabla.function.PythonFunction", "nnabla.Variable.backward")
    res = {}
    for name in sorted(_GROUPS):
        for assign in (True, False):
            for dynamic in (False, True):
                key = "%s: %s: %s: " % (name, "assigning" if assign else "adding",
                                        "dynamic" if dynamic else "static")
                seen = []

                def M(tag, s):
                    return _mul2_tagged(PythonFunction, seen, s, tag)
                nn.set_auto_forward(dynamic)
                try:
                    x = nn.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32),
                                                     need_grad=True)
                    z = nn.Variable.from_numpy_array(np.array([3.0, 4.0, -2.0], np.float32),
                                                     need_grad=True)
                    loss = _GROUPS[name](F, M, x, z, assign)
                finally:
                    nn.set_auto_forward(False)
                if not dynamic:
                    loss.forward()
                x.g = 1.0
                z.g = 10.0
                loss.backward()
                res[key + "x.g"] = x.g.copy()
                res[key + "z.g"] = z.g.copy()
                for k, (tag, accum, g0, g1) in enumerate(seen):
                    res[key + "backward_impl %d" % k] = [tag, accum]
                    res[key + "backward_impl %d inputs[0].g" % k] = g0
                    res[key + "backward_impl %d inputs[1].g" % k] = g1
    return res


def _mul2_counted(PythonFunction, calls, assign):
    def backward(inputs, outputs, propagate_down, accum):   # notes each call
        calls.append(["backward_impl", [bool(p) for p in propagate_down],
                      [bool(a) for a in accum]])
        write_products(inputs, outputs, accum, assign, propagate_down)

    return mul2(PythonFunction, backward, on_forward=lambda: calls.append("forward_impl"))


_LATE_INPUT = (
    "graph/_late_leaves.py gives a leaf switched on (need_grad) after a dynamic op used it its "
    "gradient by running that op again for it alone: a PythonFunction's forward_impl runs "
    "twice and its backward_impl twice, with propagate_down [True, False] then [False, True], "
    "NNabla once with [True, True]; the backward overwriting x.g leaves [5, 6, 7], NNabla "
    "[2, 3, 4] (the static graph, whose forward runs after the switch, agrees)")


@nnabla_case(names=["nnabla.function.PythonFunction", "nnabla.Variable.backward"],
             note="x = [0.5, -1, 2] (need_grad, x.g = 1), c = [2, 3, 4] made with need_grad "
                  "False and switched on after sum(x * 3) + sum(Mul2(x, c)) + sum(c * 5) was "
                  "made (c.g = 7); Mul2 a PythonFunction a * b, overwriting or adding where "
                  "accum; static and dynamic: the forward_impl / backward_impl calls "
                  "(propagate_down, accum), x.g and c.g",
             known=dict(("%s: dynamic: %s" % (how, k), _LATE_INPUT)
                        for how, keys in (("overwriting", ("calls", "x.g")),
                                          ("adding", ("calls",)))
                        for k in keys))
def python_function__input_switched_on_late(nn, F, PF, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    r.touch("nnabla.function.PythonFunction", "nnabla.Variable.backward")
    res = {}
    for assign in (True, False):
        for dynamic in (False, True):
            key = "%s: %s: " % ("overwriting" if assign else "adding",
                                "dynamic" if dynamic else "static")
            calls = []
            nn.set_auto_forward(dynamic)
            try:
                x = nn.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32),
                                                 need_grad=True)
                c = nn.Variable.from_numpy_array(np.array([2.0, 3.0, 4.0], np.float32),
                                                 need_grad=False)
                loss = (F.sum(x * 3.0) + F.sum(_mul2_counted(PythonFunction, calls, assign)(x, c))
                        + F.sum(c * 5.0))
            finally:
                nn.set_auto_forward(False)
            c.need_grad = True
            if not dynamic:
                loss.forward()
            x.g = 1.0
            c.g = 7.0
            loss.backward()
            res[key + "calls"] = calls
            res[key + "x.g"] = x.g.copy()
            res[key + "c.g"] = c.g.copy()
    return res
