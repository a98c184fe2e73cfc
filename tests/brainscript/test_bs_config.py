"""The outer .cntk config language: items, blocks, arrays, $var$, include, overrides, errors."""

from __future__ import annotations

import math

import pytest

from stadyn._errors import ConfigError
from stadyn.brainscript import (
    BrainScriptSource,
    ConfigKeyError,
    ConfigList,
    ConfigRecord,
    ConfigString,
    command_config,
    command_names,
    expand_repeats,
    load_config,
    parse_config,
    per_epoch,
    reader_config,
    run_config,
    sgd_config,
)


def test_items_separators_and_comments():
    cfg = parse_config('a = 1\nb = "two" ; c = three, d = 4 # comment\n# whole line\n  e=5')
    assert dict(cfg) == {"a": "1", "b": "two", "c": "three", "d": "4", "e": "5"}
    assert isinstance(cfg["a"], ConfigString)


def test_hash_inside_a_word_is_text():
    assert parse_config("color = a#b")["color"] == "a#b"


def test_bare_key_means_true():
    cfg = parse_config("verbose\nx = 1")
    assert cfg.get_bool("verbose") is True


def test_keys_are_case_insensitive_and_keep_first_spelling():
    cfg = parse_config("modelPath = a\nMODELPATH = b")
    assert cfg["modelpath"] == "b" and list(cfg) == ["modelPath"]
    assert "ModelPath" in cfg and "other" not in cfg


def test_blocks_in_braces_and_brackets():
    cfg = parse_config("Train = [ action = train\n SGD = { maxEpochs = 2 } ]\n"
                       "Test{ action = test }")
    assert isinstance(cfg["train"], ConfigRecord)
    assert cfg["Train"]["SGD"].get_int("maxEpochs") == 2
    assert cfg["Test"]["action"] == "test"
    assert cfg["Train"]["SGD"].path == "Train.SGD"


def test_arrays_and_repeats():
    cfg = parse_config('lr = 0.0015625*20:0.00046875*20:0.000015625\ncmd = A:B\nq = "x:y"\n'
                       't = ( {a = 1} :\n {a = 2} )\none = ({ a = 3 })')
    assert isinstance(cfg["cmd"], ConfigList) and list(cfg["cmd"]) == ["A", "B"]
    assert cfg["q"] == "x:y"  # quoted: one value
    lr = cfg.get_floats("lr")
    assert len(lr) == 41 and lr[:20] == [0.0015625] * 20 and lr[20] == 0.00046875
    assert lr[-1] == 0.000015625
    assert [r["a"] for r in cfg["t"]] == ["1", "2"]
    assert len(cfg["one"]) == 1 and cfg["one"][0].get_int("a") == 3
    assert cfg["lr"].text == "0.0015625*20:0.00046875*20:0.000015625"


def test_expand_repeats():
    assert expand_repeats(["1*2", "3"]) == [1.0, 1.0, 3.0]
    assert expand_repeats(["0*5:1024"]) == [0.0] * 5 + [1024.0]
    with pytest.raises(ValueError):
        expand_repeats(["1*0"])
    with pytest.raises(ValueError):
        expand_repeats(["x"])
    assert per_epoch([1, 2, 3], 0) == 1 and per_epoch([1, 2, 3], 99) == 3


def test_typed_getters_and_their_errors():
    cfg = parse_config("n = 64\nf = 0.5\nb = false\nmb = 64:128\nbad = abc\nblk = { x = 1 }",
                       "c.cntk")
    assert cfg.get_int("n") == 64 and cfg.get_float("f") == 0.5 and cfg.get_bool("b") is False
    assert cfg.get_ints("mb") == [64, 128] and cfg.get_ints("n") == [64]
    assert cfg.get_int("missing", 7) == 7
    with pytest.raises(ConfigError) as info:
        cfg.get_int("bad")
    assert "'bad' must be an integer, got 'abc'" in info.value.reason
    assert (info.value.path, info.value.line, info.value.column) == ("c.cntk", 5, 7)
    with pytest.raises(ConfigError, match="must be an integer, got an array"):
        cfg.get_int("mb")
    with pytest.raises(ConfigError, match="must be a number, got a block"):
        cfg.get_float("blk")
    with pytest.raises(ConfigError, match="must be a boolean"):
        cfg.get_bool("n")


