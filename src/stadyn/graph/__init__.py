"""The graph: Variables, function nodes, the two execution modes, contexts and static lowering.

Files by concern (imports point down this list; see docs/architecture.md):

* ``_runner.py`` — the plan cache, ``forward``/``backward`` of static graphs;
* ``_forward_again.py`` — a forward run again for a backward (the marks changed since, or a
  Variable not the root of its last forward), and what such a run must not do;
* ``_plan.py`` — lowering a subgraph to a :class:`StaticPlan` (or an :class:`EagerPlan`);
* ``_eager_plan.py`` — :class:`EagerPlan`, a graph that cannot be lowered run with autograd;
* ``_trial_plan.py`` — :class:`TrialPlan`, a graph run eagerly until lowering it pays;
* ``_own_streams.py`` — :class:`GeneratorSeed`, a seed holding its generators; :class:`NodeSeed`,
  a random op's own plain seed with the node's generator (kept across plans, seeded anew when
  its inputs change shape);
* ``_passes.py`` — rewrites of traced programs; ``_partition.py`` — forward/backward split;
* ``_grad_buffers.py`` — gradient buffers and their reuse contract (:func:`release_grads`);
* ``_reader_order.py`` — NNabla's backward order; what a ``PythonFunction``'s backward sees of
  its input's other readers' gradients (``readers_before``); ``_reader_leaves.py`` — those
  arrangements where leaves are among its inputs; ``_ordered_sums.py`` — three or more
  readers' gradient parts added in NNabla's order; ``_written_leaves.py`` — a leaf written
  between a dynamic forward and its backward read with its new value; ``_edge_cuts.py`` —
  readers' parts of an input's gradient an ``nn.grad`` leaves out;
* ``_layout.py`` — a plan's memory layout (channels-last convolution chains, :func:`plan_layout`);
* ``_deferred_layout.py`` — a channels-last plan's values, converted to NCHW by their first
  reader;
* ``_free_axes.py`` — inputs whose batch axis (and free dimensions) the data sizes (CNTK's),
  conformed when a build joins one never fed with values of a fed batch;
* ``_interpret.py`` — :func:`interpret`, the reference semantics; :func:`refresh_shapes`;
* ``_subgraph.py`` — :class:`Subgraph` (nodes, leaves and their roles), :func:`value_key`;
* ``_apply.py`` — :func:`apply`, one op call in either mode;
* ``_sequence.py`` — the sequence axis (padding + lengths), :func:`set_sequences`;
* ``_held_values.py`` — the intermediates that keep their values through ``clear_buffer`` and
  ``clear_no_need_grad``: the ``persistent`` ones and those the program holds (a reference
  beyond Stadyn's own, counted; a node made only to show the graph, :func:`shown_only`,
  holds none);
* ``_variable.py`` — :class:`Variable`, :class:`FunctionNode`, the layout and graph versions;
* ``_numpy_readers.py`` — NumPy arrays handed out over a gradient, still alive (:func:`viewed`);
* ``_numerics.py`` — :func:`check_numerics` (NaN/Inf tracing); ``_location.py`` — the user's
  line a node records; ``_labels.py`` — profiler labels of op calls;
* ``_first_pass.py`` — the shapes CNTK's first inference pass gives values after a loop
  whose state changed shape (:func:`first_pass_shape`);
* ``_base_axis.py`` — an op node called again on an input of another rank
  (:func:`base_axis_kept`);
* ``_identity_keys.py`` — weak maps and sets of objects keyed by identity, blind to ``==``
  (:class:`IdentityKeyDict`, :class:`IdentitySet`: Stadyn's records of Variables);
* ``_spec.py``, ``_context.py``, ``_mode.py``, ``_precision.py``, ``_scope.py`` — leaves.
"""

from ._apply import _conform, apply, raised_by_user_code, run_before
from ._base_axis import base_axis_kept
from ._context import Context, context, context_scope, get_current_context, set_default_context
from ._identity_keys import IdentityKeyDict, IdentitySet
from ._free_axes import (FREE_DIMENSION, FeedUndo, behind_free_dimensions, conform_for_op,
                         conform_unfed_inputs, fed_for_a_run, free_batch_input, free_dimensions,
                         free_dimensions_marks,
                         has_free_batch, holds_free_stand_ins, mark_free_dimensions,
                         widen_free_dimensions)
from ._grad_buffers import (eager_grad_out, is_released, is_zeroing, mark_zeroing,
                            release_grads, take_released, unmark_zeroing)
from ._late_leaves import grad_of_dynamic_graph, grad_seed
from ._first_pass import (broadcast_like, first_pass_shape, joint_inference,
                          note as note_first_pass, step_first_pass)
from ._hoist import hoist_invariants, replayed_from, replayed_with
from ._interpret import Shapes, interpret, refresh_shapes
from ._labels import (BACKWARD_SUFFIX, LABEL_PREFIX, labels_enabled, labels_off, op_label,
                      set_labels)
from ._layout import plan_layout, standard_layout
from ._location import format_location, source_location, user_location
from ._numerics import check_numerics, numerics_enabled
from ._numpy_readers import numpy_reader, viewed
from ._mode import (auto_forward, get_auto_forward, is_no_grad, is_training, no_grad,
                    set_auto_forward, set_training, training)
from ._partition import partition
from ._passes import (defer_products, drop_dead_code, fuse_convolution_relu, new_placeholder,
                      plan_passes, register_product, reuse_dead_inputs, simplify)
from ._recompute import recompute, recompute_fn, set_global_recompute
from ._function_hooks import (set_function_post_hook, set_function_pre_hook,
                              unset_function_post_hook, unset_function_pre_hook)
