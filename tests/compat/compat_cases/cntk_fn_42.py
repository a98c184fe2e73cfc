"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (cntkfn42): ``param_relu`` was one
primitive op ``PReLU`` (max(x, 0) + alpha * min(x, 0)), where CNTK 2.7 makes a block
``PReLU`` of ``Select(x < 0, alpha * x, x)`` (Function.cpp ``PReLU``, AsBlock over x and
alpha): no ``block_root``, other inputs, and the gradient at ``x == 0`` 1 + alpha (CNTK: 1);
a numpy alpha taken (CNTK: SWIG's NotImplementedError)."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _kind(v):
    return ("placeholder" if v.is_placeholder else "parameter" if v.is_parameter else
            "constant" if v.is_constant else "input" if v.is_input else "output")


def _leaf(v):
    return [v.name, _kind(v), list(v.shape)]


@cntk_case(names=["cntk.ops.param_relu", "cntk.Function.is_block", "cntk.Function.block_root",
                  "cntk.Function.block_arguments_mapping", "cntk.Function.root_function",
                  "cntk.Function.clone", "cntk.Function.grad", "cntk.Function.inputs",
                  "cntk.logging.graph.depth_first_search"],
           note="param_relu(alpha (3,), x (3,), name='pr'): the root a block 'PReLU' named "
                "'pr', its inputs (the constant 0, x, alpha), its arguments map (x, alpha "
                "each to a placeholder), its block_root Select over Less, ElementTimes and "
                "x's placeholder; the walks with and without entering it; a clone of each "
                "method still the block; the value and the gradients at x = -1, 0, 2 (at 0: "
                "1 to x, as Select passes x on); alpha of shape (1,); a numpy alpha refused")
def param_relu__a_block_prelu(C, r, np):
    for n in ("cntk.Function.is_block", "cntk.Function.block_root", "cntk.Function.inputs",
              "cntk.Function.block_arguments_mapping", "cntk.Function.root_function",
              "cntk.Function.clone", "cntk.Function.grad"):
        r.touch(n)
    x = C.input_variable(3, name="x", needs_gradient=True)
    alpha = C.parameter(shape=(3,), init=0.25, name="alpha")
    z = C.param_relu(alpha, x, name="pr")
    root = z.root_function
    inner = root.block_root
    out = {"root": [root.op_name, root.is_block, root.name, z.output.name, str(z)],
           "inputs": [_leaf(v) for v in root.inputs],
           "mapping": [[_leaf(p), _leaf(a)] for p, a in root.block_arguments_mapping],
           "block_root": [inner.op_name, inner.is_block,
                          [[v.name, _kind(v)] + ([v.owner.op_name] if v.is_output else [])
                           for v in inner.inputs]],
           "walk": [f.op_name if isinstance(f, C.Function) else _kind(f)
                    for f in C.logging.graph.depth_first_search(z, lambda f: True)],
           "walk inside": [f.op_name for f in C.logging.graph.depth_first_search(
               z, lambda f: isinstance(f, C.Function), depth=-1)]}
    clones = {}
    for method in ("clone", "share", "freeze"):
        c = z.clone(getattr(C.CloneMethod, method)).root_function
        clones[method] = [c.op_name, c.is_block, c.name, len(c.parameters),
                          [p is alpha or p == alpha for p in c.parameters]]
    out["clones"] = clones
    data = np.array([[-1.0, 0.0, 2.0], [0.5, -3.0, 0.0]], np.float32)
    out["value"] = z.eval({x: data})
    grads = z.grad({x: data}, wrt=[alpha, x])
    out["d alpha"], out["d x"] = grads[alpha], grads[x]
    a1 = C.parameter(shape=(1,), init=0.5, name="a1")
    z1 = C.param_relu(a1, x)
    out["alpha (1,)"] = [z1.eval({x: data}), z1.grad({x: data}, wrt=[a1])]
    out["numpy alpha"] = _outcome(lambda: C.param_relu(np.float32(0.3), x).shape)
    return out
