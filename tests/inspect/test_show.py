"""``sd.show``: what the pictures hold (clusters per parameter scope, op boxes, parameters, edge
shapes), every format, model files of every kind, and the errors."""

from __future__ import annotations

import json
import os
import re
import shutil
import xml.etree.ElementTree as ET

import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn.inspect import GraphvizMissing, graph_view
from stadyn.inspect._html import initial_state, page_states

LEGACY = os.path.join(os.path.dirname(__file__), "..", "fixtures", "legacy")
SVG = "{http://www.w3.org/2000/svg}"
needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz's dot program is not installed (apt-get install graphviz; .ci/run installs "
           "it when it runs as root)")
LAYERS = ["conv1", *(f"conv{i}" for i in range(2, 12)), "conv_last", "fc", "classifier"]


def _clusters(svg_path: str) -> dict[str, ET.Element]:
    """The frames of an SVG picture by the label they show (⊕/⊖ marks dropped)."""
    root = ET.parse(svg_path).getroot()
    out = {}
    for g in root.iter(f"{SVG}g"):
        if "cluster" in (g.get("class") or "").split():
            label = "".join(t.text or "" for t in g.iter(f"{SVG}text")).lstrip("⊕⊖ ")
            out[label] = g
    return out


def _texts(svg_path: str) -> list[str]:
    return [t.text or "" for t in ET.parse(svg_path).getroot().iter(f"{SVG}text")]


@needs_dot
def test_tutorial_cnn_svg_has_a_cluster_per_parameter_scope(tutorial_cnn, tmp_path):
    path = str(tmp_path / "cnn.svg")
    sd.show(tutorial_cnn[0], path)
    clusters = _clusters(path)
    assert {"cnn", *LAYERS, "conv", "bn", "affine"} <= set(clusters)
    texts = _texts(path)
    assert texts.count("convolution") == 12 and texts.count("batch_normalization") == 12
    assert "W 64×1×3×3 · 576" in texts            # a parameter with its shape and size
    assert "W 8192×1024 · 8,388,608" in texts
    assert "16×512×4×4 f32" in texts             # the pooled tensor on its edge
    assert "x" in texts and "y" in texts


def test_view_scopes_nest_as_the_parameters_do(tutorial_cnn):
    view = graph_view(tutorial_cnn[0])
    cnn = view.scope("cnn")
    assert [c.name for c in cnn.children.values()] == LAYERS
    assert list(view.scope("cnn/conv1").children) == ["cnn/conv1/conv", "cnn/conv1/bn"]
    conv = view.boxes[view.scope("cnn/conv1/conv").boxes[0]]
    assert conv.label == "convolution" and conv.attrs == {"pad": (1, 1)}
    assert [(p.name, p.shape) for p in conv.params] == [("cnn/conv1/conv/W", (64, 1, 3, 3)),
                                                        ("cnn/conv1/conv/b", (64,))]
    with pytest.raises(sd.StadynError, match="no scope 'cnn/conv99'"):
        view.scope("cnn/conv99")


def test_single_op_scopes_become_headings(cntk_convnet):
    view = graph_view(cntk_convnet[0])
    top = [c.path for c in view.root.children.values()]
    assert top == ["convolution", "convolution_1", "convolution_2", "convolution_3", "dense",
                   "dense_1", "dense_2"]
    pools = [b for b in view.boxes.values() if b.label == "max_pooling"]
    assert [b.heading for b in pools] == ["maxpooling", "maxpooling_1"]


@needs_dot
def test_depth_draws_deeper_scopes_closed(tutorial_cnn, tmp_path):
    path = str(tmp_path / "cnn.svg")
    sd.show(tutorial_cnn[0], path, depth=1)
    assert set(_clusters(path)) == {"cnn", "classifier", "affine"}   # one op: never closed
    ids = {g.get("id") for g in ET.parse(path).getroot().iter(f"{SVG}g")}
    view = graph_view(tutorial_cnn[0])
    for name in LAYERS[:-1]:
        assert f"scope_{view.scope('cnn/' + name).index}_box" in ids


