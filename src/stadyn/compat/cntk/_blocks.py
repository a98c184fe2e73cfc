"""CNTK's blocks: ``as_block``, ``as_composite`` and the ``BlockFunction`` decorator
(``cntk.ops.as_block``, ``cntk.layers.BlockFunction``): a piece of graph shown as one
Function of a named kind, whose walks (``get_node_outputs``, ``find_by_name``) see it whole.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> @C.BlockFunction("Double", "twice")
    ... def twice(x):
    ...     return x * 2
    >>> x = C.input_variable(2)
    >>> f = twice(x)
    >>> f.root_function.op_name, f.root_function.is_block, f.name
    ('Double', True, 'twice')
    >>> f.eval({x: np.ones((1, 2), np.float32)}).tolist()
    [[2.0, 2.0]]
"""

from __future__ import annotations

import functools
import inspect

from ... import functions as F
from ...graph import Variable
from . import _graph as G
from ._adapt import refuse_name, unwrap
from ._clone import rebuild
from ._deferred import Deferred, pending
from ._function import Function
from ._mixins import GraphObject
from ._sequence_placeholders import note_call
from ._waiting_function import _Deferred as WaitingFunction
from ._variables import placeholder

__all__ = ["as_block", "as_composite", "BlockFunction"]


def as_composite(root_function, name: str = "") -> Function:
    """The composite Function of ``root_function``'s graph, named ``name`` (its root keeps
    its own); a composite Function is returned as it is, with its name, as CNTK 2.7 does.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> z = C.layers.Dense(2, name="fc")(C.input_variable(3))
        >>> f = C.as_composite(z.root_function)
        >>> [f.name, f.root_function.name, C.as_composite(z.root_function, "m").name]
        ['', 'fc', 'm']
    """
    inside = getattr(root_function, "_inside", lambda: None)()
    if inside is None:
        composite = Function(unwrap(root_function))
    else:
        outs = _inner_graph(inside)
        # (a block of several outputs: CNTK 2.7's composite of its inside is the Combine of
        # its ops, with all their outputs)
        composite = Function(outs[0]) if len(outs) == 1 else \
            Function(outs[0], outs, combined=G.Combine(""))
    if not getattr(root_function, "is_composite", True):
        composite._own_name = name
    return composite


def _inner_graph(out) -> list:
    """The outputs of the graph inside the block whose output is ``out`` over the block's
    placeholders (``as_composite(block.block_root)``: CNTK 2.7's composite of the block's
    inside, whose arguments are those placeholders): the block's ops made again on them, the
    root op no block; a block of several outputs gives those of the ops its inner
    ``Combine`` combines."""
    pairs = {a: p for a, p in zip(G.BLOCKS[out].arguments, G.inner_placeholders(out))
             if isinstance(a, Variable)}
    combined = G.combined_inside(out)
    inner = rebuild([out] if combined is None else list(combined), pairs, "share")
    for v in inner:
        G.BLOCKS.pop(v, None)
    return inner


def as_block(composite, block_arguments_map, block_op_name: str,
             block_instance_name: str = "") -> Function:
    """``composite`` as one block named ``block_instance_name`` of kind ``block_op_name``;
    ``block_arguments_map`` pairs its placeholders with the actual arguments."""
    refuse_name(block_op_name, "as_block")
    refuse_name(block_instance_name, "as_block")
    if isinstance(composite, WaitingFunction):      # (an untyped @C.Function: its graph)
        composite = composite.waiting_graph()
    if isinstance(composite, Deferred) and composite.placeholders:
        _check_mapped(composite, block_arguments_map, block_instance_name)
        if pending(tuple(a for _, a in block_arguments_map), {}):
            return _waiting_block(composite, block_arguments_map, block_op_name,
                                  block_instance_name)
    _refuse_unblockable(composite, block_instance_name)
    pairs = [(unwrap(p), unwrap(a)) for p, a in block_arguments_map]
    if isinstance(composite, Deferred) and composite.placeholders:
        # a graph over placeholders without a shape: built on the actual arguments
        outs = [unwrap(o) for o in composite.bound_to(dict(block_arguments_map)).outputs]
    else:
        outs = [unwrap(o) for o in getattr(composite, "outputs", None) or [composite]]
        if pairs:
            outs = rebuild(outs, dict(pairs), "share")
    arguments = G.shown_block_order(block_op_name, tuple(a for _, a in pairs))
    if len(outs) > 1:       # (CNTK 2.7's block of as many outputs, its root a Combine)
        outs = G.block_of_outputs(tuple(outs), block_op_name, block_instance_name, arguments)
        block = Function(outs[0], list(outs))
    else:
        out = outs[0]
        if (pairs and out.parent is None) or out in G.BLOCKS:
            # (a block over a block -- a loss, a layer --: the outer one passes the inner one's
            # output on, which stays a block of its own, its block_root, as in CNTK 2.7)
            out = F.identity(out)
        G.BLOCKS[out] = G.Block(block_op_name, block_instance_name, arguments)
        block = Function(out)
    # (over a placeholder made on a sequence axis: made again on what binds it, as CNTK 2.7
    # takes a value without a sequence axis there too)
    note_call(as_block, (composite, block_arguments_map, block_op_name, block_instance_name),
              {}, block)
    return block


