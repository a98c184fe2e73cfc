# Slot tagging in the manner of CNTK 202 (language understanding on ATIS): each word of a
# query gets a slot label from an embedding, an LSTM recurrence over the query and a dense
# classifier; the words and labels come as sequences from a CTF file (sparse one-hot), the loss
# and error are per word, and training runs Adam with gradient clipping, CNTK's per-minibatch
# learning rates and ProgressPrinter; the error on a held-out file follows.
#
# The data are made-up queries in ATIS's CTF layout; write them first with
#     python ../prepare_sequences.py
#
# The one change from a CNTK 2.x program is the import line:
#     import cntk as C   ->   import stadyn.compat.cntk as C
#
#   python language_understanding.py [--epochs 10] [--epoch-size 18000]
from __future__ import print_function
import argparse
import os

import numpy as np
import stadyn.compat.cntk as C

parser = argparse.ArgumentParser()
parser.add_argument("--data", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "..", "data"))
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--epoch-size", type=int, default=18000)
parser.add_argument("--minibatch", type=int, default=70)
parser.add_argument("--emb", type=int, default=150)
parser.add_argument("--hidden", type=int, default=300)
args = parser.parse_args()

# number of words in vocab, slot labels, and intent labels
vocab_size = 40
num_labels = 8
num_intents = 5

# model dimensions
emb_dim = args.emb
hidden_dim = args.hidden

x = C.sequence.input_variable(vocab_size)
y = C.sequence.input_variable(num_labels)


def create_model():
    with C.layers.default_options(initial_state=0.1):
        return C.layers.Sequential([
            C.layers.Embedding(emb_dim, name='embed'),
            C.layers.Recurrence(C.layers.LSTM(hidden_dim), go_backwards=False),
            C.layers.Dense(num_labels, name='classify')
        ])


def create_reader(path, is_training):
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
        query=C.io.StreamDef(field='S0', shape=vocab_size, is_sparse=True),
        intent_unused=C.io.StreamDef(field='S1', shape=num_intents, is_sparse=True),
        slot_labels=C.io.StreamDef(field='S2', shape=num_labels, is_sparse=True)
    )), randomize=is_training, max_sweeps=C.io.INFINITELY_REPEAT if is_training else 1)


def create_criterion_function_preferred(model, labels):
    ce = C.cross_entropy_with_softmax(model, labels)
    errs = C.classification_error(model, labels)
    return ce, errs


def train(reader, model_func, max_epochs=10):
    model = model_func(x)
    loss, label_error = create_criterion_function_preferred(model, y)

    epoch_size = args.epoch_size
    minibatch_size = args.minibatch
    lr_per_sample = [3e-4] * 4 + [1.5e-4]
    lr_per_minibatch = [lr * minibatch_size for lr in lr_per_sample]
    lr_schedule = C.learning_parameter_schedule(lr_per_minibatch, epoch_size=epoch_size)
    momentums = C.momentum_schedule(0.9048374180359595, minibatch_size=minibatch_size)
    learner = C.adam(parameters=model.parameters, lr=lr_schedule, momentum=momentums,
                     gradient_clipping_threshold_per_sample=15,
                     gradient_clipping_with_truncation=True)
    progress_printer = C.logging.ProgressPrinter(tag='Training', num_epochs=max_epochs)
    trainer = C.Trainer(model, (loss, label_error), learner, progress_printer)
    C.logging.log_number_of_parameters(model)

    t = 0
    losses = []
    for epoch in range(max_epochs):
        epoch_end = (epoch + 1) * epoch_size
        while t < epoch_end:
            data = reader.next_minibatch(minibatch_size, input_map={
                x: reader.streams.query,
                y: reader.streams.slot_labels
            })
            trainer.train_minibatch(data)
            losses.append(trainer.previous_minibatch_loss_average)
            t += data[y].num_samples
        trainer.summarize_training_progress()
    quarter = max(len(losses) // 4, 1)
    print("Mean train loss: first quarter %.4f, last quarter %.4f"
          % (np.mean(losses[:quarter]), np.mean(losses[-quarter:])))
    return model


def evaluate(reader, model_func):
    model = model_func(x)
    loss, label_error = create_criterion_function_preferred(model, y)
    progress_printer = C.logging.ProgressPrinter(tag='Evaluation', num_epochs=0)
    evaluator = C.Evaluator(label_error, progress_printer)
    total, errors = 0, 0.0
    while True:
        minibatch_size = 500
        data = reader.next_minibatch(minibatch_size, input_map={
            x: reader.streams.query,
            y: reader.streams.slot_labels
        })
        if not data:
            break
        n = data[y].num_samples
        errors += evaluator.test_minibatch(data) * n
        total += n
    evaluator.summarize_test_progress()
    print("Test error: %.4f on %d words" % (errors / total, total))


reader = create_reader(os.path.join(args.data, "ATIS", "atis.train.ctf"), is_training=True)
model = create_model()
train(reader, model, max_epochs=args.epochs)
test_reader = create_reader(os.path.join(args.data, "ATIS", "atis.test.ctf"), is_training=False)
evaluate(test_reader, model)
