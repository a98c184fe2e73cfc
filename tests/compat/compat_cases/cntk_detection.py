"""What running CNTK's object-detection examples (``Examples/Image/Detection``: Faster R-CNN's
``run_faster_rcnn.py`` with its ``utils/rpn`` user functions and ``od_mb_source.py``; tests/
examples/cntk_examples.py, docs/cntk-examples.md) on Stadyn found, each compared with CNTK 2.7."""

import os

import numpy as np

from compat_harness import cntk_case


def _target_layer(C):
    """A user function of two outputs as the examples' AnchorTargetLayer and
    ProposalTargetLayer are written: ``infer_outputs`` reads what ``__init__`` sets after
    ``super().__init__``, ``forward(arguments, outputs, ...)`` fills ``outputs`` by
    ``self.outputs``, an output of ``FreeDimension`` rows, one given without the batch axis."""
    class Targets(C.ops.functions.UserFunction):
        def __init__(self, a, rows, name="Targets"):
            super(Targets, self).__init__([a], name=name)
            self._rows = rows                      # (after super().__init__, as the examples)

        def infer_outputs(self):
            x = self.inputs[0]
            return [C.output_variable(x.shape, x.dtype, x.dynamic_axes, needs_gradient=False,
                                      name="doubled"),
                    C.output_variable((C.FreeDimension, x.shape[0]), x.dtype, x.dynamic_axes,
                                      needs_gradient=False, name="rows")]

        def forward(self, arguments, outputs, device=None, outputs_to_retain=None):
            outputs[self.outputs[0]] = arguments * 2.0
            rows = np.arange(self._rows, dtype=np.float32)[:, None] + arguments[0][None, :]
            outputs[self.outputs[1]] = rows                  # one sample: no batch axis
            return None

        def backward(self, state, root_gradients, variables):
            pass
    return Targets


@cntk_case(names=["cntk.ops.functions.UserFunction", "cntk.user_function",
                  "cntk.output_variable", "cntk.FreeDimension",
                  "cntk.ops.functions.UserFunction.infer_outputs"],
           note="Examples/Image/Detection/utils/rpn/anchor_target_layer.py and "
                "proposal_target_layer.py: user functions of 3 and 4 outputs whose "
                "forward(arguments, outputs, ...) fills the dict outputs, with outputs of "
                "FreeDimension rows given as one sample without the batch axis, and whose "
                "infer_outputs reads an attribute set after super().__init__; Stadyn asked "
                "infer_outputs inside UserFunction.__init__ (AttributeError), took one output "
                "only and refused FreeDimension")
def user_function_of_several_outputs(C, r):
    Targets = _target_layer(C)
    x = C.input_variable(3)
    f = C.user_function(Targets(x, 4))
    a = r.randn(1, 3).astype(np.float32)
    out = f.eval({x: a})
    r.touch("cntk.ops.functions.UserFunction.infer_outputs", "cntk.Function.eval",
            "cntk.Function.outputs")
    total = C.reduce_sum(f.outputs[0]) + C.reduce_sum(f.outputs[1])
    return {"outputs": len(f.outputs), "doubled": out[f.outputs[0]],
            "rows": out[f.outputs[1]], "total": total.eval({x: a}),
            "declared": [list(f.outputs[0].shape), list(f.outputs[1].shape)[1:]]}


@cntk_case(names=["cntk.ops.functions.UserFunction", "cntk.user_function", "cntk.Trainer"],
           note="Examples/Image/Detection/utils/rpn/proposal_layer.py takes its training "
                "settings when outputs_to_retain is not empty and its test settings when it is: "
                "CNTK 2.7 gives the output to retain when a gradient may follow (train_minibatch"
                "), none when evaluating; Stadyn called forward(argument) alone (TypeError)")