@needs_dot
def test_png_and_dot(tutorial_cnn, tmp_path):
    sd.show(tutorial_cnn[0], str(tmp_path / "cnn.png"))
    with open(tmp_path / "cnn.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    sd.show(tutorial_cnn[0], str(tmp_path / "cnn.gv"))
    source = (tmp_path / "cnn.gv").read_text(encoding="utf-8")
    # cnn, its 14 layers, conv + bn in each of the 12 conv layers, affine in fc and classifier
    assert source.startswith("digraph") and source.count("subgraph cluster_") == 1 + 14 + 24 + 2


def test_dot_source_needs_no_graphviz_program(tutorial_cnn, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))       # no dot on the path
    sd.show(tutorial_cnn[0], str(tmp_path / "cnn.dot"))
    assert "subgraph cluster_" in (tmp_path / "cnn.dot").read_text(encoding="utf-8")
    with pytest.raises(GraphvizMissing, match="apt-get install graphviz"):
        sd.show(tutorial_cnn[0], str(tmp_path / "cnn.svg"))
    assert not os.path.exists(tmp_path / "cnn.svg")


@needs_dot
def test_html_page_embeds_a_layout_per_state(tutorial_cnn, tmp_path):
    path = str(tmp_path / "cnn.html")
    sd.show(tutorial_cnn[0], path, title="tutorial CNN")
    text = open(path, encoding="utf-8").read()
    assert "<script src" not in text and "http" not in text.replace(
        "http://www.w3.org", "")                      # self-contained: nothing fetched
    data = json.loads(re.search(r'id="stadyn-graph-data">(.*?)</script>', text, re.S).group(1))
    view = graph_view(tutorial_cnn[0])
    cnn = view.scope("cnn")
    assert data["initial"] == str(cnn.index)           # the lone top scope opens at once
    n_templates = text.count('<template id="stadyn-state-')
    # first view, everything closed, everything open, and one per layer opened on its own
    assert n_templates == len(data["states"]) == 3 + 13
    for name in LAYERS[:-1]:
        index = view.scope("cnn/" + name).index
        assert data["open"][str(index)] == f"{cnn.index},{index}"
        assert data["open"][str(index)] in data["states"]
    assert "<title>tutorial CNN</title>" in text


@pytest.mark.usefixtures("fresh_parameters")
def test_small_networks_get_every_combination():
    from stadyn.models import digits_mlp
    view = graph_view(digits_mlp(sd.Variable((2, 64))))
    # mlp (2 ops or more) holds fc1 and fc2 (affine + relu each); out holds one op
    initial = initial_state(view)
    states, _, _ = page_states(view, initial)
    assert initial == {"mlp"}
    assert set(states) == {frozenset(), frozenset({"mlp"}), frozenset({"mlp", "mlp/fc1"}),
                           frozenset({"mlp", "mlp/fc2"}), frozenset({"mlp", "mlp/fc1", "mlp/fc2"})}


@needs_dot
def test_loaded_and_imported_models_keep_their_scopes(tutorial_cnn, tmp_path):
    y, _ = tutorial_cnn
    model = str(tmp_path / "cnn.stadyn")
    onnx_path = str(tmp_path / "cnn.onnx")
    sd.save(model, {"y": y})
    net = sd.load(model)
    sd.export_onnx(onnx_path, net)
    for what in (model, net, onnx_path, sd.import_onnx(onnx_path)):
        view = graph_view(what)
        assert [c.name for c in view.scope("cnn").children.values()] == LAYERS, what
        assert view.n_parameters == sum(p.size for p in net.parameters.values())
    out = str(tmp_path / "onnx.svg")
    sd.show(onnx_path, out)
    assert {"cnn", *LAYERS} <= set(_clusters(out))