def test_missing_key_is_named():
    cfg = parse_config("Train = { x = 1 }", "c.cntk")
    with pytest.raises(ConfigKeyError) as info:
        cfg["Train"]["SGD"]
    assert "missing key 'SGD' in block 'Train'" in str(info.value)
    assert info.value.path == "c.cntk" and info.value.line == 1
    assert isinstance(info.value, KeyError) and isinstance(info.value, ConfigError)


def test_variables_resolve_from_enclosing_scopes_case_insensitively():
    text = ('rootDir = ".." ; dataDir = "$rootDir$/data"\n'
            'T = { file = "$DataDir$/x.txt" ; inner = { p = "$file$+$rootdir$" } ; money = "5$" }')
    cfg = parse_config(text)
    assert cfg["T"]["file"] == "../data/x.txt"
    assert cfg["T"]["inner"]["p"] == "../data/x.txt+.."
    assert cfg["T"]["money"] == "5$"  # not a variable


def test_variable_errors():
    cfg = parse_config('a = "$nope$"\nb = "$c$"\nc = "$b$"\nd = "$blk$"\nblk = { }', "v.cntk")
    with pytest.raises(ConfigError) as info:
        cfg["a"]
    assert "unknown variable '$nope$'" in info.value.reason and info.value.line == 1
    with pytest.raises(ConfigError, match="circular variable reference"):
        cfg["b"]
    with pytest.raises(ConfigError, match="names a block"):
        cfg["d"]


def test_a_variable_in_its_own_definition_reads_the_enclosing_blocks():
    # CNTK's ResNet*_ImageNet1K.cntk: modelPath = "$modelPath$" inside a command block
    cfg = parse_config('modelPath = "/m/ResNet"\nT = { modelPath = "$modelPath$" ; '
                       'U = { modelPath = "$modelPath$.1" } }\nx = "$x$"')
    assert cfg["T"]["modelPath"] == "/m/ResNet"
    assert cfg["T"]["U"]["modelPath"] == "/m/ResNet.1"
    with pytest.raises(ConfigError, match=r"circular variable reference '\$x\$'"):
        cfg["x"]


def test_an_unquoted_variable_may_name_a_block():
    # CNTK's G2P.cntk: input = $cntkReaderInputDef$ (CNTK substituted the block's text)
    cfg = parse_config('dim = 7\ndef = { raw = { alias = "S0" ; dim = $dim$ } }\n'
                       'R = { input = $def$ ; quoted = "$def$" }', "v.cntk")
    assert cfg["R"]["input"]["raw"]["dim"] == "7"
    assert cfg["R"].get_record("input")["raw"]["alias"] == "S0"
    with pytest.raises(ConfigError, match="names a block"):
        cfg["R"]["quoted"]
    # inside an array of blocks, as G2P.cntk's deserializers = ({ ... input = $def$ })
    cfg = parse_config('def = { raw = { dim = 3 } }\nR = { d = ({ type = "T" ; input = $def$ }) }')
    assert cfg["R"]["d"][0]["input"]["raw"]["dim"] == "3"


def test_windows_infinity_reads_as_infinity():
    # CNTK's configs write clippingThresholdPerSample = 1#INF (CNTK's ConfigValue read '#inf')
    cfg = parse_config("T = { SGD = { clippingThresholdPerSample = 1#INF ; lr = 1#inf } }")
    assert cfg["T"]["SGD"].get_float("clippingThresholdPerSample") == math.inf
    assert cfg["T"]["SGD"].get_float("lr") == math.inf


def test_a_renamed_network_builder_is_not_read_as_config():
    # CNTK's Speech/QuickE2E: a switched-off BrainScriptNetworkBuilder_plain = [ // ... ]
    cfg = parse_config("T = { BrainScriptNetworkBuilder_plain = [ // note: a BrainScript comment\n"
                       "  z = x ] ; a = 1 }")
    assert cfg["T"]["a"] == "1"
    assert "// note" in cfg["T"]["BrainScriptNetworkBuilder_plain"].text