def user_function_outputs_to_retain(C, r):
    seen = []

    class Proposals(C.ops.functions.UserFunction):
        def __init__(self, a, name="Proposals"):
            super(Proposals, self).__init__([a], name=name)

        def infer_outputs(self):
            x = self.inputs[0]
            return [C.output_variable(x.shape, x.dtype, x.dynamic_axes, needs_gradient=False,
                                      name="proposals")]

        def forward(self, argument, device=None, outputs_to_retain=None):
            seen.append(len(outputs_to_retain))
            return None, argument * (3.0 if len(outputs_to_retain) else 1.0)

        def backward(self, state, root_gradients):
            return root_gradients * 0.0
    x, y = C.input_variable(2), C.input_variable(2)
    z = C.layers.Dense(2, init=C.glorot_uniform(seed=1))(x)
    p = C.user_function(Proposals(z))
    loss = C.reduce_sum(C.square(p - y)) + C.reduce_sum(C.square(z - y))
    a, b = r.randn(3, 2).astype(np.float32), r.randn(3, 2).astype(np.float32)
    res = {"eval": p.eval({x: a})}
    lr = C.learning_parameter_schedule(0.1)
    trainer = C.Trainer(None, (loss, None), [C.sgd(z.parameters, lr)])
    trainer.train_minibatch({x: a, y: b})
    res["trained loss"] = trainer.previous_minibatch_loss_average
    res["retained"] = list(seen)
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.previous_minibatch_loss_average")
    return res


@cntk_case(names=["cntk.train.distributed.DistributedLearner.set_as_metric_aggregator",
                  "cntk.train.distributed.DistributedLearner.is_metric_aggregator",
                  "cntk.train.distributed.data_parallel_distributed_learner", "cntk.Trainer"],
           note="Examples/Image/Detection/FasterRCNN/FasterRCNN_train.py trains with two "
                "distributed learners (biases and the rest) and marks neither: CNTK 2.7 updates "
                "and then raises 'Metric aggregation did not happen' at each train_minibatch "
                "(the driver marks one); it marks a lone distributed learner itself and refuses "
                "distributed and plain learners together.  Stadyn had no "
                "set_as_metric_aggregator and checked none of it")
def distributed_learners_need_a_metric_aggregator(C, r):
    D = C.train.distributed
    x, y = C.input_variable(3), C.input_variable(2)
    z = C.layers.Dense(2, init=C.glorot_uniform(seed=2))(x)
    loss, err = C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)
    ps = z.parameters
    data = {x: r.randn(2, 3).astype(np.float32), y: np.eye(2, dtype=np.float32)}

    def each(mark=None):
        lr = C.learning_parameter_schedule(0.1)
        learners = [D.data_parallel_distributed_learner(C.sgd([p], lr)) for p in ps]
        if mark is not None:
            learners[mark].set_as_metric_aggregator()
        return learners
    res = {}
    learners = each()
    res["marked before"] = [l.is_metric_aggregator() for l in learners]
    trainer = C.Trainer(None, (loss, err), learners)
    before = [p.value.copy() for p in ps]
    try:
        trainer.train_minibatch(data)
        res["unmarked"] = "ran"
    except RuntimeError as e:
        res["unmarked"] = str(e).splitlines()[0]
    res["moved"] = [bool(not np.array_equal(v, p.value)) for v, p in zip(before, ps)]
    res["samples"] = trainer.total_number_of_samples_seen
    learners = each(1)
    trainer = C.Trainer(None, (loss, err), learners)
    trainer.train_minibatch(data)
    res["marked"] = [l.is_metric_aggregator() for l in learners]
    res["marked loss"] = trainer.previous_minibatch_loss_average
    res["marked metric"] = trainer.previous_minibatch_evaluation_average
    lone = D.data_parallel_distributed_learner(C.sgd(ps, C.learning_parameter_schedule(0.1)))
    res["lone"] = [lone.is_metric_aggregator()]
    C.Trainer(None, (loss, err), [lone])
    res["lone"].append(lone.is_metric_aggregator())
    try:
        C.Trainer(None, (loss, err), [D.data_parallel_distributed_learner(
            C.sgd([ps[0]], C.learning_parameter_schedule(0.1))),
            C.sgd([ps[1]], C.learning_parameter_schedule(0.1))])
        res["mixed"] = "made"
    except ValueError as e:
        res["mixed"] = str(e).splitlines()[0]
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.previous_minibatch_loss_average",
            "cntk.Trainer.previous_minibatch_evaluation_average",
            "cntk.Trainer.total_number_of_samples_seen",
            "cntk.train.distributed.DistributedLearner.set_as_metric_aggregator",
            "cntk.train.distributed.DistributedLearner.is_metric_aggregator")
    return res


