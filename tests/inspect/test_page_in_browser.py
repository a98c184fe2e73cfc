"""The HTML page ``sd.show`` writes, in a real headless Chromium: it loads without script errors,
shows the tutorial CNN's layers as closed groups, opens one on a mouse click, closes it again,
and opens everything from the toolbar."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

import stadyn as sd
from stadyn.inspect import graph_view

sys.path.insert(0, os.path.dirname(__file__))
from chromium import Chromium, find_chromium  # noqa: E402

pytestmark = [
    pytest.mark.skipif(shutil.which("dot") is None,
                       reason="Graphviz's dot program is not installed (apt-get install "
                              "graphviz; .ci/run installs it when it runs as root)"),
    pytest.mark.skipif(find_chromium() is None,
                       reason="Chromium is not installed (apt-get install chromium; .ci/run "
                              "installs it when it runs as root)"),
]

LAYERS = ["conv1", *(f"conv{i}" for i in range(2, 12)), "conv_last", "fc", "classifier"]
CLUSTER_LABELS = ("Array.from(document.querySelectorAll('#stadyn-view g.cluster'))"
                  ".map(g => g.querySelector('text').textContent)")
CLOSED_BOXES = ("Array.from(document.querySelectorAll('#stadyn-view g.node[id$=\"_box\"]'))"
                ".map(g => g.querySelector('text').textContent)")


@pytest.fixture(scope="module")
def browser():
    with Chromium() as b:
        yield b


def _errors(browser) -> list:
    return [e for e in browser.events
            if e.get("method") == "Runtime.exceptionThrown"
            or (e.get("method") == "Runtime.consoleAPICalled"
                and e["params"].get("type") == "error")]


def test_page_loads_shows_clusters_and_opens_one_on_a_click(tutorial_cnn, tmp_path, browser):
    path = str(tmp_path / "cnn.html")
    sd.show(tutorial_cnn[0], path)
    view = graph_view(tutorial_cnn[0])
    cnn, conv1 = view.scope("cnn").index, view.scope("cnn/conv1").index

    page = browser.open("file://" + path)
    assert page.evaluate("document.body.dataset.state") == str(cnn)
    assert page.evaluate(CLUSTER_LABELS) == ["⊖ cnn", "classifier", "affine"]
    closed = page.evaluate(CLOSED_BOXES)
    assert closed == [f"⊕ {name}" for name in LAYERS[:-1]]      # 13 layers, each one box
    assert page.evaluate("document.getElementById('stadyn-status').textContent") == \
        "1 of 14 groups open."

    page.click_element(f"#scope_{conv1}_box")                   # a real mouse click
    assert page.evaluate("document.body.dataset.state") == f"{cnn},{conv1}"
    labels = page.evaluate(CLUSTER_LABELS)
    assert labels[:4] == ["⊖ cnn", "⊖ conv1", "conv", "bn"]
    assert len(page.evaluate(CLOSED_BOXES)) == 12
    texts = page.evaluate("Array.from(document.querySelectorAll('#stadyn-view text'))"
                          ".map(t => t.textContent)")
    assert "convolution" in texts and "W 64×1×3×3 · 576" in texts

    page.click_element(f"#scope_{conv1} text")                # the open frame's title
    assert page.evaluate("document.body.dataset.state") == str(cnn)
    assert len(page.evaluate(CLOSED_BOXES)) == 13

    page.click_element("#stadyn-open-all")
    assert page.evaluate(CLOSED_BOXES) == []
    assert len(page.evaluate(CLUSTER_LABELS)) == 1 + 14 + 24 + 2
    page.click_element("#stadyn-close-all")
    assert page.evaluate(CLOSED_BOXES) == ["⊕ cnn"]
    assert _errors(browser) == []


def test_a_second_layer_opened_shows_alone_when_the_pair_was_not_laid_out(cntk_convnet,
                                                                          tmp_path, browser):
    # 6 closable layers at the top (dense_2 holds one op): 64 combinations, more than the page
    # lays out, so it holds each layer opened on its own (see stadyn/inspect/_html.py)
    path = str(tmp_path / "convnet.html")
    sd.show(cntk_convnet[0], path)
    view = graph_view(cntk_convnet[0])
    first, second = view.scope("convolution").index, view.scope("dense").index
    page = browser.open("file://" + path)
    assert page.evaluate("document.body.dataset.state") == ""
    assert len(page.evaluate(CLOSED_BOXES)) == 6
    page.click_element(f"#scope_{first}_box")
    assert page.evaluate("document.body.dataset.state") == str(first)
    page.click_element(f"#scope_{second}_box")
    assert page.evaluate("document.body.dataset.state") == str(second)
    assert page.evaluate(CLUSTER_LABELS) == ["⊖ dense", "dense_2"]   # dense_2: always open
    assert _errors(browser) == []
