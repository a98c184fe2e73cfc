"""``cntk.debugging.debug_model`` (CNTK 2.7's interactive debugger) driven by scripted commands
on an ``io.StringIO``: what it writes (prompts, the node it stops after, values, gradients, the
usage text for commands it does not understand), ``exit_func`` called on ``q``, and the debugged
model computing what the model does (``eval``, ``grad``, a Trainer's ``train_minibatch``).
Uids (``Plus116``, and ``Constant8`` as an unnamed constant's name) count every function the
process made, so their numbers are masked."""

import io
import re

import numpy as np

from compat_harness import cntk_case


def _lines(out):
    """The lines written, uids masked, a line of an array's numbers as the numbers (compared
    within the tolerance: the last printed digit of a float32 may differ)."""
    lines = []
    for ln in out.getvalue().splitlines():
        if ln.strip() and re.match(r"^[\s\[\]\d.eE+-]+$", ln):
            lines.append([ln.count("["), ln.count("]")] +
                         [float(t) for t in re.findall(r"[-+]?[\d.]+(?:e[-+]?\d+)?", ln)])
        else:
            lines.append(re.sub(r"'([A-Za-z]+)\d+'", r"'\1<n>'", ln))
    return lines


def _plus_tanh(C):
    x = C.input_variable(2, name="x")
    b = C.parameter(2, init=0.5, name="b")
    c = C.constant(np.array([2, -1], np.float32))
    return x, b, C.tanh(C.element_times(C.plus(x, b), c), name="out")


_X = np.array([[1, 2], [3, -4]], np.float32)


@cntk_case(names=["cntk.debugging.debug_model", "cntk.debugging.DEBUG_USAGE"])
def debug_model_commands(C, r):
    """Stepping (``n``, ``n 2``), printing (``p``) in both passes, ``u`` to a name, to a lambda,
    to the backward pass, commands it does not understand (the usage text again), ``q``
    (``exit_func(0)``, which here returns: the prompt comes again), ``c``."""
    x, b, z = _plus_tanh(C)
    script = ["p", "n", "xx", "n0", "nx", "q", "n 2", "u out", "p", "u b",
              "u lambda arg, node: getattr(node, 'op_name', '') == 'Plus'", "p", "n", "p", "c"]
    out, exits = io.StringIO(), []
    dz = C.debugging.debug_model(z, io.StringIO("\n".join(script) + "\n"), out, exits.append)
    grads = dz.grad({x: _X}, wrt=[b])
    plain = z.grad({x: _X}, wrt=[b])
    return {"lines": _lines(out), "exits": exits, "grad": grads,
            "same grad": bool(np.allclose(grads, plain)),
            "eval after c": dz.eval({x: _X}), "usage": C.debugging.DEBUG_USAGE.splitlines(),
            "name": re.sub(r"\d+", "<n>", dz.name)}


@cntk_case(names=["cntk.debugging.debug_model"])
def debug_model_until_passes(C, r):
    """``u f`` in the forward pass goes on as ``n``, ``u b`` runs on to the backward pass (the
    prompt CNTK 2.7 shows there is the forward one), ``u`` and ``u ba`` too; ``n 3`` counts."""
    x, b, z = _plus_tanh(C)
    script = ["u f", "u backward", "u f", "n 3", "p", "c"]
    out = io.StringIO()
    dz = C.debugging.debug_model(z, io.StringIO("\n".join(script) + "\n"), out)
    g = dz.grad({x: _X}, wrt=[b])
    out2 = io.StringIO()
    dz2 = C.debugging.debug_model(z, io.StringIO("u\nn\nu ba\nn\nc\n"), out2)
    dz2.grad({x: _X}, wrt=[b])
    return {"lines": _lines(out), "grad": g, "lines u": _lines(out2)}


@cntk_case(names=["cntk.debugging.debug_model"])
def debug_model_dense_trainer(C, r):
    """A Sequential of two Dense layers, trained one minibatch: the nodes in CNTK 2.7's order
    in both passes (a Dense's weights, its input, its bias), values and gradients printed,
    ``c`` running through the rest; the debugged model trains (``train_minibatch``) and
    evaluates as the model does."""
    def model():
        return C.layers.Sequential([C.layers.Dense(3, activation=C.tanh, init=0.3),
                                    C.layers.Dense(1, init=0.2)])
    x = C.input_variable(2, name="x")
    y = C.input_variable(1, name="y")
    results = {}
    for debug in (False, True):
        z = model()(x)
        out = io.StringIO()
        if debug:
            script = "p\nn 3\np\nu backward\np\nn\np\nn 2\np\nc\n"
            z = C.debugging.debug_model(z, io.StringIO(script), out)
        loss = C.squared_error(z, y)
        t = C.Trainer(z, (loss, None), [C.sgd(z.parameters, 0.1)])
        t.train_minibatch({x: _X, y: np.array([[1], [0]], np.float32)})
        key = "debugged" if debug else "plain"
        results[key + " eval"] = z.eval({x: _X})
        results[key + " loss"] = t.previous_minibatch_loss_average
        if debug:
            results["lines"] = _lines(out)
    return results
