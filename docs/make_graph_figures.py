"""Draw the pictures of docs/seeing-your-network.md and print the summaries it shows.

    python docs/make_graph_figures.py       # writes docs/img/graph_*.png, prints the tables

Every picture is Stadyn's own output: ``sd.show`` on the reference models (Graphviz's ``dot``
lays them out), and a screenshot of the HTML page in headless Chromium after a click, taken
with the driver the tests use (tests/inspect/chromium.py).  The PNGs are reduced to a 64-colour
palette to keep the repository small.
"""

from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "inspect"))

from PIL import Image  # noqa: E402

import stadyn as sd  # noqa: E402
from stadyn.inspect import graph_view  # noqa: E402
from stadyn.models import cifar_convnet, digits_cnn  # noqa: E402

IMG = os.path.join(HERE, "img")


def shrink(path: str) -> None:
    """Rewrite a PNG with a 64-colour palette (pictures of boxes and text lose nothing visible)."""
    image = Image.open(path).convert("RGB")
    image.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def main() -> None:
    from chromium import Chromium

    with sd.parameter_registry(sd.ParameterRegistry()):
        cnn = digits_cnn(sd.Variable((16, 1, 8, 8)))
        print(sd.summary(cnn, depth=2), end="\n\n")
        with tempfile.TemporaryDirectory() as tmp:
            page_path = os.path.join(tmp, "tutorial_cnn.html")
            sd.show(cnn, page_path, title="NNabla tutorial: deep CNN (digits)")
            conv2 = graph_view(cnn).scope("cnn/conv2").index
            with Chromium(width=1000, height=820) as browser:
                page = browser.open("file://" + page_path)
                page.click_element(f"#scope_{conv2}_box")
                page.evaluate("window.scrollTo(0, 0)")
                shot = os.path.join(IMG, "graph_tutorial_cnn_page.png")
                page.screenshot(shot, 1000, 820)
        shrink(shot)
    with sd.parameter_registry(sd.ParameterRegistry()):
        convnet = cifar_convnet(sd.Variable((16, 3, 32, 32)))
        print(sd.summary(convnet))
        picture = os.path.join(IMG, "graph_cntk_convnet.png")
        sd.show(convnet, picture, title="CNTK ConvNet_CIFAR10_DataAug")
        shrink(picture)
    for name in ("graph_tutorial_cnn_page.png", "graph_cntk_convnet.png"):
        path = os.path.join(IMG, name)
        print(f"{path}: {os.path.getsize(path):,} bytes")


if __name__ == "__main__":
    main()
