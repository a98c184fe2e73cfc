"""What compat.cntk keeps to build deep graphs in linear time, and when it lets it go.

``_seq_axes.holds_no_free_axes`` keeps, per value, that no free axis (an unpack's steps, an
input's ``FreeDimension``) can reach it, so that a ``.shape`` read does not walk the whole
graph behind it; a placeholder replaced, a value or a leaf marked afterwards must be seen.
Expectations: CNTK 2.7's shapes for the same programs (run with the real CNTK:
``benchmarks/cntk_deep_build_ab.py``'s note in ``docs/performance.md``), and hand-computed
axes for the internal marks.
"""

import gc

import torch

import stadyn as sd
import stadyn.compat.cntk as C
import stadyn.functions as F
from stadyn.compat.cntk._parameters import WeakParameterRegistry
from stadyn.compat.cntk._seq_axes import free_steps, holds_no_free_axes, mark_free_axes
from stadyn.graph import mark_free_dimensions


def _unpacked():
    return C.sequence.unpack(C.sequence.input_variable(3), 0.0, no_mask_output=True)


def test_a_replaced_placeholder_brings_its_free_axes():
    # CNTK 2.7: (-2,) before, (-3, 3) after; a reduction over the row keeps the steps free
    p = C.placeholder()
    h = C.tanh(p) * 2
    assert h.shape == (-2,)
    h.replace_placeholders({p: _unpacked()})
    assert h.shape == (-3, 3) and C.reduce_sum(h, axis=1).shape == (-3, 1)


def test_a_placeholder_replaced_by_an_input_with_a_free_dimension():
    q = C.placeholder()
    d = C.tanh(q) + 1
    d.replace_placeholders({q: C.input_variable((C.FreeDimension, 3))})
    assert d.shape == (-3, 3)       # CNTK 2.7's
    typed = C.placeholder((3,))
    d = C.tanh(typed) * 2
    assert d.shape == (3,)
    d.replace_placeholders({typed: C.input_variable((C.FreeDimension, 3))})
    assert d.shape == (-3, 3)       # CNTK 2.7's


def test_a_clone_onto_unpacked_steps_shows_them_and_leaves_the_original():
    e = C.input_variable(3)
    k = C.tanh(e) * 2
    assert k.shape == (3,)
    cloned = k.clone("clone", {e: _unpacked()})
    assert (k.shape, cloned.shape) == ((3,), (-3, 3))     # CNTK 2.7's


def test_a_value_marked_after_it_was_read_shows_its_mark():
    v = sd.Variable((1, 4, 4))
    h = F.tanh(v * 2)
    assert free_steps(h) == frozenset() and holds_no_free_axes(h)
    mark_free_axes(v * 1, [2])                  # (another value: h's answer stands)
    assert free_steps(h) == frozenset()
    mark_free_axes(v, [2])
    assert free_steps(h) == frozenset({2}) and not holds_no_free_axes(h)


def test_a_leaf_marked_free_after_it_was_read_shows_it():
    v = sd.Variable((1, 5, 3))
    h = F.tanh(v) + 1
    assert free_steps(h) == frozenset()
    mark_free_dimensions(v, [1])
    assert free_steps(h) == frozenset({1})
    assert free_steps(h, of_inputs=False) == frozenset()


def test_a_rewired_graph_is_read_again():
    x, y = sd.Variable((1, 4, 4)), sd.Variable((1, 4, 4))
    mark_free_axes(y, [1])
    h = F.tanh(x)
    z = h + 1
    assert free_steps(z) == frozenset()
    h.rewire_as(F.relu(y))
    assert free_steps(z) == frozenset({1})


def test_a_deep_chain_is_answered_without_recursion():
    x = C.input_variable((C.FreeDimension, 3))
    h = x
    for _ in range(3000):           # (deeper than Python's recursion limit)
        h = C.tanh(h)
    assert h.shape == (-3, 3)
    clean = C.input_variable(3)
    for _ in range(3000):
        clean = clean + 1
    assert clean.shape == (3,)


def test_a_claimed_scope_skips_one_with_living_parameters_only():
    reg = WeakParameterRegistry()
    w, v = sd.Variable((1,)), sd.Variable((1,))
    reg.set("a/W", w)
    reg.set("b/c/W", v)
    assert reg.claim("a") == "a_1"          # (parameters below "a": taken)
    assert reg.claim("b/c") == "b/c_1" and reg.claim("b") == "b_1"
    assert reg.claim("b/c/W") == "b/c/W"    # (a parameter's own path: nothing below it)
    dead = sd.Variable((1,))
    reg.set("d/W", dead)
    del dead
    gc.collect()
    assert reg.claim("d") == "d"            # (its parameter is gone)
    reg.rename("a/W", "e/W")
    assert reg.claim("e") == "e_1"          # (renamed: below "e" now)
    assert reg.claim("a/") == "a/"          # (nothing below "a" any more)


