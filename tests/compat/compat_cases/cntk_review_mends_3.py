"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 after the twenty-second round (a
reviewer's findings): inputs with free dimensions after an eval refused for their lengths; ops
and walks on the root function of a layer not applied yet or of a waiting Function."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


@cntk_case(names=["cntk.FreeDimension"],
           note="x + y of two inputs (FreeDimension, 3), built anew for each eval, after an "
                "eval refused for lengths 4 and 2: CNTK 2.7 runs the next evals (4 and 1 "
                "broadcast); Stadyn refused each, naming the lengths of the refused eval")
def free_dimensions__after_an_eval_refused_for_their_lengths(C, r, np):
    r.touch("cntk.input_variable", "cntk.ops.plus")
    x = C.input_variable((C.FreeDimension, 3), name="x")
    y = C.input_variable((C.FreeDimension, 3), name="y")
    res = {}
    for i, j in [(4, 2), (4, 4), (2, 2), (1, 1), (4, 1), (4, 2), (1, 4)]:
        a = np.arange(i * 3, dtype=np.float32).reshape(1, i, 3)
        b = np.ones((1, j, 3), np.float32)
        res["%d, %d" % (i, j)] = _outcome(lambda: (x + y).eval({x: a, y: b}).tolist())
    return res


def _seen(C, node):
    if node is None:
        return None
    return [isinstance(node, C.Function), node.name, getattr(node, "op_name", None)]


@cntk_case(names=["cntk.logging.graph.depth_first_search", "cntk.logging.graph.find_by_name",
                  "cntk.combine", "cntk.ops.plus"],
           note="the Functions a walk of an unapplied Sequential meets (its root, the first "
                "Dense's root) and a waiting Function's root function, walked again, searched "
                "by name, added to and combined: CNTK 2.7 takes each as a Function; Stadyn "
                "raised AttributeError")
def root_functions__of_layers_and_waiting_functions_as_operands(C, r):
    r.touch("cntk.layers.Sequential", "cntk.layers.Dense", "cntk.placeholder")
    s = C.layers.Sequential([C.layers.Dense(3, name="first"), C.layers.Dense(2, name="last")])
    nodes = C.logging.graph.depth_first_search(s, lambda n: True)
    roots = {"Sequential's walk, node %d" % k: nodes[k] for k in (0, 3)}
    roots["plus(placeholder, 1).root_function"] = C.plus(C.placeholder(), 1).root_function
    res = {}
    for label, node in roots.items():
        walk = C.logging.graph.depth_first_search
        res[label] = {
            "class": node.__class__.__name__,
            "walk": _outcome(lambda: len(walk(node, lambda n: True))),
            "plus": _outcome(lambda: len(C.plus(node, 2).outputs)),
            "combine": _outcome(lambda: len(C.combine([node]).outputs)),
            "find first": _outcome(lambda: _seen(C, C.logging.graph.find_by_name(node, "first"))),
            "find x": _outcome(lambda: _seen(C, C.logging.graph.find_by_name(node, "x")))}
    return res


def _refused(fn):
    """The built-in type of what ``fn()`` raised, and the first line's CNTK words up to the
    first quoted name (Stadyn's own words follow in parentheses; a Function not typed yet
    has no output to name)."""
    try:
        fn()
    except Exception as e:          # (the built-in type and CNTK's words are compared)
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        line = str(e).strip().splitlines()[0]
        return {"raises": kind, "says": line.split(" (")[0].split(" '")[0]}
    return {"returns": True}


@cntk_case(names=["cntk.Function", "cntk.layers.Dense", "cntk.layers.Convolution",
                  "cntk.layers.Convolution2D", "cntk.layers.ConvolutionTranspose",
                  "cntk.layers.Embedding"],
           note="an untyped @C.Function run before it has types (eval/forward/grad with no "
                "data, some, all): CNTK 2.7's ValueError 'function expects 2 arguments', "
                "'... have not been provided.', RuntimeError 'Unknown DataType.'; Stadyn "
                "raised AttributeError ('_Deferred has no ...').  An array, list or tuple "
                "as a layer's init: CNTK 2.7's Dense and ConvolutionTranspose refuse it "
                "(TypeError), a Convolution's array with a reduction axis its ValueError, "
                "Embedding takes it; Stadyn took each")
def untyped_function_runs__and_array_inits_of_layers(C, r, np):
    r.touch("cntk.input_variable")

    @C.Function
    def f(a, b):
        return a + b
    d = np.ones((1, 2), np.float32)
    L = C.layers
    x = C.input_variable((1, 4, 4))
    tries = {
        "eval {}": lambda: f.eval({}),
        "eval None": lambda: f.eval(),
        "forward {}": lambda: f.forward({}),
        "grad {}": lambda: f.grad({}),
        "eval one of two": lambda: f.eval({f.arguments[0]: d}),
        "eval both": lambda: f.eval({f.arguments[0]: d, f.arguments[1]: d}),
        "Dense, array": lambda: L.Dense(2, init=np.ones((3, 2), np.float32)),
        "Dense, 0-d array": lambda: L.Dense(2, init=np.array(0.5)),
        "Dense, list": lambda: L.Dense(2, init=[[1.0, 2.0]]),
        "Dense, number": lambda: L.Dense(2, init=0.5)(C.input_variable(3)),
        "Convolution, array": lambda: L.Convolution(
            (2, 2), 1, init=np.ones((1, 1, 2, 2), np.float32))(x),
        "Convolution2D, list": lambda: L.Convolution2D((2, 2), 1, init=[[1.0]]),
        "ConvolutionTranspose, array": lambda: L.ConvolutionTranspose(
            (2, 2), 1, init=np.ones((1, 1, 2, 2), np.float32))(x),
        "Embedding, array": lambda: L.Embedding(2, init=np.ones((3, 2), np.float32))(
            C.input_variable(3))}
    return {label: _refused(make) for label, make in tries.items()}
