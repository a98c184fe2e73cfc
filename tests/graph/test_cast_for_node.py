"""``graph/_precision.cast_for_node``: a node bound to a float context (an NNabla function's)
reads half inputs as fp32; with none, its arguments pass as they are, not copied (the dynamic
hot path: ``benchmarks/cast_for_node_ab.py``)."""

import torch

import stadyn as sd
import stadyn.functions as F
from stadyn.graph._precision import cast_for_node


def _node(bound):
    node = F.relu(sd.Variable((2,))).parent
    node.context = bound
    return node


def test_a_float_bound_node_casts_half_arguments_up_and_passes_others_as_they_are():
    node = _node(sd.context("cpu", dtype="float32"))
    args, kwargs = [torch.zeros(2), 3], {"alpha": torch.ones(2)}
    assert cast_for_node(node, None, args, kwargs) == (args, kwargs)
    out, kw = cast_for_node(node, None, [torch.zeros(2, dtype=torch.float16)],
                            {"alpha": torch.ones(2, dtype=torch.bfloat16)})
    assert out[0].dtype == torch.float32 and kw["alpha"].dtype == torch.float32
    out, kw = cast_for_node(node, None, [torch.zeros(2)], {"alpha": torch.ones(2).half()})
    assert kw["alpha"].dtype == torch.float32


def test_a_half_context_casts_by_the_ops_precision():
    node = _node(None)                  # relu is "any": nothing cast in a half context
    t = torch.zeros(2)
    assert cast_for_node(node, torch.float16, [t], {})[0][0] is t
    node = F.affine(sd.Variable((2, 3)), sd.Variable((3, 4))).parent       # "half"
    out, _ = cast_for_node(node, torch.bfloat16, [torch.zeros(2, 3), torch.zeros(3, 4)], {})
    assert [o.dtype for o in out] == [torch.bfloat16, torch.bfloat16]
    node.context = sd.context("cpu", dtype="float32")   # the bound float context wins
    out, _ = cast_for_node(node, torch.bfloat16, [torch.zeros(2, 3).half()], {})
    assert out[0].dtype == torch.float32
