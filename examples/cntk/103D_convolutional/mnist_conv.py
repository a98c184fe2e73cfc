# A convolutional network on handwritten digits, in the manner of CNTK 103D: the images come
# from CNTK text-format files through a MinibatchSource, two 5x5 convolutions (with strides, or
# with max pooling) and a dense classifier, trained by SGD over several sweeps of the data and
# tested on a held-out file.
#
# The data are scikit-learn's digits at MNIST's 28x28; write them first with
#     python ../prepare_digits.py
#
# The one change from a CNTK 2.x program is the import line:
#     import cntk as C   ->   import stadyn.compat.cntk as C
#
#   python mnist_conv.py [--sweeps 10] [--minibatch 64] [--pooling]
from __future__ import print_function
import argparse
import os
import time

import numpy as np
import stadyn.compat.cntk as C

input_dim_model = (1, 28, 28)   # images are 28 x 28 with 1 channel of colour (gray)
input_dim = 28 * 28             # as they are stored in the files
num_output_classes = 10


def create_reader(path, is_training, input_dim, num_label_classes):
    ctf = C.io.CTFDeserializer(path, C.io.StreamDefs(
        labels=C.io.StreamDef(field='labels', shape=num_label_classes, is_sparse=False),
        features=C.io.StreamDef(field='features', shape=input_dim, is_sparse=False)))
    return C.io.MinibatchSource(ctf, randomize=is_training,
                                max_sweeps=C.io.INFINITELY_REPEAT if is_training else 1)


def create_model(features):
    with C.layers.default_options(init=C.glorot_uniform(), activation=C.relu):
        h = features
        h = C.layers.Convolution2D(filter_shape=(5, 5), num_filters=8, strides=(2, 2),
                                   pad=True, name='first_conv')(h)
        h = C.layers.Convolution2D(filter_shape=(5, 5), num_filters=16, strides=(2, 2),
                                   pad=True, name='second_conv')(h)
        r = C.layers.Dense(num_output_classes, activation=None, name='classify')(h)
        return r


def create_model_with_pooling(features):
    with C.layers.default_options(init=C.glorot_uniform(), activation=C.relu):
        h = features
        h = C.layers.Convolution2D(filter_shape=(5, 5), num_filters=8, strides=(1, 1),
                                   pad=True, name='first_conv')(h)
        h = C.layers.MaxPooling(filter_shape=(2, 2), strides=(2, 2), name='first_max')(h)
        h = C.layers.Convolution2D(filter_shape=(5, 5), num_filters=16, strides=(1, 1),
                                   pad=True, name='second_conv')(h)
        h = C.layers.MaxPooling(filter_shape=(3, 3), strides=(3, 3), name='second_max')(h)
        r = C.layers.Dense(num_output_classes, activation=None, name='classify')(h)
        return r


def create_criterion_function(model, labels):
    loss = C.cross_entropy_with_softmax(model, labels)
    errs = C.classification_error(model, labels)
    return loss, errs


def print_training_progress(trainer, mb, frequency, verbose=1):
    training_loss = "NA"
    eval_error = "NA"
    if mb % frequency == 0:
        training_loss = trainer.previous_minibatch_loss_average
        eval_error = trainer.previous_minibatch_evaluation_average
        if verbose:
            print("Minibatch: {0}, Loss: {1:.4f}, Error: {2:.2f}%".format(
                mb, training_loss, eval_error * 100))
    return mb, training_loss, eval_error


