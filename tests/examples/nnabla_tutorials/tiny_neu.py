"""A stand-in for the two helpers of nnabla-examples' ``utils/neu`` that the CIFAR-10 tutorial
imports (it clones nnabla-examples for them): ``save_checkpoint`` / ``load_checkpoint`` (the
parameters, each solver's states and a ``checkpoint_<iter>.json`` naming them, in ``path``)
and ``save_nnp`` (the contents ``nnabla.utils.save.save`` writes as an ``.nnp``: one network
from the given inputs to the outputs, and its executor).  Written for these tests, not
nnabla-examples' code; runs on either framework (``import nnabla``)."""

import json
import os

import nnabla as nn

__all__ = ["save_checkpoint", "load_checkpoint", "save_nnp"]


def _solvers(solvers):
    return solvers if isinstance(solvers, dict) else {"": solvers}


def save_checkpoint(path, current_iter, solvers):
    """Write the parameters, the solvers' states and ``checkpoint_<current_iter>.json``."""
    os.makedirs(path, exist_ok=True)
    info = {"current_iter": current_iter, "states": {}}
    for name, solver in _solvers(solvers).items():
        fname = "states_{}{:06d}.h5".format(name + "_" if name else "", current_iter)
        solver.save_states(os.path.join(path, fname))
        info["states"][name] = fname
    info["params"] = "params_{:06d}.h5".format(current_iter)
    nn.save_parameters(os.path.join(path, info["params"]))
    with open(os.path.join(path, "checkpoint_{}.json".format(current_iter)), "w") as f:
        json.dump(info, f)


def load_checkpoint(path, solvers):
    """Read back what ``save_checkpoint`` wrote (``path`` is its JSON file); returns the
    iteration it was saved at."""
    base = os.path.dirname(path)
    with open(path) as f:
        info = json.load(f)
    nn.load_parameters(os.path.join(base, info["params"]))
    for name, solver in _solvers(solvers).items():
        solver.set_parameters(nn.get_parameters(), reset=False, retain_state=True)
        solver.load_states(os.path.join(base, info["states"][name]))
    return info["current_iter"]


def save_nnp(inputs, outputs, batch_size):
    """``nnabla.utils.save.save``'s contents for the network ``inputs`` -> ``outputs``
    (dicts of Variables by name)."""
    return {"networks": [{"name": "Validation", "batch_size": batch_size,
                          "outputs": outputs, "names": inputs}],
            "executors": [{"name": "Runtime", "network": "Validation",
                           "data": list(inputs), "output": list(outputs)}]}
