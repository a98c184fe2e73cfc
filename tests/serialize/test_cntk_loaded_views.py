"""A CNTK 2.7 model file loaded by ``stadyn.compat.cntk.load_model`` shows the graph CNTK 2.7
shows for it (``tests/fixtures/cntk_loaded_views/views.json``, recorded from the real CNTK 2.7
by ``make_views.py``): the composite's ``uid``, ``inputs``, ``arguments``, ``parameters``,
``constants``, ``outputs``, its root function and ``C.logging.get_node_outputs``, and those
functions' ``attributes``.

Before (8105dcf2): a ``Clip`` of constant bounds left its two constants out of ``inputs``,
``constants`` and the Clip's own inputs (they were folded into ``clip_by_value_scalar``); a
``Crop`` left its reference out (``arguments`` was ``[x]``, CNTK's ``[x, ref]``); a
``Gather`` showed ``(indices, reference)`` where CNTK 2.7 shows ``(reference, indices)``;
ROIPooling, NDCG and ForwardBackward were not read; a composite's uid was its root's
(``CompositeFunction44`` for ``ROIPooling44``), CNTK's one more (the file's
``CompositeFunction45``, as CNTK 2.7 numbers a composite made of a new function).

Before (a9dd4ed5): a loaded file's function showed the attributes of the Stadyn op it was
read as (``EyeLikeOp`` ``{}``, ``Times`` ``{'base_axis': 2}``, ``Plus`` ``{'inplace': False}``,
``Slice`` ``start``/``stop``/``step``), CNTK 2.7 the file's (``{'OutputSparse': False}``,
``outputRank`` / ``inferInputRankToMap``, ``{}``, ``axis`` / ``beginIndex`` / ...).

Before (cffa426b): a loaded ``GatherOp`` block (``gather`` along an axis) showed its inputs in
the file's order, ``[indices, reference]`` (``Input7``, ``Constant9``), CNTK 2.7
``[reference, indices]``: the ``cntk_write_forms/cntk_nets.model`` inputs and nodes fields
failed (that file, ``cntk_more.model`` and ``eye_like.model`` were compared for their
attributes only before).  A loaded ReduceL1's or ReduceSumSquare's ``block_root`` was an
``Identity`` of no attributes (the reader's), CNTK 2.7's the ``ReduceElements`` block inside
it with its attributes and inputs (the ``block_roots`` fields of cntk_norms.model and
reduce_sum_square_source.model failed; a LocalResponseNormalization's, CNTK's
``ElementDivide`` block, likewise).  A clone of a loaded file kept none of the file's
attributes (a ``Slice`` showed Stadyn's ``start``/``stop``/``step``, CNTK 2.7's clone the
file's ``axis``/``beginIndex``/...: the ``clone_attributes`` fields failed).
"""

from __future__ import annotations

import json
import os

import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")
with open(os.path.join(FIXTURES, "cntk_loaded_views", "views.json")) as _f:
    VIEWS = json.load(_f)
FIELDS = ["uid", "inputs", "arguments", "parameters", "constants", "outputs", "root", "nodes",
          "attributes", "block_roots", "clone_attributes"]


def _uids(vs):
    return [v.uid for v in vs]


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _attributes(f) -> list:
    return [[k, _plain(v)] for k, v in sorted(f.attributes.items())]


def _view(g) -> dict:
    r = g.root_function
    nodes = [[n.uid, n.name, n.owner.uid, n.owner.op_name, _uids(n.owner.inputs)]
             for n in C.logging.get_node_outputs(g)]
    return {"uid": g.uid, "inputs": _uids(g.inputs),
            "arguments": [[a.name, a.uid] for a in g.arguments],
            "parameters": _uids(g.parameters), "constants": _uids(g.constants),
            "outputs": [[o.name, o.uid] for o in g.outputs],
            "root": [r.uid, r.name, r.op_name, _uids(r.inputs)], "nodes": nodes,
            "attributes": [[n.owner.uid, n.owner.op_name, _attributes(n.owner)]
                           for n in C.logging.get_node_outputs(g)],
            "block_roots": [[f.uid, f.op_name, f.block_root.uid, f.block_root.op_name,
                             _attributes(f.block_root), _root_inputs(f)]
                            for f in (n.owner for n in C.logging.get_node_outputs(g))
                            if f.is_block],
            "clone_attributes": {m: _clone_attributes(g, m) for m in ("clone", "share", "freeze")}}


def _root_inputs(f) -> list:
    """A block's block_root's inputs, a placeholder of the block as the argument it stands
    for (Stadyn's blocks hold their arguments inside)."""
    args = {p.uid: a.uid for p, a in f.block_arguments_mapping}
    return [args.get(i.uid, i.uid) for i in f.block_root.inputs]


def _clone_attributes(g, method: str) -> list:
    rows = []
    for n in C.logging.get_node_outputs(g.clone(getattr(C.CloneMethod, method))):
        f = n.owner
        rows.append([f.op_name, _attributes(f)])
        if f.is_block:
            rows.append(["block_root of " + f.op_name, f.block_root.op_name,
                         _attributes(f.block_root)])
    return sorted(rows, key=json.dumps)


_CACHE: dict = {}


def _stadyns(path):
    if path not in _CACHE:
        _CACHE[path] = _view(C.load_model(os.path.join(FIXTURES, path)))
    return _CACHE[path]


# (a Sequence::Slice block (sequence.first, last) holds two scalar constants CNTK shows among
# its inputs; Stadyn reads the block as one op (sequence_first / sequence_last) and, since
# cntkwrite5, shows the file's two constants first among its inputs -- before, none: the
# sequence_reductions.model inputs, constants and nodes fields failed)
# (CNTK 2.7 lists a composite's constants in the file's operand order, a Gather's indices
# first, and its inputs in Python's, the reference first; before cntkex5 Stadyn walked
# Python's order for both: the ops_gather.model constants field failed)
_KNOWN: dict = {}


@pytest.mark.parametrize("path,field", [
    pytest.param(p, f, marks=_KNOWN.get((p, f), ()))
    for p in sorted(VIEWS) for f in FIELDS if f in VIEWS[p]])
def test_a_loaded_file_shows_what_cntk_shows(path, field):
    got = json.loads(json.dumps(_stadyns(path)[field]))
    want = VIEWS[path][field]
    # (get_node_outputs' order is a set's in CNTK 2.7)
    if field in ("nodes", "attributes", "block_roots"):
        got, want = sorted(got), sorted(want)
    assert got == want
