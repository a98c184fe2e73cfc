"""Minibatch sources written in Python (``cntk.io.UserMinibatchSource`` with CNTK's
``StreamInformation`` and ``MinibatchData`` constructors): the minibatches read directly, the
streams' descriptions, and training from one through ``training_session`` (its parameters
after the run)."""

import numpy as np

from compat_harness import cntk_case


def _source_class(C):
    io = C.io

    class Source(io.UserMinibatchSource):
        """Serves two arrays in order, a sweep at a time (CNTK's documented pattern)."""

        def __init__(self, data, labels):
            self.data, self.labels, self.pos = data, labels, 0
            self.fsi = io.StreamInformation("features", 0, 'dense', np.float32, (3,))
            self.lsi = io.StreamInformation("labels", 1, 'dense', np.float32, (2,))
            super(Source, self).__init__()

        def stream_infos(self):
            return [self.fsi, self.lsi]

        def next_minibatch(self, num_samples, number_of_workers, worker_rank, device=None):
            n = min(num_samples, len(self.data) - self.pos)
            f = self.data[self.pos:self.pos + n]
            lab = self.labels[self.pos:self.pos + n]
            self.pos += n
            end = self.pos >= len(self.data)
            if end:
                self.pos = 0
            return {self.fsi: io.MinibatchData(C.Value(batch=f), n, n, end),
                    self.lsi: io.MinibatchData(C.Value(batch=lab), n, n, end)}
    return Source


@cntk_case(names=["cntk.io.UserMinibatchSource", "cntk.io.StreamInformation",
                  "cntk.io.MinibatchData", "cntk.Value", "cntk.io.UserMinibatchSource.streams",
                  "cntk.io.UserMinibatchSource.stream_info",
                  "cntk.io.UserMinibatchSource.next_minibatch",
                  "cntk.io.UserMinibatchSource.get_checkpoint_state",
                  "cntk.io.UserMinibatchSource.is_infinite",
                  "cntk.io.UserMinibatchSource.stream_infos",
                  "cntk.io.UserMinibatchSource.restore_from_checkpoint"])
def user_minibatch_source(C, r):
    r.touch("cntk.io.UserMinibatchSource.streams", "cntk.io.UserMinibatchSource.stream_info",
            "cntk.io.UserMinibatchSource.next_minibatch",
            "cntk.io.UserMinibatchSource.get_checkpoint_state",
            "cntk.io.UserMinibatchSource.is_infinite", "cntk.io.UserMinibatchSource.stream_infos",
            "cntk.io.UserMinibatchSource.restore_from_checkpoint")
    src = _source_class(C)(r.randn(7, 3), r.randn(7, 2))
    res = {"names": [str(s.m_name) for s in (src.streams.features, src.stream_info("labels"),
                                             src["features"])],
           "streams": [[list(s.sample_shape), str(s.storage_format)]
                       for s in (src.streams.features, src.streams.labels)]}
    for step in range(3):
        mb = src.next_minibatch(4, 1, 0)
        d = mb[src.streams.features]
        res["mb%d" % step] = d.asarray()
        res["mb%d_labels" % step] = mb[src.streams.labels].asarray()
        res["mb%d_counts" % step] = [d.num_samples, d.num_sequences, bool(d.end_of_sweep),
                                     list(d.shape)]
    res["state"] = src.get_checkpoint_state()
    src.restore_from_checkpoint({})                 # nothing to restore: accepted
    res["infos"] = [str(s.m_name) for s in src.stream_infos()]
    res["infinite"] = src.is_infinite()
    return res


@cntk_case(names=["cntk.io.UserMinibatchSource", "cntk.training_session", "cntk.Trainer"])
def user_minibatch_source__training_session(C, r):
    src = _source_class(C)(r.randn(7, 3), r.randn(7, 2))
    x, y = C.input_variable(3), C.input_variable(2)
    z = C.layers.Dense(2)(x)
    listing = r.set_params(z.parameters)
    trainer = C.Trainer(z, C.squared_error(z, y),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    C.training_session(trainer=trainer, mb_source=src, mb_size=3,
                       model_inputs_to_streams={x: src.streams.features,
                                                y: src.streams.labels},
                       max_samples=10).train()
    res = r.param_values(z.parameters)
    res["params"] = listing
    res["samples"] = trainer.total_number_of_samples_seen
    return res