def test_command_line_overrides_win_and_reach_variables():
    text = ('rootDir = ".." ; dataDir = "$rootDir$/data"\n'
            'Train = { SGD = { maxEpochs = 80 ; mb = 64 } }')
    cfg = parse_config(text, overrides=["rootDir=/mnt", "Train.SGD.maxEpochs=2"])
    assert cfg["dataDir"] == "/mnt/data"
    assert cfg["Train"]["SGD"].get_int("maxEpochs") == 2 and cfg["Train"]["SGD"]["mb"] == "64"
    cfg = parse_config(text, overrides=["Train=[SGD=[maxEpochs=3]]", "new.key=1"])
    assert cfg["Train"]["SGD"].get_int("maxEpochs") == 3 and cfg["Train"]["SGD"]["mb"] == "64"
    assert cfg["new"]["key"] == "1"
    assert cfg["Train"]["SGD"].location("maxEpochs").path == "<command line 1>"


def test_later_block_merges_into_earlier():
    cfg = parse_config("T = { a = 1 ; b = 2 }\nT = { b = 3 ; c = 4 }\nx = { y = 1 }\nx = 5")
    assert dict(cfg["T"]) == {"a": "1", "b": "3", "c": "4"}
    assert cfg["x"] == "5"


def test_lookup_inherits_from_enclosing_blocks():
    cfg = parse_config("modelPath = m\nT = { S = { x = 1 } }")
    assert cfg["T"]["S"].lookup("modelPath") == "m"
    assert cfg["T"]["S"].get_str("modelPath", None, inherited=True) == "m"
    assert cfg["T"]["S"].get_str("modelPath", None) is None
    with pytest.raises(ConfigKeyError):
        cfg["T"].lookup("nothing")


def test_include_relative_to_including_file(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "common.cntk").write_text('dataDir = "/data"\nshared = { a = 1 }\n')
    (tmp_path / "conf" / "main.cntk").write_text('include "common.cntk"\n'
                                                 'T = { f = "$dataDir$/x" }\n'
                                                 'shared = { b = 2 }\n')
    cfg = load_config(tmp_path / "conf" / "main.cntk")
    assert cfg["T"]["f"] == "/data/x" and dict(cfg["shared"]) == {"a": "1", "b": "2"}
    assert cfg.location("dataDir").path.endswith("common.cntk")
    (tmp_path / "conf" / "loop.cntk").write_text("include = loop.cntk\n")
    with pytest.raises(ConfigError, match="include cycle"):
        load_config(tmp_path / "conf" / "loop.cntk")
    with pytest.raises(ConfigError, match="file not found"):
        parse_config('include "nowhere.cntk"')


def test_several_files_later_wins(tmp_path):
    (tmp_path / "a.cntk").write_text("x = 1\ny = 1\n")
    (tmp_path / "b.cntk").write_text("y = 2\n")
    cfg = load_config([tmp_path / "a.cntk", tmp_path / "b.cntk"])
    assert (cfg["x"], cfg["y"]) == ("1", "2")


def test_brainscript_block_is_kept_as_located_source():
    text = ('dim = 7\nT = {\n  BrainScriptNetworkBuilder = {\n'
            '    x = $dim$ ; f(a) = [ b = "s" ]\n  }\n}')
    src = parse_config(text, "n.cntk")["T"]["BrainScriptNetworkBuilder"]
    assert isinstance(src, BrainScriptSource)
    assert (src.path, src.line, src.column) == ("n.cntk", 3, 31)
    assert src.text.startswith("{\n    x = 7 ;")  # $dim$ substituted, as CNTK did
    assert [m.name for m in src.parse().members] == ["x", "f"]


def test_brainscript_errors_point_into_the_cntk_file():
    text = "T = {\n  BrainScriptNetworkBuilder = {\n    x = 1 +\n    y = 2\n  }\n}"
    src = parse_config(text, "n.cntk")["T"]["BrainScriptNetworkBuilder"]
    with pytest.raises(ConfigError) as info:
        src.parse()
    assert (info.value.path, info.value.line, info.value.column) == ("n.cntk", 4, 7)
    assert "unexpected '='" in info.value.reason


