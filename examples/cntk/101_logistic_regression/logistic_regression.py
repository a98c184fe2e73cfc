# Logistic regression, in the manner of CNTK 101: two classes of 2-D points drawn from Gaussians,
# a linear model written out with C.parameter and C.times, trained by SGD on fresh random
# minibatches, then tested on points it has not seen.
#
# The one change from a CNTK 2.x program is the import line:
#     import cntk as C   ->   import stadyn.compat.cntk as C
#
#   python logistic_regression.py [--samples 20000] [--minibatch 25]
from __future__ import print_function
import argparse
import time

import numpy as np
import stadyn.compat.cntk as C

# Two features per point, two classes.
input_dim = 2
num_output_classes = 2


def generate_random_data_sample(sample_size, feature_dim, num_classes):
    """Points of class k are Gaussian, centred further from the origin as k grows."""
    Y = np.random.randint(size=(sample_size, 1), low=0, high=num_classes)
    X = (np.random.randn(sample_size, feature_dim) + 3) * (Y + 1)
    X = X.astype(np.float32)
    # one-hot labels: class 0 -> [1 0], class 1 -> [0 1]
    class_ind = [Y == class_number for class_number in range(num_classes)]
    Y = np.asarray(np.hstack(class_ind), dtype=np.float32)
    return X, Y


# The model's parameters, kept by name so that we can print them after training.
mydict = {}


def linear_layer(input_var, output_dim):
    input_dim = input_var.shape[0]
    weight_param = C.parameter(shape=(input_dim, output_dim))
    bias_param = C.parameter(shape=(output_dim))
    mydict['w'], mydict['b'] = weight_param, bias_param
    return C.times(input_var, weight_param) + bias_param


def create_model(features):
    return linear_layer(features, num_output_classes)


def moving_average(a, w=10):
    if len(a) < w:
        return a[:]
    return [val if idx < w else sum(a[(idx - w):idx]) / w for idx, val in enumerate(a)]


def print_training_progress(trainer, mb, frequency, verbose=1):
    training_loss, eval_error = "NA", "NA"
    if mb % frequency == 0:
        training_loss = trainer.previous_minibatch_loss_average
        eval_error = trainer.previous_minibatch_evaluation_average
        if verbose:
            print("Minibatch: {0}, Loss: {1:.4f}, Error: {2:.2f}".format(mb, training_loss,
                                                                      eval_error))
    return mb, training_loss, eval_error


def main():
    parser = argparse.ArgumentParser(description="CNTK 101-style logistic regression")
    parser.add_argument("--samples", type=int, default=20000, help="training samples")
    parser.add_argument("--minibatch", type=int, default=25)
    parser.add_argument("--test-samples", type=int, default=1000)
    parser.add_argument("--frequency", type=int, default=50, help="print every N minibatches")
    args = parser.parse_args()

    np.random.seed(0)
    C.cntk_py.set_fixed_random_seed(1)

    feature = C.input_variable(input_dim, np.float32)
    label = C.input_variable(num_output_classes, np.float32)
    z = create_model(feature)

    loss = C.cross_entropy_with_softmax(z, label)
    eval_error = C.classification_error(z, label)

    learning_rate = 0.5
    lr_schedule = C.learning_parameter_schedule(learning_rate)
    learner = C.sgd(z.parameters, lr_schedule)
    trainer = C.Trainer(z, (loss, eval_error), [learner])

    num_minibatches_to_train = int(args.samples / args.minibatch)
    plotdata = {"batchsize": [], "loss": [], "error": []}
    start = time.time()
    for i in range(0, num_minibatches_to_train):
        features, labels = generate_random_data_sample(args.minibatch, input_dim,
                                                       num_output_classes)
        trainer.train_minibatch({feature: features, label: labels})
        batchsize, loss_value, error = print_training_progress(trainer, i, args.frequency,
                                                               verbose=1)
        if not (loss_value == "NA" or error == "NA"):
            plotdata["batchsize"].append(batchsize)
            plotdata["loss"].append(loss_value)
            plotdata["error"].append(error)
    elapsed = time.time() - start
    print("Trained on {0} samples in {1:.2f}s ({2:.0f} samples/s)".format(
        num_minibatches_to_train * args.minibatch, elapsed,
        num_minibatches_to_train * args.minibatch / elapsed))
    avg_loss = moving_average(plotdata["loss"])
    print("Moving-average loss: first {0:.4f}, last {1:.4f}".format(avg_loss[0], avg_loss[-1]))

    # Test on points the model has not seen.
    features, labels = generate_random_data_sample(args.test_samples, input_dim,
                                                   num_output_classes)
    test_error = trainer.test_minibatch({feature: features, label: labels})
    print("Test error: {0:.4f} on {1} samples".format(test_error, args.test_samples))

    # The model's class probabilities for a few points, against their labels.
    out = C.softmax(z)
    result = out.eval({feature: features[:25]})
    print("Label    :", [int(np.argmax(y)) for y in labels[:25]])
    print("Predicted:", [int(np.argmax(r)) for r in result])
    print("Weights:", np.round(mydict['w'].value, 4).tolist())
    print("Bias:   ", np.round(mydict['b'].value, 4).tolist())


if __name__ == "__main__":
    main()
