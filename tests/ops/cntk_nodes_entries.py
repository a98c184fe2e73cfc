"""Harness entries of ``cntk_environment_input`` and ``cntk_gather_columns`` (cntk.exe's
``EnvironmentInput`` and GatherPacked's ``DoGatherColumnsOf``, ``stadyn/ops/_cntk_nodes.py``),
merged into ``test_ops.ENTRIES``; the references are NumPy written from cntk.exe's C++
(InputAndParamNodes.h:510-517 and :531-535; Source/Math/CPUMatrixImpl.h:643-670)."""

from __future__ import annotations

import numpy as np

import stadyn as sd


def _environment_input(name="isTraining"):
    # ReadOutVariable: (ElemType) Environment().IsTraining(), one value ([1] x 1)
    return np.array([1.0 if sd.graph.is_training() else 0.0])


def _gather_columns(source, index):
    # *this[:, j] = a[:, idx[j]]; a negative or NaN idx[j] a gap (here 0s); (size_t) truncates
    flat = index.reshape(-1)
    out = np.zeros((flat.size,) + source.shape[1:])
    for j, i in enumerate(flat):
        if not np.isnan(i) and i >= 0:
            out[j] = source[int(i)]
    return out.reshape(index.shape + source.shape[1:])


def _normal(rng, *shape):
    return rng.normal(size=shape).astype(np.float32)     # (the values the op is fed)


def cntk_nodes_entries(Case, Entry) -> dict:
    rng = np.random.default_rng(4111)
    source = _normal(rng, 5, 3)
    index = np.array([[4.0, -1.0, 0.0], [2.75, np.nan, 4.0]], np.float32)
    return {
        "cntk_environment_input": Entry([Case((), {"name": "isTraining"}), Case(())],
                                        _environment_input, no_grad="no inputs"),
        "cntk_gather_columns": Entry(
            [Case((source, index)),
             Case((_normal(rng, 4), np.array([3.0, -2.0, 1.0], np.float32))),
             Case((_normal(rng, 3, 2, 2), np.array([[[1.0]], [[-1.0]]], np.float32)))],
            _gather_columns, grad_inputs=(0,),
            why_not_others="the index gets no gradient (column numbers: DoGatherColumnsOf)")}
