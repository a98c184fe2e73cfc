"""A CNTK layer applied (``_layers_function.LayerFunction.__call__``): its Stadyn layer
applied to the operands' values, as CNTK 2.7 infers the layer's graph with them, and the
application recorded as CNTK shows it -- a *block* of the layer's kind (``Dense``) named by
its ``name``, of several outputs where the layer gives several (an ``LSTM``'s ``h`` and
``c``), one op where CNTK computes the layer with one (``Pooling``), a ``NoOp`` alias for a
named ``Sequential``.  A call on placeholders without a shape waits (``_deferred``).

Example:
    >>> import stadyn.compat.cntk as C
    >>> z = apply_layer(C.layers.Dense(2, name="fc"), (C.input_variable(3),))
    >>> z.root_function.op_name, z.name, z.shape
    ('Dense', 'fc', (2,))
"""

from __future__ import annotations

import weakref
from typing import Any

from ... import functions as F
from ... import layers as _L
from ...graph import Variable, joint_inference, user_location
from . import _graph as G
from ._adapt import one_op, operand, operands_dtype, several_outputs_message, wrap
from ._deferred import Deferred, pending
from ._deferred_reads import as_built
from ._deferred_shapes import placeholder_stand_ins
from ._dry_layers import dry_copy, in_dry_run
from ._late import late
from ._layers_composite import CompositeLayer
from ._layers_declared import (_refuse_weights_over_steps, _refuse_windows_over_free_lengths,
                               adopt_applied)
from ._mixins import GraphObject
from ._one_sample import apply_to_samples
from ._parameters import cntk_parameters
from ._sequence_placeholders import note_call
from ._shown_constants import note_steepness
from ._sparse_operands import refuse_sparse_run
from ._times_ranks import check_times_ranks, dense_ranks

__all__ = ["apply_layer"]


# The layers CNTK 2.7 builds on a sparse input but refuses to run ('TensorOp: Tensor
# operations are currently not supported for sparse matrices'); Activation refuses through its
# op, and Dense, Embedding, BatchNormalization, Dropout, Label run
_REFUSING_SPARSE = ("LayerNormalization", "Stabilizer")
# the layers whose CNTK op pads inside itself, where Stadyn pads before it
_PADDING_INSIDE = ("Convolution",)
# the layers CNTK 2.7 computes with one op (Pooling; Convolution, a Plus of the bias)
_ONE_OP = ("ConvolutionTranspose", "MaxPooling", "AveragePooling")


def _block_options(layer: Any) -> dict:
    """What a CNTK file writes of ``layer`` that its graph does not show: a ``Dense``'s
    ``inferInputRankToMap`` (CNTK 2.7's Dense: -1 with ``input_rank``, ``map_rank`` as given,
    else 0, all of the input's axes)."""
    if not isinstance(layer, _L.Dense):
        return {}
    return {"inferInputRankToMap": dense_ranks(layer)[0]}


