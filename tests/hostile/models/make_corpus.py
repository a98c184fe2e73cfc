"""Write the hostile model, parameter and config files of this folder (one per attack; see
README.md).  Run from the repository root: ``PYTHONPATH=src python
tests/hostile/models/make_corpus.py``.  The output is deterministic, so a rerun changes no file
unless this script changed."""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile
import zlib

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
STAMP = (1980, 1, 1, 0, 0, 0)


def _zip(name: str, members: list[tuple[str, bytes]], deflate: bool = True) -> None:
    with zipfile.ZipFile(os.path.join(HERE, name), "w") as zf:
        for member, data in members:
            info = zipfile.ZipInfo(member, date_time=STAMP)
            info.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)


def _safetensors(tensors: dict[str, np.ndarray], meta: dict[str, str] | None = None) -> bytes:
    """safetensors bytes with a sorted header (the library orders its metadata at random)."""
    codes = {"float32": "F32", "float64": "F64", "int64": "I64"}
    header: dict = {"__metadata__": meta} if meta else {}
    data, offset = b"", 0
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": codes[array.dtype.name], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        data, offset = data + raw, offset + len(raw)
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def _base_model() -> dict[str, bytes]:
    """A valid model file's members: x (2, 3) -> relu -> y, no parameters."""
    fmt = {"format": "stadyn-model", "version": 1, "producer": "corpus"}
    network = {"variables": [
        {"shape": [2, 3], "dtype": "float32", "need_grad": False, "persistent": False,
         "kind": "input", "name": "x", "batch": True},
        {"shape": [2, 3], "dtype": "float32", "need_grad": False, "persistent": False,
         "kind": "op", "batch": True}],
        "nodes": [{"op": "relu", "scope": "", "inputs": [0], "outputs": [1], "attrs": {}}],
        "inputs": [["x", 0]], "outputs": [["y", 1]], "parameters": []}
    return {"format.json": json.dumps(fmt).encode(), "network.json": json.dumps(network).encode(),
            "parameters.safetensors": _safetensors({}, {"format": "stadyn-parameters"})}


def _model(name: str, edit=None, members=None) -> None:
    base = _base_model()
    network = json.loads(base["network.json"])
    if edit is not None:
        edit(network)
        base["network.json"] = json.dumps(network).encode()
    base.update(members or {})
    _zip(name, [(k, v) for k, v in base.items() if v is not None])


def _six_inputs(n):
    for k in range(6):
        n["variables"].append({"shape": [1 << 28], "dtype": "float64", "need_grad": False,
                               "persistent": False, "kind": "input", "name": f"big{k}"})
        n["inputs"].append([f"big{k}", len(n["variables"]) - 1])


def _split_fanout(n):
    n["variables"][0]["shape"] = [1 << 24, 1]         # 64 MiB: within the load limit
    n["variables"][1]["shape"] = [1]
    n["nodes"][0] = {"op": "split", "scope": "", "inputs": [0], "outputs": [1], "attrs": {}}


def _lying_sizes(name: str) -> None:
    """A model file whose central directory says network.json inflates to 2^40 bytes."""
    _model(name)
    path = os.path.join(HERE, name)
    data = bytearray(open(path, "rb").read())
    end = data.rfind(b"PK\x05\x06")
    cd_offset = struct.unpack_from("<I", data, end + 16)[0]
    pos = cd_offset
    while data[pos:pos + 4] == b"PK\x01\x02":
        n_name, n_extra, n_comment = struct.unpack_from("<HHH", data, pos + 28)
        member = bytes(data[pos + 46:pos + 46 + n_name])
        if member == b"parameters.safetensors":
            struct.pack_into("<I", data, pos + 24, 0xFFFFFFF0)   # uncompressed size
        pos += 46 + n_name + n_extra + n_comment
    open(path, "wb").write(bytes(data))