@cntk_case(names=["cntk.io.MinibatchData", "cntk.Value", "cntk.io.UserMinibatchSource",
                  "cntk.io.StreamInformation", "cntk.Trainer"],
           note="Examples/Image/Detection/utils/od_mb_source.py: a UserMinibatchSource whose "
                "next_minibatch takes input_map itself and returns MinibatchData(Value(batch="
                "image)) of one image without the batch axis (the sample's own shape), which "
                "CNTK 2.7 trains on as one sample; Stadyn called next_minibatch without "
                "input_map (the source then keyed a stream None) and refused the sample-shaped "
                "value ('does not fit an input of per-sample shape')")
def user_source_with_its_own_input_map(C, r):
    io = C.io
    images = r.randn(3, 2, 3, 3).astype(np.float32)
    targets = r.randn(3, 4).astype(np.float32)

    class Source(io.UserMinibatchSource):
        def __init__(self):
            self.image_si = io.StreamInformation("image", 0, "dense", np.float32, (2, 3, 3))
            self.target_si = io.StreamInformation("target", 1, "dense", np.float32, (4,))
            self.extra_si = None
            self.at = 0
            super(Source, self).__init__()

        def stream_infos(self):
            return [self.image_si, self.target_si]

        def next_minibatch(self, num_samples, number_of_workers=1, worker_rank=1, device=None,
                           input_map=None):
            image, target = images[self.at % 3], targets[self.at % 3]
            self.at += 1
            if input_map is None:
                return {self.image_si: io.MinibatchData(C.Value(batch=image), 1, 1, False),
                        self.target_si: io.MinibatchData(C.Value(batch=target), 1, 1, False),
                        self.extra_si: None}
            result = {input_map[self.image_si]: io.MinibatchData(C.Value(batch=image), 1, 1,
                                                                 False)}
            if self.target_si in input_map:
                result[input_map[self.target_si]] = io.MinibatchData(C.Value(batch=target), 1,
                                                                     1, False)
            return result
    x, y = C.input_variable((2, 3, 3)), C.input_variable(4)
    z = C.layers.Dense(4, init=C.glorot_uniform(seed=3))(x)
    loss = C.squared_error(z, y)
    source = Source()
    trainer = C.Trainer(None, (loss, None), [C.sgd(z.parameters,
                                                  C.learning_parameter_schedule(0.05))])
    res = {"losses": [], "counts": []}
    for _ in range(3):
        mb = source.next_minibatch(1, input_map={source.image_si: x, source.target_si: y})
        res["keys"] = sorted(k.shape[0] for k in mb)
        trainer.train_minibatch(mb)
        res["losses"].append(trainer.previous_minibatch_loss_average)
        res["counts"].append(trainer.previous_minibatch_sample_count)
    mb = source.next_minibatch(1, input_map={source.image_si: x})
    res["eval"] = z.eval({x: mb[x]})
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.previous_minibatch_loss_average",
            "cntk.Trainer.previous_minibatch_sample_count", "cntk.Function.eval")
    return res


@cntk_case(names=["cntk.classification_error", "cntk.metrics.classification_error",
                  "cntk.Trainer"],
           note="Examples/Image/Detection/FastRCNN/FastRCNN_train.py (and Faster R-CNN) measure "
                "classification_error(cls_score, label_targets, axis=1) of (ROIs, classes) "
                "scores per image: CNTK 2.7 gives one number per image, the fraction of its "
                "ROIs wrong (Function.cpp: ReduceMean of the rows whose target differs from "
                "their maxima); Stadyn gave one error per ROI, which the Trainer summed "
                "(Faster R-CNN's 'metric = 1125.00%')")
