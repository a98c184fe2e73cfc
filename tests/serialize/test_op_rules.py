"""The op rules (``stadyn.serialize.op_rules``): every catalog op declares, for every format
column, a rule or the reason it has none; rules are found by the op's spec object, never by its
name; the op modules know nothing of file formats."""

from __future__ import annotations

import ast
import os

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn.graph import OpSpec, apply
from stadyn.ops import CATALOG
from stadyn.serialize import (ExportError, OpRules, Unmapped, import_table, register_rules,
                              rules_for, to_onnx_model)

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = os.path.join(HERE, "..", "..", "src", "stadyn", "ops")


def gaps(catalog) -> list[str]:
    """``op: column`` for every column of every op of ``catalog`` that holds neither a rule nor
    an :class:`Unmapped` reason (the whole record missing counts as every column)."""
    found = []
    for name, spec in catalog.items():
        rules = rules_for(spec)
        for column in OpRules.required_columns():
            if rules is None or getattr(rules, column) is None:
                found.append(f"{name}: {column}")
    return found


def test_every_catalog_op_has_a_rule_or_a_reason_in_every_column():
    assert OpRules.required_columns() == ("onnx_export", "onnx_import")
    assert OpRules.columns() == ("onnx_export", "onnx_import", "nnp_import", "nnp_export",
                                 "cntk_import", "cntk_v1_import", "model_export", "model_import")
    assert gaps(CATALOG) == [], ("register the op's rules in stadyn/serialize/op_rules/ (a rule, "
                                 "or Unmapped('why') where the format has no equivalent)")


def test_a_new_op_with_neither_is_named_by_the_completeness_check():
    bare = OpSpec.from_function(lambda x: x + 1, 1, name="plus_one")
    half = OpSpec.from_function(lambda x: x - 1, 1, name="minus_one")
    register_rules(half, onnx_export=lambda g, inputs, attrs: inputs[0])
    catalog = dict(CATALOG, plus_one=bare, minus_one=half)
    assert gaps(catalog) == ["plus_one: onnx_export", "plus_one: onnx_import",
                             "minus_one: onnx_import"]


# Ops ONNX cannot (yet) hold, each with its Unmapped reason: the unstorable gradient op, the
# random sources (the runtime's generator is not Stadyn's), an in-place write, and ops whose
# ONNX twin is not mapped yet.  A new entry here is a deliberate decision, not a default.
UNEXPORTED = ["assign", "atan2", "batch_inv", "cntk_user_function", "python_function", "cumprod",
              "gather_nd",
              "grad", "rand", "randint", "randn", "sort", "spectral_norm", "top_k_data",
              # data augmentation draws from Stadyn's generator; ONNX has no such ops
              "image_augmentation", "random_crop", "random_erase", "random_flip", "random_shift",
              # CNTK's ranking criteria and weighted sampling: ONNX has neither
              "lambda_rank", "ndcg_at_1", "random_sample", "random_sample_inclusion_frequency",
              # CNTK's CTC criterion and edit distance: ONNX has neither
              "cntk_forward_backward", "cntk_edit_distance_error",
              # cntk.exe's EnvironmentInput (the phase: ONNX has none) and GatherPacked's column
              # gather with gaps (not mapped yet)
              "cntk_environment_input", "cntk_gather_columns",
              # CNTK's max pooling over given bins (its ROIPooling): ONNX's MaxRoiPool takes
              # the regions and rounds them otherwise
              "cntk_bin_max_pooling",
              # updates its quantisation range in place; ONNX quantises to integers only
              "min_max_quantize", "scatter_nd",
              # NNabla 1.39's functions (2026): ONNX's EyeLike, Trilu, Einsum, Mod, BitShift,
              # Shape, ScatterElements, Where are not mapped yet; linspace, sum_pooling and
              # confusion_matrix have no ONNX op; the gradient shapers (clip_grad_by_*,
              # top_k_grad) are the identity forward and change only the backward
              "flip", "trilu", "eye_like", "einsum", "mod2", "bit_shift", "shape", "linspace",
              "sum_pooling", "clip_grad_by_value", "clip_grad_by_norm", "top_k_grad",
              "scatter_add", "bool_fill", "confusion_matrix",
              # NNabla's mean_subtraction updates its running mean in place (as assign),
              # CNTK's EpochAccumulator keeps one from run to run
              "mean_subtraction", "cntk_epoch_accumulator",
              # NNabla's other random sources (as rand)
              "rand_binomial", "rand_gamma", "rand_beta",
              # NNabla's Fourier transforms: ONNX 17's DFT and STFT are not mapped yet
              "fft", "ifft", "stft", "istft",
              # NNabla's roi_align and warp_by_flow: not mapped yet
              "roi_align", "warp_by_flow", "random_choice", "nms_detection2d",
              "patch_correlation",
              # shapes that depend on values (ONNX's NonZero, Unique, Compress not mapped yet)
              "nonzero", "unique", "bool_gather", "bool_scatter", "pack_padded_sequence",
              "pad_packed_sequence",
              # NNabla's bc_add2, prune, batch_cholesky: not mapped yet
              "bc_add2", "prune", "batch_cholesky", "depthwise_deconvolution",
              "quantize_linear", "dequantize_linear", "deformable_convolution",
              "fused_convolution", "max_pooling_backward",
              # NNabla's INQ layers fix and round their weights in place over their runs
              "inq_affine", "inq_convolution",
              # vat_noise writes its input w in the backward; no ONNX op for
              # adaptive_separable_convolution
              "vat_noise", "adaptive_separable_convolution",
              # NNabla's ONNX-compatible functions: ONNX's Resize / NonMaxSuppression not mapped
              "onnx_resize", "onnx_non_max_suppression"]


