"""A CNTK fixture folder's ``network.py`` (``tests/fixtures/<folder>/network.py``), loaded under
a module name of its own: several fixture folders have a ``network`` module, and two test files
importing theirs as ``network`` in one session would get the first one's."""

from __future__ import annotations

import importlib.util
import os

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")


def fixture_network(folder: str):
    """``tests/fixtures/<folder>/network.py`` as the module ``<folder>_network``."""
    spec = importlib.util.spec_from_file_location(
        f"{folder}_network", os.path.join(FIXTURES, folder, "network.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
