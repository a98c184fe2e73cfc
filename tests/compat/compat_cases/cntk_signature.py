"""``@C.Function`` on Python functions whose arguments have no types: the arguments are
placeholders of unknown shape until the Function is applied, and one such Function applies to
operands of different shapes (typed signatures are in cntk_function.py)."""

import numpy as np

from compat_harness import cntk_case


@cntk_case(names=["cntk.Function", "cntk.Function.arguments", "cntk.Function.eval",
                  "cntk.Variable.is_placeholder", "cntk.ops.reduce_sum"],
           note="CNTK shows an untyped argument's shape as (-2,) (unknown rank)")
def function_untyped(C, r):
    r.touch("cntk.Function.arguments", "cntk.Function.eval", "cntk.Variable.is_placeholder")

    @C.Function
    def f(x, y):
        return C.relu(x) * 2.0 + y

    @C.Function
    def total(x):
        return C.reduce_sum(x, axis=0)

    res = {"arguments": [[a.name, list(a.shape), bool(a.is_placeholder)] for a in f.arguments]}
    a, b = C.input_variable(3), C.input_variable(3)
    g = f(a, b)
    res["applied shape"] = list(g.shape)
    res["applied arguments"] = [list(v.shape) for v in g.arguments]
    res["applied"] = g.eval({a: r.randn(4, 3), b: r.randn(4, 3)})
    x2 = C.input_variable((2, 3))
    k = f(x2, C.constant(r.randn(2, 3)))
    res["other shape"] = list(k.shape)
    res["other"] = k.eval({x2: r.randn(2, 2, 3)})
    res["total shapes"] = [list(total(x2).shape), list(total(a).shape)]
    res["total"] = total(x2).eval({x2: r.randn(2, 2, 3)})
    return res


@cntk_case(names=["cntk.Function.update_signature", "cntk.Function.arguments",
                  "cntk.Function.eval", "cntk.Trainer.total_number_of_units_seen"],
           note="update_signature of ops over placeholders without a shape (CNTK: a Function "
                "like any other, ops and layers apply to it; Stadyn's waiting call had none); "
                "the Trainer's "
                "total_number_of_units_seen counts samples when given no DataUnit")
def update_signature_of_ops_on_shapeless_placeholders(C, r):
    r.touch("cntk.Function.update_signature", "cntk.Function.arguments", "cntk.Function.eval",
            "cntk.Trainer.total_number_of_units_seen")
    res = {}
    cases = [("relu", C.relu(C.placeholder(name="p")), (4,)),
             ("dense", C.layers.Dense(3, init=0.5)(C.placeholder(name="q")), (4,)),
             ("sequential", C.layers.Sequential([C.layers.Dense(3, init=0.5), C.relu])(
                 C.placeholder()), (4,)),
             ("two", C.plus(C.placeholder(name="a"), C.placeholder(name="b") * 2.0), (2, 2))]
    for key, f, kinds in cases:
        before = [[a.name, list(a.shape)] for a in f.arguments]
        f.update_signature(*kinds)
        after = [[a.name, list(a.shape), a.is_input, a.is_placeholder] for a in f.arguments]
        data = {a: r.randn(2, a.shape[0]) for a in f.arguments}
        res[key] = {"before": before, "after": after, "output": list(f.output.shape),
                    "parameters": len(f.parameters), "eval": f.eval(data)}
    f = C.relu(C.placeholder(name="s"))
    f.update_signature(C.layers.Sequence[C.layers.Tensor[2]])
    res["sequence"] = [[list(a.shape), len(a.dynamic_axes)] for a in f.arguments]
    res["sequence eval"] = np.stack(f.eval({f.arguments[0]: [r.randn(3, 2)]}))
    f = C.relu(C.placeholder(name="t"))
    f.update_signature(3)
    data = r.randn(2, 3)
    res["ops on it"] = (f + 1.0).eval(data)
    res["splice of it"] = C.splice(f, f * 2.0).eval(data)
    res["layer on it"] = C.layers.Dense(2, init=0.5)(f).eval(data)
    x, y = C.input_variable(3), C.input_variable(2)
    z = C.layers.Dense(2)(x)
    trainer = C.Trainer(z, C.cross_entropy_with_softmax(z, y),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    trainer.train_minibatch({x: r.randn(2, 3), y: r.onehot(2, 2)}, is_sweep_end=True)
    trainer.train_minibatch({x: r.randn(3, 3), y: r.onehot(3, 2)})
    res["units seen"] = [trainer.total_number_of_units_seen()] + [
        trainer.total_number_of_units_seen(u) for u in C.DataUnit]
    return res
