# Transfer learning from a saved model, in the manner of CNTK 301: a network trained on one task
# is saved, loaded back with C.load_model, its layers from the input up to the last hidden layer
# are cloned with their weights frozen (C.CloneMethod.freeze), and only a new output layer is
# trained for a new task.
#
# CNTK 301 starts from a ResNet trained on ImageNet and learns flowers; here the base model is a
# small convolutional network trained first on the digits 0-4 (the base task), and the new task
# is the digits 5-9, learnt from the frozen features.  Both sets are scikit-learn's digits at
# MNIST's 28x28; write them first with
#     python ../prepare_digits.py
#
# The one change from a CNTK 2.x program is the import line:
#     import cntk as C   ->   import stadyn.compat.cntk as C
#
#   python transfer_learning.py [--base-sweeps 10] [--sweeps 10] [--minibatch 32]
from __future__ import print_function
import argparse
import os
import time

import numpy as np
import stadyn.compat.cntk as C

image_shape = (1, 28, 28)
num_pixels = 28 * 28
num_classes = 5                       # each task has five digits
feature_node_name = "features"        # the base model's input
last_hidden_node_name = "last_hidden"  # the layer whose output the new head reads
new_output_node_name = "prediction"


def create_reader(path, is_training):
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
        labels=C.io.StreamDef(field='labels', shape=num_classes, is_sparse=False),
        features=C.io.StreamDef(field='features', shape=num_pixels, is_sparse=False))),
        randomize=is_training, max_sweeps=C.io.INFINITELY_REPEAT if is_training else 1)


def count_lines(path):
    return sum(1 for line in open(path))


# ---------------------------------------------------------------------------------------------
# The base model: trained on the base task and saved, as a pretrained model would be shipped.
# ---------------------------------------------------------------------------------------------
def create_base_model(features):
    with C.layers.default_options(init=C.glorot_uniform(), activation=C.relu, pad=True):
        h = C.element_times(C.constant(1.0 / 255.0), features)
        h = C.layers.Convolution2D((5, 5), 16, name='conv1')(h)
        h = C.layers.MaxPooling((2, 2), strides=(2, 2), name='pool1')(h)
        h = C.layers.Convolution2D((5, 5), 32, name='conv2')(h)
        h = C.layers.MaxPooling((2, 2), strides=(2, 2), name='pool2')(h)
        h = C.layers.Dense(64, name=last_hidden_node_name)(h)
        return C.layers.Dense(num_classes, activation=None, name='base_prediction')(h)


def train_base_model(train_file, test_file, model_file, sweeps, minibatch_size):
    features = C.input_variable(image_shape, name=feature_node_name)
    labels = C.input_variable(num_classes)
    z = create_base_model(features)
    ce = C.cross_entropy_with_softmax(z, labels)
    pe = C.classification_error(z, labels)
    learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.1),
                             C.momentum_schedule(0.9))
    trainer = C.Trainer(z, (ce, pe), [learner])

    train_sweeps(trainer, features, labels, train_file, sweeps, minibatch_size)
    print("Base model: test error {0:.2f}% on the base task".format(
        100 * test_error(trainer, features, labels, test_file)))
    z.save(model_file)
    print("Saved the base model to {}".format(model_file))


def train_sweeps(trainer, features, labels, train_file, sweeps, minibatch_size,
                 summarize=False):
    """Trains on ``sweeps`` passes over the file; returns the samples in one pass."""
    reader = create_reader(train_file, True)
    input_map = {features: reader.streams.features, labels: reader.streams.labels}
    epoch_size = count_lines(train_file)
    for epoch in range(sweeps):
        sample_count = 0
        while sample_count < epoch_size:
            data = reader.next_minibatch(min(minibatch_size, epoch_size - sample_count),
                                         input_map=input_map)
            trainer.train_minibatch(data)
            sample_count += trainer.previous_minibatch_sample_count
        if summarize:
            trainer.summarize_training_progress()
    return epoch_size


