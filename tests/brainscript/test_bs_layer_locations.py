"""An error in a layer applied by ``Sequential`` names the user's line of that layer (where
``ConvolutionalLayer {...}`` is written), in a flat ``Sequential``, one inside another (by name
or inline) and an array of layers made by ``[k:1..n]`` -- not the line that applies the
outermost model."""

from __future__ import annotations

import pytest

import stadyn as sd
from stadyn import ConfigError
from stadyn.brainscript import StadynLibrary, build_network

_BAD = "ConvolutionalLayer {2, (3:3)}"      # on a vector: no image axes to convolve


@pytest.mark.parametrize("text, line", [
    (f"m = Sequential (\n DenseLayer {{4}} :\n {_BAD} )\n y = m (x)", 3),
    (f"inner = Sequential (\n DenseLayer {{4}} :\n {_BAD} )\n"
     "m = Sequential (DenseLayer {4} : inner)\n y = m (x)", 3),
    (f"m = Sequential (DenseLayer {{4}} :\n Sequential (DenseLayer {{4}} :\n {_BAD}))\n"
     "y = m (x)", 3),
    (f"L[k:1..2] = if k == 1 then DenseLayer {{4}}\n else {_BAD}\n m = Sequential (L)\n"
     "y = m (x)", 2),
    (f"y = Sequential (DenseLayer {{4}} : Sequential (\n {_BAD} : DenseLayer {{2}})) (x)", 2),
])
def test_an_error_in_a_layer_names_its_line(text, line):
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match="(?i)convolution") as e:   # CNTK 2.7's message
            build_network("{ x = Input {3}\n" + text + " }", StadynLibrary(), "net.bs")
    assert (e.value.path, e.value.line) == ("net.bs", line + 1)


@pytest.mark.parametrize("text, where", [
    # the library's PastValue refuses an initial state of other dimensions, at once
    ("y = Input {4}\n p = BS.Loop.Previous (x, initialState = y)", "net.bs:3:"),
    # a loop's delay whose dimensions nothing gives: found when the loop's input is defined,
    # after the library call has returned
    ("p = BS.Loop.Previous (s)\n s = if Length ((p : p)) > 0 then 5 else 6", "net.bs:2:"),
])
def test_an_error_inside_the_library_names_the_users_call_too(text, where):
    # cntk.exe adds each expression's location to an error on its way out
    # (BrainScriptEvaluator.cpp:876-880) and prints them as a call stack
    # (BrainScriptParser.cpp:99-150): the library's line, then the user's that called it
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError) as e:
            build_network("{ x = Input {3}\n " + text + " }", StadynLibrary(), "net.bs")
    assert e.value.path == "<library>"                       # where it went wrong
    lines = str(e.value).splitlines()
    assert lines[0].startswith("<library>:") and "PastValue" in lines[0]
    assert lines[-1].strip().startswith(f"called from {where}") and "Previous" in lines[-1]
    assert [loc.path for loc in e.value.call_stack] == ["<library>", "net.bs"]


@pytest.mark.parametrize("text, message", [
    # a delay's dimensions that an operation needs before the loop gives them
    ("h = BS.Loop.Previous (Splice ((h : x)))",
     "the dimensions of the delay at net.bs:2 are not known yet"),
    # ... or that nothing ever gives
    ("h = BS.Loop.Previous (h)", "the dimensions of the delay at net.bs:2 cannot be inferred"),
    # a loop that reads no sequence
    ("h = BS.Loop.Previous (z)\n z = 1 + h", "the loop through the delay at net.bs:2 reads no"),
    ("\n\n h = BS.Loop.PreviousOrDefault (h, defaultValue = 0)",
     "the dimensions of the delay at net.bs:4 cannot be inferred"),
    # a library record's member read after the call has returned: its thunk runs in the
    # user's call (251a701b named "the delay at <library>:107", no user line)
    ("p = BS.RNNs.PreviousHC (q)\n q = [ h = p.h ; c = p.c ]\n o = q.h",
     "the dimensions of the delay at net.bs:2 cannot be inferred"),
    # ... forced inside a user function called on a later line (the G ( call's line, 4, was
    # named before mendC31): the delay is still PreviousHC's, line 3
    ("G (a) = Splice ((a : x))\n s = BS.RNNs.PreviousHC (st)\n st = [ h = G (\n s.h) ; "
     "c = s.c ]\n y = st.h", "the dimensions of the delay at net.bs:3 are not known yet"),
])
def test_a_delay_made_inside_the_library_is_placed_at_the_users_call(text, message):
    # BS.Loop.Previous is CNTK.core.bs's PastValue (0, x, ...) (CNTK.core.bs:977): the
    # delay the message is about is the one the user's line asked for, not sequences.bs's
    # (df50ddc6 named "the delay at <library>:96")
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError) as e:
            build_network("{ x = Input {3}\n " + text + " }", StadynLibrary(), "net.bs")
    assert message in str(e.value)
    assert "delay at <library>" not in str(e.value)


def test_a_library_records_member_forced_later_names_the_users_call():
    # BS.RNNs.PreviousHC (CNTK.core.bs) returns a record whose h and c are read only when
    # q.h is: the error is the library's line, then the user's call that made the record
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError) as e:
            build_network("{ x = Input {3}\n p = BS.RNNs.PreviousHC (q)\n"
                          " q = [ h = p.h ; c = p.c ]\n o = q.h }", StadynLibrary(), "net.bs")
    lines = str(e.value).splitlines()
    assert lines[0].startswith("<library>:") and "delay at net.bs:2" in lines[0]
    assert lines[-1].strip().startswith("called from net.bs:2:") and "PreviousHC" in lines[-1]
