"""The batch size ``nn.graph_def``'s networks are built at (``graph_def.py``), as NNabla 1.39's
``ProtoNetwork.__call__`` / ``ProtoFunction.graph_call`` builds them: a Reshape's or
Broadcast's ``-1`` is the network's batch size (the recorded one, or ``load``'s
``batch_size``) whatever the inputs', so a call at another batch size either fails in that
function's setup (``check_batch``: NNabla's ``RuntimeError``) or broadcasts to the network's
batch (``broadcast_at``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

__all__ = ["at_batch", "as_saved", "broadcast_at", "check_batch", "fed_at"]


def at_batch(shape: Sequence[int], batch: int) -> tuple[int, ...]:
    """``shape`` with a first ``-1`` (the batch axis) at ``batch``.

    Example:
        >>> at_batch((-1, 3), 4), at_batch((2, 3), 4)
        ((4, 3), (2, 3))
    """
    return tuple(batch if k == 0 and d < 0 else int(d) for k, d in enumerate(shape))


def broadcast_at(legacy: Any, batch: int) -> Any:
    """``legacy`` (a network) whose Broadcasts to a shape of the batch axis (``-1`` first)
    broadcast to ``batch``: NNabla 1.39's ``graph_call`` makes them at the network's batch
    size whatever the inputs' (a Broadcast of a batch of 1 gives the network's batch)."""
    def fixed(f: Any) -> Any:
        shape = f.attrs.get("shape") if f.type == "Broadcast" else None
        if not shape or int(shape[0]) >= 0:
            return f
        return dataclasses.replace(f, attrs={**f.attrs, "shape": at_batch(shape, batch)})
    return dataclasses.replace(legacy, functions=[fixed(f) for f in legacy.functions])


def fed_at(legacy: Any, inputs: Sequence[str], args: Sequence[Any]) -> tuple[Any, int | None]:
    """``legacy`` (a network whose ``inputs`` are fed ``args``, Variables) with each input the
    file wrote at a fixed size (no ``-1``: NNabla's ``save`` of a network without a
    ``base_axis``, or ``variable_batch_size=False``) that is fed another first size written
    ``-1``, and that size (None if no input is): NNabla 1.39's graph_def builds each function
    on the Variables it is given, whatever the file's shapes (``ProtoNetwork.__call__``), so a
    ``Tanh`` saved at batch 2 runs at 4, and only a Reshape or Broadcast keeps its size.

    Example:
        >>> from stadyn.serialize import LegacyNetwork, LegacyVariable
        >>> from types import SimpleNamespace
        >>> net = LegacyNetwork("n", variables={"x": LegacyVariable("x", "input", (2, 3))})
        >>> fed, batch = fed_at(net, ["x"], [SimpleNamespace(shape=(4, 3))])
        >>> fed.variables["x"].shape, batch
        ((-1, 3), 4)
    """
    variables = dict(legacy.variables)
    batch = None
    for name, given in zip(inputs, args):
        v = variables.get(name)
        shape = tuple(int(d) for d in (v.shape or ())) if v is not None else ()
        fed = tuple(int(d) for d in getattr(given, "shape", ()) or ())
        if not shape or not fed or shape[0] < 0 or shape == fed or shape[1:] != fed[1:]:
            continue
        variables[name] = dataclasses.replace(v, shape=(-1,) + shape[1:])
        batch = fed[0] if batch is None else batch
    if batch is None:
        return legacy, None
    return dataclasses.replace(legacy, variables=type(legacy.variables)(variables)), batch


def check_batch(legacy: Any, batch: int | None) -> None:
    """NNabla 1.39's ``RuntimeError`` for a network called at a batch size its Reshape or
    Broadcast cannot take: its graph_def builds them at the network's batch size (the recorded
    one, or ``load``'s ``batch_size``) whatever the inputs' (Stadyn's ``.nnp`` loader follows
    the inputs), so that a Reshape whose input has another size, or a Broadcast from another
    batch than 1 or its own, fails in setup (``reshape.cpp:56``, ``broadcast.cpp:54``)."""
    own = int(legacy.batch_size or 1)
    if batch is None or batch == own:
        return
    shapes = {k: tuple(v.shape or ()) for k, v in legacy.variables.items()}
    for f in legacy.all_functions():
        if f.type not in ("Reshape", "Broadcast") or not f.inputs or \
                f.inputs[0] not in shapes or "shape" not in f.attrs:
            continue
        given = at_batch(shapes[f.inputs[0]], batch)
        if f.type == "Reshape":
            target = at_batch(f.attrs["shape"], own)
            size, target_size = int(np.prod(given)), int(np.prod(target))
            if size != target_size:
                raise RuntimeError(
                    f"value error in setup_impl\n{f.name} (called at batch size {batch}; "
                    f"NNabla 1.39's graph_def reshapes at the network's {target}): "
                    f"reshape.cpp:56\nFailed `tsize == tsize2`: Product of dimensions of "
                    f"inputs and outputs must be same. Inputs: {size} != Outputs: "
                    f"{target_size}.")
            continue
        target = at_batch(f.attrs["shape"], own)
        lead = len(target) - len(given)
        if lead < 0 or all(e in (t, 1) for e, t in zip(given, target[lead:])):
            continue
        raise RuntimeError(
            f"value error in setup_impl\n{f.name} (called at batch size {batch}; NNabla "
            f"1.39's graph_def broadcasts to the network's {target}): broadcast.cpp:54\n"
            f"Failed `eshape[d] == shape_[d] || eshape[d] == 1`: Trailing shapes must be "
            f"same or dimension of trailing shape of input has 1.Input shpae = {given}, "
            f"Target shape = {target}")


_SHAPED = ("Constant", "Rand", "Randint", "Randn", "RandBinomial", "RandBeta", "RandGamma")


def as_saved(network: Any) -> None:
    """``network`` (a ``ProtoNetwork``) described as NNabla 1.39's ``save`` leaves it (its
    ``as_proto`` runs ``variable_batch_size`` on the network itself): when a function has a
    ``base_axis``, the batch size is the product of its first input's axes before it; every
    buffer of that first size that a function reading a buffer made (or an input) gets ``-1``,
    a ``base_axis`` other than 1 is folded to 1, a Reshape's, Broadcast's or random function's
    first size of the batch becomes ``-1``, and ``batch_size`` is the batch size; a folded
    ``base_axis`` is what the network is built with from then on, as NNabla's (an ``Affine``
    of ``base_axis=2`` called on its (2, 3, 4) input again fails).  Without a ``base_axis``
    nothing changes.  (NNabla's own asserts, a Reshape or Broadcast to another
    first size, leave the network as it was here.)

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.parametric_functions as PF
        >>> net = nn.graph_def.create_graph_from_variable(
        ...     "n", PF.affine(nn.Variable((2, 3)), 4, name="doc_saved")).default_graph()
        >>> as_saved(net); net.batch_size, [list(v.shape) for v in net.variables.values()]
        (2, [[-1, 3], [-1, 4]])
    """
    variables = network.variables
    expect = None
    for f in network.functions.values():
        base = f.args.get("base_axis")
        if base is not None and base != 0:
            for name in f.inputs:
                if name in variables:
                    expect = int(np.prod(variables[name].shape[:base]))
                    break
    if expect is None:
        return
    shapes = {k: tuple(v.shape) for k, v in variables.items()}
    args = {k: dict(f.args) for k, f in network.functions.items()}
    special: list[str] = []
    resolved: list[str] = []
    for key, f in network.functions.items():
        a = args[key]
        if not any(n in variables and n not in special for n in f.inputs):
            special.extend(f.outputs)
            continue
        base = a.get("base_axis")
        if base is not None and base != 1:
            for n in list(f.inputs) + list(f.outputs):
                if n in variables and n not in resolved and n not in special:
                    shapes[n] = (int(np.prod(shapes[n][:base])),) + shapes[n][base:]
                    if n in f.inputs:
                        resolved.append(n)
            a["base_axis"] = 1
        shape = a.get("shape")
        if f.type in ("Reshape", "Broadcast") + _SHAPED and shape:
            shape = list(shape)
            if f.type == "Broadcast":
                given = [expect] + list(shapes[f.inputs[0]][1:])
                lead = len(shape) - len(given)
                if lead > 0:
                    if int(np.prod(shape[:lead + 1])) != expect:
                        return
                    a["shape"] = [-1] + shape[lead + 1:]
                    continue
            if shape[0] != expect:
                return
            a["shape"] = [-1] + shape[1:]
    for k, v in variables.items():
        if shapes[k] and k not in special and shapes[k][0] == expect:
            shapes[k] = (-1,) + shapes[k][1:]
        v.shape = tuple(shapes[k])
    built = {f.name: f for f in network._legacy.functions}
    for k, f in network.functions.items():
        f.args = args[k]
        legacy = built.get(f.name)
        if legacy is not None and legacy.attrs.get("base_axis") not in (
                None, args[k].get("base_axis")):
            # what NNabla builds from then on: a base_axis folded to 1
            legacy.attrs = {**legacy.attrs, "base_axis": args[k]["base_axis"]}
    network.batch_size = expect
