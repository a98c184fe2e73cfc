"""What running CNTK's image and time-series tutorial notebooks on Stadyn found (CNTK_103D,
105, 201B, 206C, 106B; see docs/cntk-notebooks.md), each compared with CNTK 2.7."""

import numpy as np

from compat_harness import cntk_case


@cntk_case(names=["cntk.Function.eval", "cntk.cross_entropy_with_softmax",
                  "cntk.Trainer.test_minibatch"],
           note="CNTK_103D: the model evaluated on one image, then a new model and its loss "
                "built on the same inputs; Stadyn joined the image input's batch of 1 with "
                "the labels' last minibatch of 5 and refused the loss")
def model_rebuilt_after_eval(C, r):
    r.touch("cntk.Function.eval", "cntk.Trainer.test_minibatch")
    x = C.input_variable((1, 4, 4))
    y = C.input_variable(3)

    def create_model(features):
        with C.layers.default_options(activation=C.relu):
            h = C.layers.Convolution2D((3, 3), num_filters=2, pad=True)(features)
            return C.layers.Dense(3, activation=None)(h)

    def train_test(z):
        model = z(x / 255)
        loss = C.cross_entropy_with_softmax(model, y)
        trainer = C.Trainer(z, (loss, C.classification_error(model, y)),
                            [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
        trainer.train_minibatch({x: images, y: labels})
        return [trainer.previous_minibatch_loss_average,
                trainer.test_minibatch({x: images, y: labels})]

    images = r.rand(5, 1, 4, 4) * 255
    labels = r.onehot(5, 3)
    z = create_model(x)
    res = {"parameters": r.set_params(z.parameters), "first": train_test(z)}
    res["one image"] = C.softmax(z).eval(images[0])
    z = create_model(x)
    r.set_params(z.parameters)
    res["second"] = train_test(z)
    return res