@needs_dot
def test_legacy_files_are_drawn_with_their_own_op_names(tmp_path):
    out = str(tmp_path / "nnabla.svg")
    sd.show(os.path.join(LEGACY, "nnabla_deep_cnn.nnp"), out, network="runtime")
    assert {"cnn", *LAYERS} <= set(_clusters(out))
    assert "Convolution" in _texts(out)
    out = str(tmp_path / "cntk.svg")
    sd.show(os.path.join(LEGACY, "cntk_convnet_cifar10.dnn"), out)
    texts = _texts(out)
    assert texts.count("Convolution") == 4 and texts.count("Dense") == 3
    with pytest.raises(sd.StadynError, match="no network 'nope'.*training"):
        graph_view(os.path.join(LEGACY, "nnabla_deep_cnn.nnp"), network="nope")


def test_bad_requests_are_clear_errors(tutorial_cnn, tmp_path):
    y, _ = tutorial_cnn
    with pytest.raises(sd.StadynError, match=r"net\.jpg.*\.svg"):
        sd.show(y, str(tmp_path / "net.jpg"))
    with pytest.raises(sd.StadynError, match="depth"):
        sd.show(y, str(tmp_path / "net.dot"), depth=-1)
    with pytest.raises(sd.StadynError, match="got int"):
        sd.show(3, str(tmp_path / "net.dot"))
    with pytest.raises(sd.ModelFileError, match="no such file"):
        sd.show(str(tmp_path / "missing.onnx"), str(tmp_path / "net.dot"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        sd.show(y, str(tmp_path / "no" / "net.dot"))


@pytest.mark.usefixtures("fresh_parameters")
def test_several_outputs_and_shared_parameters():
    import stadyn.parametric_functions as PF
    x = sd.Variable((2, 3))
    with sd.parameter_scope("enc"):
        h = PF.affine(x, 3)
    with sd.parameter_scope("enc"):
        g = PF.affine(h, 3)            # W and b used twice: boxes of their own
    view = graph_view({"h": F.relu(h), "g": g})
    kinds = [(b.kind, b.label) for b in view.boxes.values()]
    assert ("parameter", "W") in kinds and ("parameter", "b") in kinds
    assert [b.label for b in view.boxes.values() if b.kind == "output"] == ["h", "g"]
    assert view.n_parameters == 12
    assert {str(e.tensor) for e in view.edges} == {"2×3 f32", "3×3 f32", "3 f32"}


def test_find_by_name(tutorial_cnn):
    from stadyn.inspect import find_by_name
    y, registry = tutorial_cnn
    (w,) = find_by_name(y, "cnn/conv2/conv/W")
    assert w is registry.get("cnn/conv2/conv/W")
    conv2 = find_by_name(y, "conv2")              # the ops made in scope cnn/conv2: the tanh
    assert [v.parent.spec.name for v in conv2] == ["tanh"]
    assert [v.parent.spec.name for v in find_by_name(y, "cnn/conv2/bn")] == [
        "batch_normalization"]
    assert find_by_name(y, "cnn/classifier/affine") == [y]
    assert find_by_name(y, "classifier") == []         # its op sits in classifier/affine
    assert find_by_name(y, "nothing") == []


@pytest.mark.usefixtures("fresh_parameters")
@needs_dot
def test_markup_in_scope_names_stays_text(tmp_path):
    import stadyn.parametric_functions as PF
    with sd.parameter_scope("a<!--<b>&\"c"):
        y = F.relu(PF.affine(sd.Variable((2, 3)), 2))
    path = str(tmp_path / "odd.html")
    sd.show(y, path)
    text = open(path, encoding="utf-8").read()
    blob = re.search(r'id="stadyn-graph-data">(.*?)</script>', text, re.S).group(1)
    assert "<" not in blob
    assert json.loads(blob)["scopes"][0]["path"] == 'a<!--<b>&"c'
    assert text.count("</script>") == 2          # the data's and the page script's own
    assert "<!--<b>" not in text
    sd.show(y, str(tmp_path / "odd.svg"))
    assert 'a<!--<b>&"c' in _clusters(str(tmp_path / "odd.svg"))
