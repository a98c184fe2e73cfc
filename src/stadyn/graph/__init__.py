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

from ._apply import apply, argument_error, op_error
from ._context import Context, context, context_scope, get_current_context, set_default_context
from ._grad_buffers import accumulate_grads, grad_out_buffer, release_grads
from ._interpret import interpret, refresh_shapes
from ._mode import (auto_forward, get_auto_forward, is_training, set_auto_forward, set_training,
                    training)
from ._partition import partition
from ._passes import (OUT_BUFFER_BYTES, aliased_outputs, cast_parameters_into_buffers,
                      defer_output_casts, defer_products, is_large_product, simplify,
                      write_products_into_buffers)
from ._plan import EagerPlan, StaticPlan, build_plan
from ._runner import backward, forward_all, run_forward
from ._scope import current_scope, name_scope
from ._spec import OpSpec
from ._subgraph import (CONSTANT, INPUT, PARAMETER, VIEW, Subgraph, leaf_tensor, output_key,
                        value_key)
from ._variable import (FunctionNode, Variable, bump_graph_version, graph_version, layout_changed,
                        layout_version, to_torch_dtype, topological_nodes)

__all__ = [
    # the IR
    "Variable", "FunctionNode", "OpSpec", "apply", "topological_nodes", "to_torch_dtype",
    "argument_error", "op_error",
    # modes, phase, contexts, scopes
    "auto_forward", "set_auto_forward", "get_auto_forward", "training", "is_training",
    "set_training", "Context", "context", "set_default_context", "get_current_context",
    "context_scope", "current_scope", "name_scope",
    # subgraphs and their semantics
    "Subgraph", "value_key", "output_key", "leaf_tensor", "INPUT", "PARAMETER", "VIEW",
    "CONSTANT", "interpret", "refresh_shapes",
    # running static graphs
    "forward_all", "run_forward", "backward", "StaticPlan", "EagerPlan", "build_plan",
    "bump_graph_version", "graph_version", "layout_changed", "layout_version",
    # lowering: partition and passes
    "partition", "simplify", "defer_output_casts", "write_products_into_buffers",
    "cast_parameters_into_buffers", "defer_products", "aliased_outputs", "is_large_product",
    "OUT_BUFFER_BYTES",
    # gradient buffers
    "release_grads", "accumulate_grads", "grad_out_buffer",
]