@pytest.mark.parametrize("text, line, column, words", [
    ("a = {\n b = 1\n", 3, 1, ["end of file", "'}' to close the '{' at 1:5"]),
    ("a = { b = 1 )", 1, 13, ["')'", "'}' to close the '{' at 1:5"]),
    ("T = {\n  B = { x = (1\n }\n}", 3, 2, ["'}'", "')' to close the '(' at 2:13"]),
    ("a = 1 }", 1, 7, ["'}'", "no bracket is open"]),
    ('a = "open', 1, 5, ["without closing quotation mark"]),
    ("= 1", 1, 1, ["expected a key", "'='"]),
    ("a b = 1", 1, 3, ["expected '=' after key 'a'", "'b'"]),
    ("a =", 1, 3, ["no value given for 'a'"]),
    ("a = x = y", 1, 7, ["unexpected '='"]),
    ("a = :", 1, 5, ["':' array without items"]),
    ("9a = 1", 1, 1, ["invalid key '9a'"]),
    ("{ x = 1 }", 1, 1, ["expected a key"]),
])
def test_config_syntax_errors_are_located(text, line, column, words):
    with pytest.raises(ConfigError) as info:
        parse_config(text, "bad.cntk")
    e = info.value
    assert (e.path, e.line, e.column) == ("bad.cntk", line, column), str(e)
    for w in words:
        assert w in e.reason, (w, str(e))


def test_command_and_blocks():
    text = """
    command = Train:Eval:Out
    modelPath = "m/model" ; deviceId = -1 ; precision = "double" ; traceLevel = 2 ; stderr = "log"
    Train = { action = "train"
        BrainScriptNetworkBuilder = { z = 1 }
        SGD = { maxEpochs = 3 ; learningRatesPerMB = 0.1 ; momentumPerMB = 0.9*2:0 ; myKey = 5 }
    }
    Eval = { action = Eval ; minibatchSize = 512 ; evalNodeNames = errs:top5Errs
             modelPath = "other" }
    Out = { action = write ; outputNodeNames = z ; outputPath = "out.txt"
            format = { type = real } }
    """
    run = run_config(parse_config(text))
    assert [c.name for c in run.commands] == ["Train", "Eval", "Out"]
    out = run.commands[2]
    assert (out.action, out.output_node_names, out.output_path) == ("write", ("z",), "out.txt")
    assert out.extra["format"]["type"] == "real"
    assert (run.model_path, run.device_id, run.precision, run.trace_level, run.stderr) == \
        ("m/model", -1, "double", 2, "log")
    train, ev, _ = run.commands
    assert train.action == "train" and ev.action == "eval"
    assert train.model_path == "m/model" and ev.model_path == "other"
    assert train.network.parse().members[0].name == "z"
    assert train.sgd.momentum_per_mb == (0.9, 0.9, 0.0) and train.sgd.extra == {"myKey": "5"}
    assert ev.minibatch_size == (512,) and ev.eval_node_names == ("errs", "top5Errs")
    assert run.command("eval") is ev


def test_command_errors():
    with pytest.raises(ConfigError, match="no 'command'"):
        run_config(parse_config("x = 1"))
    with pytest.raises(ConfigError) as info:
        run_config(parse_config("command = Trian\nTrain = { action = train }", "c.cntk"))
    assert "command 'Trian' names no block" in info.value.reason and info.value.line == 1
    with pytest.raises(ConfigError, match="has no 'action'"):
        run_config(parse_config("command = T\nT = { x = 1 }"))
    with pytest.raises(ConfigError, match="deviceId must be"):
        run_config(parse_config("command = T\nT = { action = test ; deviceId = gpu }"))
    assert command_names(parse_config('command = "A:B"')) == ["A", "B"]