def test_error(trainer, features, labels, test_file):
    reader = create_reader(test_file, False)
    input_map = {features: reader.streams.features, labels: reader.streams.labels}
    errors, samples = 0.0, 0
    while True:
        data = reader.next_minibatch(100, input_map=input_map)
        if not data:
            break
        count = data[labels].num_samples
        errors += trainer.test_minibatch(data) * count
        samples += count
    return errors / samples


# ---------------------------------------------------------------------------------------------
# Transfer: clone the base model up to its last hidden layer, frozen, and put a new head on it.
# ---------------------------------------------------------------------------------------------
def create_model(base_model_file, num_classes, input_features, freeze=False):
    # Load the pretrained network and find the nodes we need.
    base_model = C.load_model(base_model_file)
    feature_node = C.logging.find_by_name(base_model, feature_node_name)
    last_node = C.logging.find_by_name(base_model, last_hidden_node_name)

    # Clone the layers from the input to the last hidden layer; frozen, their weights stay.
    cloned_layers = C.combine([last_node.owner]).clone(
        C.CloneMethod.freeze if freeze else C.CloneMethod.clone,
        {feature_node: C.placeholder(name='features')})

    # The new head for the new task.
    cloned_out = cloned_layers(input_features)
    z = C.layers.Dense(num_classes, activation=None, name=new_output_node_name)(cloned_out)
    return z


def train_model(base_model_file, train_file, sweeps, minibatch_size, freeze=True):
    image_input = C.input_variable(image_shape)
    label_input = C.input_variable(num_classes)
    tl_model = create_model(base_model_file, num_classes, image_input, freeze=freeze)

    ce = C.cross_entropy_with_softmax(tl_model, label_input)
    pe = C.classification_error(tl_model, label_input)
    lr_schedule = C.learning_parameter_schedule(0.2)
    mm_schedule = C.momentum_schedule(0.9)
    learner = C.momentum_sgd(tl_model.parameters, lr_schedule, mm_schedule,
                             l2_regularization_weight=0.0005)
    progress_printer = C.logging.ProgressPrinter(tag='Training', num_epochs=sweeps)
    trainer = C.Trainer(tl_model, (ce, pe), learner, progress_printer)
    C.logging.log_number_of_parameters(tl_model)

    start = time.time()
    epoch_size = train_sweeps(trainer, image_input, label_input, train_file, sweeps,
                              minibatch_size, summarize=True)
    elapsed = time.time() - start
    print("Trained the new head on {0} samples in {1:.2f}s ({2:.0f} samples/s)".format(
        sweeps * epoch_size, elapsed, sweeps * epoch_size / elapsed))
    return tl_model, trainer, image_input, label_input


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description="CNTK 301-style transfer learning")
    parser.add_argument("--data", default=os.path.join(here, "..", "data", "Digits"))
    parser.add_argument("--models", default=os.path.join(here, "Models"))
    parser.add_argument("--base-sweeps", type=int, default=10)
    parser.add_argument("--sweeps", type=int, default=10)
    parser.add_argument("--minibatch", type=int, default=32)
    args = parser.parse_args()

    files = {}
    for name in ("Train-0to4", "Test-0to4", "Train-5to9", "Test-5to9"):
        files[name] = os.path.join(args.data, name + "-28x28_cntk_text.txt")
        if not os.path.isfile(files[name]):
            raise ValueError("Please write the data first: python ../prepare_digits.py")
    if not os.path.isdir(args.models):
        os.makedirs(args.models)
    base_model_file = os.path.join(args.models, "digits0to4_base.model")
    tl_model_file = os.path.join(args.models, "digits5to9_transfer.model")

    np.random.seed(0)
    C.cntk_py.set_fixed_random_seed(1)

    train_base_model(files["Train-0to4"], files["Test-0to4"], base_model_file,
                     args.base_sweeps, args.minibatch)
    tl_model, trainer, image_input, label_input = train_model(
        base_model_file, files["Train-5to9"], args.sweeps, args.minibatch, freeze=True)
    error = test_error(trainer, image_input, label_input, files["Test-5to9"])
    print("Transfer model: test error {0:.2f}% on the new task (digits 5-9)".format(100 * error))
    tl_model.save(tl_model_file)
    print("Saved the transfer model to {}".format(tl_model_file))


if __name__ == "__main__":
    main()
