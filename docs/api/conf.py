"""Sphinx configuration of the API reference (``make docs``; built with ``-W`` by the tests)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "src"))
sys.path.insert(0, HERE)

import apigen  # noqa: E402

import stadyn  # noqa: E402

project = "Stadyn"
author = "The Stadyn authors"
copyright = "the Stadyn authors, Apache-2.0"
release = version = stadyn.__version__

# suffix_lookup: the Python domain's fuzzy type lookups through an index (same output, ~10 s
# less CPU a build: suffix_lookup.py)
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "suffix_lookup"]
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_title = f"Stadyn {release} API reference"

apigen.generate(os.path.join(HERE, "generated"))
