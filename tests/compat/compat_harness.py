"""The per-name harness: one case runs unchanged on a real framework and on Stadyn's compat layer.

A *case* is a small function written against a framework's public API, exactly as a user types
it.  Its parameters say which modules it needs, by the names users give them:

* CNTK cases: ``C`` (``import cntk as C``);
* NNabla cases: ``nn``, ``F``, ``PF``, ``S``, ``I`` (``nnabla``, ``.functions``,
  ``.parametric_functions``, ``.solvers``, ``.initializer``);
* both: ``r`` (a :class:`Run`: seeded inputs, deterministic parameter values, gradients,
  other modules by name) and ``np``.

The generators (``refgen/gen_*.py``) bind the modules to the real CNTK 2.7 / NNabla 1.39 and
save what the case returns; the tests bind them to ``stadyn.compat.cntk`` / ``.nnabla`` and
compare.  Modules are handed over through a recording proxy, so every name a case touches is
known on both sides; a case must touch every name it says it covers.

A case returns a dict: NumPy arrays and numbers (compared with ``rtol``/``atol`` and by dtype
and shape), or JSON-able values (strings, lists, dicts, ``None``; compared exactly, floats inside
them with the tolerance).

This file (and the case files) must parse under Python 3.6: CNTK 2.7's interpreter.
"""

import contextlib
import functools
import importlib
import inspect
import io
import json
import math
import os
import shutil
import tempfile
import types
import zlib
from collections import OrderedDict

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REFS = os.path.join(HERE, "refs")

# Case registries by framework, in definition order.
CASES = {"cntk": OrderedDict(), "nnabla": OrderedDict()}

# Which module each case parameter stands for.
BINDINGS = {
    "cntk": {"C": "cntk"},
    "nnabla": {"nn": "nnabla", "F": "nnabla.functions", "PF": "nnabla.parametric_functions",
               "S": "nnabla.solvers", "I": "nnabla.initializer"},
}


class Case(object):
    """One entry: a snippet, the public names it covers, and how to compare its results."""

    def __init__(self, framework, name, fn, names, rtol, atol, tols, dtypes, xfail, known,
                 note, substitutes, expected, programs=()):
        self.framework = framework
        self.name = name
        self.fn = fn
        self.names = tuple(names)
        self.rtol = rtol
        self.atol = atol
        self.tols = dict(tols or {})
        self.dtypes = dtypes
        self.xfail = xfail
        self.known = dict(known or {})
        self.note = note
        self.substitutes = dict(substitutes or {})
        self.expected = expected
        self.programs = tuple(programs)

    def missing_programs(self):
        """The programs of ``programs`` this machine does not have on its PATH."""
        return [p for p in self.programs if shutil.which(p) is None]

    def __repr__(self):
        return "<case %s:%s>" % (self.framework, self.name)

    def tolerance(self, key):
        return self.tols.get(key, (self.rtol, self.atol))


def case(framework, name=None, names=(), rtol=1e-5, atol=1e-6, tols=None, dtypes=True,
         xfail=None, known=None, note="", substitutes=None, expected=None, programs=()):
    """Register the decorated function as a case.

    Args:
        framework: ``"cntk"`` or ``"nnabla"``.
        name: the case's name (its reference file's name); default: the function's name.
        names: the public names it covers, as users reach them (``"cntk.ops.minus"``,
            ``"nnabla.functions.relu"``, ``"cntk.Function.eval"`` for a method).
        rtol, atol: the tolerance for arrays and floats; ``tols`` overrides it per key.
        dtypes: compare array dtypes too (default).
        xfail: a reason: Stadyn is known to differ here (the test is ``xfail(strict=True)``).
        known: ``{key: reason}``: results Stadyn is known to get wrong while the rest of the case
            agrees; the case's test skips them and each gets its own ``xfail(strict=True)``
            test, so the rest still guards against new bugs.
        note: why the case is as it is (a tolerance, a substitute, ...), for the README reader.
        substitutes: ``{path: real path}``: on the *real* side, what the case reaches as
            ``path`` comes from ``real path`` -- for names the real framework keeps elsewhere
            (the 2017 betas' ``cntk.models.Sequential`` is 2.7's ``cntk.layers.Sequential``;
            Stadyn's ``nnabla.solvers.AMSGrad`` is NNabla's ``AMSGRAD``).
        expected: for names no real framework here can run (the 2017 betas' printer, NNabla's
            MPI communicators on a CPU build, Stadyn's extra ops): a function ``f(np)``
            returning the expected results, derived by hand or with NumPy from the documented
            behaviour; there is then no reference file.
        programs: the programs the case runs on both sides (``("dot",)``: Graphviz's): on a
            machine without one on its PATH the case's test skips, naming it, and the
            generators leave its reference as it is.
    """
    def register(fn):
        case_name = name or fn.__name__
        registry = CASES[framework]
        if case_name in registry:
            raise ValueError("two %s cases named %r" % (framework, case_name))
        registry[case_name] = Case(framework, case_name, fn, names, rtol, atol, tols, dtypes,
                                   xfail, known, note, substitutes, expected, programs)
        return fn
    return register