def classification_error_along_an_axis(C, r):
    x, y = C.input_variable((4, 3)), C.input_variable((4, 3))
    w = C.parameter((3, 3), init=C.glorot_uniform(seed=1))
    z = C.times(x, w)
    err = C.classification_error(z, y, axis=1)
    loss = C.reduce_sum(C.cross_entropy_with_softmax(z, y, axis=1)) * 0.25
    a = r.randn(2, 4, 3).astype(np.float32)
    b = r.onehot(8, 3).reshape(2, 4, 3).astype(np.float32)
    res = {"shape": list(err.shape), "eval": err.eval({x: a, y: b})}
    trainer = C.Trainer(None, (loss, err), [C.sgd([w], C.learning_parameter_schedule(0.1))])
    trainer.train_minibatch({x: a, y: b})
    res["metric"] = trainer.previous_minibatch_evaluation_average
    # ties: every maximum counts as a prediction, so a tie is wrong against a one-hot target
    v, u = C.input_variable(3), C.input_variable(3)
    res["ties"] = C.classification_error(v, u, axis=0).eval(
        {v: np.array([[1, 1, 0], [0, 2, 1]], np.float32),
         u: np.array([[1, 0, 0], [0, 1, 0]], np.float32)})
    res["last axis"] = C.classification_error(z, y).eval({x: a, y: b})
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.previous_minibatch_evaluation_average",
            "cntk.metrics.classification_error")
    return res


@cntk_case(names=["cntk.roipooling", "cntk.Function.clone", "cntk.Function.arguments",
                  "cntk.Function.placeholders", "cntk.CloneMethod"],
           note="Examples/Image/Detection/FastRCNN/FastRCNN_train.py's eval model: "
                "clone_model(model, ['data', 'roi_proposals'], ['cls_score', 'bbox_regr'], "
                "CloneMethod.freeze) applied to (image_input, roi_proposals) binds the "
                "placeholders in the order CNTK 2.7 lists them, roipooling's feature map before "
                "its regions; Stadyn listed the regions first (its values read them first), so "
                "the image went to the regions and the regions to the convolution")
def roipooling_operands_in_cntks_order(C, r):
    x = C.input_variable((2, 8, 8), name="data")
    conv = C.relu(C.layers.Convolution((3, 3), 4, pad=True, init=C.glorot_uniform(seed=1))(x),
                  name="relu5")
    rois_in = C.input_variable((3, 4), name="rois_in")
    rois = C.alias(rois_in, name="roi_proposals")
    pooled = C.roipooling(conv, rois, C.MAX_POOLING, (2, 2), spatial_scale=1.0)
    score = C.layers.Dense(3, init=C.glorot_uniform(seed=2), name="cls_score")(pooled)
    model = C.combine([score])
    nodes = [model.find_by_name(n) for n in ["data", "roi_proposals"]]
    holders = [C.placeholder(name="for_" + n) for n in ["data", "rois"]]
    cloned = C.combine([model.find_by_name("cls_score")]).clone(
        C.CloneMethod.freeze, dict(zip(nodes, holders)))
    image = C.input_variable((2, 8, 8))
    regions = C.input_variable((3, 4))
    applied = cloned(image, regions)
    a = r.rand(1, 2, 8, 8).astype(np.float32)
    b = np.array([[[0, 0, 3, 3], [2, 2, 7, 7], [1, 0, 6, 4]]], np.float32)
    r.touch("cntk.Function.find_by_name", "cntk.Function.eval", "cntk.Function.__call__",
            "cntk.Function.clone", "cntk.Function.arguments", "cntk.Function.placeholders")
    return {"arguments": [v.name for v in model.arguments],
            "pooling arguments": [v.name for v in pooled.arguments],
            "placeholders": [v.name for v in cloned.placeholders],
            "clone arguments": [v.name for v in cloned.arguments],
            "original": model.eval({x: a, rois_in: b}),
            "applied": applied.eval({image: a, regions: b})}


@cntk_case(names=["cntk.convolution", "cntk.pooling", "cntk.load_model"],
           note="the detection examples' AlexNet starts with a 5x5 convolution of stride 4 "
                "(auto padding) on a 224 or 160 picture: CNTK 2.7 centres the first window on "
                "position extra // 2, extra being what the centres' span leaves of the axis "
                "(ConvolveGeometry.h:385-399, GetLowerPad), which a stride of 3 or more makes "
                "1 or more; Stadyn centred it on position 0 (Fast R-CNN's losses 8% apart), in "
                "the Python API and in loaded model files alike")
