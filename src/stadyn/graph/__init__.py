"""The graph: Variables, function nodes, the two execution modes, contexts and static lowering."""

from ._context import Context, context, context_scope, get_current_context, set_default_context
from ._lower import EagerPlan, StaticPlan, build_plan, bump_graph_version, partition
from ._mode import (auto_forward, get_auto_forward, is_training, set_auto_forward, set_training,
                    training)
from ._scope import current_scope, name_scope
from ._spec import OpSpec
from ._variable import (FunctionNode, Variable, apply, forward_all, grad, to_torch_dtype,
                        topological_nodes)

__all__ = [
    "Variable", "FunctionNode", "OpSpec", "apply", "forward_all", "grad", "topological_nodes",
    "auto_forward", "set_auto_forward", "get_auto_forward", "training", "is_training",
    "set_training",
    "Context", "context", "set_default_context", "get_current_context", "context_scope",
    "current_scope", "name_scope", "StaticPlan", "EagerPlan", "build_plan", "partition",
    "bump_graph_version",
    "to_torch_dtype",
]