# Sequence ops ONNX can express with the lengths as a tensor: the padded reductions, softmax,
# first and last steps (a mask), and CNTK's fused recurrences (ONNX's LSTM/GRU/RNN with
# sequence_lens); test_onnx_export.py runs each through onnxruntime and imports it back.
SEQUENCE_EXPORTED = ["sequence_reduce_sum", "sequence_reduce_max", "sequence_softmax",
                     "sequence_first", "sequence_last", "sequence_unpack", "cntk_lstm_sequence",
                     "cntk_gru_sequence", "cntk_rnn_sequence"]


def test_every_catalog_op_exports_today_and_the_unimported_ones_say_why():
    """Only the ops listed in UNEXPORTED and the sequence and recurrent ops are refused by the
    exporter as a whole, each with its reason; an op without an import rule gives a reason (the
    round trip in test_onnx_export.py shows its export imports as other ops)."""
    refused = {n: rules_for(s).onnx_export for n, s in CATALOG.items()
               if not callable(rules_for(s).onnx_export)}
    sequence_ops = [n for n, s in CATALOG.items() if s.category in ("sequence", "recurrent")
                    and n not in SEQUENCE_EXPORTED]
    assert set(SEQUENCE_EXPORTED) <= set(CATALOG)
    assert sorted(refused) == sorted(UNEXPORTED + sequence_ops) and "past_value" in sequence_ops
    assert all(isinstance(r, Unmapped) and r.reason for r in refused.values())
    assert rules_for(F.grad).onnx_export.reason == F.grad.spec.unstorable
    # ONNX has no sequence axis with lengths (docs/model-files.md says what to do instead)
    # a recurrence is stored in model files (its step a graph of its own), not in ONNX
    assert not F.recurrence.spec.unstorable
    assert "Loop and Scan are not written" in rules_for(F.recurrence).onnx_export.reason
    assert "not written yet" in rules_for(F.optimized_rnnstack).onnx_export.reason
    assert all("no dynamic sequence axis" in rules_for(CATALOG[n]).onnx_export.reason
               for n in sequence_ops if CATALOG[n].category == "sequence"
               and n not in ("recurrence", "optimized_rnnstack"))
    assert "not mapped" in rules_for(F.lstm).onnx_export.reason
    user_function = F.cntk_user_function
    assert rules_for(user_function).onnx_export.reason == user_function.spec.unstorable
    assert rules_for(F.python_function).onnx_export.reason == F.python_function.spec.unstorable
    unimported = {n: rules_for(s).onnx_import.reason for n, s in CATALOG.items()
                  if isinstance(rules_for(s).onnx_import, Unmapped)}
    assert {"add_scalar", "relu6", "stop_gradient", "squared_error", "flatten", "stack",
            "sync_batch_normalization"} <= set(unimported)
    assert all(reason and "\n" not in reason for reason in unimported.values())