cntk_case = functools.partial(case, "cntk")
nnabla_case = functools.partial(case, "nnabla")


# -- the two sides ------------------------------------------------------------------------------


class Side(object):
    """Where modules come from: the real framework (``prefix=""``) or Stadyn's compat layer
    (``prefix="stadyn.compat."``)."""

    def __init__(self, framework, prefix, isolate=None):
        self.framework = framework
        self.prefix = prefix
        self.isolate = isolate  # a context-manager factory: a fresh parameter registry, ...

    @property
    def real(self):
        return self.prefix == ""

    def module(self, path):
        """The module users reach as ``path`` (``cntk.io.transforms``)."""
        parts = (self.prefix + path).split(".")
        obj = importlib.import_module(parts[0])
        for i, part in enumerate(parts[1:], 1):
            try:
                obj = importlib.import_module(".".join(parts[:i + 1]))
            except ImportError:
                obj = getattr(obj, part)
        return obj


class Recorder(object):
    """The set of public names a case touched (``cntk.layers.Dense``)."""

    def __init__(self):
        self.touched = set()


class ModuleProxy(object):
    """A module seen through a :class:`Recorder`: attribute reads are recorded by their
    user-facing path; submodules come back proxied too.  ``substitute(path)`` gives the object
    to use instead of the module's own (or None)."""

    __slots__ = ("_module", "_path", "_recorder", "_substitute")

    def __init__(self, module, path, recorder, substitute=None):
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_recorder", recorder)
        object.__setattr__(self, "_substitute", substitute or (lambda path: None))

    def __getattr__(self, name):
        path = self._path + "." + name
        obj = self._substitute(path)
        if obj is None:
            obj = getattr(self._module, name)
        self._recorder.touched.add(path)
        if isinstance(obj, types.ModuleType):
            return ModuleProxy(obj, path, self._recorder, self._substitute)
        return obj

    def __repr__(self):
        return "<proxy of %s>" % self._path


def _seed_of(text):
    return zlib.crc32(text.encode("utf-8")) & 0x7FFFFFFF


