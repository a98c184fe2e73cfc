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


@cntk_case(names=["cntk.debugging.debug_model", "cntk.debugging.DEBUG_USAGE",
                  "cntk.debugging.debug.debug_model", "cntk.debugging.debug.DEBUG_USAGE"])
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
            "debug module": [C.debugging.debug.DEBUG_USAGE == C.debugging.DEBUG_USAGE,
                             C.debugging.debug.debug_model is C.debugging.debug_model],
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


@cntk_case(names=["cntk.debugging.debug_model"],
           known={"lines": "sequence.last's Slice has none of CNTK's two scalar constants "
                           "(CNTK 2.7 stops at each before it, and shows the Slice as "
                           "'Sequence::Slice(np.float32, np.float32, Sequence[Tensor[2]])', "
                           "Stadyn as 'Sequence::Slice(Sequence[Tensor[2]])'); and on the eval "
                           "after grad CNTK's network keeps the values of the parameters and "
                           "constants and does not stop at them again, Stadyn does (the "
                           "loop's PastValue stops, once per step in both passes, match: "
                           "debug_model_recurrence_steps)"})
def debug_model_recurrence(C, r):
    """A sequence input through a Recurrence of an RNNStep, ``sequence.last`` and a Dense:
    the debugged model (fed through its own argument: CNTK 2.7's clone has a new input)
    evaluates, and gives the gradients, of the model.  (``p`` at a sequence is left out: CNTK
    2.7 hands the debug node a list of arrays there and fails on its ``shape``.)"""
    x = C.sequence.input_variable(2, name="x")
    m = C.layers.Sequential([C.layers.Recurrence(C.layers.RNNStep(2, init=0.1)),
                             C.sequence.last, C.layers.Dense(1, init=0.2)])(x)
    out = io.StringIO()
    dz = C.debugging.debug_model(m, io.StringIO("n\np\nc\n"), out)
    data = [np.arange(6, dtype=np.float32).reshape(3, 2) / 10,
            np.arange(6, dtype=np.float32).reshape(3, 2) / -7]
    plain = m.grad({x: data}, wrt=m.parameters)
    debugged = dz.grad({dz.arguments[0]: data}, wrt=dz.parameters)
    return {"eval": dz.eval({dz.arguments[0]: data}), "plain eval": m.eval({x: data}),
            "grads": [debugged[p] for p in m.parameters],
            "plain grads": [plain[p] for p in m.parameters], "lines": _lines(out),
            "parameters": len(dz.parameters)}


@cntk_case(names=["cntk.debugging.debug_model"])
def debug_model_fold_embedding(C, r):
    """Manual_How_to_debug's last cell debugs an Embedding and a ``Fold`` of a GRU: the
    debugged model (``c`` at the first stop) evaluates, and gives the gradients, of the model
    (the stops' transcript is left out: Stadyn's stops at a Fold have no PastValue, its
    leaves come in another order and its Sequence::Slice is stopped at twice)."""
    x = C.sequence.input_variable(3, name="x")
    with C.default_options(init=0.1):
        m = C.layers.Fold(C.layers.GRU(2))(C.layers.Embedding(4)(x))
    dz = C.debugging.debug_model(m, io.StringIO("c\n"), io.StringIO())
    data = [np.eye(3, dtype=np.float32), np.ones((2, 3), np.float32)]
    plain = m.grad({x: data}, wrt=m.parameters)
    debugged = dz.grad({dz.arguments[0]: data}, wrt=dz.parameters)
    return {"eval": dz.eval({dz.arguments[0]: data}), "plain eval": m.eval({x: data}),
            "grads": [debugged[p] for p in m.parameters],
            "plain grads": [plain[p] for p in m.parameters]}


@cntk_case(names=["cntk.debugging.debug_model"],
           note="a Recurrence of an RNNStep, and of a GRU, then a Dense over each step, "
                "differentiated (the GRU evaluated) with scripted commands (stepping through "
                "the loop, 'u b', 'n 3' in the backward pass, 'p' at a parameter): CNTK 2.7 "
                "stops at the loop's PastValue once per step of the longest sequence (3 here) "
                "in both passes, between the loop's inputs and the step function, and takes "
                "a GRU's inputs as its scalar constant, b, W, the input, H, the initial "
                "state, its second H.  "
                "Stadyn stopped once after the loop, with no PastValue stop, and took a GRU's "
                "constants first")
def debug_model_recurrence_steps(C, r):
    r.touch("cntk.layers.Recurrence", "cntk.layers.RNNStep", "cntk.layers.GRU",
            "cntk.layers.Dense", "cntk.layers.Sequential", "cntk.sequence.input_variable")
    x = C.sequence.input_variable(2, name="x")
    data = [np.arange(6, dtype=np.float32).reshape(3, 2) / 10,
            np.arange(4, dtype=np.float32).reshape(2, 2) / -7]
    res = {}
    for label, step in (("RNNStep", lambda: C.layers.RNNStep(2, init=0.1)),
                        ("GRU", lambda: C.layers.GRU(2, init=0.1))):
        m = C.layers.Sequential([C.layers.Recurrence(step()),
                                 C.layers.Dense(1, init=0.2)])(x)
        out = io.StringIO()
        if label == "GRU":
            # (forward only: after a run Stadyn shows the GRU's scalar constant, in the
            # backward pass's GRU line, as ParameterTensor[1] where CNTK 2.7 writes np.float32)
            dz = C.debugging.debug_model(m, io.StringIO("p\nn 5\nn\nn\nn\nc\n"), out)
            res[label + " eval"] = dz.eval({dz.arguments[0]: data})
            res[label + " plain eval"] = m.eval({x: data})
            res[label + " lines"] = _lines(out)
            continue
        script = "p\nn 5\nn\nn\nu b\nn 3\nn\nc\n"
        dz = C.debugging.debug_model(m, io.StringIO(script), out)
        debugged = dz.grad({dz.arguments[0]: data}, wrt=dz.parameters)
        plain = m.grad({x: data}, wrt=m.parameters)
        res[label + " lines"] = _lines(out)
        res[label + " grads"] = [debugged[p] for p in dz.parameters]
        res[label + " plain grads"] = [plain[p] for p in m.parameters]
    return res