def apply_layer(layer_fn: Any, args: tuple):
    """The layer ``layer_fn`` (a ``LayerFunction``) applied to ``args``: the CNTK Function of
    its output (of its outputs, for a layer of several), its block recorded (see the module's
    text); a waiting Function where an operand is a placeholder without a shape or a layer;
    on arrays, its signature's Function applied to them."""
    for a in args:              # (CNTK 2.7 takes each operand as a Variable)
        if isinstance(a, GraphObject) and len(getattr(a, "outputs", ())) > 1:
            raise RuntimeError(several_outputs_message(a))
    # (CNTK's Times refuses an input of too low a rank as the layer is applied, whether or not
    # another operand waits: a placeholder of unknown shape passes)
    check_times_ranks(layer_fn.layer, args, layer_fn.kind)
    if pending(args, {}):       # a placeholder without a shape, a layer: wait for it
        waiting = Deferred(layer_fn, args, {})
        stand_ins = placeholder_stand_ins(args)
        if stand_ins is not None:   # (placeholders of known shapes, waiting ops of known
            out = layer_fn(*stand_ins)  # shapes and axes: CNTK 2.7 makes the layer's
            waiting._probed_shape = tuple(out.shape)    # parameters at the call)
            waiting._made_parameters = True
            if all(hasattr(a, "_replay") for a in args):    # (their axes known: its own)
                waiting.__dict__["_probed_axes"] = tuple(out.dynamic_axes)
        return waiting
    args = as_built(args)                    # a waiting op given its types: its Function
    if args and not any(isinstance(a, GraphObject) for a in args):
        if layer_fn._signature is None:
            # (CNTK 2.7 evaluates a Function called on arrays: its placeholders have no type)
            where = user_location()
            at = f"{where[0]}:{where[1]}: " if where else ""
            raise RuntimeError(f"Unknown DataType.\n{at}{layer_fn.kind or 'the layer'} called "
                               "on arrays: its placeholders have no data type; call it on "
                               "CNTK Functions (an input_variable), or give it a signature "
                               "first (update_signature)")
        return layer_fn._signature(*args)
    values = [operand(a) for a in args]
    if in_dry_run():        # (a recurrence step's state shape being found: _dry_layers)
        with joint_inference():
            out = dry_copy(layer_fn.layer)(*values)
        return late("combine_outputs")([wrap(o) for o in out]) if isinstance(out, tuple) \
            else wrap(out)
    _refuse_weights_over_steps(layer_fn.layer, values)
    _refuse_windows_over_free_lengths(layer_fn.layer, values)
    with joint_inference(), cntk_parameters():  # CNTK infers the layer's graph with
        out = layer_fn.layer(*values) if isinstance(layer_fn.layer, CompositeLayer) else \
            apply_to_samples(layer_fn.layer, values)    # its operands (a Sequential's
                                                        # steps: each for itself)
    adopt_applied()         # (a learner given its declared parameters learns these)
    # CNTK's layers compute in their parameters' data type (float64 under
    # default_options(dtype=np.float64)), which their inputs must have
    operands_dtype(*values, *layer_fn.layer.parameters, op=layer_fn.kind or "layer")
    named_composite = layer_fn.own_name and not layer_fn.kind and \
        isinstance(layer_fn.layer, CompositeLayer)
    if isinstance(out, Variable) and (any(out is v for v in values) or (
            out in G.BLOCKS and (layer_fn.kind or layer_fn.own_name)) or named_composite):
        # (a named Sequential is CNTK 2.7's alias of its steps' output, whatever op made
        # it: a NoOp over a ReLU too)
        out = F.identity(out)
        if not layer_fn.kind:    # (a Label, a named Sequential: CNTK 2.7's NoOp)
            G.set_op_name(out, "NoOp")
    if isinstance(out, Variable) and layer_fn.kind in _ONE_OP:
        one_op(out, *values)        # (CNTK 2.7's one Pooling, one Convolution)
        if layer_fn.kind == "ConvolutionTranspose":
            G.show_transposed(out)
        else:
            G.set_op_name(out, "Pooling")
    elif isinstance(out, Variable) and layer_fn.kind in _PADDING_INSIDE:
        G.hide_padding(out, values)     # (CNTK's op pads inside: no Pad in its graph)
    several = isinstance(out, tuple) and len(out) > 1 and \
        all(isinstance(o, Variable) for o in out)
    if several and layer_fn.kind and layer_fn.kind not in G.RECURRENCE_BLOCKS:
        # (an LSTM's h and c: CNTK 2.7's one block of two outputs)
        out = G.block_of_outputs(out, layer_fn.kind, layer_fn.own_name, tuple(values),
                                 options=_block_options(layer_fn.layer))
    elif isinstance(out, Variable) and layer_fn.kind:
        G.BLOCKS[out] = G.Block(layer_fn.kind, layer_fn.own_name, tuple(values),
                                options=_block_options(layer_fn.layer))
    elif isinstance(out, Variable) and layer_fn.own_name:
        out.name = layer_fn.own_name
    steepness = getattr(layer_fn.layer, "steepness", None)   # a Stabilizer's
    for p in layer_fn.layer.parameters if steepness is not None else ():
        note_steepness(p, steepness)
    outs = out if isinstance(out, tuple) else (out,)
    if layer_fn.kind in _REFUSING_SPARSE and isinstance(out, Variable):
        refuse_sparse_run(layer_fn.kind, list(args), out)     # (when run, as CNTK 2.7)
    layer_fn._applied = [weakref.ref(o) for o in outs if isinstance(o, Variable)]
    # the order of its own parameters in a walk of the layer's graph alone (its operands'
    # graphs not entered), for once the graph is gone
    layer_fn._order = list(G.walk_leaves([o for o in outs if isinstance(o, Variable)],
                                     stop=[v for v in values if isinstance(v, Variable)]))
    if isinstance(out, tuple) and G.function_outputs(list(out)) is not None:
        result = late("Function")(out[0], list(out))    # (a block's outputs)
    elif isinstance(out, tuple):        # several outputs: one Function with an output each
        result = late("combine_outputs")([wrap(o) for o in out])
    else:
        result = wrap(out)
    # (applied to a placeholder made on a sequence axis: applied again to what binds it)
    note_call(layer_fn, args, {}, result)
    return result