class Run(object):
    """What a case gets as ``r``: seeded data, parameter values, gradients and module look-up.

    Everything random is drawn from a NumPy ``RandomState`` seeded by the case's name, so both
    sides see the same numbers.
    """

    def __init__(self, case, side, recorder):
        self.case = case
        self.side = side
        self.recorder = recorder
        self.rng = np.random.RandomState(_seed_of(case.framework + ":" + case.name))
        self.real = side.real

    # -- modules --------------------------------------------------------------------------------
    def module(self, path):
        """Another module, recorded like the bound ones: ``r.module("nnabla.monitor")``."""
        self.recorder.touched.add(path)
        module = self._substitute(path) or self.side.module(path)
        return ModuleProxy(module, path, self.recorder, self._substitute)

    def _substitute(self, path):
        if not self.real or path not in self.case.substitutes:
            return None
        return self.side.module(self.case.substitutes[path])

    def touch(self, *names):
        """Record the use of names that are reached another way (methods of returned objects:
        ``r.touch("cntk.Function.eval")``)."""
        self.recorder.touched.update(names)

    # -- data -----------------------------------------------------------------------------------
    def randn(self, *shape):
        return self.rng.standard_normal(shape).astype(np.float32)

    def rand(self, *shape, **kw):
        low, high = kw.get("low", 0.0), kw.get("high", 1.0)
        return self.rng.uniform(low, high, shape).astype(np.float32)

    def randint(self, low, high, shape, dtype=np.int32):
        return self.rng.randint(low, high, shape).astype(dtype)

    def onehot(self, n, classes):
        labels = self.rng.randint(0, classes, n)
        return np.eye(classes, dtype=np.float32)[labels]

    def inputs(self, shapes, data=None):
        """One array per shape: standard normal, or ``data[i](r, shape)`` where given."""
        out = []
        for i, shape in enumerate(shapes):
            make = data[i] if data else None
            out.append(make(self, tuple(shape)) if make else self.randn(*shape))
        return out

    @staticmethod
    @contextlib.contextmanager
    def tempdir():
        """A temporary folder, removed afterwards (``with r.tempdir() as folder:``)."""
        folder = tempfile.mkdtemp()
        try:
            yield folder
        finally:
            shutil.rmtree(folder)

    def weights_like(self, array):
        """Seeded weights for ``sum(output * w)``, the scalar a case's gradients are of."""
        return self.randn(*np.shape(array))

    # -- parameters -----------------------------------------------------------------------------
    @staticmethod
    def param_value(name, shape, scale=0.5):
        """A deterministic value for the parameter ``name`` of ``shape``, the same on both sides:
        uniform in ``[-scale, scale)`` from a generator seeded by the name and the *size*, laid
        out in C order.  A parameter one framework shapes ``(144, 3)`` and the other
        ``(4, 6, 6, 3)`` thus gets the same numbers in the same memory order, so a difference
        in the shapes alone (reported by :meth:`set_params`) does not hide the rest."""
        size = int(np.prod([int(s) for s in shape]))
        rng = np.random.RandomState(_seed_of("%s|%d" % (name, size)))
        values = rng.uniform(-scale, scale, size).astype(np.float32)
        return values.reshape(tuple(int(s) for s in shape))

    def set_params(self, params, scale=0.5):
        """Give every parameter its :meth:`param_value`.

        ``params`` is a CNTK ``parameters`` list or NNabla's ``get_parameters()`` dict.  Returns
        the sorted ``[name, shape]`` list -- a result in its own right: the names and shapes a
        model creates are part of the API.  Two parameters with the same name and size would
        get the same values, so that is an error: give the case's layers distinct sizes.
        """
        items = list(params.items()) if isinstance(params, dict) else \
            [(p.name, p) for p in params]
        seen = set()
        listing = []
        for name, p in items:
            shape = tuple(int(s) for s in p.shape)
            size = int(np.prod(shape))
            if (name, size) in seen:
                raise ValueError("case %s: two parameters %r of size %d; give the layers "
                                 "distinct sizes" % (self.case.name, name, size))
            seen.add((name, size))
            value = self.param_value(name, shape, scale)
            if isinstance(params, dict):
                p.d = value
            else:
                p.value = value
            listing.append([name, list(shape)])
        return sorted(listing)

    @staticmethod
    def param_values(params):
        """``{"name|size": value}`` of CNTK parameters or NNabla's parameter dict (after
        training), flattened, so that neither the order nor the shapes' grouping hides the
        values."""
        items = list(params.items()) if isinstance(params, dict) else \
            [(p.name, p) for p in params]
        out = {}
        for name, p in items:
            value = np.array(p.d if isinstance(params, dict) else p.value).ravel()
            out["%s|%d" % (name, value.size)] = value
        return out

    # -- gradients (CNTK) -----------------------------------------------------------------------
    def cntk_forward_backward(self, f, feed, wrt):
        """``f``'s training-mode value for ``feed`` and the gradients of ``sum(f * w)`` with
        respect to ``wrt`` (seeded ``w``), through CNTK's ``forward``/``backward``."""
        self.touch("cntk.Function.forward", "cntk.Function.backward", "cntk.Function.output")
        state, outs = f.forward(feed, [f.output], set([f.output]))
        value = outs[f.output]
        grads = f.backward(state, {f.output: self.weights_like(value)}, set(wrt))
        return value, [grads[v] for v in wrt]


# -- running and comparing ----------------------------------------------------------------------


@contextlib.contextmanager
def _scratch_folder():
    """Run in a new temporary working directory, removed afterwards: what a case (or the
    framework it calls) writes at relative paths -- NNabla's ``load`` makes a dataset's
    relative ``cache_dir`` there -- stays out of the checkout, on both sides."""
    here = os.getcwd()
    folder = tempfile.mkdtemp(prefix="compat_case_")
    os.chdir(folder)
    try:
        yield folder
    finally:
        os.chdir(here)
        shutil.rmtree(folder, ignore_errors=True)


