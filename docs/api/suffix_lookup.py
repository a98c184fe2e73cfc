"""Sphinx extension: the Python domain's "fuzzy" cross-reference lookup through an index.

A type in a docstring's ``Args:`` (napoleon makes it a ``:type:`` field) is a cross-reference
that Sphinx resolves in its "refspecific" mode: when neither ``module.class.name``,
``module.name`` nor ``name`` is a documented object -- every ``int``, ``str``, ``np.ndarray``
-- it scans every documented object for a name ending in ``.name``
(``PythonDomain.find_obj``).  This reference has ~17,000 such lookups over ~10,000 objects:
about 40 % of a build's CPU (``make docs``, ``tests/docs/test_api_reference.py``).

Here that scan reads a list of the objects whose last dotted part is ``name``'s, kept in the
domain's order, so the lookup gives the same matches in the same order; the exact lookups and
the other search mode are Sphinx's own.  The index is rebuilt when the set of objects changes
(its size and its last name).

Example (``conf.py``)::

    extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "suffix_lookup"]
"""

from __future__ import annotations

from sphinx.domains.python import PythonDomain

_sphinx_find_obj = PythonDomain.find_obj


def _last_part(name: str) -> str:
    return name.rpartition(".")[2]


def _by_last_part(domain) -> dict[str, list[str]]:
    objects = domain.objects
    key = (len(objects), next(reversed(objects), None))
    cached = getattr(domain, "_stadyn_by_last_part", None)
    if cached is None or cached[0] != key:
        index: dict[str, list[str]] = {}
        for name in objects:
            index.setdefault(_last_part(name), []).append(name)
        cached = (key, index)
        domain._stadyn_by_last_part = cached
    return cached[1]


def find_obj(self, env, modname, classname, name, type, searchmode=0):
    """``PythonDomain.find_obj`` with searchmode 1's scan over all objects replaced by the
    index's few candidates (the same matches, in the same order)."""
    bare = name.removesuffix("()")
    if searchmode != 1 or not bare:
        return _sphinx_find_obj(self, env, modname, classname, name, type, searchmode)
    objtypes = list(self.object_types) if type is None else self.objtypes_for_role(type)
    if objtypes is None:
        return []
    objects = self.objects
    candidates = [f"{modname}.{classname}.{bare}"] if modname and classname else []
    candidates += [f"{modname}.{bare}"] if modname else []
    for full in candidates + [bare]:         # Sphinx's exact lookups, in its order
        if full in objects and objects[full].objtype in objtypes:
            return [(full, objects[full])]
    suffix = "." + bare
    return [(full, objects[full]) for full in _by_last_part(self).get(_last_part(bare), ())
            if full.endswith(suffix) and objects[full].objtype in objtypes]


def setup(app):
    PythonDomain.find_obj = find_obj
    return {"parallel_read_safe": True, "parallel_write_safe": True}
