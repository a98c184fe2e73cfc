"""ONNX's own operator test cases, run through Stadyn's ONNX import.

The ``onnx`` wheel ships the generators of ONNX's backend node tests
(``onnx.backend.test.case.node``): each case is a one-node model with inputs and expected
outputs.  For every ONNX op type the catalog maps (:func:`stadyn.serialize.import_table`, read
from the ops' declarations), every case of that op is imported into a Stadyn static graph and run
by Stadyn itself (inference phase; no onnxruntime), and its outputs are compared with ONNX's
expected ones (dtype, shape, and ONNX's tolerance: rtol 1e-3, atol 1e-7).

A case either passes or is explicitly not supported: the mapping refused it with a reason
(:class:`~stadyn.serialize.UnsupportedModelError`, e.g. an attribute combination the catalog op
cannot express) or it is listed in :data:`KNOWN_FAILURES` with a reason.  Inputs a mapping needs
when the graph is built (shapes, axes, pads passed as graph inputs) are bound as constants
(``import_onnx(..., constants=...)``), as the import error asks.  The function-expanded variants
(``*_expanded``) exercise other ops and are not counted.

:data:`MIN_PASSING` records how many cases of each op pass (a regression fails the test); its sum
is the number ``docs/model-files.md`` states.  Run this file as a script for the full table.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import warnings
from collections import Counter
from functools import lru_cache

import numpy as np
import pytest

from stadyn.serialize import UnsupportedModelError, import_onnx, import_table

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "model-files.md")

KNOWN_FAILURES = {
    "test_gather_negative_indices": "negative indices arrive as data (a graph input) and embed "
                                    "needs ids >= 0",
}

# Mapped op types ONNX writes no node test case for, and why (their import is checked by the
# export round trip of tests/serialize/test_onnx_export.py and test_random_ops_files.py).
NO_NODE_CASES = {
    "RandomNormalLike": "random values: ONNX's node tests have no case with fixed outputs",
    "RandomUniformLike": "random values: ONNX's node tests have no case with fixed outputs",
}

# Cases of each mapped ONNX op type that pass with onnx 1.23 (the floor: more may pass).
MIN_PASSING = {
    "Abs": 1, "Acos": 2, "Acosh": 2, "Add": 5, "And": 8, "ArgMax": 8, "ArgMin": 8, "Asin": 2,
    "Asinh": 2, "Atan": 2, "Atanh": 2, "AveragePool": 14, "BatchNormalization": 2, "Cast": 6,
    "Ceil": 2, "Clip": 9, "Concat": 12, "Constant": 1, "Conv": 6, "ConvTranspose": 11, "Cos": 2,
    "Cosh": 2, "CumSum": 7, "Det": 2, "Div": 3, "Dropout": 5, "Elu": 3, "Equal": 5, "Erf": 1,
    "Exp": 2,
    "Expand": 2, "EyeLike": 1, "GRU": 0, "LSTM": 0, "RNN": 0, "Flatten": 9, "Floor": 2,
    "Gather": 3, "GatherElements": 3,
    "Gelu": 2, "Gemm": 11, "GridSample": 14,
    "GlobalAveragePool": 2, "GlobalMaxPool": 2, "Greater": 5, "GreaterOrEqual": 5, "Identity": 1,
    "LeakyRelu": 3, "Less": 5, "LessOrEqual": 5, "Log": 2, "LogSoftmax": 7, "MatMul": 7, "Max": 11,
    "MaxPool": 12, "Mean": 3, "Min": 11, "Mul": 6, "Neg": 2, "Not": 3, "OneHot": 5, "Or": 8,
    "Pad": 5, "Pow": 8, "Reciprocal": 2, "ReduceMax": 9, "ReduceMean": 8, "ReduceMin": 9,
    "ReduceProd": 9, "ReduceSum": 12, "Relu": 1, "Reshape": 10, "Selu": 3, "Sigmoid": 2, "Sin": 2,
    "Sinh": 2, "Slice": 7, "Softmax": 7, "SoftmaxCrossEntropyLoss": 10, "Softplus": 2, "Split": 16,
    "Sqrt": 2, "Squeeze": 2, "Sub": 6, "Sum": 3, "Swish": 1, "Tan": 2, "Tanh": 2, "Tile": 2,
    "Transpose": 7, "Unsqueeze": 7, "Where": 2, "Xor": 8,
}

MAPPED = sorted(import_table())


@lru_cache(maxsize=None)
def _modules_mentioning(op_type: str) -> None:
    """Import the case modules whose source names ``op_type``: their classes generate the cases
    when imported (importing all of them takes several seconds)."""
    import onnx.backend.test.case.node as package
    pattern = re.compile(r"make_node\(\s*[\"']" + re.escape(op_type) + r"[\"']")
    folder = package.__path__[0]
    for info in pkgutil.iter_modules(package.__path__):
        if info.ispkg:
            continue
        with open(os.path.join(folder, info.name + ".py"), encoding="utf-8") as f:
            if not pattern.search(f.read()):
                continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            importlib.import_module(f"{package.__name__}.{info.name}")


def node_cases(op_type: str) -> list:
    """ONNX's node test cases of ``op_type`` (single-node models; no expanded variants)."""
    import onnx.backend.test.case.node as package
    _modules_mentioning(op_type)
    return [c for c in package._NodeTestCases
            if "_expanded" not in c.name and len(c.model.graph.node) == 1
            and c.model.graph.node[0].op_type == op_type]