def run_case(case, side):
    """Run ``case`` on ``side``; returns ``(results, touched names)``."""
    recorder = Recorder()
    run = Run(case, side, recorder)
    kwargs = {}
    for param in inspect.signature(case.fn).parameters:
        if param == "r":
            kwargs[param] = run
        elif param == "np":
            kwargs[param] = np
        else:
            path = BINDINGS[case.framework].get(param)
            if path is None:
                raise TypeError("case %s: unknown parameter %r" % (case.name, param))
            kwargs[param] = run.module(path)
            recorder.touched.discard(path)
    with _scratch_folder():
        if side.isolate is not None:
            with side.isolate():
                results = case.fn(**kwargs)
        else:
            results = case.fn(**kwargs)
    if not isinstance(results, dict):
        raise TypeError("case %s returned %s, not a dict" % (case.name, type(results).__name__))
    return normalise(results), sorted(recorder.touched)


def _is_numeric(value):
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "biufc"
    return isinstance(value, (np.generic, float, int)) and not isinstance(value, bool)


def normalise(results):
    """Arrays for numbers, JSON text for the rest (``{key: ("array"|"json", value)}``)."""
    out = OrderedDict()
    for key in results:
        value = results[key]
        if _is_numeric(value):
            out[key] = ("array", np.asarray(value))
        else:
            out[key] = ("json", json.loads(json.dumps(_jsonable(value), sort_keys=True)))
    return out


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return dict((str(k), _jsonable(v)) for k, v in value.items())
    return value


def ref_path(framework, name):
    return os.path.join(REFS, framework, name + ".npz")


def save_ref(case, results, touched, version, folder=None):
    """Write ``refs/<framework>/<case>.npz`` (or into ``folder``): arrays under their keys, the
    rest as JSON text under ``json.<key>``, and ``_meta`` (framework version, names touched)."""
    arrays = {}
    for key, (kind, value) in results.items():
        if kind == "array":
            arrays[key] = value
        else:
            arrays["json." + key] = np.array(json.dumps(value, sort_keys=True))
    meta = {"version": version, "touched": touched}
    arrays["_meta"] = np.array(json.dumps(meta, sort_keys=True))
    path = os.path.join(folder, case.name + ".npz") if folder else \
        ref_path(case.framework, case.name)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    # whole or not at all: a generator that dies while writing (CNTK 2.7 now and then aborts
    # in its reader threads) leaves no truncated reference for a resumed run to keep
    with open(path + ".part", "wb") as f:
        f.write(buf.getvalue())
    os.replace(path + ".part", path)
    return path


def load_ref(framework, name, folder=None):
    """``(results, meta)`` as :func:`save_ref` wrote them (from ``folder`` if given)."""
    path = os.path.join(folder, name + ".npz") if folder else ref_path(framework, name)
    with np.load(path, allow_pickle=False) as data:
        results = OrderedDict()
        meta = None
        for key in data.files:
            if key == "_meta":
                meta = json.loads(str(data[key]))
            elif key.startswith("json."):
                results[key[5:]] = ("json", json.loads(str(data[key])))
            else:
                results[key] = ("array", data[key])
    return results, meta


def compare(case, actual, expected, keys=None):
    """The differences between two result dicts, as readable lines (empty when they agree);
    only over ``keys`` when given."""
    if keys is not None:
        actual = OrderedDict((k, v) for k, v in actual.items() if k in keys)
        expected = OrderedDict((k, v) for k, v in expected.items() if k in keys)
    problems = []
    missing = [k for k in expected if k not in actual]
    extra = [k for k in actual if k not in expected]
    if missing:
        problems.append("missing results: %s" % ", ".join(missing))
    if extra:
        problems.append("results the reference does not have: %s" % ", ".join(extra))
    for key in expected:
        if key not in actual:
            continue
        (kind_a, a), (kind_e, e) = actual[key], expected[key]
        rtol, atol = case.tolerance(key)
        if kind_a != kind_e:
            problems.append("%s: %s where the reference has %s (%r vs %r)"
                            % (key, kind_a, kind_e, _short(a), _short(e)))
        elif kind_e == "array":
            problems.extend(_compare_arrays(key, a, e, rtol, atol, case.dtypes))
        else:
            problems.extend(_compare_json(key, a, e, rtol, atol))
    return problems


