"""``default_options_for`` (the 2017 betas' options for one kind of layer) takes each option as
``default_options`` does: an initializer not called (``init=C.uniform``) is kept for the layer
to refuse in CNTK 2.7's words with the hint naming it, as under ``default_options``
(``layers__an_initializer_not_called_is_refused``); it was turned into a Stadyn function first,
so the hint named ``native``, Stadyn's wrapper.  CNTK 2.7's words (it has no
``default_options_for``: its ``default_options``) come from the case
``default_options_for__an_initializer_not_called_is_refused``."""

import pytest

import compat_harness as H
import stadyn.compat.cntk as C

_CASE = "default_options_for__an_initializer_not_called_is_refused"


def _message(make) -> str:
    with pytest.raises(Exception) as caught:
        make()
    return str(caught.value).split("\n")[0]


@pytest.mark.parametrize("layer, key", [("Dense", "init"), ("Dense", "init_bias"),
                                        ("Embedding", "init")])
def test_the_refusal_is_default_options_one_with_its_hint(layer, key):
    kind = getattr(C.layers, layer)

    def under_options_for():
        with C.layers.default_options_for(kind, **{key: C.uniform}):
            return kind(3)

    def under_options():
        with C.layers.default_options(**{key: C.uniform}):
            return kind(3)

    got = _message(under_options_for)
    assert got == _message(under_options)
    results, _ = H.load_ref("cntk", _CASE)
    kind_name, words = results[f"{layer}, {key}=uniform"][1]
    assert got.startswith(words)            # CNTK 2.7's words, then Stadyn's hint
    assert "native" not in got
