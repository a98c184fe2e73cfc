"""What a case compares of a call that may raise: :func:`outcome` (the value, or the built-in
type of the error) and the variants the case modules bind of it.  Moved out of
``compat_harness.py`` (which runs and compares the cases); like it, this file parses under
Python 3.6 (CNTK 2.7's interpreter).
"""


def builtin_type(exc):
    """The name of the first built-in class ``exc`` is an instance of: what a case compares of
    an error (Stadyn's errors subclass CNTK's and NNabla's built-in types, so the type is what
    both sides share)."""
    return next(c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins")


def outcome(fn, convert=None, raised=None, catch=Exception):
    """What a case compares of ``fn()``: its value (through ``convert`` when given), or for
    what it raised ``raised(exc)``, by default ``"raises <built-in type>"``
    (:func:`builtin_type`).  Only errors of ``catch`` (a type or tuple of types) are caught;
    any other propagates.

    The case modules' variants bind these once (``functools.partial``): the bare type's name
    (``raised=builtin_type``), ``{"returns": value}`` / ``{"raises": type}``
    (:func:`as_returned`, :func:`as_raised`), only NNabla's refusals
    (:func:`nnabla_refusal`), ..."""
    try:
        got = fn()
    except catch as e:          # (the built-in type is what is compared, unless told)
        return "raises " + builtin_type(e) if raised is None else raised(e)
    return got if convert is None else convert(got)


def as_returned(got):
    """``{"returns": got}``: :func:`outcome`'s ``convert`` where a value and an error are told
    apart by their key."""
    return {"returns": got}


def as_raised(exc, first_line=False):
    """``{"raises": <built-in type>}`` (with ``first_line``, the first line of the message
    too): :func:`outcome`'s ``raised`` beside :func:`as_returned`."""
    out = {"raises": builtin_type(exc)}
    if first_line:
        out["first line"] = str(exc).splitlines()[0]
    return out


def nnabla_refusal(exc):
    """``"RuntimeError"`` for NNabla's refusals (a RuntimeError, or a subclass), else the
    error's own type's name: :func:`outcome`'s ``raised`` for NNabla cases."""
    return "RuntimeError" if isinstance(exc, RuntimeError) else type(exc).__name__


def minibatch_firsts(src, size, most=30, **kw):
    """The first value of every sequence of each minibatch ``src`` gives (a source over a
    stream ``x``), its samples and its sweep end, until the source ends or raises (the error as
    :func:`as_raised` gives it, last), at most ``most`` minibatches of ``size`` samples
    (``kw``: ``next_minibatch``'s partition).  The reading loop the CNTK reader cases share."""
    import numpy as np
    out = []
    for _ in range(most):
        got = outcome(lambda: src.next_minibatch(size, **kw), convert=as_returned,
                      raised=as_raised)
        if "raises" in got:
            out.append(got)
            break
        mb = got["returns"]
        if not mb:
            break
        d = mb[src.streams.x]
        out.append([[int(round(float(np.asarray(s).reshape(-1)[0]))) for s in d.as_sequences()],
                    int(d.num_samples), bool(d.end_of_sweep)])
        del d, mb, got    # (CNTK 2.7's prefetch reuses the matrices: hold no view)
    return out
