"""Damaged and hostile legacy model files get one clear ``ModelFileError`` naming the file, and
no size a file declares makes the readers allocate more than the file holds.

The cases are built from the real fixtures (``tests/fixtures/legacy/``): truncated at many
offsets, bytes flipped, sizes and counts rewritten to huge values, wrong magic numbers, and
archives with members that must never be read or run.  Allocation is checked under an address
space limit in a child process, so a reader that trusted a declared size would fail there with a
MemoryError rather than a ModelFileError.
"""

from __future__ import annotations

import io
import os
import struct
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

from stadyn import ModelFileError
from stadyn.serialize._cntk_format import read_cntk
from stadyn.serialize._cntk_v1_format import read_cntk_v1
from stadyn.serialize._nnp_format import read_nnp
from stadyn._proto_schemas import cntk_messages, nnabla_messages

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "legacy")


def fixture_bytes(name: str) -> bytes:
    with open(os.path.join(HERE, name), "rb") as f:
        return f.read()


def write(tmp_path, name: str, data: bytes) -> str:
    path = str(tmp_path / name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def refused(reader, path: str, *fragments: str) -> str:
    with pytest.raises(ModelFileError) as info:
        reader(path)
    message = str(info.value)
    assert message.startswith(path), message
    for fragment in fragments:
        assert fragment in message, message
    return message


READERS = {".nnp": read_nnp, ".nntxt": read_nnp, ".model": read_cntk, ".dnn": read_cntk_v1}
SMALL_FIXTURES = [("nnabla_loops.nnp", ".nnp"), ("nnabla_mlp_inline.nntxt", ".nntxt"),
                  ("cntk_mlp_bn.model", ".model"), ("cntk_mlp_bn_large.model", ".model"),
                  ("cntk_v1_small_cnn.dnn", ".dnn")]


# ---------------------------------------------------------------------------------------------
# Damage anywhere: truncation and flipped bytes
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,suffix", SMALL_FIXTURES)
def test_truncated_files_are_refused(tmp_path, name, suffix):
    data = fixture_bytes(name)
    reader = READERS[suffix]
    for cut in sorted({0, 1, 3, 7, 9, 17, len(data) // 3, len(data) // 2, len(data) - 40,
                       len(data) - 2, len(data) - 1}):
        if not data[cut:].strip():
            continue                      # only a text file's final newline cut off
        path = write(tmp_path, f"cut{cut}{suffix}", data[:cut])
        with pytest.raises(ModelFileError) as info:
            reader(path)
        assert str(info.value).startswith(path)


@pytest.mark.parametrize("name,suffix", SMALL_FIXTURES)
def test_flipped_bytes_give_a_model_file_error_or_a_model(tmp_path, name, suffix):
    """A damaged byte may land in a value (the file still decodes) or in the structure: then
    the error is a ModelFileError, never another exception."""
    data = fixture_bytes(name)
    reader = READERS[suffix]
    rng = np.random.default_rng(len(data))
    for k in range(40):
        damaged = bytearray(data)
        for at in rng.integers(0, len(data), size=3):
            damaged[at] ^= int(rng.integers(1, 256))
        path = write(tmp_path, f"flip{k}{suffix}", bytes(damaged))
        try:
            reader(path)
        except ModelFileError as exc:
            assert str(exc).startswith(path)


def test_missing_files_and_folders(tmp_path):
    for reader, suffix in ((read_nnp, ".nnp"), (read_cntk, ".model"), (read_cntk_v1, ".dnn"),
                           (read_nnp, ".nntxt")):
        refused(reader, str(tmp_path / f"absent{suffix}"), "no such")
        folder = tmp_path / f"folder{suffix}"
        folder.mkdir()
        refused(reader, str(folder), "folder")


# ---------------------------------------------------------------------------------------------
# NNabla
# ---------------------------------------------------------------------------------------------
def nnp(tmp_path, members: dict, name="x.nnp", compression=zipfile.ZIP_STORED) -> str:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for member, data in members.items():
            z.writestr(member, data)
    return write(tmp_path, name, buf.getvalue())


TINY = b'network { name: "n" variable { name: "x" type: "Buffer" shape { dim: -1 } } }\n'


def test_nnp_member_faults(tmp_path):
    refused(read_nnp, write(tmp_path, "z.nnp", b"PK\x03\x04" + b"\0" * 30), "not an .nnp archive")
    refused(read_nnp, nnp(tmp_path, {"nnp_version.txt": "0.1\n"}), "no .nntxt")
    # a bad CRC
    data = bytearray(open(nnp(tmp_path, {"network.nntxt": TINY}), "rb").read())
    data[data.index(b"network {") + 3] ^= 0x20
    refused(read_nnp, write(tmp_path, "crc.nnp", bytes(data)), "network.nntxt is damaged")
    # a member listed twice
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z, pytest.warns(UserWarning, match="Duplicate name"):
        z.writestr("network.nntxt", TINY)
        z.writestr("network.nntxt", TINY)
    refused(read_nnp, write(tmp_path, "twice.nnp", buf.getvalue()), "twice")


def test_nnp_zip_bomb_is_refused_before_it_is_inflated(tmp_path):
    path = nnp(tmp_path, {"network.nntxt": TINY, "parameter.h5": b"\0" * (200 << 20)},
               compression=zipfile.ZIP_DEFLATED)
    assert os.path.getsize(path) < 1 << 20
    refused(read_nnp, path, "parameter.h5", "compression ratio")


def test_nnp_members_that_are_not_model_data_are_never_read_or_run(tmp_path):
    """A pickle (or anything else) in an archive is listed, not loaded: nothing in these formats
    is executed."""
    marker = tmp_path / "ran"
    payload = (b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR.")
    model = read_nnp(nnp(tmp_path, {"network.nntxt": TINY, "evil.pkl": payload,
                                    "optimizer_o_state_1.h5": b"junk"}))
    assert model.extras["other_members"] == ["evil.pkl"]
    assert model.extras["solver_state_members"] == ["optimizer_o_state_1.h5"]
    assert not marker.exists()


@pytest.mark.parametrize("text,fragments", [
    ('network { name: "n" ', ["line 1", "ends inside a message opened at line 1"]),
    ('network {\n name: "n"\n}\n}', ["line 4", "unexpected '}'"]),
    ('network { name "n" }', ["missing ':'"]),
    ('network { name: "\\q" }', ["unknown escape"]),
    ('network { name: "n" @ }', ["unexpected character '@'"]),
    ("a { " * 150 + "}" * 150, ["nested deeper than 100"]),
    ('network { name: "n" function { name: "f" type: "Tanh" input: "nope" output: "x" } '
     'variable { name: "x" type: "Buffer" } }', ["undeclared variable 'nope'"]),
    ('network { name: "n" variable { name: "x" type: "Buffer" shape { dim: -7 } } }',
     ["invalid shape"]),
    ('network { name: "n" } network { name: "n" }', ["defined twice"]),
    ('parameter { variable_name: "w" shape { dim: 1000000000 } data: 1 }',
     ["does not match its 1 values"]),
    ('network { name: "n" variable { name: "a" type: "Buffer" } variable { name: "b" type: '
     '"Buffer" } function { name: "f" type: "Tanh" input: "b" output: "a" } function { name: "g" '
     'type: "Tanh" input: "a" output: "b" } }', ["in a cycle"]),
])
def test_nntxt_faults_name_the_line_or_the_part(tmp_path, text, fragments):
    refused(read_nnp, write(tmp_path, "bad.nntxt", text.encode()), *fragments)


def test_nntxt_loop_faults(tmp_path):
    base = ('network { name: "n" repeat_info { id: "R" times: %s } '
            'variable { name: "x" type: "Buffer" repeat_id: "%s" } '
            'variable { name: "y" type: "Buffer" repeat_id: "R" } '
            'function { name: "f" type: "Tanh" repeat_id: "R" input: "x" output: "y" } }')
    refused(read_nnp, write(tmp_path, "l1.nntxt", (base % ("3", "Q")).encode()),
            "loop 'Q', which repeat_info does not declare")
    refused(read_nnp, write(tmp_path, "l2.nntxt", (base % ("0", "R")).encode()), "invalid times")
    nested = ('network { name: "n" ' + "".join(
        f'repeat_info {{ id: "R{i}" times: 1000 }} ' for i in range(3)) +
        'variable { name: "x" type: "Buffer" ' + "".join(
        f'repeat_id: "R{i}" ' for i in range(3)) + "} }")
    refused(read_nnp, write(tmp_path, "l3.nntxt", nested.encode()), "more than 1000000 copies")


def test_nnabla_parameter_protobuf_faults(tmp_path):
    P = nnabla_messages()["NNablaProtoBuf"]
    m = P()
    p = m.parameter.add()
    p.variable_name, p.need_grad = "w", True
    p.shape.dim.extend([1 << 40, 1 << 40])         # declared far beyond the data
    p.data.extend([1.0, 2.0])
    path = nnp(tmp_path, {"network.nntxt": TINY, "parameter.protobuf": m.SerializeToString()})
    refused(read_nnp, path, "parameter 'w'", "does not match its 2 values")
    path = nnp(tmp_path, {"network.nntxt": TINY, "parameter.protobuf": b"\x0a\xff\xff\xff\x7f"},
               name="trunc.nnp")
    refused(read_nnp, path, "parameter.protobuf", "not a readable NNabla protobuf")


def test_nnabla_h5_declaring_more_than_it_holds_is_refused(tmp_path):
    import h5py
    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:                  # 4 GB of zeros, compressed to almost nothing
        f.create_dataset("w", shape=(1 << 30,), dtype="f4", chunks=(1 << 20,),
                         compression="gzip")
    data = buf.getvalue()
    assert len(data) < 1 << 20
    path = nnp(tmp_path, {"network.nntxt": TINY, "parameter.h5": data})
    refused(read_nnp, path, "dataset 'w' declares", "more than the file can hold")
    path = nnp(tmp_path, {"network.nntxt": TINY, "parameter.h5": b"\x89HDF\r\n\x1a\nbroken"},
               name="h5.nnp")
    refused(read_nnp, path, "not a readable HDF5 parameter file")


# ---------------------------------------------------------------------------------------------
# CNTK 2
# ---------------------------------------------------------------------------------------------
def cntk_message(name="cntk_mlp_bn.model"):
    return cntk_messages()["Dictionary"].FromString(fixture_bytes(name))


def entry(dictionary, key):
    return next(e.value for e in dictionary.data if e.key == key)


def first_parameter(message):
    for v in entry(message, "inputs").vector_value.value:
        d = v.dictionary_value
        if any(e.key == "value" for e in d.data):
            return d
    raise AssertionError("no parameter")


def test_cntk_wrong_magic_and_garbage(tmp_path):
    refused(read_cntk, write(tmp_path, "g.model", b"\x6b\x74\x6e\x63" + b"\xff" * 4 + b"xx"),
            "metadata declares 4294967295 bytes")
    refused(read_cntk, write(tmp_path, "e.model", b""), "empty file")
    refused(read_cntk, write(tmp_path, "r.model", os.urandom(64) + b"\xff" * 64),
            "not a CNTK model file")
    refused(read_cntk, write(tmp_path, "v1.model", fixture_bytes("cntk_v1_mlp_bn.dnn")),
            "not a CNTK model")


def test_cntk_large_layout_faults(tmp_path):
    data = fixture_bytes("cntk_mlp_bn_large.model")
    refused(read_cntk, write(tmp_path, "short.model", data[:-4]), "truncated")
    refused(read_cntk, write(tmp_path, "long.model", data + b"\0" * 8), "8 bytes follow")


def test_cntk_huge_declared_array_without_values_is_refused(tmp_path):
    """A shape declaring 2**60 elements and no values: refused, nothing allocated."""
    m = cntk_message()
    view = entry(first_parameter(m), "value").nd_array_view_value
    del view.shape.shape_dim[:]
    view.shape.shape_dim.extend([1 << 30, 1 << 30])
    view.float_values.Clear()
    refused(read_cntk, write(tmp_path, "huge.model", m.SerializeToString()), "holds no values")
    view.float_values.value.extend([1.0, 2.0])
    refused(read_cntk, write(tmp_path, "huge2.model", m.SerializeToString()), "holds 2 values")


@pytest.mark.parametrize("edit,fragments", [
    (lambda p: setattr(entry(p, "value").nd_array_view_value, "storage_format", 1), ["sparse"]),
    (lambda p: setattr(entry(p, "value").nd_array_view_value, "data_type", 3),
     ["unknown data type 3"]),
    (lambda p: setattr(entry(p, "kind"), "size_t_value", 9), ["unknown kind 9"]),
    (lambda p: setattr(entry(p, "kind"), "value_type", 6), ["tagged string_value holds"]),
    (lambda p: p.data.add(key="uid").value.CopyFrom(entry(p, "uid")), ["key 'uid' twice"]),
])
def test_cntk_variable_faults(tmp_path, edit, fragments):
    m = cntk_message()
    edit(first_parameter(m))
    refused(read_cntk, write(tmp_path, "v.model", m.SerializeToString()), *fragments)


def test_cntk_function_faults(tmp_path):
    m = cntk_message()
    f = entry(m, "primitive_functions").vector_value.value[0].dictionary_value
    entry(f, "type").string_value = "UserFunction"
    refused(read_cntk, write(tmp_path, "udf.model", m.SerializeToString()),
            "user-defined function")
    m = cntk_message()
    f = entry(m, "primitive_functions").vector_value.value[0].dictionary_value
    entry(f, "inputs").vector_value.value[0].string_value = "Nowhere7_Output_0"
    refused(read_cntk, write(tmp_path, "in.model", m.SerializeToString()),
            "reads 'Nowhere7_Output_0'")
    m = cntk_message()
    entry(m, "root").string_value = "Missing9"
    refused(read_cntk, write(tmp_path, "root.model", m.SerializeToString()), "the root")


def test_cntk_deep_nesting_is_refused(tmp_path):
    D = cntk_messages()["DictionaryValue"]
    inner = D(value_type=2, int_value=1)
    for _ in range(300):
        outer = D(value_type=9)
        outer.vector_value.value.add().CopyFrom(inner)
        inner = outer
    m = cntk_messages()["Dictionary"]()
    m.data.add(key="x").value.CopyFrom(inner)
    refused(read_cntk, write(tmp_path, "deep.model", m.SerializeToString()))


# ---------------------------------------------------------------------------------------------
# CNTK v1
# ---------------------------------------------------------------------------------------------
def w(text: str) -> bytes:
    return text.encode("utf-16-le") + b"\0\0"


def v1_header(version=31, count=1) -> bytes:
    return w("BCN") + w("BVersion") + struct.pack("<Q", version) + w("EVersion") + \
        struct.pack("<Q", count) + w("BNodeList")


def test_v1_header_faults(tmp_path):
    refused(read_cntk_v1, write(tmp_path, "m.dnn", b"BCN\0" + b"\0" * 20), "no BCN marker")
    refused(read_cntk_v1, write(tmp_path, "v.dnn", v1_header(version=99)),
            "model version 99")
    refused(read_cntk_v1, write(tmp_path, "c.dnn", v1_header(count=1 << 50)),
            "declares 1125899906842624 nodes")


def test_v1_node_faults(tmp_path):
    base = v1_header()
    refused(read_cntk_v1, write(tmp_path, "t.dnn", base + w("float") + w("Frobnicate") + w("n")),
            "type 'Frobnicate'")
    refused(read_cntk_v1, write(tmp_path, "p.dnn", base + w("quad") + w("Plus") + w("n")),
            "precision 'quad'")
    refused(read_cntk_v1, write(tmp_path, "s.dnn", base + w("float") + "x".encode("utf-16-le")
                                * 50), "unterminated string")
    # a parameter matrix declaring 2**40 x 2**40 values in a tiny file
    param = (w("float") + w("LearnableParameter") + w("W") + struct.pack("<f", 1.0) +
             struct.pack("<II", 1, 4) + b"d" + w("BMAT") + struct.pack("<Q", 4) + w("unnamed") +
             struct.pack("<i", 0) + struct.pack("<QQ", 1 << 40, 1 << 40))
    refused(read_cntk_v1, write(tmp_path, "mx.dnn", base + param), "larger than the file")
    shape = (w("float") + w("InputValue") + w("x") + struct.pack("<QQ", 0, 0) +
             struct.pack("<I", 1000))
    refused(read_cntk_v1, write(tmp_path, "rk.dnn", base + shape + struct.pack("<I", 5)),
            "rank 1000")


def test_v1_relation_and_trailing_faults(tmp_path):
    data = fixture_bytes("cntk_v1_mlp_bn.dnn")
    relation = data.index(w("BRelation")) + len(w("BRelation"))
    name_end = data.index(b"\0\0\0", relation) + 3      # the first relation's node name
    if (name_end - relation) % 2:
        name_end -= 1
    damaged = data[:relation] + w("Nobody") + data[name_end:]
    refused(read_cntk_v1, write(tmp_path, "rel.dnn", damaged), "not a node")
    refused(read_cntk_v1, write(tmp_path, "tail.dnn", data + b"\0\0"), "follow the end")


# ---------------------------------------------------------------------------------------------
# No allocation from a declared size: under a 1 GiB address-space limit
# ---------------------------------------------------------------------------------------------
@pytest.mark.skipif(sys.platform != "linux", reason="uses RLIMIT_AS")
def test_declared_sizes_never_allocate(tmp_path):
    """Each reader gets files declaring terabytes; in a child limited to 1 GiB of address
    space every one must end in a ModelFileError (a trusted size would be a MemoryError)."""
    P = nnabla_messages()["NNablaProtoBuf"]()
    p = P.parameter.add()
    p.variable_name = "w"
    p.shape.dim.extend([1 << 40])
    pb = nnp(tmp_path, {"network.nntxt": TINY, "parameter.protobuf": P.SerializeToString()})
    m = cntk_message()
    view = entry(first_parameter(m), "value").nd_array_view_value
    del view.shape.shape_dim[:]
    view.shape.shape_dim.extend([1 << 42])
    view.float_values.Clear()
    meta = m.SerializeToString()
    large = write(tmp_path, "huge_large.model",
                  (0x636E746B).to_bytes(4, "little") + len(meta).to_bytes(4, "little") + meta)
    v1 = write(tmp_path, "huge.dnn", v1_header() + w("float") + w("LearnableParameter") +
               w("W") + struct.pack("<f", 1.0) + struct.pack("<II", 1, 4) + b"d" + w("BMAT") +
               struct.pack("<Q", 4) + w("unnamed") + struct.pack("<iQQ", 0, 1 << 20, 1 << 20))
    script = textwrap.dedent(f"""
        import resource, sys
        from stadyn import ModelFileError
        from stadyn.serialize._nnp_format import read_nnp
        from stadyn.serialize._cntk_format import read_cntk
        from stadyn.serialize._cntk_v1_format import read_cntk_v1
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        for reader, path in ((read_nnp, {pb!r}), (read_cntk, {large!r}),
                             (read_cntk_v1, {v1!r})):
            try:
                reader(path)
            except ModelFileError as exc:
                print("refused:", exc)
            else:
                sys.exit("read " + path)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("refused:") == 3, out.stdout
