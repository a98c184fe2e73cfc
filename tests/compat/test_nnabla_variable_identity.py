"""Stadyn's records of NNabla Variables keep a view and its source apart.

NNabla 1.39's Variables compare and hash by their C++ ``nbla::Variable`` (case
``nnabla_variable_44.variable44_equal__views_rewire_and_parameters``): an unlinked view equals
its source.  A ``weakref.WeakKeyDictionary`` or ``WeakSet`` looks keys up by ``==`` and
``hash()``, so one keyed by Variables would take a view's entry for its source's (with them,
17 cases of views, GANs and shared parameters gave other numbers: gradients of the source
landing on the view, one shared-array group for both).  Stadyn keys them by identity
(``stadyn.graph.IdentityKeyDict`` / ``IdentitySet``); these tests hold each kind to it, and
hold every module-level weak container of ``stadyn.graph`` and ``stadyn.compat.nnabla`` to
being one of them.
"""

import gc
import sys
import weakref

import numpy as np
import pytest

import stadyn.compat.nnabla as nn
from stadyn.graph import IdentityKeyDict, IdentitySet


@pytest.fixture(scope="module")
def view_and_source():
    x = nn.Variable.from_numpy_array(np.arange(3.0), need_grad=True)
    return x, x.get_unlinked_variable(need_grad=False)


def test_view_and_source_are_one_key_by_equality(view_and_source):
    # the hazard itself: NNabla's rule merges them in Python's weak containers
    x, u = view_and_source
    assert u == x and hash(u) == hash(x)
    assert len(weakref.WeakKeyDictionary({x: 1, u: 2})) == 1
    assert len(weakref.WeakSet([x, u])) == 1


def test_identity_dict_keeps_view_and_source_apart(view_and_source):
    x, u = view_and_source
    m = IdentityKeyDict({x: "source"})
    m[u] = "view"
    assert len(m) == 2 and m[x] == "source" and m[u] == "view"
    assert m.get(nn.Variable((3,))) is None and sorted(m.values()) == ["source", "view"]
    del m[u]
    assert u not in m and x in m and m.pop(x) == "source" and len(m) == 0


def test_identity_set_keeps_view_and_source_apart(view_and_source):
    x, u = view_and_source
    s = IdentitySet([x])
    s.add(u)
    assert len(s) == 2 and x in s and u in s
    s.discard(x)
    assert x not in s and u in s and list(s) == [u]


def test_entries_go_with_their_keys():
    m, s = IdentityKeyDict(), IdentitySet()
    v = nn.Variable((2,))
    m[v] = 1
    s.add(v)
    key = id(v)
    del v
    gc.collect()
    assert len(m) == 0 and len(s) == 0 and key not in m._table


def test_a_reused_id_never_reads_a_dead_keys_entry():
    m = IdentityKeyDict()

    class K:
        pass
    k = K()
    m[k] = "old"
    ref = m._table[id(k)][0]
    # a live entry whose reference no longer points at the key asked for (an id reused
    # after the old key died, its finalizer not yet run) is not that key's
    other = K()
    m._table[id(other)] = (ref, "stale")
    assert other not in m and m.get(other) is None
    with pytest.raises(KeyError):
        m[other]


# module-level weak containers keyed by objects that never compare equal to others
# (FunctionNodes, in a file another helper owns)
_NOT_VARIABLES = {"stadyn.compat.nnabla._function._NAMED",
                  "stadyn.compat.nnabla._function._FORWARDED",
                  "stadyn.graph._edge_cuts.CUTS",   # keyed by a static grad FunctionNode
                  "stadyn.graph._edge_cuts._GROUPS",  # keyed by an apply_w FunctionNode
                  "stadyn.compat.nnabla._function_api._CALLS",  # keyed by FunctionNode
                  "stadyn.compat.nnabla._function_api._RUNS"}


def test_every_weak_container_of_graph_and_compat_nnabla_is_keyed_by_identity():
    loaded = [name for name in list(sys.modules)
              if name.startswith(("stadyn.graph", "stadyn.compat.nnabla"))]
    found = []
    for name in loaded:
        for attr, value in vars(sys.modules[name]).items():
            if isinstance(value, (weakref.WeakKeyDictionary, weakref.WeakSet)) \
                    and f"{name}.{attr}" not in _NOT_VARIABLES:
                found.append(f"{name}.{attr}")
    assert found == [], ("weak containers keyed by == and hash() (an NNabla view equals its "
                         f"source): use IdentityKeyDict / IdentitySet: {found}")