def test_sgd_defaults_and_checks():
    sgd = sgd_config(parse_config("S = { maxEpochs = 1 ; learningRatesPerSample = 0.01 }")["S"])
    assert sgd.minibatch_size == (256,) and sgd.epoch_size is None and sgd.dropout_rate == (0.0,)
    assert sgd.num_mbs_to_show_result == 10 and sgd.first_mbs_to_show_result == 0
    assert sgd.gradient_clipping_with_truncation is True
    assert sgd.clipping_threshold_per_sample == math.inf
    assert sgd.momentum_per_mb is None and sgd.l2_reg_weight == 0.0 and sgd.l1_reg_weight == 0.0
    full = sgd_config(parse_config(
        "S = { maxEpochs = 4 ; epochSize = 100 ; minibatchSize = 32:64 ; learningRatesPerMB = 1 ;"
        " momentumPerSample = 0.99 ; L1RegWeight = 0.1 ; firstMBsToShowResult = 5 ;"
        " gradientClippingWithTruncation = false ; clippingThresholdPerSample = 2.5 }")["S"])
    assert full.epoch_size == 100 and full.minibatch_size == (32, 64)
    assert full.momentum_per_sample == (0.99,)
    assert (full.l1_reg_weight, full.first_mbs_to_show_result) == (0.1, 5)
    assert full.gradient_clipping_with_truncation is False
    assert full.clipping_threshold_per_sample == 2.5
    for bad, words in [
        ("maxEpochs = 1", "needs learningRatesPerSample or learningRatesPerMB"),
        ("maxEpochs = 1 ; learningRatesPerSample = 1 ; learningRatesPerMB = 1", "both"),
        ("maxEpochs = 1 ; learningRatesPerMB = 1 ; momentumPerMB = 1.5", "[0, 1)"),
        ("maxEpochs = 1 ; learningRatesPerMB = 1 ; momentumPerMB = 0.5 ; "
         "momentumAsTimeConstant = 5", "both"),
        ("maxEpochs = 1 ; learningRatesPerMB = 1 ; dropoutRate = 1", "[0, 1)"),
        ("learningRatesPerMB = 1", "missing key 'maxEpochs'"),
        ("maxEpochs = 1 ; learningRatesPerMB = 1*x", "vector of numbers"),
    ]:
        with pytest.raises(ConfigError, match=None) as info:
            sgd_config(parse_config(f"S = {{ {bad} }}")["S"])
        assert words in str(info.value), (bad, str(info.value))


def test_reader_blocks():
    text = """r = {
        verbosity = 2 ; randomize = false ; extraKey = 3
        deserializers = ({ type = "ImageDeserializer" ; module = "ImageReader" ; file = "map.txt"
            input = { img = { transforms = ( { type = "Crop" ; sideRatio = 0.5:0.9
                                               cropType = "Center" } :
                                             { type = "Color" ; brightnessRadius = 0.2 } ) }
                      lbl = { labelDim = 7 } } } :
            { type = "CNTKTextFormatDeserializer" ; file = "x.ctf"
              input = { f = { dim = 3 ; format = "sparse" ; alias = "F" } } })
    }"""
    r = reader_config(parse_config(text)["r"])
    assert (r.verbosity, r.randomize, r.reader_type, r.extra) == (2, False, None, {"extraKey": "3"})
    img, ctf = r.deserializers
    assert (img.type, img.module, img.file) == ("ImageDeserializer", "ImageReader", "map.txt")
    crop, color = img.stream("img").transforms
    assert crop.type == "Crop" and crop.params == {"sideRatio": [0.5, 0.9], "cropType": "Center"}
    assert color.params == {"brightnessRadius": 0.2}
    assert img.stream("LBL").is_label and img.stream("lbl").label_dim == 7
    assert ctf.stream("f").dim == 3 and ctf.stream("f").format == "sparse"
    assert ctf.stream("f").alias == "F"
    with pytest.raises(ConfigError, match="no stream 'nope'"):
        img.stream("nope")


def test_network_builder_forms(tmp_path):
    from bs_fakelib import FakeLibrary

    from stadyn.brainscript import build_network

    (tmp_path / "net.bs").write_text("[ f = Input{2} ; outputNodes = (f) ]\n")
    (tmp_path / "run.cntk").write_text(
        "A = { BrainScriptNetworkBuilder = (new ComputationNetwork [ x = Input{1} ; "
        "outputNodes = (x) ]) }\n"
        'B = { BrainScriptNetworkBuilder = (new ComputationNetwork include "net.bs") }\n'
        "C = { BrainScriptNetworkBuilder = [\n  y = Input{3}\n  outputNodes = (y)\n] }\n")
    cfg = load_config(tmp_path / "run.cntk")
    for block, shape in (("A", 1), ("B", 2), ("C", 3)):
        net = build_network(cfg[block]["BrainScriptNetworkBuilder"], FakeLibrary())
        assert net.output_nodes[0].inputs == (shape,)


