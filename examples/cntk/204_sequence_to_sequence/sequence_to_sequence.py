# A sequence-to-sequence model with attention, in the manner of CNTK 204 (grapheme to
# phoneme): an LSTM encoder over the letters (its own sequence axis, inputAxis), an LSTM decoder
# over the phonemes (labelAxis) whose first layer attends over every encoder step
# (AttentionModel), trained on the labels delayed by one step (<s> first) with fsadagrad;
# then CNTK 204's greedy decoder (UnfoldFrom around the whole decoder, which feeds its own
# hardmax back through its recurrences) transcribes some test words.
#
# The data are made-up words in CMUDict's CTF layout; write them first with
#     python ../prepare_sequences.py
#
# The one change from a CNTK 2.x program is the import line:
#     import cntk as C   ->   import stadyn.compat.cntk as C
#
#   python sequence_to_sequence.py [--epoch-size 25000] [--hidden 128] [--layers 2]
from __future__ import print_function
import argparse
import os

import numpy as np
import stadyn.compat.cntk as C

parser = argparse.ArgumentParser()
parser.add_argument("--data", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "..", "data"))
parser.add_argument("--epoch-size", type=int, default=25000)
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--minibatch", type=int, default=72)
parser.add_argument("--hidden", type=int, default=128)
parser.add_argument("--layers", type=int, default=2)
parser.add_argument("--attention-dim", type=int, default=32)
parser.add_argument("--embedding", type=int, default=32)
parser.add_argument("--eval-freq", type=int, default=100)
parser.add_argument("--lr", type=float, default=0.005)
parser.add_argument("--decode", type=int, default=60,
                    help="transcribe a minibatch of this many test samples after training")
args = parser.parse_args()

DATA_DIR = os.path.join(args.data, "CMUDict")
TRAINING_DATA = os.path.join(DATA_DIR, "g2p.train.ctf")
VALIDATION_DATA = os.path.join(DATA_DIR, "g2p.test.ctf")
VOCAB_FILE = os.path.join(DATA_DIR, "g2p.mapping")


def get_vocab(path):
    vocab = [w.strip() for w in open(path).readlines()]
    i2w = {i: w for i, w in enumerate(vocab)}
    w2i = {w: i for i, w in enumerate(vocab)}
    return (vocab, i2w, w2i)


vocab, i2w, w2i = get_vocab(VOCAB_FILE)
input_vocab_dim = len(vocab)
label_vocab_dim = len(vocab)


def create_reader(path, is_training):
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
        features=C.io.StreamDef(field='S0', shape=input_vocab_dim, is_sparse=True),
        labels=C.io.StreamDef(field='S1', shape=label_vocab_dim, is_sparse=True)
    )), randomize=is_training, max_sweeps=C.io.INFINITELY_REPEAT if is_training else 1)


hidden_dim = args.hidden
num_layers = args.layers
attention_dim = args.attention_dim
use_attention = True
use_embedding = True
embedding_dim = args.embedding
length_increase = 1.5

sentence_start = C.Constant(np.array([w == '<s>' for w in vocab], dtype=np.float32))
sentence_end_index = vocab.index('</s>')

# Source and target inputs to the model
inputAxis = C.Axis('inputAxis')
labelAxis = C.Axis('labelAxis')
InputSequence = C.layers.SequenceOver[inputAxis]
LabelSequence = C.layers.SequenceOver[labelAxis]


def create_model():  # :: (history*, input*) -> logP(w)*
    # Embedding: (input*) --> embedded_input*
    embed = C.layers.Embedding(embedding_dim, name='embed') if use_embedding else C.layers.identity

    # Encoder: (input*) --> (h0, c0)
    with C.layers.default_options(enable_self_stabilization=True, go_backwards=not use_attention):
        LastRecurrence = C.layers.Fold if not use_attention else C.layers.Recurrence
        encode = C.layers.Sequential([
            embed,
            C.layers.Stabilizer(),
            C.layers.For(range(num_layers - 1), lambda:
                         C.layers.Recurrence(C.layers.LSTM(hidden_dim))),
            LastRecurrence(C.layers.LSTM(hidden_dim), return_full_state=True),
            (C.layers.Label('encoded_h'), C.layers.Label('encoded_c')),
        ])

    # Decoder: (history*, input*) --> unnormalized_word_logp*
    with C.layers.default_options(enable_self_stabilization=True):
        stab_in = C.layers.Stabilizer()
        rec_blocks = [C.layers.LSTM(hidden_dim) for i in range(num_layers)]
        stab_out = C.layers.Stabilizer()
        proj_out = C.layers.Dense(label_vocab_dim, name='out_proj')
        if use_attention:
            attention_model = C.layers.AttentionModel(attention_dim, name='attention_model')

        @C.Function
        def decode(history, input):
            encoded_input = encode(input)
            r = history
            r = embed(r)
            r = stab_in(r)
            for i in range(num_layers):
                rec_block = rec_blocks[i]   # LSTM(hidden_dim)  # :: (dh, dc, x) -> (h, c)
                if use_attention:
                    if i == 0:
                        @C.Function
                        def lstm_with_attention(dh, dc, x):
                            h_att = attention_model(encoded_input.outputs[0], dh)
                            x = C.splice(x, h_att)
                            return rec_block(dh, dc, x)
                        r = C.layers.Recurrence(lstm_with_attention)(r)
                    else:
                        r = C.layers.Recurrence(rec_block)(r)
                else:
                    r = C.layers.RecurrenceFrom(rec_block)(*(encoded_input.outputs + (r,)))
            r = stab_out(r)
            r = proj_out(r)
            r = C.layers.Label('out_proj_out')(r)
            return r

    return decode