def _refuse_unblockable(composite, instance_name: str) -> None:
    """CNTK 2.7's ValueError where an argument of ``composite`` is not a placeholder (an
    input: a block's composite takes every value through its placeholders)."""
    for a in getattr(composite, "arguments", ()):
        if not a.is_placeholder:
            raise ValueError(f"The composite implementing Block '{instance_name}' has an "
                             f"argument '{a!r}' which is not a placeholder. All arguments of "
                             "the composite underlying a Block must be placeholders\n(map a "
                             "placeholder of the composite to it in block_arguments_map)")


def _check_mapped(composite, block_arguments_map, instance_name: str) -> None:
    """CNTK 2.7's ValueError where a placeholder of ``composite`` (a graph over placeholders
    without a shape) is given no actual argument."""
    mapped = {id(unwrap(p)) for p, _ in block_arguments_map}
    left = [p for p in composite.placeholders if id(unwrap(p)) not in mapped]
    if left:
        raise ValueError(f"{len(left)} of the arguments '{', '.join(map(repr, left))}' of the "
                         f"underlying composite Function of Block '{instance_name}' have not "
                         "been mapped when encapsulating the composite as a Block.")


def _waiting_block(composite, block_arguments_map, op_name: str, instance_name: str):
    """``as_block`` of a graph over placeholders whose actual arguments are placeholders
    without a shape too: a Function waiting for their shapes (CNTK 2.7's block over them,
    ``Composite(blk): Placeholder('p', [???], [???]) -> Output('Block5_Output_0', ...)``),
    the block made when they are bound."""
    inner = [p for p, _ in block_arguments_map]

    def block(*actuals):
        return as_block(composite, list(zip(inner, actuals)), op_name, instance_name)
    block.__name__ = op_name
    block.cntk_op_name = op_name        # (printed as the block's kind, _printed)
    block.makes_block = True            # (its output a Block's: Block<n>_Output_0)
    return Deferred(block, tuple(a for _, a in block_arguments_map), {}, name=instance_name)


def _typed(actual) -> bool:
    """Whether ``actual`` is a Variable or Function of a known shape."""
    shape = getattr(actual, "shape", None)
    return isinstance(actual, GraphObject) and shape is not None and \
        tuple(shape) != (-2,) and -1 not in tuple(shape)


def BlockFunction(op_name: str, name: str):
    """Decorator: a Python function of Functions whose result is one block (``op_name``),
    made a Function of its arguments as ``@C.Function`` makes it (CNTK 2.7's
    ``Function(f, make_block=True, op_name=op_name, name=name)``): untyped, they are
    placeholders of unknown shape, and a call builds the block on its operands.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> @C.layers.BlockFunction("Square", "sq")
        ... def square(x):
        ...     return x * x
        >>> isinstance(square, C.Function), str(square)
        (True, 'sq: Square(x: Sequence[tensor]) -> Sequence[tensor]')
        >>> y = square(C.input_variable(2))
        >>> y.root_function.op_name, y.eval({y.arguments[0]: np.array([[2, 3]], np.float32)})
        ('Square', array([[4., 9.]], dtype=float32))
    """
    def decorate(fn):
        names = list(inspect.signature(fn).parameters)

        @functools.wraps(fn)
        def block(*args):
            if args and all(_typed(a) for a in args):
                # (on operands of known types: the body on them, its result the block over
                # them, as CNTK 2.7's block over its placeholders bound to them computes)
                out = fn(*args)
                v = unwrap(out)
                if v.parent is None or v in G.BLOCKS:
                    v = F.identity(v)
                G.BLOCKS[v] = G.Block(op_name, name, tuple(unwrap(a) for a in args))
                made = Function(v)
                note_call(block, args, {}, made)
                return made
            # (as CNTK 2.7: the body over placeholders of its own, named as the arguments,
            # made a block over them mapped to the actual ones)
            inner = [placeholder(name=n) for n in names[:len(args)]]
            return as_block(fn(*inner), list(zip(inner, args)), op_name, name)
        made = Function(block)
        if isinstance(made, WaitingFunction):     # (its name the block's, as CNTK 2.7's)
            made.name = name
        return made
    return decorate
