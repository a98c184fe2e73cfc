# A feed-forward network (a multi-layer perceptron), in the manner of CNTK 102: the two classes
# of CNTK 101's Gaussian points, now through two sigmoid hidden layers of 50 units built with
# C.layers.Dense under C.layers.default_options, trained by SGD and tested on unseen points.
#
# The one change from a CNTK 2.x program is the import line:
#     import cntk as C   ->   import stadyn.compat.cntk as C
#
#   python feedforward.py [--samples 20000] [--minibatch 25]
from __future__ import print_function
import argparse
import time

import numpy as np
import stadyn.compat.cntk as C

input_dim = 2
num_output_classes = 2
num_hidden_layers = 2
hidden_layers_dim = 50


def generate_random_data_sample(sample_size, feature_dim, num_classes):
    """Points of class k are Gaussian, centred further from the origin as k grows."""
    Y = np.random.randint(size=(sample_size, 1), low=0, high=num_classes)
    X = (np.random.randn(sample_size, feature_dim) + 3) * (Y + 1)
    X = X.astype(np.float32)
    class_ind = [Y == class_number for class_number in range(num_classes)]
    Y = np.asarray(np.hstack(class_ind), dtype=np.float32)
    return X, Y


def create_model(features):
    with C.layers.default_options(init=C.layers.glorot_uniform(), activation=C.sigmoid):
        h = features
        for _ in range(num_hidden_layers):
            h = C.layers.Dense(hidden_layers_dim)(h)
        last_layer = C.layers.Dense(num_output_classes, activation=None)
        return last_layer(h)


def print_training_progress(trainer, mb, frequency, verbose=1):
    training_loss, eval_error = "NA", "NA"
    if mb % frequency == 0:
        training_loss = trainer.previous_minibatch_loss_average
        eval_error = trainer.previous_minibatch_evaluation_average
        if verbose:
            print("Minibatch: {}, Train Loss: {:.4f}, Train Error: {:.2f}".format(
                mb, training_loss, eval_error))
    return mb, training_loss, eval_error


def main():
    parser = argparse.ArgumentParser(description="CNTK 102-style feed-forward network")
    parser.add_argument("--samples", type=int, default=20000, help="training samples")
    parser.add_argument("--minibatch", type=int, default=25)
    parser.add_argument("--test-samples", type=int, default=1000)
    parser.add_argument("--frequency", type=int, default=50, help="print every N minibatches")
    args = parser.parse_args()

    np.random.seed(0)
    C.cntk_py.set_fixed_random_seed(1)

    input = C.input_variable(input_dim)
    label = C.input_variable(num_output_classes)
    z = create_model(input)

    loss = C.cross_entropy_with_softmax(z, label)
    eval_error = C.classification_error(z, label)

    learning_rate = 0.5
    lr_schedule = C.learning_parameter_schedule(learning_rate)
    learner = C.sgd(z.parameters, lr_schedule)
    trainer = C.Trainer(z, (loss, eval_error), [learner])
    C.logging.log_number_of_parameters(z)

    num_minibatches_to_train = int(args.samples / args.minibatch)
    losses, errors = [], []
    start = time.time()
    for i in range(0, num_minibatches_to_train):
        features, labels = generate_random_data_sample(args.minibatch, input_dim,
                                                       num_output_classes)
        trainer.train_minibatch({input: features, label: labels})
        batchsize, loss_value, error = print_training_progress(trainer, i, args.frequency)
        if loss_value != "NA":
            losses.append(loss_value)
            errors.append(error)
    elapsed = time.time() - start
    print("Trained on {0} samples in {1:.2f}s ({2:.0f} samples/s)".format(
        num_minibatches_to_train * args.minibatch, elapsed,
        num_minibatches_to_train * args.minibatch / elapsed))
    quarter = max(1, len(losses) // 4)
    print("Mean train loss: first quarter {0:.4f}, last quarter {1:.4f}".format(
        np.mean(losses[:quarter]), np.mean(losses[-quarter:])))

    features, labels = generate_random_data_sample(args.test_samples, input_dim,
                                                   num_output_classes)
    test_error = trainer.test_minibatch({input: features, label: labels})
    print("Test error: {0:.4f} on {1} samples".format(test_error, args.test_samples))

    out = C.softmax(z)
    predicted_label_probs = out.eval({input: features[:25]})
    print("Label    :", [int(np.argmax(y)) for y in labels[:25]])
    print("Predicted:", [int(np.argmax(p)) for p in predicted_label_probs])


if __name__ == "__main__":
    main()