def train_test(x, y, train_reader, test_reader, model_func, args):
    # Scale the input to 0-1 range by dividing each pixel by 255.
    z = model_func(x / 255)
    loss, label_error = create_criterion_function(z, y)

    learning_rate = 0.2
    lr_schedule = C.learning_parameter_schedule(learning_rate)
    learner = C.sgd(z.parameters, lr_schedule)
    trainer = C.Trainer(z, (loss, label_error), [learner])

    minibatch_size = args.minibatch
    num_samples_per_sweep = args.samples_per_sweep
    num_minibatches_to_train = (num_samples_per_sweep * args.sweeps) // minibatch_size

    input_map = {y: train_reader.streams.labels, x: train_reader.streams.features}
    training_progress_output_freq = args.frequency

    start = time.time()
    losses = []
    for i in range(0, int(num_minibatches_to_train)):
        data = train_reader.next_minibatch(minibatch_size, input_map=input_map)
        trainer.train_minibatch(data)
        _, loss_value, _ = print_training_progress(trainer, i, training_progress_output_freq)
        losses.append(trainer.previous_minibatch_loss_average)
    elapsed = time.time() - start
    samples = num_minibatches_to_train * minibatch_size
    print("Trained on {0} samples in {1:.2f}s ({2:.0f} samples/s)".format(
        samples, elapsed, samples / elapsed))
    per_sweep = max(1, num_samples_per_sweep // minibatch_size)
    print("Mean train loss: first sweep {0:.4f}, last sweep {1:.4f}".format(
        np.mean(losses[:per_sweep]), np.mean(losses[-per_sweep:])))

    # Test the model on the held-out file, in minibatches, until the reader runs dry.
    test_input_map = {y: test_reader.streams.labels, x: test_reader.streams.features}
    test_minibatch_size = 512
    test_result = 0.0
    test_samples = 0
    while True:
        data = test_reader.next_minibatch(test_minibatch_size, input_map=test_input_map)
        if not data:
            break
        count = data[y].num_samples
        test_result += trainer.test_minibatch(data) * count
        test_samples += count
    print("Average test error: {0:.2f}% on {1} samples".format(
        test_result * 100 / test_samples, test_samples))
    return z


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description="CNTK 103D-style convolutional network")
    parser.add_argument("--data", default=os.path.join(here, "..", "data", "Digits"))
    parser.add_argument("--sweeps", type=int, default=10)
    parser.add_argument("--minibatch", type=int, default=64)
    parser.add_argument("--samples-per-sweep", type=int, default=1497)
    parser.add_argument("--frequency", type=int, default=20, help="print every N minibatches")
    parser.add_argument("--pooling", action="store_true", help="the max-pooling variant")
    args = parser.parse_args()

    train_file = os.path.join(args.data, "Train-28x28_cntk_text.txt")
    test_file = os.path.join(args.data, "Test-28x28_cntk_text.txt")
    for path in (train_file, test_file):
        if not os.path.isfile(path):
            raise ValueError("Please write the data first: python ../prepare_digits.py")

    np.random.seed(0)
    C.cntk_py.set_fixed_random_seed(1)

    x = C.input_variable(input_dim_model)
    y = C.input_variable(num_output_classes)

    # Look at the shapes each layer gives.
    z = create_model(x)
    print("Output Shape of the first convolution layer:", z.first_conv.shape)
    print("Bias value of the last dense layer:", z.classify.b.value)
    C.logging.log_number_of_parameters(z)

    reader_train = create_reader(train_file, True, input_dim, num_output_classes)
    reader_test = create_reader(test_file, False, input_dim, num_output_classes)
    model_func = create_model_with_pooling if args.pooling else create_model
    z = train_test(x, y, reader_train, reader_test, model_func, args)

    # Predicted classes of a few test images, with softmax probabilities.
    out = C.softmax(z)
    reader_eval = create_reader(test_file, False, input_dim, num_output_classes)
    eval_data = reader_eval.next_minibatch(25, input_map={x: reader_eval.streams.features,
                                                          y: reader_eval.streams.labels})
    img_label = eval_data[y].asarray()
    img_data = eval_data[x].asarray()
    img_data = np.reshape(img_data, (25, 1, 28, 28))
    predicted_label_prob = [out.eval(img_data[i]) for i in range(len(img_data))]
    gtlabel = [np.argmax(img_label[i, :]) for i in range(len(img_label))]
    pred = [np.argmax(predicted_label_prob[i]) for i in range(len(predicted_label_prob))]
    print("Label    :", [int(v) for v in gtlabel])
    print("Predicted:", [int(v) for v in pred])


if __name__ == "__main__":
    main()