def _short(value, limit=200):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _compare_arrays(key, a, e, rtol, atol, dtypes):
    if a.shape != e.shape:
        return ["%s: shape %s, reference %s" % (key, a.shape, e.shape)]
    problems = []
    if dtypes and a.dtype != e.dtype:
        problems.append("%s: dtype %s, reference %s" % (key, a.dtype, e.dtype))
    if e.dtype.kind in "biu" and a.dtype.kind in "biu":
        bad = a != e
    else:
        af, ef = a.astype(np.float64), e.astype(np.float64)
        bad = ~np.isclose(af, ef, rtol=rtol, atol=atol, equal_nan=True)
    if np.any(bad):
        idx = np.argwhere(bad) if a.ndim else [()]
        first = tuple(idx[0])
        problems.append("%s: %d of %d values differ beyond rtol=%g atol=%g; first at %s: %r vs "
                        "reference %r" % (key, int(np.sum(bad)), bad.size, rtol, atol, first,
                                          a[first], e[first]))
    return problems


def _compare_json(key, a, e, rtol, atol, where=""):
    label = key + where
    if isinstance(e, float) or isinstance(a, float):
        if isinstance(a, (int, float)) and isinstance(e, (int, float)) \
                and not isinstance(a, bool) and not isinstance(e, bool):
            if math.isnan(e) and math.isnan(a):
                return []
            if math.isinf(e) or math.isinf(a):     # an infinity compares exactly (inf - inf
                if a == e:                          # is NaN, and any finite value was within
                    return []                       # inf's tolerance)
            elif abs(a - e) <= atol + rtol * abs(e):
                return []
        return ["%s: %r, reference %r" % (label, a, e)]
    if isinstance(e, list) and isinstance(a, list):
        if len(a) != len(e):
            return ["%s: %d items, reference %d (%s vs %s)" % (label, len(a), len(e), _short(a),
                                                               _short(e))]
        problems = []
        for i, (x, y) in enumerate(zip(a, e)):
            problems.extend(_compare_json(key, x, y, rtol, atol, "%s[%d]" % (where, i)))
        return problems
    if isinstance(e, dict) and isinstance(a, dict):
        if sorted(a) != sorted(e):
            return ["%s: keys %s, reference %s" % (label, sorted(a), sorted(e))]
        problems = []
        for k in sorted(e):
            problems.extend(_compare_json(key, a[k], e[k], rtol, atol, "%s[%r]" % (where, k)))
        return problems
    if a != e:
        return ["%s: %s, reference %s" % (label, _short(a), _short(e))]
    return []


# -- small readers cases share ------------------------------------------------------------------


def _varint(buf, pos):
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _fields(buf):
    """``(field number, wire type, value)`` of a protobuf message (varint, 64-bit, bytes,
    32-bit values)."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError("protobuf wire type %d" % wire)
        yield number, wire, value


def event_scalars(folder):
    """The scalars in the TensorBoard event files under ``folder``: sorted ``[tag, step,
    value]`` (TFRecord framing; ``Event.step`` = 2, ``Event.summary`` = 5,
    ``Summary.value`` = 1, ``Value.tag`` = 1, ``Value.simple_value`` = 2)."""
    import struct
    out = []
    for root, _, files in os.walk(folder):
        for name in sorted(files):
            with open(os.path.join(root, name), "rb") as f:
                data = f.read()
            pos = 0
            while pos + 12 <= len(data):
                (length,) = struct.unpack("<Q", data[pos:pos + 8])
                record = data[pos + 12:pos + 12 + length]
                pos += 12 + length + 4
                step, values = 0, []
                for number, _, value in _fields(record):
                    if number == 2:
                        step = value
                    elif number == 5:
                        for n, _, v in _fields(value):
                            if n == 1:
                                tag, simple = None, None
                                for fn, _, fv in _fields(v):
                                    if fn == 1:
                                        tag = fv.decode("utf-8")
                                    elif fn == 2:
                                        (simple,) = struct.unpack("<f", fv)
                                if tag is not None and simple is not None:
                                    values.append([tag, int(step), float(simple)])
                out.extend(values)
    return sorted(out)
