"""The registry's index of scopes (``ParameterRegistry._below``) and claim's notes of taken
names: a claim reads them instead of every parameter, so they must drop what is freed.

The expectation is claim's definition (docstring): the first of ``prefix``, ``prefix_1``, ...
neither claimed before nor holding a parameter below it, here recomputed by scanning every
parameter (``_scan_claim``, the registry's way before the index), and hand-counted names.
"""

import random

import pytest

import stadyn as sd
from stadyn.parametric import ParameterRegistry


def _scan_claim(claimed: set, names: list, prefix: str) -> str:
    k = 0
    while True:
        candidate = f"{prefix}_{k}" if k else prefix
        head = candidate.rstrip("/") + "/"
        below = any(n.startswith(head) for n in names) if candidate.rstrip("/") else names
        if candidate not in claimed and not below:
            return candidate
        k += 1


def test_a_freed_name_is_claimed_again():
    reg = ParameterRegistry()
    reg.set("a/W", sd.Variable((1,)))
    assert [reg.claim("a"), reg.claim("a")] == ["a_1", "a_2"]
    reg.pop("a/W")                          # nothing below "a" now
    assert reg.claim("a") == "a"
    reg.remove("a_1")                       # a claimed name freed
    assert reg.claim("a") == "a_1"
    reg.set("b/c/W", sd.Variable((1,)))
    reg.rename("b/c/W", "d/W")
    assert [reg.claim("b"), reg.claim("b/c"), reg.claim("d")] == ["b", "b/c", "d_1"]
    reg.set("e/W", sd.Variable((1,)))
    reg.remove("e")
    assert reg.claim("e") == "e"


def test_claims_match_a_scan_of_every_parameter():
    rng = random.Random(3)
    reg, claimed = ParameterRegistry(), set()
    for step in range(400):
        op = rng.choice(["set", "set", "claim", "claim", "pop", "rename", "remove"])
        prefix = rng.choice(["x", "x/y", "z", "x_1"])
        if op == "set":
            reg.set(f"{prefix}_{rng.randrange(3)}/W" if rng.random() < .5 else f"{prefix}/W",
                    sd.Variable((1,)))
        elif op == "claim":
            want = _scan_claim(claimed, list(reg), prefix)
            assert reg.claim(prefix) == want, step
            claimed.add(want)
        elif op == "pop" and len(reg):
            reg.pop(rng.choice(list(reg)))
        elif op == "rename" and len(reg):
            old, new = rng.choice(list(reg)), f"{prefix}/R{step}"
            reg.rename(old, new)
        elif op == "remove":
            reg.remove(prefix)
            head = prefix + "/"
            claimed = {c for c in claimed if not (c == prefix or c.startswith(head))}


def test_renaming_at_once_equals_renaming_one_by_one():
    def made():
        reg = ParameterRegistry()
        for k in "abcde":
            reg.set(f"s/{k}", sd.Variable((1,)))
        return reg
    pairs = [("s/b", "t/b"), ("s/d", "s/b"), ("t/b", "u"), ("s/a", "s/a")]
    one_by_one, at_once = made(), made()
    for old, new in pairs:
        one_by_one.rename(old, new)
    at_once.rename_all(pairs)
    assert list(at_once) == list(one_by_one) == ["s/a", "u", "s/c", "s/b", "s/e"]
    assert [v.name for _, v in at_once.items()] == list(at_once)
    assert [at_once.claim("t"), at_once.claim("s/b")] == ["t", "s/b"]
    with pytest.raises(KeyError):
        at_once.rename_all([("s/c", "v"), ("s/e", "u")])      # "u" taken: nothing renamed
    assert list(at_once) == ["s/a", "u", "s/c", "s/b", "s/e"]


def test_a_rename_onto_a_path_freed_by_an_earlier_pair_keeps_it_indexed():
    # rename_all([("s/a/W", "x/W"), ("s/c/W", "s/a/W")]) with s/c/W first in the order: the
    # index followed the renames in the order's sequence, so s/c/W's move noted s/a/W and
    # s/a/W's move then dropped it: claim("s/a") gave "s/a" while s/a/W held a parameter
    # (a new layer there would take that parameter); a scan of every parameter says "s/a_1"
    reg = ParameterRegistry()
    reg.set("s/c/W", sd.Variable((1,)))
    reg.set("s/a/W", sd.Variable((1,)))
    reg.rename_all([("s/a/W", "x/W"), ("s/c/W", "s/a/W")])
    assert list(reg) == ["s/a/W", "x/W"]
    claimed: set = set()
    for prefix, want in [("s/a", "s/a_1"), ("s", "s_1"), ("x", "x_1")]:
        assert _scan_claim(claimed, list(reg), prefix) == want
        assert reg.claim(prefix) == want
        claimed.add(want)