from ._tracing import collector_paused, program_module, realize, trace_fake
from ._grad_marks import replaying_a_forward
from ._eager_plan import EagerPlan
from ._plan import StaticPlan, build_plan, untraceable_ops
from ._trial_plan import TrialPlan
from ._own_streams import GeneratorSeed, NodeSeed
from ._plan_reuse import graph_structure
from ._runner import forward_all
from ._static_options import get_static_options, set_static_options, static_options
from ._scope import current_scope, name_scope
from ._sequence import (is_lengths, new_lengths, pad_sequences, sequence_input, sequences_of,
                        set_sequence_axis, set_sequences)
from ._spec import OpSpec
from ._subgraph import (CONSTANT, INPUT, PARAMETER, VIEW, Subgraph, leaf_tensor, output_key,
                        value_key)
from ._variable import FunctionNode, Variable, on_unlinked, to_torch_dtype, topological_nodes
from ._versions import bump_graph_version, graph_version, shapes_changed, shapes_version
from ._kept import keep_as, keep_with, kept_with
from ._held_values import shown_only
from ._shared_values import (hand_out, handed_out, on_renew, read_value_of, renew_value, set_output,
                             stop_reading, value_holder)
from ._tensors import data_of, grad_of
from ._variable_arrays import drop_own_grad, keep_own_grad
from ._reader_order import backward_order
from ._edge_cuts import cut_at, dynamic_cuts, read_as_one, reading_group
from ._late_views import holds_array_of

__all__ = [
    # the IR
    "Variable", "FunctionNode", "OpSpec", "apply", "topological_nodes", "to_torch_dtype",
    "base_axis_kept",
    # weak maps and sets keyed by identity (NNabla's Variables compare by their nbla::Variable)
    "IdentityKeyDict", "IdentitySet", "on_unlinked",
    "data_of", "grad_of", "untraceable_ops", "keep_with", "kept_with", "keep_as", "shown_only",
    # NNabla's shared arrays: handed-out values written in place, leaves reading another's
    "hand_out", "handed_out", "set_output", "read_value_of", "value_holder", "renew_value",
    "stop_reading",
    "on_renew", "run_before", "keep_own_grad", "drop_own_grad", "backward_order",
    "numpy_reader", "viewed", "holds_array_of",
    # modes, phase, contexts, scopes
    "raised_by_user_code",
    "auto_forward", "set_auto_forward", "get_auto_forward", "training", "is_training",
    "static_options", "set_static_options", "get_static_options",
    "set_training", "no_grad", "is_no_grad", "recompute", "recompute_fn",
    "set_global_recompute", "set_function_pre_hook", "set_function_post_hook",
    "unset_function_pre_hook", "unset_function_post_hook", "Context", "context",
    "set_default_context", "get_current_context",
    "context_scope", "current_scope", "name_scope",
    # debugging: NaN/Inf tracing
    "check_numerics", "numerics_enabled", "source_location", "user_location",
    "format_location",
    # profiler labels of op calls (stadyn.inspect.profile)
    "LABEL_PREFIX", "BACKWARD_SUFFIX", "op_label", "set_labels", "labels_enabled",
    "labels_off",
    # subgraphs: nodes, leaves and their roles; the reference semantics
    "Subgraph", "INPUT", "PARAMETER", "VIEW", "CONSTANT", "value_key", "output_key",
    "leaf_tensor", "interpret", "refresh_shapes", "Shapes",
    # static graphs: plans, lowering, the passes a whole-step program reuses
    "forward_all", "StaticPlan", "EagerPlan", "TrialPlan", "GeneratorSeed", "NodeSeed",
    "build_plan", "bump_graph_version",
    "graph_version", "graph_structure", "shapes_changed", "shapes_version",
    "partition", "trace_fake", "program_module", "realize", "collector_paused",
    "simplify", "drop_dead_code", "defer_products", "reuse_dead_inputs", "fuse_convolution_relu",
    "register_product", "new_placeholder",
    "plan_passes",
    "plan_layout",
    "standard_layout",
    # gradient buffers: what zero_grad gives back; nn.grad of a dynamic graph
    "release_grads", "take_released", "is_released", "mark_zeroing", "is_zeroing", "unmark_zeroing",
    "eager_grad_out", "grad_of_dynamic_graph", "grad_seed",
    # a reader's part of an input's gradient left out of an nn.grad (_edge_cuts.py)
    "cut_at", "dynamic_cuts", "read_as_one", "reading_group",
    # a forward run again for its backward (NNabla differentiates the forward that ran)
    "replaying_a_forward",
    # the sequence axis: padded values with lengths (_sequence.py)
    "sequence_input", "set_sequences", "sequences_of", "pad_sequences", "is_lengths",
    "new_lengths", "set_sequence_axis", "hoist_invariants", "replayed_from", "replayed_with",
    "first_pass_shape",
    "broadcast_like",
    "joint_inference",
    "note_first_pass", "step_first_pass",
    # inputs whose batch axis and free dimensions the data sizes (CNTK's dynamic axes and
    # FreeDimension, _free_axes.py)
    "FREE_DIMENSION", "free_batch_input", "has_free_batch", "conform_unfed_inputs", "fed_for_a_run",
    "mark_free_dimensions", "free_dimensions", "widen_free_dimensions", "free_dimensions_marks",
    "holds_free_stand_ins", "behind_free_dimensions", "FeedUndo",
]

_conform[0] = conform_for_op      # a static build's retry when an op rejects shapes
