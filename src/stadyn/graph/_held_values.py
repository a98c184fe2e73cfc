"""Which intermediates keep their values through a clearing forward or backward: the
``persistent`` ones and the ones the program holds.

NNabla's ``forward(clear_no_need_grad=True)`` and ``backward(clear_buffer=True)`` free the
buffers of the intermediates they pass; a Variable read after that gives whatever NNabla's
memory pool left in the freed block: the last value while nothing else took it, another array's
values once something did (NNabla 1.39, measured: the prediction nnabla-examples' DARTS reads
after ``forward(clear_no_need_grad=True)`` holds its value from the second step on, not on the
first; a small MLP's is another array's). No program can rely on that, yet programs read them:
DARTS prints its training error from ``pred.d`` after the clearing step (measured; capsulenet
uses the same pattern). Stadyn's rule is one a program can rely on: **a Variable the program
holds keeps its value**. The program holds a Variable when a reference to it exists besides
Stadyn's own, which are counted, not searched for: the functions of the graph that take it as
an input (their ``inputs``, ``args`` and ``kwargs``), the tables of the plans that run it
(:func:`count_tables`) and the check's own (:data:`OWN_REFERENCES`). So any reference counts: a
variable of any function, thread or suspended generator, a closure's cell, a module's global,
an item of any container at any depth, an attribute of any object, an ``NdArray`` taken from
its ``.data``, a function of another graph taking it as an input. The intermediates no such
reference reaches (``h = F.relu(PF.affine(h, ...))`` in a loop: every ``h`` but the last) are
freed, so the memory a clearing forward saves stays saved where it matters: the many values
inside the network, not the few the program keeps. Nothing of the program is read or changed:
Python's count of references (``sys.getrefcount``) says it all. Where the count is unsure it
errs towards keeping: a reference Stadyn holds but does not count keeps a value, never frees
one the program holds.

A static plan reads what the program holds when it is built (a Variable the program takes
only later, ``p = loss.parent.inputs[0]``, is freed until the plan is built again: mark it
``persistent``); a clearing backward of a plain ``forward()``'s plan and the autograd
backwards (eager plans, dynamic graphs) read it as they run.

:func:`held_variables` is the one place that decides; ``Subgraph.filled`` (what a forward
gives values to), the clearing backwards (a plan's: :func:`free_passed`; autograd's:
``retain_intermediate_grads``) and the reuse of a shared plan ask it.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections import Counter
from typing import Iterable, Sequence

from ._variable import FunctionNode, Variable

__all__ = ["held_variables", "references_beyond_stadyn", "keeps_value", "free_passed",
           "count_tables", "shown_only", "OWN_REFERENCES", "PLAN_TABLES"]

# How many references the tables of the live plans hold to each Variable (by ``id``: a
# Variable a table holds lives, so its id is its own while counted).
_TABLED: dict[int, int] = {}
_LOCK = threading.RLock()


def _change(ids: Iterable[int], step: int) -> None:
    with _LOCK:
        for i in ids:
            n = _TABLED.get(i, 0) + step
            if n > 0:
                _TABLED[i] = n
            else:
                _TABLED.pop(i, None)


#: The attributes of a plan that hold Variables it runs (a plan lacking one holds none there).
PLAN_TABLES = ("fill", "kept", "all_inters", "grad_inters")


def count_tables(plan: object, record: list | None = None) -> list:
    """Count the references the tables of ``plan`` (its :data:`PLAN_TABLES`) hold as Stadyn's
    own, until ``plan`` is freed.  Returns the record of them; passed back as ``record``
    after the plan replaced a table, the counts become those of its tables now.  A table
    holding a Variable twice counts twice; one list that is two tables, once.  A table two
    plans share would count for both: each plan holds its own copies (``_plan.py``).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph._held_values import count_tables, references_beyond_stadyn
        >>> h = F.relu(sd.Variable((2,)))
        >>> nodes = [h.parent]
        >>> class Plan: pass
        >>> plan = Plan()
        >>> plan.fill = [h]
        >>> references_beyond_stadyn(nodes)[id(h)]          # the name h and the table
        2
        >>> record = count_tables(plan)
        >>> references_beyond_stadyn(nodes)[id(h)]          # the name h
        1
        >>> del plan                                        # its table and count go with it
        >>> references_beyond_stadyn(nodes)[id(h)]
        1
    """
    tables = {id(t): t for name in PLAN_TABLES if (t := getattr(plan, name, None)) is not None}
    ids = [id(v) for t in tables.values() for v in t]
    if record is None:
        record = []
        weakref.finalize(plan, _release, record)
    with _LOCK:
        _change(record, -1)
        record[:] = ids
        _change(ids, 1)
    return record


def _release(record: list) -> None:
    # A finalizer runs before its object's references go: the count falls first (keeping).
    with _LOCK:
        _change(record, -1)
        record.clear()


def shown_only(node: FunctionNode) -> None:
    """Count the references ``node`` holds to its inputs (its ``inputs``, ``args`` and
    ``kwargs``) as Stadyn's own, while it lives: a node no run reads, made only to show the
    graph as another framework does (compat.cntk's view of a ``Dense`` block's ``Times``),
    keeps no value the program dropped.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph._held_values import shown_only, references_beyond_stadyn
        >>> h = F.relu(sd.Variable((2,)))
        >>> nodes = [h.parent]
        >>> shown = F.tanh(h)                               # reads h: the program's
        >>> references_beyond_stadyn(nodes)[id(h)]          # h, the tanh's inputs and args
        3
        >>> shown_only(shown.parent)
        >>> references_beyond_stadyn(nodes)[id(h)]          # the name h
        1
    """
    record = list(_counted_edges([node], ()).elements())
    weakref.finalize(node, _release, record)
    with _LOCK:
        _change(record, 1)


def _counted_edges(nodes: Iterable[FunctionNode], tables: Sequence) -> Counter:
    """How many references ``nodes`` (their ``inputs``, ``args`` and ``kwargs``) and the
    caller's ``tables`` hold to each object (by ``id``), each container once.  The count is
    by identity, of every item (a number's too: an object's id is its own while it lives)."""
    items: list = []
    seen: set[int] = set()     # a container two nodes (or a node and a caller) share: once
    for container in _containers(nodes, tables):
        if id(container) not in seen:
            seen.add(id(container))
            items += container.values() if isinstance(container, dict) else container
    return Counter(map(id, items))


def _containers(nodes: Iterable[FunctionNode], tables: Sequence):
    for node in nodes:
        yield node.inputs
        yield node.args
        if node.kwargs:
            yield node.kwargs
    yield from tables


def _surplus(nodes: Sequence, tables: Sequence) -> dict[int, int]:
    """Each live output of ``nodes`` (by id): Python's count of references to it less those
    of the graph's edges among ``nodes``, the plans' tables and ``tables``.  The check's own
    (the loop's name ``v`` and ``getrefcount``'s argument) are still in: this loop is the
    only place a count is read, so that :data:`OWN_REFERENCES` measures exactly them."""
    counted = _counted_edges(nodes, tables)
    tabled = _TABLED
    surplus: dict[int, int] = {}
    for node in nodes:
        for ref in node._outputs:
            v = ref()
            if v is not None:
                surplus[id(v)] = (sys.getrefcount(v) - counted.get(id(v), 0)
                                  - tabled.get(id(v), 0))
    return surplus


def _own_references() -> int:
    """What :func:`_surplus` reads of an object nothing but one name here holds, less that
    name: the references the check itself holds (2 on CPython 3.10-3.13, the loop's name and
    ``getrefcount``'s argument; measured, since an interpreter may borrow the latter)."""

    class Probe:
        __slots__ = ("__weakref__",)

    class Node:
        inputs, args, kwargs = (), (), {}

    probe = Probe()
    node = Node()
    node._outputs = (weakref.ref(probe),)
    return _surplus([node], ())[id(probe)] - 1


#: The references the check holds itself to the Variable it counts (its loop's name and
#: ``sys.getrefcount``'s argument), measured when the module is imported.
OWN_REFERENCES = _own_references()


def references_beyond_stadyn(nodes: Sequence[FunctionNode], *tables: Sequence
                             ) -> dict[int, int]:
    """How many references the program holds to each live output of ``nodes`` (by ``id``):
    all of Python's count but Stadyn's own -- the functions among ``nodes`` taking it as an
    input, the tables of the live plans (:func:`count_tables`), the caller's ``tables`` (the
    lists of Variables it holds while it asks) and the check's own (:data:`OWN_REFERENCES`).
    A function of another graph taking it counts as the program's: it may be read there.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph._held_values import references_beyond_stadyn
        >>> x = sd.Variable((2,))
        >>> h = F.relu(x)
        >>> y = F.sum(F.tanh(h))
        >>> nodes = [y.parent.inputs[0].parent, h.parent, y.parent]
        >>> found = references_beyond_stadyn(nodes)
        >>> found[id(h)], found[id(y.parent.inputs[0])], found[id(y)]
        (1, 0, 1)
    """
    own = OWN_REFERENCES
    return {i: n - own for i, n in _surplus(nodes, tables).items()}


def held_variables(nodes: Sequence[FunctionNode], *tables: Sequence) -> set[int]:
    """The ``id`` of every live output of ``nodes`` the program holds (see the module
    docstring): one with a reference beyond Stadyn's own (:func:`references_beyond_stadyn`).
    ``tables``: the lists of Variables the caller holds while it asks (counted as Stadyn's).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph._held_values import held_variables
        >>> x = sd.Variable((2,))
        >>> outputs = {"deep": [[F.relu(x)]]}
        >>> y = F.sum(F.tanh(outputs["deep"][0][0]))
        >>> nodes = [outputs["deep"][0][0].parent, y.parent.inputs[0].parent, y.parent]
        >>> held = held_variables(nodes)
        >>> id(outputs["deep"][0][0]) in held, id(y.parent.inputs[0]) in held
        (True, False)
    """
    return {i for i, n in references_beyond_stadyn(nodes, *tables).items() if n > 0}


def keeps_value(v: Variable, held: set[int]) -> bool:
    """Whether a clearing forward or backward leaves ``v``'s value: it is ``persistent`` or
    the program holds it (``held``, from :func:`held_variables`).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph._held_values import keeps_value
        >>> h = F.relu(sd.Variable((2,)))
        >>> keeps_value(h, set()), keeps_value(h, {id(h)})
        (False, True)
    """
    return v._persistent or id(v) in held


def free_passed(variables: Sequence[Variable], nodes: Sequence[FunctionNode],
                given: Sequence[Variable] | None = None) -> None:
    """After a clearing backward: drop the values and gradients of ``variables`` (the
    intermediates it passed through, outputs of ``nodes``), but a ``persistent`` one's, and
    the value of one the program holds -- or, with ``given``, of one among ``given`` (the
    Variables a clearing forward's plan gives values to: those the program held when it was
    built), which spares a backward the count.

    Example:
        >>> import weakref, numpy as np, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import Subgraph
        >>> from stadyn.graph._held_values import free_passed
        >>> x = sd.Variable.from_numpy_array(np.ones(2))
        >>> h = F.tanh(x)
        >>> y = F.sum(F.sin(h))
        >>> y.forward()
        >>> dropped = weakref.ref(y.parent.inputs[0])     # F.sin(h): the program holds none
        >>> free_passed([h, dropped()], Subgraph([y]).nodes)
        >>> h._data is not None, dropped()._data is None
        (True, True)
    """
    held = held_variables(nodes, variables) if given is None else {id(v) for v in given}
    for v in variables:
        if not v._persistent:
            v._grad = None
            if id(v) not in held:
                v._data = None
