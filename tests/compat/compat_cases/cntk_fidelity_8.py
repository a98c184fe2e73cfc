"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (eighth round):
``MinibatchSourceFromData`` of typed sequences of different lengths (NumPy arrays and SciPy
sparse matrices), which Stadyn refused with NumPy's "inhomogeneous shape" ValueError."""

import numpy as np

from compat_harness import cntk_case


def _sequences(r):
    """Three sequences of 3-vectors, of lengths 2, 4 and 1."""
    return [r.randn(n, 3).astype(np.float32) for n in (2, 4, 1)]


def _read(C, src, stream, sizes, sparse=False):
    """What ``next_minibatch`` gives for each size: counts, the end of the sweep, and each
    sequence's per-sequence sums of ``x @ diag(1, 10, 100)`` (masks applied).  ``x`` takes
    the data's type: CNTK 2.7 gives float64 data when an earlier program in the process set a
    dtype on the shared ``Sequence[Tensor[3]]`` type (a full reference run: 'DataType Float
    does not match the corresponding Value's DataType Double')."""
    out = []
    for n in sizes:
        d = src.next_minibatch(n)[stream]
        dtype = np.float64 if np.dtype(d.data.dtype) == np.float64 else np.float32
        x = C.sequence.input_variable(3, dtype=dtype, is_sparse=sparse)
        f = C.sequence.reduce_sum(C.times(x, np.diag([1.0, 10.0, 100.0]).astype(dtype)))
        out.append({"num_sequences": d.num_sequences, "num_samples": d.num_samples,
                    "end_of_sweep": bool(d.end_of_sweep), "shape": list(d.data.shape),
                    "sums": np.asarray(f.eval({x: d}), np.float32).tolist()})
    return out


@cntk_case(names=["cntk.io.MinibatchSourceFromData"],
           note="CNTK 2.7 reads ([arrays (T_i, 3)], Sequence[Tensor[3]]) as ragged sequences "
                "(zero-padded, masked, minibatches ending at the sweep's end); Stadyn raised "
                "NumPy's inhomogeneous-shape ValueError")
def io__minibatch_source_from_data_ragged_sequences(C, r):
    r.touch("cntk.io.MinibatchSourceFromData", "cntk.io.MinibatchSource.next_minibatch",
            "cntk.io.MinibatchData.asarray", "cntk.io.MinibatchData.num_sequences",
            "cntk.io.MinibatchData.num_samples", "cntk.io.MinibatchData.end_of_sweep")
    Sequence, Tensor = C.layers.typing.Sequence, C.layers.typing.Tensor
    seqs = _sequences(r)
    src = C.io.MinibatchSourceFromData({"a": (seqs, Sequence[Tensor[3]])})
    res = {"reads": _read(C, src, src.streams.a, (5, 5, 3, 20))}
    src = C.io.MinibatchSourceFromData({"a": (seqs, Sequence[Tensor[3]])})
    d = src.next_minibatch(6)[src.streams.a]
    res["asarray"] = np.asarray(d.asarray()).tolist()
    # without the type, ragged sequences are refused (CNTK: AttributeError, a list has no
    # shape; Stadyn: a ValueError saying to give the type)
    try:
        C.io.MinibatchSourceFromData({"a": seqs})
        res["untyped"] = "read"
    except Exception:
        res["untyped"] = "raises"
    return res


@cntk_case(names=["cntk.io.MinibatchSourceFromData"],
           note="CNTK 2.7 reads ([csr_matrix (T_i, 3)], Sequence[SparseTensor[3]]) as ragged "
                "sequences; Stadyn raised NumPy's inhomogeneous-shape ValueError")
def io__minibatch_source_from_data_sparse_sequences(C, r):
    r.touch("cntk.io.MinibatchSourceFromData", "cntk.io.MinibatchSource.next_minibatch")
    import scipy.sparse as sp
    Sequence, SparseTensor = C.layers.typing.Sequence, C.layers.typing.SparseTensor
    eye = np.eye(3, dtype=np.float32)
    seqs = [sp.csr_matrix(eye[[0, 2]]), sp.csr_matrix(eye[[1, 1, 0]]),
            sp.csr_matrix(eye[[2]] * 3)]
    src = C.io.MinibatchSourceFromData({"s": (seqs, Sequence[SparseTensor[3]])})
    return {"reads": _read(C, src, src.streams.s, (4, 10, 5), sparse=True)}
