# An autoencoder for dimensionality reduction, in the manner of CNTK 105: each 784-pixel digit
# is squeezed through a 32-unit code and decoded back, the loss is a binary cross entropy
# written out by hand, and the "error" is C.classification_error of the picture against its
# reconstruction (whether the brightest pixel lands in the same place).  A deeper variant
# (784-128-64-32-64-128-784) comes with --deep.
#
# The data are scikit-learn's digits at MNIST's 28x28; write them first with
#     python ../prepare_digits.py
#
# The one change from a CNTK 2.x program is the import line:
#     import cntk as C   ->   import stadyn.compat.cntk as C
#
#   python autoencoder.py [--sweeps 20] [--minibatch 64] [--deep]
from __future__ import print_function
import argparse
import os
import time

import numpy as np
import stadyn.compat.cntk as C

input_dim = 784
encoding_dim = 32
output_dim = input_dim


def create_reader(path, is_training, input_dim, num_label_classes):
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
        labels_viz=C.io.StreamDef(field='labels', shape=num_label_classes, is_sparse=False),
        features=C.io.StreamDef(field='features', shape=input_dim, is_sparse=False))),
        randomize=is_training,
        max_sweeps=C.io.INFINITELY_REPEAT if is_training else 1)


def create_model(features):
    with C.layers.default_options(init=C.glorot_uniform()):
        # Pixels scaled to the 0-1 range.
        encode = C.layers.Dense(encoding_dim, activation=C.relu, name='encode')(features / 255.0)
        decode = C.layers.Dense(input_dim, activation=C.sigmoid, name='decode')(encode)
    return decode


def create_deep_model(features):
    with C.layers.default_options(init=C.layers.glorot_uniform()):
        encode = C.element_times(C.constant(1.0 / 255.0), features)
        for encoding_dim in [128, 64, 32]:
            encode = C.layers.Dense(encoding_dim, activation=C.relu)(encode)
        decode = encode
        for decoding_dim in [64, 128]:
            decode = C.layers.Dense(decoding_dim, activation=C.relu)(decode)
        decode = C.layers.Dense(input_dim, activation=C.sigmoid)(decode)
    return decode


def reconstruction_mse(model, input, test_file):
    """The mean squared difference, on the 0-255 scale, of the test pictures and their
    reconstructions."""
    reader = create_reader(test_file, False, input_dim, 10)
    data = reader.next_minibatch(1000000, input_map={input: reader.streams.features})
    pictures = data[input].asarray().reshape(-1, input_dim)
    decoded = np.asarray(model.eval({input: pictures})).reshape(-1, input_dim) * 255
    return np.mean((decoded - pictures) ** 2)