def models() -> None:
    _model("six_big_inputs.stadyn", _six_inputs)
    _model("split_fanout.stadyn", _split_fanout)
    _model("no_outputs.stadyn", lambda n: n.update(outputs=[]))
    _model("inputs_not_a_list.stadyn", lambda n: n.update(inputs=5))
    _model("huge_shape.stadyn", lambda n: n["variables"][0].update(shape=[1 << 39, 1 << 39]))
    _model("deep_json.stadyn", members={"network.json": b"[" * 100000 + b"]" * 100000})
    _model("unknown_op.stadyn", lambda n: n["nodes"][0].update(op="__import__"))
    _model("pickle_member.stadyn", members={"payload.pkl": b"\x80\x04cos\nsystem\n."})
    _lying_sizes("lying_sizes.stadyn")
    whole = open(os.path.join(HERE, "unknown_op.stadyn"), "rb").read()
    open(os.path.join(HERE, "truncated.stadyn"), "wb").write(whole[: len(whole) // 2])


def parameters() -> None:
    with h5py.File(os.path.join(HERE, "huge_dataset.h5"), "w", track_order=True) as f:
        f.create_dataset("fc/W", shape=(1 << 40,), dtype="f4", chunks=(1024,))
    with h5py.File(os.path.join(HERE, "bad_index.h5"), "w") as f:
        f["fc/W"] = np.ones(2, np.float32)
        f["fc/W"].attrs["index"] = "first"
    with h5py.File(os.path.join(HERE, "need_grad_array.h5"), "w") as f:
        f["fc/W"] = np.ones(2, np.float32)
        f["fc/W"].attrs["need_grad"] = np.array([True, False])
    with h5py.File(os.path.join(HERE, "string_dataset.h5"), "w") as f:
        f["fc/W"] = np.array([b"not", b"numbers"])
    # .nnp: a zip around NNabla's .h5 parameters
    h5 = io.BytesIO()
    with h5py.File(h5, "w") as f:
        f.create_dataset("fc/W", shape=(1 << 40,), dtype="f4", chunks=(1024,))
    _zip("nnp_huge_dataset.nnp", [("parameter.h5", h5.getvalue())])
    comp, chunk, crc = zlib.compressobj(9, zlib.DEFLATED, -15), bytes(1 << 20), 0
    body = b""
    for _ in range(256):                                  # 256 MiB of zeros, 1 MiB at a time
        body += comp.compress(chunk)
        crc = zlib.crc32(chunk, crc)
    _raw_deflated_zip("nnp_inflates_256MiB.nnp", "parameter.h5", body + comp.flush(),
                      256 << 20, crc)
    st = _safetensors({"a": np.ones(2, np.float32)}, {"format": "stadyn-parameters",
                                                        "need_grad": "{"})
    open(os.path.join(HERE, "bad_metadata.safetensors"), "wb").write(st)
    st = _safetensors({"a": np.ones(2, np.float32)}, {"format": "stadyn-parameters",
                                                        "order": '["a", "ghost"]'})
    open(os.path.join(HERE, "order_names_a_ghost.safetensors"), "wb").write(st)
    header = b'{"a":{"dtype":"F32","shape":[1099511627776],"data_offsets":[0,4398046511104]}}'
    open(os.path.join(HERE, "huge_tensor.safetensors"), "wb").write(
        struct.pack("<Q", len(header)) + header + bytes(8))


def _raw_deflated_zip(name: str, member: str, body: bytes, size: int, crc: int) -> None:
    """A zip of one member with a given deflate stream (so a 256 MiB member needs no 256 MiB
    in memory to write)."""
    path = os.path.join(HERE, name)
    fname = member.encode()
    local = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 8, 0, 33, crc, len(body), size,
                        len(fname), 0)
    central = struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, 8, 0, 33, crc, len(body),
                          size, len(fname), 0, 0, 0, 0, 0o644 << 16, 0)
    offset = len(local) + len(fname) + len(body)
    end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 1, 1, len(central) + len(fname), offset, 0)
    with open(path, "wb") as f:
        f.write(local + fname + body + central + fname + end)


def configs() -> None:
    def write(name: str, text: str) -> None:
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            f.write(text)
    write("deep_nesting.cntk", "command = T\na = " + "{ b = " * 300 + "1" + " }" * 300 + "\n")
    write("variable_chain.cntk", "command = $v0$\n" + "".join(
        f"v{i} = $v{i + 1}$\n" for i in range(300)) + "v300 = T\nT = { action = test }\n")
    write("include_passwd.cntk", 'command = T\ninclude "/etc/passwd"\n')
    write("repeat_1e12.cntk", "command = T\nT = { action = train\n  SGD = { maxEpochs = 1\n"
          "    learningRatesPerMB = 0.1*1e12 } }\n")
    write("unclosed.cntk", "command = T\nT = { action = train\n")
    with open(os.path.join(HERE, "not_utf8.cntk"), "wb") as f:
        f.write(b"command = T\nx = \xff\xfe\n")


if __name__ == "__main__":
    models()
    parameters()
    configs()
