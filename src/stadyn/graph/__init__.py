"""The graph: Variables, function nodes, the two execution modes, contexts and static lowering.

Files by concern (imports point down this list; see docs/architecture.md):

* ``_runner.py`` — the plan cache, ``forward``/``backward`` of static graphs;
* ``_plan.py`` — lowering a subgraph to a :class:`StaticPlan` (or an :class:`EagerPlan`);
* ``_passes.py`` — rewrites of traced programs; ``_partition.py`` — forward/backward split;
* ``_grad_buffers.py`` — gradient buffers and their reuse contract (:func:`release_grads`);
* ``_interpret.py`` — :func:`interpret`, the reference semantics; :func:`refresh_shapes`;
* ``_subgraph.py`` — :class:`Subgraph` (nodes, leaves and their roles), :func:`value_key`;
* ``_apply.py`` — :func:`apply`, one op call in either mode;
* ``_variable.py`` — :class:`Variable`, :class:`FunctionNode`, the layout and graph versions;
* ``_spec.py``, ``_context.py``, ``_mode.py``, ``_precision.py``, ``_scope.py`` — leaves.
"""

from ._apply import apply
from ._context import Context, context, context_scope, get_current_context, set_default_context
from ._grad_buffers import release_grads
from ._interpret import interpret, refresh_shapes
from ._mode import (auto_forward, get_auto_forward, is_training, set_auto_forward, set_training,
                    training)
from ._partition import partition
from ._passes import defer_products, simplify
from ._plan import EagerPlan, StaticPlan, build_plan
from ._runner import forward_all
from ._scope import current_scope, name_scope
from ._spec import OpSpec
from ._subgraph import (CONSTANT, INPUT, PARAMETER, VIEW, Subgraph, leaf_tensor, output_key,
                        value_key)
from ._variable import FunctionNode, Variable, bump_graph_version, to_torch_dtype, topological_nodes

__all__ = [
    # the IR
    "Variable", "FunctionNode", "OpSpec", "apply", "topological_nodes", "to_torch_dtype",
    # modes, phase, contexts, scopes
    "auto_forward", "set_auto_forward", "get_auto_forward", "training", "is_training",
    "set_training", "Context", "context", "set_default_context", "get_current_context",
    "context_scope", "current_scope", "name_scope",
    # subgraphs: nodes, leaves and their roles; the reference semantics
    "Subgraph", "INPUT", "PARAMETER", "VIEW", "CONSTANT", "value_key", "output_key",
    "leaf_tensor", "interpret", "refresh_shapes",
    # static graphs: plans, lowering, the passes a whole-step program reuses
    "forward_all", "StaticPlan", "EagerPlan", "build_plan", "bump_graph_version", "partition",
    "simplify", "defer_products",
    # gradient buffers: what zero_grad gives back
    "release_grads",
]
