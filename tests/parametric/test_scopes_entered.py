"""Scopes entered through Stadyn's own ``parameter_scope`` are placed where they were entered
in ``compat.nnabla``'s ``get_parameters`` order, as NNabla 1.39 places its scopes (its
``parameter_scope`` makes the scope's dict on entry).  The expected lists are NNabla 1.39's,
from the same program with ``nn.parameter_scope`` for each ``sd.parameter_scope`` (run on it:
``['b/W', 'x', 'c/d/V', 'c/U', 'y']`` and, after ``nn.clear_parameters()``, ``['e/Q', 'z']``).
"""

import stadyn as sd
import stadyn.compat.nnabla as nn


def test_a_native_scope_entered_empty_keeps_its_place():
    with sd.parameter_registry(sd.ParameterRegistry()):
        with sd.parameter_scope("b"):
            pass
        nn.parameter.get_parameter_or_create("x", (1,))
        with nn.parameter_scope("b"):
            nn.parameter.get_parameter_or_create("W", (1,))
        with sd.parameter_scope("c/d"):
            pass
        nn.parameter.get_parameter_or_create("y", (1,))
        with nn.parameter_scope("c"):
            with nn.parameter_scope("d"):
                nn.parameter.get_parameter_or_create("V", (1,))
            nn.parameter.get_parameter_or_create("U", (1,))
        assert list(nn.get_parameters(grad_only=False)) == ["b/W", "x", "c/d/V", "c/U", "y"]
        nn.clear_parameters()
        with sd.parameter_scope("e"):
            pass
        nn.parameter.get_parameter_or_create("z", (1,))
        with sd.parameter_scope("e"):
            nn.parameter.get_parameter_or_create("Q", (1,))
        assert list(nn.get_parameters(grad_only=False)) == ["e/Q", "z"]


def test_the_registry_notes_each_scope_once_after_the_newest_parameter():
    reg = sd.ParameterRegistry()
    with sd.parameter_registry(reg):
        with sd.parameter_scope("a/b"):
            sd.get_parameter_or_create("W", (1,))
        with sd.parameter_scope("a"):
            pass
        with sd.parameter_scope("k"):
            pass
    assert dict(reg.entered) == {"a": None, "a/b": None, "k": "a/b/W"}