def auto_padding_of_strides_of_three_and_more(C, r):
    res = {}
    for k, s, n in ((5, 4, 12), (5, 4, 13), (3, 4, 12), (4, 4, 12), (5, 3, 9), (3, 2, 8),
                    (5, 4, 160)):
        x = C.input_variable((1, n, n))
        w = C.constant(r.randn(1, 1, k, k).astype(np.float32))
        y = C.convolution(w, x, strides=(1, s, s), auto_padding=[False, True, True])
        data = r.randn(1, 1, n, n).astype(np.float32)
        res["conv %d/%d on %d" % (k, s, n)] = y.eval({x: data})
        p = C.pooling(x, C.MAX_POOLING, (k, k), strides=(s, s), auto_padding=[True, True])
        res["max pool %d/%d on %d" % (k, s, n)] = p.eval({x: data})
        a = C.pooling(x, C.AVG_POOLING, (k, k), strides=(s, s), auto_padding=[True, True])
        res["average pool %d/%d on %d" % (k, s, n)] = a.eval({x: data})
    x = C.input_variable((2, 16, 16))
    w = C.parameter((3, 2, 5, 5), init=r.randn(3, 2, 5, 5).astype(np.float32))
    z = C.convolution(w, x, strides=(1, 4, 4), auto_padding=[False, True, True])
    data = r.randn(1, 2, 16, 16).astype(np.float32)
    with r.tempdir() as folder:
        path = os.path.join(folder, "conv.model")
        z.save(path)
        loaded = C.load_model(path)
        res["loaded"] = loaded.eval({loaded.arguments[0]: data})
    r.touch("cntk.Function.eval", "cntk.Function.save", "cntk.Function.arguments")
    return res


@cntk_case(names=["cntk.roipooling", "cntk.ops.functions.UserFunction", "cntk.FreeDimension",
                  "cntk.user_function"],
           note="Faster R-CNN's regions come from a user function (utils/rpn/proposal_layer.py)"
                " whose output has FreeDimension rows, their count known only when it runs: "
                "CNTK 2.7 pools as many regions as the rows it gives; Stadyn took the count "
                "from the rows' shape when the graph was built (1), so the regions came out on "
                "the batch axis (ShapeError in cntk_bin_max_pooling)")
def roipooling_over_free_dimension_rows(C, r):
    class Regions(C.ops.functions.UserFunction):
        def __init__(self, a, name="Regions"):
            super(Regions, self).__init__([a], name=name)

        def infer_outputs(self):
            x = self.inputs[0]
            return [C.output_variable((C.FreeDimension, 4), x.dtype, x.dynamic_axes,
                                      needs_gradient=False, name="rois")]

        def forward(self, arguments, device=None, outputs_to_retain=None):
            n = int(arguments[0][0])                   # as many regions as the first number
            rows = np.array([[k % 3, k % 2, 3 + 2 * k, 4 + k] for k in range(n)], np.float32)
            return None, rows                          # one sample: no batch axis

        def backward(self, state, root_gradients, variables):
            pass

    x = C.input_variable((2, 8, 8), needs_gradient=True)
    count = C.input_variable(1)
    rois = C.user_function(Regions(count))
    pooled = C.roipooling(x, rois, C.MAX_POOLING, (2, 3), spatial_scale=1.0)
    a = r.randn(1, 2, 8, 8).astype(np.float32)
    res = {"declared": list(pooled.shape)[1:]}      # (CNTK 2.7's first is FreeDimension)
    for n in (3, 1, 5):
        c = np.array([[n]], np.float32)
        res["pooled %d" % n] = pooled.eval({x: a, count: c})
        res["gradient %d" % n] = C.reduce_sum(pooled * pooled).grad({x: a, count: c},
                                                                   wrt=[x])
    r.touch("cntk.Function.eval", "cntk.Function.grad", "cntk.output_variable")
    return res