def test_a_byte_that_is_not_utf8_is_located(tmp_path):
    bad = tmp_path / "latin1.cntk"
    bad.write_bytes('command = T\n# café is fine\nT = { action = "test" ; x = "na'.encode()
                    + b"\xefve\" }\n")
    with pytest.raises(ConfigError) as info:
        load_config(bad)
    e = info.value
    assert (e.path, e.line, e.column) == (str(bad), 3, 32)
    assert str(e) == (f"{bad}:3:32: the config file is not UTF-8 text: byte ef "
                      "(invalid continuation byte)")
    # in an included file, the error names that file
    main = tmp_path / "main.cntk"
    main.write_text('a = 1\ninclude "latin1.cntk"\n')
    with pytest.raises(ConfigError) as info:
        load_config(main)
    assert str(info.value).startswith(f"{bad}:3:32: the config file is not UTF-8 text")


def test_a_slash_slash_line_is_a_key_nothing_reads():
    # CNTK's ConfigParser (Config.h: Parse/ParseValue) only knows '#' comments; a line
    # "// Note: a, b = 2" is two items, the key "// Note: a" (true) and b = 2, as in
    # Tests/EndToEndTests/Speech/LSTM/cntk.cntk, whose line 9 is such a note.
    cfg = parse_config("x = 1\n// Note: a, b = 2\n  // y = [ z = 3 ]\n"
                       "T = { // inner note\n q = 4 }")
    assert sorted(cfg) == ["T", "b", "x"]
    assert cfg["b"] == "2" and sorted(cfg.get_record("T")) == ["q"]


def test_a_command_uses_the_network_of_the_blocks_around_it():
    # CNTK's NetworkFactory looks the builder up with config.Exists, which searches the
    # enclosing blocks: G2P.cntk defines BrainScriptNetworkBuilder at the top level only.
    root = parse_config("command = train:write\nBrainScriptNetworkBuilder = { z = 1 }\n"
                        "train = { action = train }\nwrite = { action = write\n"
                        "  BrainScriptNetworkBuilder = { z = 2 } }\n"
                        "ndl = { action = train ; NDLNetworkBuilder = { x = 1 } }")
    assert "z = 1" in command_config(root, "train").network.text
    assert "z = 2" in command_config(root, "write").network.text
    # NetworkFactory asks for NDLNetworkBuilder before BrainScriptNetworkBuilder
    assert "x = 1" in command_config(root, "ndl").network.text
    assert type(command_config(root, "ndl").network).__name__ == "NDLSource"


def test_an_override_continues_in_the_next_argument_while_its_brackets_are_open():
    # cntk.exe joins its arguments with newlines (Config.cpp ParseCommandLine); the TIMIT
    # WriteBottleneck test passes an unquoted override that bash splits at its spaces
    args = ['T=[reader=[deserializers=([type="HTKFeatureDeserializer"',
            'module="HTKDeserializers"', 'input=[features=[dim=363]]])]]', "x=1"]
    cfg = parse_config("T = { reader = { randomize = true } }", overrides=args)
    (d,) = cfg.get_record("T").get_record("reader")["deserializers"]
    assert d.get_str("module") == "HTKDeserializers" and cfg.get_int("x") == 1
    assert d.get_record("input").get_record("features").get_int("dim") == 363
    with pytest.raises(ConfigError, match=r"<command line 1>:2:"):
        parse_config("a = 1", overrides=["T=[b=1", "c=]"])


def test_empty_items_of_a_colon_array_are_skipped_as_in_cntk():
    # CNTK's ConfigArray (Config.h) skips runs of separators; Tests/EndToEndTests/Speech/
    # QuickE2E/cntk.cntk has 'minibatchSize = 64:256:1024:'
    cfg = parse_config("mb = 64:256:1024:\nb = 1::2\nc = 5:")
    assert cfg.get_ints("mb") == [64, 256, 1024] and cfg.get_ints("b") == [1, 2]
    assert cfg.get_ints("c") == [5]


def test_a_config_include_is_opened_from_the_working_folder_first(tmp_path, monkeypatch):
    # Config.cpp:118: cntk.exe reads an included config by the name as written (relative to
    # the working folder); the including file's folder is tried only after it
    (tmp_path / "work").mkdir()
    (tmp_path / "conf").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    (tmp_path / "work" / "common.cntk").write_text("where = work\n")
    (tmp_path / "conf" / "common.cntk").write_text("where = conf\n")
    (tmp_path / "conf" / "main.cntk").write_text('include "common.cntk"\n')
    assert load_config(tmp_path / "conf" / "main.cntk")["where"] == "work"