def test_rules_are_found_by_the_spec_object_not_by_the_name():
    assert rules_for(F.relu) is rules_for(F.relu.spec) is rules_for(CATALOG["relu"])
    impostor = OpSpec.from_function(lambda x: x * 3, 1, name="relu")   # the name, another op
    assert rules_for(impostor) is None
    x = sd.Variable((2,))
    with pytest.raises(ExportError, match="op 'relu' has no ONNX export mapping"):
        to_onnx_model(apply(impostor, (x,), {}), x)
    assert import_table()["Relu"][0] == "relu" and import_table()["Gemm"][0] == "affine"


def test_an_unmapped_export_is_refused_with_its_reason_naming_op_and_scope():
    spec = OpSpec.from_function(lambda x: x.cumsum(0), 1, name="running_total")
    register_rules(spec, onnx_export=Unmapped("the catalog's scan has no ONNX twin"),
                   onnx_import=Unmapped("ONNX's CumSum is not mapped"))
    x = sd.Variable((3,))
    with sd.parameter_scope("net/acc"):
        y = apply(spec, (x,), {})
    with pytest.raises(ExportError, match=r"op 'running_total' in scope 'net/acc' has no ONNX "
                                          r"export mapping: the catalog's scan has no ONNX twin"):
        to_onnx_model(y, x)


def test_a_registered_rule_of_an_op_outside_the_catalog_exports():
    spec = OpSpec.from_function(lambda x: x * x, 1, name="square")
    register_rules(spec, onnx_export=lambda g, inputs, attrs: g.op("Mul", [inputs[0], inputs[0]]),
                   onnx_import=Unmapped("Mul imports as mul2"))
    x = sd.Variable((2, 2))
    y = apply(spec, (x,), {})
    model = to_onnx_model(y, x)
    assert [n.op_type for n in model.graph.node] == ["Mul"]
    net = sd.import_onnx(model, dims={"batch": 2})
    np.testing.assert_array_equal(net(x=np.array([[1.0, -2.0], [3.0, 0.5]]))["y"],
                                  np.array([[1.0, 4.0], [9.0, 0.25]], dtype=np.float32))


def test_registration_refuses_twice_unknown_columns_and_non_rules():
    with pytest.raises(ValueError, match="'relu': its rules are registered twice"):
        register_rules(F.relu, onnx_export=lambda g, i, a: i[0])
    spec = OpSpec.from_function(lambda x: x, 1, name="fresh")
    with pytest.raises(TypeError, match="nnp"):
        register_rules(spec, nnp="Identity")                     # no such column (yet)
    with pytest.raises(TypeError, match="onnx_export is a rule"):
        register_rules(spec, onnx_export="Identity")              # a name is not a rule
    with pytest.raises(TypeError, match="onnx_import maps names to rules"):
        register_rules(spec, onnx_import={"Identity": "identity"})
    with pytest.raises(ValueError, match="one-line reason"):
        Unmapped("")
    with pytest.raises(TypeError, match="an F function or its spec"):
        register_rules("relu", onnx_export=lambda g, i, a: i[0])
    assert rules_for(spec) is None                                # nothing half-registered


def _op_modules() -> dict[str, ast.Module]:
    found = {}
    for name in sorted(os.listdir(OPS)):
        if name.endswith(".py"):
            with open(os.path.join(OPS, name), encoding="utf-8") as f:
                found[name] = ast.parse(f.read(), name)
    return found


def test_op_modules_know_no_file_format():
    """The catalog reads as the catalog: no ONNX names, no serialize imports, and no op module
    importing another inside a function (the ONNX mappings used to)."""
    for name, tree in _op_modules().items():
        words = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        words |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.keyword) and n.arg}
        words |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef,
                                                                   ast.ClassDef))}
        # NNabla's own function names (onnx_resize, onnx_non_max_suppression) are op names,
        # not file-format knowledge
        words -= {n for n in CATALOG if n.startswith("onnx_")}
        assert not {w for w in words if "onnx" in w.lower()}, name
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert "serialize" not in (node.module or ""), name
        lazy = [(name, node.module) for fn in ast.walk(tree)
                if isinstance(fn, ast.FunctionDef) for node in ast.walk(fn)
                if isinstance(node, ast.ImportFrom)
                and (node.level or (node.module or "").startswith("stadyn"))]
        allowed = [("_distributed.py", "distributed._collectives")]   # the collective's body
        assert all(item in allowed for item in lazy), lazy
    assert not {f for f in OpSpec.__dataclass_fields__ if "onnx" in f}
