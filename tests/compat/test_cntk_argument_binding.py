"""What a CNTK Function and a waiting one (an op on a placeholder without a shape,
``_deferred.Deferred``) share (compat/cntk/_argument_binding.py): ``argument_map``,
``replace_placeholder`` and the betas' ``declare_args``.  (Their values are compared with CNTK
2.7 in compat_cases/cntk_graph.py, ``placeholders``, and cntk_graph_fidelity.py.)"""

from __future__ import annotations

import warnings

import pytest

import stadyn.compat.cntk as C


def _declare_args_warnings(f, *arg_types) -> list:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            f.declare_args(*arg_types)
        except TypeError:
            pass
    return [w for w in seen if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize("arg_types", [(), (3,)], ids=["no types", "one too many"])
def test_declare_args_on_a_typed_waiting_function_warns_once_at_the_callers_line(arg_types):
    # CNTK 2.7 (cntk27 venv: f = relu(placeholder()); f.update_signature(3); f.declare_args(3),
    # then f.declare_args(), each under catch_warnings(record=True)) warns once per call; the
    # waiting Function warned, then the Function it built warned again from _deferred.py
    f = C.relu(C.placeholder(name="p"))
    f.update_signature(3)
    seen = _declare_args_warnings(f, *arg_types)
    assert [w.filename for w in seen] == [__file__]
    assert "update_signature(...)" in str(seen[0].message)


def test_declare_args_types_a_waiting_function_as_a_function():
    f, g = C.relu(C.placeholder(name="p")), C.relu(C.placeholder(3, name="p"))
    assert len(_declare_args_warnings(f, 3)) == len(_declare_args_warnings(g, 3)) == 1
    assert [(a.shape, a.is_input) for a in f.arguments] == [((3,), True)]
    assert [(a.shape, a.is_input) for a in g.arguments] == [((3,), True)]
    with pytest.raises(TypeError, match=r"declare_args\(\) expected 1 arguments, got 2"), \
            pytest.warns(DeprecationWarning):
        C.relu(C.placeholder()).declare_args(3, 4)


@pytest.mark.parametrize("shape", [(), (2,)], ids=["waiting", "shaped"])
def test_argument_map_and_replace_placeholder_agree_on_both_kinds(shape):
    p, q = C.placeholder(*shape, name="p"), C.placeholder(*shape, name="q")
    f = C.plus(p, q)
    assert [(a.name, v) for a, v in f.argument_map(1, q=2).items()] == [("p", 1), ("q", 2)]
    with pytest.raises(TypeError, match="CNTK Function expected 2 arguments, got 3"):
        f.argument_map(1, 2, 3)
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'r'"):
        f.argument_map(1, r=1)
    with pytest.raises(ValueError, match="ReplacePlaceholder called with a single "
                                         "replacement Variable .* has 2 placeholders"):
        f.replace_placeholder(C.input_variable(2))
    g = C.relu(p)
    assert g.replace_placeholder(C.input_variable(2, name="x")) is g
    assert [(a.name, a.shape) for a in g.arguments] == [("x", (2,))]
