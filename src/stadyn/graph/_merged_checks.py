"""One value check for all the pieces of a split tensor, instead of one per piece.

Some ops check their input's values inside the program they run: the class-id losses
(``softmax_cross_entropy``, ``categorical_cross_entropy``) check that a floating-point target holds
whole numbers, ``torch._assert_async(torch.all(t == torch.trunc(t)), msg)``, four ATen calls.
An unrolled recurrence splits one target tensor into its steps and checks each step's slice:
nnabla-examples' PTB LSTM runs 35 such checks per iteration (``t`` of shape ``(batch, 35)``,
``F.split`` along the steps, one loss per step), 140 of the ~5,000 calls of its step.

:func:`merge_split_checks` finds, in a traced program, the checks of tensors that are pieces of
one ``unbind``/``split`` (through views and reshapes, which keep the piece's elements), and
where every piece is checked with the same message it checks the split tensor once instead:
the same elements, so a program that raised raises, with the same message (a plan that fails
then replays its graph op by op, which names the op as before), and one that did not does not.
The values the program computes are untouched.

Example:
    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> from stadyn.graph._merged_checks import merge_split_checks
    >>> def losses(t):
    ...     out = []
    ...     for piece in t.unbind(1):
    ...         torch._assert_async(torch.all(piece == torch.trunc(piece)), "not whole")
    ...         out.append(piece * 2)
    ...     return out
    >>> gm = make_fx(losses, tracing_mode="fake")(torch.ones(4, 3))
    >>> merge_split_checks(gm)
    1
    >>> sum(n.target is torch.ops.aten._assert_async.msg for n in gm.graph.nodes)
    1
"""

from __future__ import annotations

import operator

import torch
import torch.fx as fx

__all__ = ["merge_split_checks"]

_aten = torch.ops.aten
# Ops whose output holds exactly the elements of their input (a view, a reshape).
_SAME_ELEMENTS = {_aten.view.default, _aten._unsafe_view.default, _aten.reshape.default,
                  _aten.unsqueeze.default, _aten.squeeze.dim, _aten.squeeze.default,
                  _aten.squeeze.dims, _aten.alias.default, _aten.t.default,
                  _aten.permute.default, _aten.transpose.int}
# Ops whose outputs together hold every element of their input, each once.
_SPLITS = {_aten.unbind.int, _aten.split.Tensor, _aten.split_with_sizes.default,
           _aten.chunk.default}


def _whole_number_check(node: fx.Node) -> tuple | None:
    """``(checked, nodes)`` for ``_assert_async(all(eq(t, trunc(t))), msg)`` at ``node`` whose
    inner nodes nothing else reads: the tensor checked and the four nodes, outermost first."""
    if node.op != "call_function" or node.target is not _aten._assert_async.msg:
        return None
    every = node.args[0]
    if not (isinstance(every, fx.Node) and every.target is _aten.all.default
            and len(every.users) == 1):
        return None
    same = every.args[0]
    if not (isinstance(same, fx.Node) and same.target is _aten.eq.Tensor
            and len(same.users) == 1 and len(same.args) == 2):
        return None
    checked, whole = same.args
    if not (isinstance(whole, fx.Node) and whole.target is _aten.trunc.default
            and whole.args[0] is checked and len(whole.users) == 1):
        return None
    return checked, (node, every, same, whole)


def merge_split_checks(gm: fx.GraphModule) -> int:
    """Check each fully checked split tensor of ``gm`` once (see the module docstring); returns
    how many split tensors' checks were merged."""
    graph = gm.graph
    pieces: dict[fx.Node, dict] = {}
    for node in graph.nodes:
        found = _whole_number_check(node)
        if found is None:
            continue
        source = found[0]
        while isinstance(source, fx.Node) and source.target in _SAME_ELEMENTS:
            source = source.args[0]
        if not (isinstance(source, fx.Node) and source.target is operator.getitem):
            continue
        split = source.args[0]
        if isinstance(split, fx.Node) and split.target in _SPLITS:
            pieces.setdefault(split, {}).setdefault(source.args[1], []).append(
                (node.args[1], found[1]))
    merged = 0
    for split, by_index in pieces.items():
        count = len(split.meta.get("val") or ())
        messages = {message for checks in by_index.values() for message, _ in checks}
        if not count or set(by_index) != set(range(count)) or len(messages) != 1:
            continue
        checks = [nodes for found in by_index.values() for _, nodes in found]
        first = min((nodes[0] for nodes in checks), key=_position(graph))
        whole_tensor = split.args[0]
        with graph.inserting_before(first):
            whole = graph.call_function(_aten.trunc.default, (whole_tensor,))
            same = graph.call_function(_aten.eq.Tensor, (whole_tensor, whole))
            every = graph.call_function(_aten.all.default, (same,))
            graph.call_function(_aten._assert_async.msg, (every, messages.pop()))
        for nodes in checks:
            for n in nodes:
                graph.erase_node(n)
        merged += 1
    if merged:
        gm.recompile()
    return merged


def _position(graph: fx.Graph):
    order = {n: i for i, n in enumerate(graph.nodes)}
    return order.__getitem__
