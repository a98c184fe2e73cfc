"""CNTK v2 files Stadyn writes with the ops its writer wrote as Stadyn's own format (with the
warning "no CNTK v2 form for pad", "... for Slice: a slice along several axes or with a
stride", "... for top_k_data", "... for TransposeAxes: a transpose the writer cannot read")
until cntkwrite6: ``LocalResponseNormalization`` (CNTK 2.7's block), ``Slice`` with strides or
along several axes, ``TopK`` (one function, two outputs), ``gather`` along another axis than
the first (the ``GatherOp`` block), ``DepthToSpace`` and ``SpaceToDepth`` (blocks; "... for
transpose"), ``Times`` of each row of a matrix sample (affine with base_axis 2: "... for
affine: base_axis 2 with 1 batch axis"), ``sequence.broadcast_as`` (CNTK's
``Sequence::BroadcastAs`` block: "... for sequence_broadcast_as: an op on a sequence the writer
has no sequence form for").

``tests/fixtures/cntk_write_forms/``: CNTK 2.7's ``cntk_nets.model`` of
``forms_network.build_nets`` (and ``cntk_seq_nets.model`` of ``build_seq_nets``) with its
outputs and gradients (``cntk_nets.npz``, ``make_cntk_nets.py``); CNTK 2.7's listing, outputs
and gradients of the file Stadyn wrote of the same network built in the compat (``built_nets``,
``built_seq_nets`` in ``written.json`` and ``cntk_outputs.npz``, ``make_forms.py``)."""

from __future__ import annotations

import json
import os
import sys
import warnings

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_write_forms")
sys.path.insert(0, FIXTURES)
import make_forms  # noqa: E402

ON_STADYNS = dict(np.load(os.path.join(FIXTURES, "cntk_outputs.npz")))
with open(os.path.join(FIXTURES, "written.json")) as _f:
    WRITTEN = json.load(_f)["built_nets"]
CNTK_NETS = dict(np.load(os.path.join(FIXTURES, "cntk_nets.npz")))
FEEDS = {k: CNTK_NETS[k] for k in ("maps", "maps4", "vec", "mat", "pick",
                                            "planes", "steps")}
OUTPUTS = ["lrn", "lrn_narrow", "slice_stride", "slice_axes", "slice_axes_plain", "top_k",
           "top_k_TopKIndexMask", "gather_axis", "gather_last", "depth_to_space",
           "space_to_depth", "times_rows"]


def _form(decoded: dict) -> list:
    """Each function of a decoded file -- op, block kind, name, attributes, and its inputs by
    what they are (a leaf's kind and shape, a function's op and output) rather than by uid --
    sorted: what CNTK writes, whatever uids it numbers."""
    leaves = {e["uid"]: ["leaf", e["kind"], e["shape"]] for e in decoded["inputs"]}
    ops = {f["uid"]: f["op"] for f in decoded["primitive_functions"]}

    def what(uid):
        if uid in leaves:
            return leaves[uid]
        made, _, k = uid.rpartition("_Output_")
        return ["output", ops[made], k]
    return sorted(json.dumps([f["op"], f.get("block_function_op_name", ""), f.get("name", ""),
                              f["attributes"], [what(i) for i in f["inputs"]]], sort_keys=True)
                  for f in decoded["primitive_functions"])


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("cntk_write_nets") / "built_nets.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)     # a CNTK v2 file, not Stadyn's format
        make_forms.forms_network.build_nets(C).save(path)
    return path


def test_the_written_file_is_the_one_cntk_read(written):
    assert make_forms.decoded(written) == WRITTEN["file"]


def test_the_written_file_is_what_cntk_writes(written):
    # the same functions as CNTK 2.7's own file of the same network: op, block kind, name,
    # attributes and inputs (the LRN block over beta, bias, the window's weights, the operand;
    # its body's Convolution with automatic padding and CNTK's ElementDivide block; Slice's
    # axis / axisVec forms; TopK's axis and numItems; the GatherOp block's axis, its indices
    # then table, the two TransposeAxes around Gather named <name>_inner)
    own = make_forms.decoded(os.path.join(FIXTURES, "cntk_nets.model"))
    assert _form(make_forms.decoded(written)) == _form(own)


def test_cntk_computes_on_stadyns_file_what_it_computes_on_its_own():
    listed = WRITTEN["cntk"]
    assert [o[0] for o in listed["outputs"]] == OUTPUTS
    assert [f[0] for f in listed["functions"][:7]] == [
        "Combine", "LocalResponseNormalization", "LocalResponseNormalization", "Slice", "Slice",
        "Slice", "TopK"]
    for out in OUTPUTS:
        np.testing.assert_array_equal(ON_STADYNS["built_nets/" + out], CNTK_NETS["nets/" + out],
                                      err_msg=out)
    # and its gradients through them (make_cntk_nets.gradients)
    for name in ("maps", "maps4", "mat", "planes"):
        np.testing.assert_array_equal(ON_STADYNS["built_nets/grad/" + name],
                                      CNTK_NETS["grad/" + name], err_msg=name)