def create_model_train(s2smodel):
    # model used in training (history is known from labels)
    # note: the labels must NOT contain the initial <s>
    @C.Function
    def model_train(input, labels):  # (input*, labels*) --> (word_logp*)
        past_labels = C.layers.Delay(initial_state=sentence_start)(labels)
        return s2smodel(past_labels, input)
    return model_train


def create_criterion_function(model):
    @C.Function
    @C.layers.Signature(input=InputSequence[C.layers.Tensor[input_vocab_dim]],
                        labels=LabelSequence[C.layers.Tensor[label_vocab_dim]])
    def criterion(input, labels):
        # criterion function must drop the <s> from the labels
        postprocessed_labels = C.sequence.slice(labels, 1, 0)  # <s> A B C </s> --> A B C </s>
        z = model(input, postprocessed_labels)
        ce = C.cross_entropy_with_softmax(z, postprocessed_labels)
        errs = C.classification_error(z, postprocessed_labels)
        return (ce, errs)
    return criterion


def create_sparse_to_dense(input_vocab_dim):
    I = C.Constant(np.eye(input_vocab_dim))

    @C.Function
    @C.layers.Signature(InputSequence[C.layers.SparseTensor[input_vocab_dim]])
    def no_op(input):
        return C.times(input, I)
    return no_op


def create_model_greedy(s2smodel):
    # model used in (greedy) decoding (history is the decoder's own output)
    @C.Function
    @C.layers.Signature(InputSequence[C.layers.Tensor[input_vocab_dim]])
    def model_greedy(input):  # (input*) --> (word_sequence*)
        # decoding is an unfold() starting from sentence_start; the generator (history*) ->
        # (output*) holds 'input' in its closure
        unfold = C.layers.UnfoldFrom(lambda history: s2smodel(history, input) >> C.hardmax,
                                     # stop once sentence_end_index was the max-scoring output
                                     until_predicate=lambda w: w[..., sentence_end_index],
                                     length_increase=length_increase)
        return unfold(initial_state=sentence_start, dynamic_axes_like=input)
    return model_greedy


def transcribe(reader, s2smodel, i2w, count):
    model_greedy = create_model_greedy(s2smodel)
    sparse_to_dense = create_sparse_to_dense(input_vocab_dim)
    mb = reader.next_minibatch(count)
    letters = sparse_to_dense(mb[reader.streams.features])
    outputs = model_greedy(letters)
    for word, phonemes in zip(format_sequences(letters, i2w), format_sequences(outputs, i2w)):
        print("%s -> %s" % (word, phonemes))


def format_sequences(sequences, i2w):
    return [" ".join([i2w[np.argmax(w)] for w in s]) for s in sequences]


def train(train_reader, valid_reader, vocab, i2w, s2smodel, max_epochs, epoch_size):
    model_train = create_model_train(s2smodel)
    criterion = create_criterion_function(model_train)

    minibatch_size = args.minibatch
    lr = args.lr
    learner = C.fsadagrad(model_train.parameters,
                          lr=C.learning_rate_schedule([lr] * 2 + [lr / 2] * 3 + [lr / 4],
                                                      C.UnitType.sample, epoch_size),
                          momentum=C.momentum_as_time_constant_schedule(1100),
                          gradient_clipping_threshold_per_sample=2.3,
                          gradient_clipping_with_truncation=True)
    trainer = C.Trainer(None, criterion, learner)

    total_samples = 0
    mbs = 0
    eval_freq = args.eval_freq
    C.logging.log_number_of_parameters(model_train)
    print()
    progress_printer = C.logging.ProgressPrinter(freq=30, tag='Training')
    sparse_to_dense = create_sparse_to_dense(input_vocab_dim)
    losses = []
    for epoch in range(max_epochs):
        while total_samples < (epoch + 1) * epoch_size:
            mb_train = train_reader.next_minibatch(minibatch_size)
            features = mb_train[train_reader.streams.features]
            labels = mb_train[train_reader.streams.labels]
            trainer.train_minibatch({criterion.arguments[0]: features,
                                     criterion.arguments[1]: labels})
            losses.append(trainer.previous_minibatch_loss_average)
            progress_printer.update_with_trainer(trainer, with_metric=True)
            if mbs % eval_freq == 0:
                mb_valid = valid_reader.next_minibatch(1)
                dense = sparse_to_dense(mb_valid[valid_reader.streams.features])
                print(format_sequences(dense, i2w))
            total_samples += mb_train[train_reader.streams.labels].num_samples
            mbs += 1
        progress_printer.epoch_summary(with_metric=True)
    quarter = max(len(losses) // 4, 1)
    print("Mean train loss: first quarter %.4f, last quarter %.4f"
          % (np.mean(losses[:quarter]), np.mean(losses[-quarter:])))
    print("%d epochs complete." % max_epochs)


train_reader = create_reader(TRAINING_DATA, True)
valid_reader = create_reader(VALIDATION_DATA, True)
model = create_model()
train(train_reader, valid_reader, vocab, i2w, model, max_epochs=args.epochs,
      epoch_size=args.epoch_size)
if args.decode:
    transcribe(create_reader(VALIDATION_DATA, False), model, i2w, args.decode)