def test_the_weak_registry_drops_the_paths_of_parameters_that_went():
    # its index of scopes held every path ever set, read again only where a scope was
    # claimed again: 10k models built and dropped kept 10k paths (benchmarks/registry_scaling_ab.py)
    # (a Variable in no cycle goes at its last reference: no gc.collect needed)
    reg = WeakParameterRegistry()
    kept = sd.Variable((1,))
    reg.set("net/keep/W", kept)
    for k in range(50):
        reg.set(f"net/dense_{k}/W", sd.Variable((1,)))
    held = sd.Variable((1,))
    reg.set("net/moved/W", held)
    reg.rename("net/moved/W", "net/other/W")
    assert reg._below == {"net": {"net/keep/W", "net/other/W"}, "net/keep": {"net/keep/W"},
                          "net/other": {"net/other/W"}}
    assert reg.claim("net/dense_3") == "net/dense_3" and reg.claim("net/other") == "net/other_1"
    del held
    assert set(reg._watched) == {"net/keep/W"} and set(reg._below) == {"net", "net/keep"}
    taken = sd.Variable((1,))
    reg.set("net/keep/W", taken)            # another parameter under a living path
    del kept
    assert reg._below["net/keep"] == {"net/keep/W"} and reg.claim("net/keep") == "net/keep_1"


def test_free_axes_kept_per_value_are_read_again_after_a_leaf_changes_shape():
    # free_steps keeps each value's answer while the shapes stand (graph.shapes_version); an
    # element-wise op's free axis is fixed where another input has a length above 1 there
    # (CNTK 2.7: (-3, 3) + (4, 3) is (4, 3)), so feeding y rows moves the answer
    x = mark_free_dimensions(sd.Variable((1, 4, 3)), [1])
    y = sd.Variable((1, 3))
    h = F.tanh(x + y)                   # (y's axis 0 lines up with x's axis 1)
    deeper = h * 2
    assert free_steps(deeper) == frozenset({1})
    y.data = torch.ones(4, 3)
    assert free_steps(deeper) == frozenset() and free_steps(h) == frozenset()
    y.data = torch.ones(1, 3)
    assert free_steps(deeper) == frozenset({1})


def test_the_weak_registry_follows_a_rename_onto_a_path_an_earlier_pair_freed():
    # s/c/W first in the order takes the path s/a/W moves away from: its watch moved onto
    # s/a/W's before s/a/W's was taken out (s/a/W's lost, s/c/W's taken to x/W), and s/a/W
    # left the index of scopes: claim("s/a") gave "s/a" (CNTK's names must stay unique)
    reg = WeakParameterRegistry()
    c, a = sd.Variable((1,)), sd.Variable((1,))
    reg.set("s/c/W", c)
    reg.set("s/a/W", a)
    reg.rename_all([("s/a/W", "x/W"), ("s/c/W", "s/a/W")])
    assert reg.claim("s/a") == "s/a_1"
    assert {k: r() for k, (r, _) in reg._watched.items()} == {"s/a/W": c, "x/W": a}
    del a                                   # x/W's parameter goes: its path leaves the index
    assert "x" not in reg._below and reg._below["s/a"] == {"s/a/W"}


def test_free_axes_kept_per_value_are_read_again_after_a_compiled_step_gives_another_batch():
    # a compiled step (stadyn.compile_step) gave its outputs the new batch's tensors without
    # moving graph.shapes_version: x + out kept its answer from before the step, out's old
    # (1, 3) leaving x's axis 1 free; with out (4, 3) it is fixed (CNTK 2.7's (-3, 3) + (4, 3)
    # rule, as above), and the same sum built afresh says so
    import stadyn.solvers as S
    reg = sd.ParameterRegistry()
    with sd.parameter_registry(reg):
        w = sd.get_parameter_or_create("w", (1, 3), initializer=1.0)
    a = sd.Variable((1, 3))
    out = F.tanh(a * w)
    solver = S.Sgd(lr=0.1)
    solver.set_parameters(dict(reg.items()))
    step = sd.compile_step(F.sum(out), solver, outputs=[out], compile=False)
    step()
    x = mark_free_dimensions(sd.Variable((1, 4, 3)), [1])
    z = x + out
    assert free_steps(z) == frozenset({1})
    a.data = torch.ones(4, 3)
    assert free_steps(z) == frozenset({1})          # (out not run yet: still (1, 3))
    step()
    assert out.shape == (4, 3)
    assert free_steps(x + out) == frozenset() and free_steps(z) == frozenset()
