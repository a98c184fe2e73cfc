"""What a small program imports, and the garbage collector after ``import stadyn``: start-up
guards that are not timings.

Importing ``torch._dynamo`` costs 1.3-1.5 s of CPU, sympy ~0.7 s and OpenCV 20-40 ms
(docs/performance.md, "Start-up").  A static plan needs ``torch._dynamo`` (its fake tensors
import it), but importing Stadyn's front ends and running the dynamic mode must not, and nothing
but an image may import OpenCV.  Each check runs in a fresh interpreter, whose ``sys.modules``
is the evidence.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import stadyn

SRC = os.path.dirname(os.path.dirname(os.path.abspath(stadyn.__file__)))

# Imports the front ends, then trains one eager NNabla step (convolution, affine, softmax
# cross-entropy, a product and a tanh large enough for Stadyn's custom kernels, a trace probe on
# a value and its gradient, backward, Adam), noting the heavy modules loaded after each part.
PROGRAM = r"""
import gc, json, sys
HEAVY = ("torch._dynamo", "torch._inductor", "cv2", "sympy")
seen = {}
import numpy as np
import stadyn.compat.cntk
seen["gc"] = [gc.isenabled(), gc.get_freeze_count() > 10000]
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.parametric_functions as PF
import stadyn.compat.nnabla.solvers as S
import stadyn as sd
seen["import"] = [m for m in HEAVY if m in sys.modules]
nn.set_auto_forward(True)
x = nn.Variable.from_numpy_array(np.random.RandomState(0).randn(4, 1, 6, 6).astype(np.float32))
t = nn.Variable.from_numpy_array(np.array([[1], [0], [3], [2]]))
h = F.relu(PF.convolution(x, 2, (3, 3), pad=(1, 1), name="c"))
loss = F.mean(F.softmax_cross_entropy(PF.affine(h, 4, name="a"), t))
# large enough for Stadyn's own kernels (ops/_kernels.py): oneDNN's product, NumPy's tanh
wide = nn.Variable.from_numpy_array(np.ones((256, 256), np.float32))
loss = loss + F.mean(F.tanh(PF.affine(wide, 256, name="wide")))
loss = sd.trace(loss, say="loss", gradient=True)   # prints to standard error
solver = S.Adam()
solver.set_parameters(nn.get_parameters())
solver.zero_grad()
loss.backward()
solver.update()
assert np.isfinite(loss.d).all()
seen["eager step"] = [m for m in HEAVY if m in sys.modules]
print(json.dumps(seen))
"""


def _run(program: str, **settings: str):
    """What ``program``'s last line prints (JSON), run by a fresh interpreter."""
    env = {k: v for k, v in os.environ.items() if k != "STADYN_GC_FREEZE"}
    env.update(settings, PYTHONPATH=os.pathsep.join(
        [SRC] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    proc = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_front_ends_and_the_dynamic_mode_import_neither_dynamo_nor_opencv():
    seen = _run(PROGRAM)
    # the import objects are frozen and the collector is on again (stadyn/__init__.py)
    assert seen.pop("gc") == [True, True]
    assert seen == {"import": [], "eager step": []}


def test_the_garbage_collector_is_left_alone_when_asked():
    program = ("import gc, json; gc.disable(); import stadyn\n"
               "print(json.dumps([gc.isenabled(), gc.get_freeze_count()]))")
    assert _run(program, STADYN_GC_FREEZE="0") == [False, 0]


# Builds static element-wise, scalar and reduction nodes (a static Variable on the right of a
# NumPy array first: NumPy's object loop calls its ``__radd__``, so the node is built inside
# NumPy's ufunc, which reports the floating-point flags set meanwhile), then notes the heavy
# modules and the warnings NumPy gave.
STATIC_PROGRAM = r"""
import json, sys, warnings
import numpy as np
import stadyn as sd, stadyn.functions as F
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    x = sd.Variable((3,), need_grad=True)
    y = np.ones(3) + x
    z = F.sum(F.relu(F.mul2(x, x) - 1.5), axis=0)
print(json.dumps({"heavy": [m for m in ("torch._dynamo", "sympy") if m in sys.modules],
                  "warnings": [str(w.message) for w in caught],
                  "shapes": [list(y[0].shape), list(z.shape)]}))
"""


def test_static_elementwise_ops_import_no_dynamo_and_leave_numpy_no_warning():
    # before ops/_shape_rules.py the first static element-wise op ran torch's Python references
    # on meta tensors, which import torch._dynamo, sympy and mpmath (1-3 s); mpmath's import set
    # the CPU's "invalid" flag inside NumPy's loop: "invalid value encountered in add"
    seen = _run(STATIC_PROGRAM)
    assert seen == {"heavy": [], "warnings": [], "shapes": [[3], []]}


# A 0-d static Variable (a mean) in element-wise ops: scaled, shifted, compared, multiplied
# with a Variable with axes.
SCALAR_PROGRAM = r"""
import json, sys
import stadyn as sd, stadyn.functions as F
x = sd.Variable((2, 3), need_grad=True)
loss = F.mean(x)
out = [F.exp(loss * 0.5 - 1.0), F.greater_scalar(loss, 0.0), F.mul2(loss, x)]
print(json.dumps({"heavy": [m for m in ("torch._dynamo", "sympy") if m in sys.modules],
                  "shapes": [list(o.shape) for o in out]}))
"""


def test_static_elementwise_ops_of_0d_variables_import_no_dynamo():
    # the element-wise shape rule gave up on a 0-d input (meta inference: torch._dynamo,
    # sympy, mpmath imported, 1-3 s); a 0-d probe keeps torch's promotion
    assert _run(SCALAR_PROGRAM) == {"heavy": [], "shapes": [[], [], [2, 3]]}


def test_static_max_min_and_softmax_import_no_dynamo():
    # max and min (the reduction rule) and softmax, log_softmax (the same-shape rule) were
    # inferred on meta tensors before they took a rule
    program = ("import json, sys\nimport stadyn as sd, stadyn.functions as F\n"
               "x = sd.Variable((2, 3, 4), need_grad=True)\n"
               "out = [F.max(x, axis=1), F.min(x, axis=(0, 2), keepdims=True),\n"
               "       F.max(x, axis=-1, only_index=True), F.softmax(x, axis=1),\n"
               "       F.log_softmax(x)]\n"
               "print(json.dumps([[m for m in ('torch._dynamo', 'sympy') if m in sys.modules],\n"
               "                  [[list(o.shape), str(o.dtype)] for o in out]]))")
    assert _run(program) == [[], [[[2, 4], "float32"], [[1, 3, 1], "float32"],
                                  [[2, 3], "int64"], [[2, 3, 4], "float32"],
                                  [[2, 3, 4], "float32"]]]


def test_static_where_and_cntk_element_select_import_no_dynamo():
    # where (NNabla's leading-shape condition) kept meta inference: CNTK's element_select of a
    # static graph took 2.1 s to build on first use (torch._dynamo imported)
    program = ("import json, sys\nimport stadyn as sd, stadyn.functions as F\n"
               "import stadyn.compat.cntk as C\n"
               "c, x = sd.Variable((3, 5)), sd.Variable((3, 5, 2), need_grad=True)\n"
               "v = C.input_variable(3)\n"
               "out = [F.where(c, x, x * 2), C.element_select(C.greater(v, 0), v, -v)]\n"
               "print(json.dumps([[m for m in ('torch._dynamo', 'sympy') if m in sys.modules],\n"
               "                  list(out[0].shape), list(out[1].shape)]))")
    assert _run(program) == [[], [3, 5, 2], [3]]


def test_stadyn_and_its_front_ends_import_without_protobuf():
    # serialize/__init__.py imported _proto_schemas (google.protobuf) at import time; protobuf
    # then came only with the onnx extra, and `stadyn demo` stopped with ModuleNotFoundError:
    # No module named 'google' on a fresh machine (2026-12-07).  protobuf is a core dependency
    # now; importing Stadyn still loads it only when a protobuf file is read
    program = ("import builtins, json\nreal = builtins.__import__\n"
               "def refuse(name, *args, **kwargs):\n"
               "    if name == 'google' or name.startswith('google.'):\n"
               "        raise ModuleNotFoundError(\"No module named 'google'\")\n"
               "    return real(name, *args, **kwargs)\n"
               "builtins.__import__ = refuse\n"
               "import stadyn, stadyn.compat.nnabla, stadyn.compat.cntk, stadyn.brainscript\n"
               "print(json.dumps('imported'))")
    assert _run(program) == "imported"