def _array(value) -> np.ndarray:
    import onnx
    from onnx import numpy_helper
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)


def run_case(case) -> tuple[str, str]:
    """``('pass', '')``, ``('pass', 'bound: ...')`` or ``('unsupported', reason)``; a wrong
    result raises AssertionError, anything else propagates."""
    inputs, expected = case.data_sets[0]
    initialized = {i.name for i in case.model.graph.initializer}
    names = [i.name for i in case.model.graph.input if i.name not in initialized]
    feeds = dict(zip(names, (_array(a) for a in inputs)))
    bound: dict[str, np.ndarray] = {}
    while True:
        try:
            net = import_onnx(case.model, constants=bound)
            break
        except UnsupportedModelError as exc:
            name = exc.needs_constant
            if name in feeds and name not in bound:
                bound[name] = feeds[name]
                continue
            return "unsupported", str(exc).split(": ", 1)[-1]
    got = net(**{k: v for k, v in feeds.items() if k not in bound})
    assert len(got) == len(expected), f"{len(got)} outputs, expected {len(expected)}"
    for (name, value), want in zip(got.items(), expected):
        want = _array(want)
        assert value.dtype == want.dtype, f"output {name}: {value.dtype}, expected {want.dtype}"
        assert value.shape == want.shape, f"output {name}: {value.shape}, expected {want.shape}"
        np.testing.assert_allclose(value, want, rtol=case.rtol, atol=case.atol,
                                   err_msg=f"output {name}")
    return "pass", f"bound: {sorted(bound)}" if bound else ""


def run_op(op_type: str) -> dict[str, tuple[str, str]]:
    results = {}
    for case in node_cases(op_type):
        try:
            results[case.name] = run_case(case)
        except Exception as exc:  # noqa: BLE001 - recorded, judged by the test
            results[case.name] = ("fail", f"{type(exc).__name__}: {str(exc)[:300]}")
    return results


@pytest.mark.parametrize("op_type", MAPPED)
def test_onnx_node_cases(op_type, request):
    results = run_op(op_type)
    if op_type in NO_NODE_CASES:
        assert not results, f"{op_type} has node cases now: give it a floor in MIN_PASSING"
        return
    assert results, f"no ONNX node cases found for {op_type}"
    failed = {k: why for k, (status, why) in results.items()
              if status == "fail" and k not in KNOWN_FAILURES}
    assert not failed, f"{op_type}: cases that neither pass nor are known unsupported: {failed}"
    fixed = [k for k in KNOWN_FAILURES if results.get(k, ("",))[0] == "pass"]
    assert not fixed, f"{op_type}: known failures that pass now (remove them): {fixed}"
    counts = Counter(status for status, _ in results.values())
    assert counts["pass"] >= MIN_PASSING[op_type], (
        f"{op_type}: {counts['pass']} cases pass, {MIN_PASSING[op_type]} did before")
    bound = sum(1 for status, why in results.values() if why.startswith("bound"))
    summary = {"cases": len(results), "pass": counts["pass"], "bound": bound,
               "unsupported": counts["unsupported"], "known_failures": counts["fail"]}
    cache = getattr(request.config, "cache", None)      # absent under -p no:cacheprovider
    if cache is not None:
        cache.set(f"stadyn/onnx-node-cases/{op_type}", summary)


def test_every_mapped_op_type_has_a_recorded_floor():
    assert sorted(set(MIN_PASSING) | set(NO_NODE_CASES)) == MAPPED


def test_the_docs_state_the_node_case_count():
    with open(DOCS, encoding="utf-8") as f:
        text = f.read()
    total = sum(MIN_PASSING.values())
    assert f"**{total}** of ONNX's node test cases" in text, total
    assert f"for the **{len(MAPPED)}** ONNX op types" in text


if __name__ == "__main__":  # the full table, for docs/model-files.md
    grand = Counter()
    for op in MAPPED:
        res = run_op(op)
        c = Counter(s for s, _ in res.values())
        grand.update(c)
        grand["cases"] += len(res)
        print(f"| {op} | {len(res)} | {c['pass']} | {c['unsupported'] + c['fail']} |")
        for name, (status, why) in sorted(res.items()):
            if status != "pass":
                print(f"    {name}: {status}: {why[:150]}")
    print(dict(grand))