def _gradients(f) -> dict:
    # (make_cntk_nets.gradients: the outputs' sums, each times its place)
    picked = [o for o in f.outputs if o.name in ("lrn", "lrn_narrow", "slice_axes",
                                                 "depth_to_space", "space_to_depth",
                                                 "times_rows")]
    total = C.reduce_sum(picked[0])
    for k, o in enumerate(picked[1:], 2):
        total = C.plus(total, C.reduce_sum(C.element_times(o, float(k))))
    wrt = list(total.arguments)
    got = total.grad({a: FEEDS[a.name] for a in wrt}, wrt=wrt)
    return {a.name: np.asarray(got[a]) for a in wrt}


@pytest.mark.parametrize("source", ["built", "cntks_file", "written"])
def test_stadyn_computes_what_cntk_computes(request, source):
    # the compat's network (a window of CNTK's over fewer channels than 2r + 1: before, the
    # 2r + 1 nearest, 0.048 off), CNTK 2.7's file (before: its LRN's Convolution, a kernel
    # without an output-maps axis, was refused) and Stadyn's file read back
    f = {"built": lambda: make_forms.forms_network.build_nets(C),
         "cntks_file": lambda: C.load_model(os.path.join(FIXTURES, "cntk_nets.model")),
         "written": lambda: C.load_model(request.getfixturevalue("written"))}[source]()
    got = f.eval({a: FEEDS[a.name] for a in f.arguments})
    assert sorted(o.name for o in f.outputs) == sorted(OUTPUTS)
    for o in f.outputs:
        np.testing.assert_allclose(got[o], CNTK_NETS["nets/" + o.name], rtol=1e-6, atol=1e-6,
                                   err_msg=o.name)
    for name, g in _gradients(f).items():
        np.testing.assert_allclose(g, CNTK_NETS["grad/" + name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)


@pytest.mark.parametrize("make", [
    # (eye_like and top_k along another axis than the last, the examples until cntkwrite8,
    # are CNTK's EyeLikeOp and TopK block now: tests/serialize/test_cntk_write_fallbacks.py)
    # (cosine_distance_with_negative_samples, another until cntkfile39, is CNTK's own op now:
    # tests/serialize/test_cntk_cos_negative.py)
    lambda x: C.pow(x, C.constant(2.0)),                    # a base that may be 0
])
def test_what_has_no_cntk_form_yet_is_still_stadyns_format(tmp_path, make):
    x = C.input_variable(6, name="x")
    f = make(x)
    with pytest.warns(UserWarning, match="written as a Stadyn model file"):
        f.save(str(tmp_path / "m.model"))
    assert C.load_model(str(tmp_path / "m.model")).outputs


@pytest.mark.parametrize("name", ["lrn", "lrn_narrow", "slice_stride", "slice_axes",
                                  "slice_axes_plain", "top_k", "gather_axis", "gather_last",
                                  "depth_to_space", "space_to_depth", "times_rows"])
def test_each_op_alone_is_written_as_cntk_writes_it(tmp_path, name):
    # one output of the network at a time: its function as in CNTK 2.7's own file (op, block
    # kind, attributes)
    f = make_forms.forms_network.build_nets(C)
    picked = [o for o in f.outputs if o.name == name]
    path = str(tmp_path / "one.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        C.combine(picked).save(path)

    def named(decoded):
        return [[f["op"], f.get("block_function_op_name", ""), f["attributes"]]
                for f in decoded["primitive_functions"] if f.get("name") == name]
    own = named(make_forms.decoded(os.path.join(FIXTURES, "cntk_nets.model")))
    assert named(make_forms.decoded(path)) == own and len(own) == 1


# -- sequence.broadcast_as, is_first, is_last (a network of its own: build_seq_nets) ---------
SEQ_OUTPUTS = ["broadcast", "broadcast_tanh", "broadcast_times", "is_first", "is_last"]


def test_sequence_ops_are_written_as_cntk_writes_them(tmp_path):
    # CNTK 2.7's Sequence::BroadcastAs block (the value, then the sequence; ReconcileDynamicAxis
    # inside), Sequence::IsFirst / IsLast (0 and 1, then the sequence; PastValue / FutureValue
    # of the 0 reconciled to it); CNTK 2.7 computes on Stadyn's file what it computes on its own
    path = str(tmp_path / "seq.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        make_forms.forms_network.build_seq_nets(C).save(path)
    written = make_forms.decoded(path)
    assert written == json.load(open(os.path.join(FIXTURES, "written.json")))[
        "built_seq_nets"]["file"]
    assert _form(written) == _form(make_forms.decoded(os.path.join(FIXTURES,
                                                                   "cntk_seq_nets.model")))
    for out in SEQ_OUTPUTS:
        np.testing.assert_array_equal(ON_STADYNS["built_seq_nets/" + out],
                                      CNTK_NETS["seq_nets/" + out], err_msg=out)


@pytest.mark.parametrize("source", ["built", "cntks_file"])
def test_stadyn_computes_the_sequence_ops_as_cntk_does(source):
    f = make_forms.forms_network.build_seq_nets(C) if source == "built" else \
        C.load_model(os.path.join(FIXTURES, "cntk_seq_nets.model"))
    got = f.eval({a: FEEDS[a.name] for a in f.arguments})
    assert sorted(o.name for o in f.outputs) == SEQ_OUTPUTS
    for o in f.outputs:
        np.testing.assert_allclose(np.asarray(got[o]), CNTK_NETS["seq_nets/" + o.name],
                                   rtol=1e-6, err_msg=o.name)
