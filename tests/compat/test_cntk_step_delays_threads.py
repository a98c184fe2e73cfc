"""The delays given to a Python recurrence step being recorded (``_step_delays.given``) belong to
the thread recording it: a ``past_value`` of one step's value that another thread computes at
the same time (outside any step, or in a step of its own) takes none of them."""

import threading

import numpy as np

import stadyn.compat.cntk as C
from stadyn.compat.cntk import _step_delays
from stadyn.compat.cntk._adapt import unwrap
from stadyn.graph import Variable


def test_a_threads_delays_are_not_given_to_another_thread():
    mine, its = Variable((1, 3)), Variable((1, 3))
    one_step = Variable((1, 3))         # (a value of one step: no sequence axis)
    got = {}
    inside, asked = threading.Event(), threading.Event()

    def recording(key, given, wait_for, then):
        with _step_delays.given([given]):
            then.set()
            assert wait_for.wait(10)
            got[key] = _step_delays.in_step(one_step, "past_value")

    def outside():
        assert inside.wait(10)
        got["outside"] = _step_delays.in_step(one_step, "past_value")
        asked.set()

    threads = [threading.Thread(target=recording, args=("recording", mine, asked, inside)),
               threading.Thread(target=outside)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert got["outside"] is None       # (before cntkrec38: the other thread's step, taken)
    assert unwrap(got["recording"]) is mine
    # two threads each inside a step: each gets its own
    got.clear()
    first, second = threading.Event(), threading.Event()
    threads = [threading.Thread(target=recording, args=("a", mine, second, first)),
               threading.Thread(target=recording, args=("b", its, first, second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert unwrap(got["a"]) is mine and unwrap(got["b"]) is its


def test_recurrences_with_delays_made_in_two_threads_compute_their_own():
    # (numbers: the input one step back, as CNTK 2.7's past_value inside the step gives it,
    # recurrence__delay_inside_the_step; each thread's recurrence over its own data)
    data = {k: np.arange(1, 6, dtype=np.float32).reshape(5, 1) * k for k in (1.0, 10.0)}
    out = {}

    def run(k):
        x = C.sequence.input_variable(1)
        z = C.layers.Recurrence(lambda h, v: h + C.sequence.past_value(v))(x)
        out[k] = z.eval({x: [data[k]]})[0].ravel()
    threads = [threading.Thread(target=run, args=(k,)) for k in data]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for k, seq in data.items():
        delayed = np.concatenate([[0.0], seq.ravel()[:-1]])
        np.testing.assert_allclose(out[k], np.cumsum(delayed), rtol=1e-6)