def train_and_test(reader_train, reader_test, model_func, args):
    input = C.input_variable(input_dim)
    label = C.input_variable(input_dim)
    model = model_func(input)

    # The target is the picture itself, scaled to 0-1 as the model's input is; the loss is
    # the binary cross entropy -(y log p + (1 - y) log(1 - p)) summed over the pixels.
    target = label / 255.0
    loss = -(target * C.log(model) + (1 - target) * C.log(1 - model))
    label_error = C.classification_error(model, target)

    epoch_size = 30000
    minibatch_size = args.minibatch
    num_minibatches_to_train = (args.samples_per_sweep * args.sweeps) // minibatch_size

    lr_per_sample = [0.00003]
    lr_schedule = C.learning_parameter_schedule_per_sample(lr_per_sample, epoch_size=epoch_size)
    momentum_schedule = C.momentum_schedule_per_sample(0.9990913221888589)
    learner = C.fsadagrad(model.parameters, lr=lr_schedule, momentum=momentum_schedule)

    progress_printer = C.logging.ProgressPrinter(0)
    trainer = C.Trainer(model, (loss, label_error), learner, progress_printer)

    input_map = {input: reader_train.streams.features, label: reader_train.streams.features}
    print("Reconstruction MSE on the test pictures before training: {0:.1f}".format(
        reconstruction_mse(model, input, args.test_file)))

    aggregate_metric = 0
    first_losses, last_losses = [], []
    per_sweep = max(1, args.samples_per_sweep // minibatch_size)
    start = time.time()
    for i in range(num_minibatches_to_train):
        data = reader_train.next_minibatch(minibatch_size, input_map=input_map)
        trainer.train_minibatch(data)
        samples = trainer.previous_minibatch_sample_count
        aggregate_metric += trainer.previous_minibatch_evaluation_average * samples
        if i < per_sweep:
            first_losses.append(trainer.previous_minibatch_loss_average)
        if i >= num_minibatches_to_train - per_sweep:
            last_losses.append(trainer.previous_minibatch_loss_average)
    elapsed = time.time() - start
    samples_seen = num_minibatches_to_train * minibatch_size
    print("Trained on {0} samples in {1:.2f}s ({2:.0f} samples/s)".format(
        samples_seen, elapsed, samples_seen / elapsed))
    print("Mean train loss: first sweep {0:.2f}, last sweep {1:.2f}".format(
        np.mean(first_losses), np.mean(last_losses)))
    train_error = (aggregate_metric * 100.0) / (trainer.total_number_of_samples_seen)
    print("Average training error: {0:0.2f}%".format(train_error))

    # Test on the held-out file.
    test_minibatch_size = 32
    metric_numer = 0
    metric_denom = 0
    test_input_map = {input: reader_test.streams.features, label: reader_test.streams.features}
    while True:
        data = reader_test.next_minibatch(test_minibatch_size, input_map=test_input_map)
        if not data:
            break
        count = data[input].num_samples
        eval_error = trainer.test_minibatch(data)
        metric_numer += np.abs(eval_error * count)
        metric_denom += count
    test_error = (metric_numer * 100.0) / metric_denom
    print("Average test error: {0:.2f}%".format(test_error))
    print("Reconstruction MSE on the test pictures after training: {0:.1f}".format(
        reconstruction_mse(model, input, args.test_file)))
    return model, train_error, test_error


def print_image_stats(img, text):
    print(text)
    print("Max: {0:.2f}, Median: {1:.2f}, Mean: {2:.2f}, Min: {3:.2f}".format(
        np.max(img), np.median(img), np.mean(img), np.min(img)))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description="CNTK 105-style autoencoder")
    parser.add_argument("--data", default=os.path.join(here, "..", "data", "Digits"))
    parser.add_argument("--sweeps", type=int, default=20)
    parser.add_argument("--minibatch", type=int, default=64)
    parser.add_argument("--samples-per-sweep", type=int, default=1497)
    parser.add_argument("--deep", action="store_true", help="the deep variant")
    args = parser.parse_args()

    train_file = os.path.join(args.data, "Train-28x28_cntk_text.txt")
    test_file = args.test_file = os.path.join(args.data, "Test-28x28_cntk_text.txt")
    for path in (train_file, test_file):
        if not os.path.isfile(path):
            raise ValueError("Please write the data first: python ../prepare_digits.py")

    np.random.seed(0)
    C.cntk_py.set_fixed_random_seed(1)

    num_label_classes = 10
    reader_train = create_reader(train_file, True, input_dim, num_label_classes)
    reader_test = create_reader(test_file, False, input_dim, num_label_classes)
    model, _, _ = train_and_test(reader_train, reader_test,
                                 create_deep_model if args.deep else create_model, args)

    # Reconstruct one test picture and compare their statistics.
    reader_eval = create_reader(test_file, False, input_dim, num_label_classes)
    eval_input_map = {model.arguments[0]: reader_eval.streams.features}
    eval_data = reader_eval.next_minibatch(50, input_map=eval_input_map)
    img_data = eval_data[model.arguments[0]].asarray()
    idx = np.random.choice(50)
    orig_image = img_data[idx, :, :]
    decoded_image = model.eval(orig_image) * 255
    print_image_stats(orig_image, "Original image statistics:")
    print_image_stats(decoded_image, "Decoded image statistics:")


if __name__ == "__main__":
    main()
