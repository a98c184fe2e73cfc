"""Where ``stadyn.compat.cntk``'s user functions over waiting inputs did otherwise than CNTK
2.7 (review of cntkgraph41): a call or a clone of such a Function makes its user function
again by ``clone(cloned_inputs)`` (CNTK's ``__call__`` clones), a user function over a
waiting op, and the array a handed Value's ``data()`` gives."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _scaled(C):
    """Scaled (its k 2.0 unless given: CNTK's default clone, type(self)(*cloned_inputs,
    name=self.name), makes one of k 2.0) and Tenfold (a clone of ten times its k)."""
    UserFunction = C.ops.functions.UserFunction

    class Scaled(UserFunction):
        def __init__(self, arg, k=2.0, name="Scaled"):
            super(Scaled, self).__init__([arg], name=name)
            self.k = k

        def forward(self, argument, device=None, outputs_to_retain=None):
            return None, argument * self.k

        def backward(self, state, root_gradients):
            return root_gradients * self.k

        def infer_outputs(self):
            x = self.inputs[0]
            return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]

    class Tenfold(Scaled):
        def clone(self, cloned_inputs):
            return Tenfold(cloned_inputs[0], self.k * 10, name=self.name + "_c")

    return Scaled, Tenfold


@cntk_case(names=["cntk.ops.functions.UserFunction", "cntk.user_function",
                  "cntk.ops.placeholder", "cntk.Function.clone", "cntk.ops.as_block",
                  "cntk.Function.replace_placeholders",
                  "cntk.ops.functions.UserFunction.clone", "cntk.debugging.UserFunction.name"],
           note="a user function over a placeholder (shaped (2,) or not) of k 3.0: CNTK 2.7's "
                "call f(x) and clone(share/freeze, {p: x}) clone the Function, so the user "
                "function is made again by its clone(cloned_inputs) -- the default one "
                "type(self)(*cloned_inputs, name=self.name) runs k 2.0 (x 2), Tenfold's k "
                "30.0 (x 30), for each of two calls; as_block and replace_placeholders bind "
                "in place (x 3). Stadyn built the same instance in every case (x 3, SILENT)")
def user_function__waiting_called_or_cloned(C, r, np):
    r.touch("cntk.Function.clone", "cntk.ops.as_block", "cntk.Function.replace_placeholders",
            "cntk.ops.functions.UserFunction.clone",
            "cntk.debugging.UserFunction.name")     # (the default clone reads self.name)
    Scaled, Tenfold = _scaled(C)
    one = np.arange(4, dtype=np.float32).reshape(2, 2)
    res = {}
    for shaped in (True, False):
        for kind in (Scaled, Tenfold):
            def made(kind=kind, shaped=shaped):
                p = C.placeholder(2, name="p") if shaped else C.placeholder(name="p")
                return p, C.user_function(kind(p, 3.0, name="u"))
            key = "%s %s " % (kind.__name__, "shaped" if shaped else "shapeless")

            def called():
                p, f = made()
                x, y = C.input_variable(2), C.input_variable(2)
                g, h = f(x), f(y)
                return {"first": g.eval({x: one}), "second": h.eval({y: one}),
                        "first again": g.eval({x: one})}

            def cloned(method):
                p, f = made()
                x = C.input_variable(2)
                return f.clone(getattr(C.CloneMethod, method), {p: x}).eval({x: one})

            def as_block():
                p, f = made()
                x = C.input_variable(2)
                return C.as_block(f, [(p, x)], "B").eval({x: one})

            def replaced():
                p, f = made()
                x = C.input_variable(2)
                return f.replace_placeholders({p: x}).eval({x: one})

            res[key + "called twice"] = _outcome(called)
            res[key + "clone share"] = _outcome(lambda: cloned("share"))
            res[key + "clone freeze"] = _outcome(lambda: cloned("freeze"))
            res[key + "as_block"] = _outcome(as_block)
            res[key + "replace_placeholders"] = _outcome(replaced)
    return res


@cntk_case(names=["cntk.ops.functions.UserFunction", "cntk.user_function",
                  "cntk.ops.placeholder", "cntk.ops.plus", "cntk.ops.tanh",
                  "cntk.Function.replace_placeholders"],
           note="a user function made on a waiting op (Scaled(p + 1, 3.0) on placeholder(2), "
                "Scaled(tanh(p), 3.0) on placeholder()): CNTK 2.7 builds it (shape (2,) / "
                "(-2,)); called on x it runs its clone's k 2.0, replaced in place its own "
                "3.0. Stadyn's UserFunction took the waiting op, being callable, for the "
                "Python function of C.Function(f) (TypeError 'CNTK Function expected 1 "
                "arguments, got 0')")
def user_function__over_a_waiting_op(C, r, np):
    r.touch("cntk.ops.plus", "cntk.ops.tanh", "cntk.Function.replace_placeholders")
    Scaled, _ = _scaled(C)
    one = np.arange(4, dtype=np.float32).reshape(2, 2)

    def made(shaped):
        p = C.placeholder(2) if shaped else C.placeholder()
        return p, C.user_function(Scaled(p + 1 if shaped else C.tanh(p), 3.0))

    res = {}
    for shaped in (True, False):
        key = "shaped " if shaped else "shapeless "

        def called(shaped=shaped):
            x = C.input_variable(2)
            return made(shaped)[1](x).eval({x: one})

        def replaced(shaped=shaped):
            x = C.input_variable(2)
            p, f = made(shaped)
            return f.replace_placeholders({p: x}).eval({x: one})

        res[key + "shape"] = _outcome(lambda shaped=shaped: list(made(shaped)[1].shape))
        res[key + "called"] = _outcome(called)
        res[key + "replaced"] = _outcome(replaced)
    return res


@cntk_case(names=["cntk.ops.functions.UserFunction", "cntk.user_function"],
           note="the array a Value handed to a user function made with as_numpy=False gives "
                "by data(): SWIG's NDArrayView, whose shape is a method giving an NDShape "
                "(dimensions() (2, 3) for 2 samples of (3,), rank() 2); Stadyn's was "
                "cntk.core's NDArrayView, shape the tuple (data().shape() TypeError)")
def user_function__handed_data_shape(C, r, np):
    UserFunction = C.ops.functions.UserFunction
    seen = []

    class Look(UserFunction):
        def __init__(self, arg, name="Look"):
            super(Look, self).__init__([arg], as_numpy=False, name=name)

        def forward(self, argument, device=None, outputs_to_retain=None):
            d = argument.data()
            seen.append({"shape callable": callable(d.shape),
                         "dimensions": _outcome(lambda: list(d.shape().dimensions())),
                         "rank": _outcome(lambda: d.shape().rank()),
                         "asarray": d.asarray()})
            return None, argument.deep_clone()

        def backward(self, state, root_gradients):
            return root_gradients.deep_clone()

        def infer_outputs(self):
            x = self.inputs[0]
            return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]

    x = C.input_variable(3)
    out = C.user_function(Look(x)).eval({x: np.arange(6, dtype=np.float32).reshape(2, 3)})
    return {"seen": seen, "out": out}
