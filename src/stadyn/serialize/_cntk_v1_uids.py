"""The unique ids CNTK 2.7's ``load_model`` gives the nodes of a CNTK v1 model file, and the
CNTK 2 op names it shows for the v1 node types.

CNTK 2.7 turns a v1 network into a Function graph by walking it from its roots
(``ConvertFromLegacyModel``, ``Source/CNTKv2LibraryDll/BackCompat.cpp``), drawing every uid
from one process-wide counter.  Measured on CNTK 2.7 (the real ``cntk.exe`` files of CNTK's
tests and files CNTK 2 wrote), each step takes numbers as follows:

- a function node met the first time: one number for the placeholder standing for it while
  its inputs are resolved, then its inputs (in the file's order), then one for its uid
  (``<op name><n>``) and two more as its output is made;
- a leaf met the first time: one (``Input<n>``, ``Parameter<n>``, ``Constant<n>`` -- a
  learnable parameter with learning-rate multiplier 0 is a constant; the sample count CNTK
  adds to a batch normalisation of a file before version 19, ``<node>.run_sample_count``, is
  one after its five inputs);
- a node CNTK 2's v1 writer named (``__v2libuid__<uid>__v2libname__<name>``) keeps that uid
  and takes no number for it (its placeholder and output still take theirs);
- each root, once resolved: one; the ``Combine`` of the roots: one, and the composite
  Function over it the next.
"""

from __future__ import annotations

from ._cntk_v1_format import _PRECOMPUTED
from ._legacy_ir import LegacyNetwork

__all__ = ["cntk_v1_uids", "cntk_v1_op_name", "V1_READ_AS_V2"]

#: the CNTK 2 op (``PrimitiveOpType``) CNTK 2.7 makes of a v1 node type, where its name differs
_V2_OP = {"RectifiedLinear": "ReLU", "SquareError": "SquaredError",
          "ErrorPrediction": "ClassificationError", "DiagTimes": "ElementTimes",
          "SumElements": "SumAll", "SumColumnElements": "ReduceElements", "Cosine": "Cos",
          "TransposeDimensions": "TransposeAxes", "RowStack": "Splice",
          "MaxPooling": "Pooling", "AveragePooling": "Pooling", "MaxUnpooling": "Unpooling",
          "If": "Select"}

#: v1 node types that store no fields -> the CNTK 2 op CNTK 2.7 loads each as (that
#: :func:`cntk_v1_op_name` names), with the inputs in the file's order and no attributes
#: (``ResolveFunction``, BackCompat.cpp:137-325 and 461-462; ``ReorderAsPrimitiveFunctionInputs``
#: moves none of them): the v1 reader builds them with that op's ``cntk_import`` rule.  The v1
#: types CNTK 2.7 cannot instantiate (``Asinh``, ``Atanh``, ``Pow``, ``ExponentialLinearUnit``:
#: "Attempted to instantiate undefined operation") stay unmapped, as CNTK 2.7 reads no such file.
V1_READ_AS_V2 = {t: _V2_OP.get(t, t) for t in (
    "Negate Exp Log Sqrt Floor Cosine Sin Sinh Cosh Asin Acos LogPlus StopGradient CosDistance "
    "Less Equal Greater GreaterEqual NotEqual LessEqual If").split()}


def cntk_v1_op_name(node_type: str) -> str:
    """The op name CNTK 2.7 shows for a function of the v1 node type ``node_type`` (a v1
    ``RectifiedLinear`` is a ``ReLU``, ``ErrorPrediction`` a ``ClassificationError``).

    Example:
        >>> from stadyn.serialize import cntk_v1_op_name
        >>> cntk_v1_op_name("SquareError"), cntk_v1_op_name("Plus")
        ('SquaredError', 'Plus')
    """
    return _V2_OP.get(node_type, node_type)


def cntk_v1_uids(net: LegacyNetwork, roots: list, first: int) -> "tuple[dict[str, str], int]":
    """CNTK 2.7's uids of the nodes of the v1 network ``net`` (as ``read_cntk_v1`` gives it)
    that ``load_model`` reaches from ``roots`` (:func:`cntk_v1_roots`), numbered from ``first``
    as the counter stood before the load (see the module docstring), by node name; and the
    number of the ``Combine`` of the roots (its composite's is the next).

    Example:
        >>> from stadyn.serialize import LegacyFunction, LegacyNetwork, LegacyVariable
        >>> from stadyn.serialize import cntk_v1_uids
        >>> net = LegacyNetwork("main", [LegacyFunction("z", "Plus", ("x", "b"), ("z",))],
        ...                     {"x": LegacyVariable("x", "input", [2]),
        ...                      "b": LegacyVariable("b", "parameter", [2], meta={
        ...                          "learning_rate_multiplier": 1.0})})
        >>> cntk_v1_uids(net, ["z"], 3)
        ({'x': 'Input4', 'b': 'Parameter5', 'z': 'Plus6'}, 10)
    """
    producer = {f.name: f for f in net.functions}
    uids: dict[str, str] = {}
    count = first

    def take() -> int:
        nonlocal count
        count += 1
        return count - 1

    def leaf(name: str) -> None:
        v = net.variables.get(name)
        meta = v.meta if v is not None else {}
        if meta.get("v2_uid"):
            uids[name] = meta["v2_uid"]
            return
        kind = "Input" if v is not None and v.kind == "input" else \
            "Constant" if not meta.get("learning_rate_multiplier") else "Parameter"
        uids[name] = f"{kind}{take()}"

    def visit(start: str) -> None:
        # iteratively, as CNTK's recursion runs: the placeholder, the inputs, then the function
        stack = [(start, False)]
        while stack:
            name, inputs_done = stack.pop()
            fn = producer.get(name)
            if fn is None or not fn.inputs:
                if name not in uids:
                    leaf(name)
                continue
            if inputs_done:
                own = fn.meta.get("v2_uid")
                if fn.type in _PRECOMPUTED:    # a precomputed value: a Constant
                    uids[name] = own or f"Constant{take()}"
                    continue
                uids[name] = own or f"{cntk_v1_op_name(fn.type)}{take()}"
                take(), take()
                continue
            if name in uids or name in pending:
                continue
            pending.add(name)
            take()                              # the placeholder
            stack.append((name, True))
            if fn.type == "BatchNormalization" and len(fn.inputs) == 5:
                # (a file before version 19: CNTK adds the sample count, a constant, as the
                # sixth input)
                stack.append((f"{name}.run_sample_count", False))
            stack.extend((i, False) for i in reversed(fn.inputs))

    pending: set = set()
    for root in roots:
        visit(root)
        fn = producer.get(root)
        if fn is not None and fn.type not in _PRECOMPUTED:
            take()
    return uids, take()