def _scaled_class(C):
    """A user function with state (a factor) that a model file keeps: ``serialize()`` gives
    it, ``deserialize(inputs, name, state)`` rebuilds the function; the class is made a name
    of this module, where loading finds it (by its module and class name, as CNTK 2.7 does)."""
    class Scaled(C.ops.functions.UserFunction):
        rebuilt = []

        def __init__(self, a, factor, name="Scaled"):
            super(Scaled, self).__init__([a], name=name)
            self.factor = factor

        def forward(self, argument, device=None, outputs_to_retain=None):
            return None, argument * self.factor

        def backward(self, state, root_gradients):
            return root_gradients * self.factor

        def infer_outputs(self):
            x = self.inputs[0]
            return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]

        def serialize(self):
            return {"factor": self.factor}

        @staticmethod
        def deserialize(inputs, name, state):
            Scaled.rebuilt.append((name, float(state["factor"])))
            return Scaled(inputs[0], float(state["factor"]), name=name)
    globals()["Scaled"] = Scaled
    return Scaled


@cntk_case(names=["cntk.ops.functions.UserFunction", "cntk.Function.save", "cntk.load_model",
                  "cntk.ops.functions.UserFunction.serialize",
                  "cntk.ops.functions.UserFunction.deserialize"],
           note="Examples/Image/Detection/FasterRCNN's eval model holds the ProposalLayer user "
                "function and is saved, then loaded by FasterRCNN_eval: CNTK 2.7 keeps the "
                "function's module, class, name and serialize() state and rebuilds it with the "
                "class's deserialize(inputs, name, state); Stadyn refused to save it "
                "(ExportError)")
def save_and_load_a_user_function(C, r):
    Scaled = _scaled_class(C)
    Scaled.rebuilt[:] = []
    x = C.input_variable(3, name="x")
    w = C.constant(r.randn(3, 2).astype(np.float32))
    z = C.times(C.user_function(Scaled(x, 2.5, name="scaled")), w, name="z")
    a = r.randn(2, 3).astype(np.float32)
    with r.tempdir() as folder:
        path = os.path.join(folder, "scaled.model")
        z.save(path)
        loaded = C.load_model(path)
        out = loaded.eval({loaded.arguments[0]: a})
    r.touch("cntk.Function.eval", "cntk.Function.arguments", "cntk.Function.save",
            "cntk.ops.functions.UserFunction.serialize",
            "cntk.ops.functions.UserFunction.deserialize")
    return {"original": z.eval({x: a}), "loaded": out,
            "rebuilt": [list(t) for t in Scaled.rebuilt]}


@cntk_case(names=["cntk.Function.register_udf_deserialize_callback",
                  "cntk.debugging.UserFunction.deserialize"],
           note="a program that rebuilds a saved user function itself registers a callback "
                "under the function's op name ('<module>.<class>' unless op_name is "
                "overridden): "
                "load_model calls it with (inputs, name, state) instead of the class's "
                "deserialize")
def user_function_rebuilt_by_a_registered_callback(C, r):
    Scaled = _scaled_class(C)
    Scaled.rebuilt[:] = []
    called = []

    def rebuild(inputs, name, state):
        called.append((name, float(state["factor"])))
        return Scaled(inputs[0], 2.0 * float(state["factor"]), name=name)   # a new factor
    x = C.input_variable(3, name="x")
    z = C.user_function(Scaled(x, 1.5, name="scaled")) + 1.0
    a = r.randn(2, 3).astype(np.float32)
    with r.tempdir() as folder:
        path = os.path.join(folder, "scaled.model")
        z.save(path)
        # a user function's op name is '<module>.<class>' unless its class overrides it
        C.Function.register_udf_deserialize_callback(Scaled.__module__ + ".Scaled", rebuild)
        loaded = C.load_model(path)
        out = loaded.eval({loaded.arguments[0]: a})
    r.touch("cntk.Function.eval", "cntk.Function.save", "cntk.load_model",
            "cntk.debugging.UserFunction.deserialize",
            "cntk.Function.register_udf_deserialize_callback")
    return {"original": z.eval({x: a}), "loaded": out,
            "callback": [list(t) for t in called],
            "class_deserialize": [list(t) for t in Scaled.rebuilt]}
