# The code cells of NNabla's tutorial notebook tutorial/cifar10_classification.ipynb
# (https://github.com/sony/nnabla, Copyright Sony Corporation, Apache License 2.0),
# extracted by extract.py beside this file: plots and magics dropped, and the edits
#   'from utils.neu.checkpoint_util import save_checkpoint, load_checkpoint' -> "from tiny_neu import save_checkpoint, load_checkpoint  # nnabla-examples', stood in"
#   'from utils.neu.save_nnp import save_nnp' -> 'from tiny_neu import save_nnp'
#   'from nnabla.utils.data_source_loader import download, get_data_home' -> 'from nnabla.utils.data_source_loader import get_data_home\nfrom tiny_cifar10 import download  # the digits as CIFAR-10'
#   'self._size = 50000' -> 'self._size = 1300'
#   'self._size = 10000' -> 'self._size = 497'
#   "extension_module = 'cudnn'" -> "extension_module = 'cpu'"
#   'batch_size = 64' -> 'batch_size = 16'
#   'bs_valid = 64' -> 'bs_valid = 16'
#   'nmaps=64, act=F.relu)' -> 'nmaps=16, act=F.relu)'
#   'max_iter = 40000' -> 'max_iter = 4'
#   'val_iter = 100' -> 'val_iter = 2'

# ---- cell 0
# May show warnings for newly imported packages if run in Colab default python environment.
# Please click the `RESTART RUNTIME` to run the following script correctly.
# The error message of conflicts is acceptable.

# ---- cell 1


# ---- cell 2
import os, sys
import time
import nnabla as nn
from nnabla.ext_utils import get_extension_context
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
import numpy as np
import functools
import nnabla.utils.save as save

from tiny_neu import save_checkpoint, load_checkpoint  # nnabla-examples', stood in
from tiny_neu import save_nnp

# ---- cell 3
from contextlib import contextmanager
import struct
import tarfile
import zlib
import errno

from nnabla.logger import logger
from nnabla.utils.data_iterator import data_iterator
from nnabla.utils.data_source import DataSource
from nnabla.utils.data_source_loader import get_data_home
from tiny_cifar10 import download  # the digits as CIFAR-10


class Cifar10DataSource(DataSource):
    '''
    Get data directly from cifar10 dataset from Internet(yann.lecun.com).
    '''

    def _get_data(self, position):
        image = self._images[self._indexes[position]]
        label = self._labels[self._indexes[position]]
        return (image, label)


    def __init__(self, train=True, shuffle=False, rng=None):
        super(Cifar10DataSource, self).__init__(shuffle=shuffle, rng=rng)
        self._train = train
        data_uri = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
        logger.info('Getting labeled data from {}.'.format(data_uri))
        r = download(data_uri)  # file object returned
        with tarfile.open(fileobj=r, mode="r:gz") as fpin:
            # Training data
            if train:
                images = []
                labels = []
                for member in fpin.getmembers():
                    if "data_batch" not in member.name:
                        continue
                    fp = fpin.extractfile(member)
                    data = np.load(fp, encoding="bytes", allow_pickle=True)
                    images.append(data[b"data"])
                    labels.append(data[b"labels"])
                self._size = 1300
                self._images = np.concatenate(
                    images).reshape(self._size, 3, 32, 32)
                self._labels = np.concatenate(labels).reshape(-1, 1)
            # Validation data
            else:
                for member in fpin.getmembers():
                    if "test_batch" not in member.name:
                        continue
                    fp = fpin.extractfile(member)
                    data = np.load(fp, encoding="bytes", allow_pickle=True)
                    images = data[b"data"]
                    labels = data[b"labels"]
                self._size = 497
                self._images = images.reshape(self._size, 3, 32, 32)
                self._labels = np.array(labels).reshape(-1, 1)
        r.close()
        logger.info('Getting labeled data from {}.'.format(data_uri))

        self._size = self._labels.size
        self._variables = ('x', 'y')
        if rng is None:
            rng = np.random.RandomState(313)
        self.rng = rng
        self.reset()

    def reset(self):
        if self._shuffle:
            self._indexes = self.rng.permutation(self._size)
        else:
            self._indexes = np.arange(self._size)
        super(Cifar10DataSource, self).reset()

    @property
    def images(self):
        """Get copy of whole data with a shape of (N, 1, H, W)."""
        return self._images.copy()

    @property
    def labels(self):
        """Get copy of whole label with a shape of (N, 1)."""
        return self._labels.copy()


def data_iterator_cifar10(batch_size,
                          train=True,
                          rng=None,
                          shuffle=True,
                          with_memory_cache=False,
                          with_file_cache=False):
    '''
    Provide DataIterator with :py:class:`Cifar10DataSource`
    with_memory_cache and with_file_cache option's default value is all False,
    because :py:class:`Cifar10DataSource` is able to store all data into memory.

    '''
    return data_iterator(Cifar10DataSource(train=train, shuffle=shuffle, rng=rng),
                         batch_size,
                         rng,
                         with_memory_cache,
                         with_file_cache)

# ---- cell 4
def categorical_error(pred, label):
    pred_label = pred.argmax(1)
    return (pred_label != label.flat).mean()

# ---- cell 5
def resnet23_prediction(image, test=False, ncls=10, nmaps=16, act=F.relu):
    """
    Construct ResNet 23
    """
    # Residual Unit
    def res_unit(x, scope_name, dn=False):
        C = x.shape[1]
        with nn.parameter_scope(scope_name):
            # Conv -> BN -> Nonlinear
            with nn.parameter_scope("conv1"):
                h = PF.convolution(x, C // 2, kernel=(1, 1), pad=(0, 0),
                                   with_bias=False)
                h = PF.batch_normalization(h, batch_stat=not test)
                h = act(h)
            # Conv -> BN -> Nonlinear
            with nn.parameter_scope("conv2"):
                h = PF.convolution(h, C // 2, kernel=(3, 3), pad=(1, 1),
                                   with_bias=False)
                h = PF.batch_normalization(h, batch_stat=not test)
                h = act(h)
            # Conv -> BN
            with nn.parameter_scope("conv3"):
                h = PF.convolution(h, C, kernel=(1, 1), pad=(0, 0),
                                   with_bias=False)
                h = PF.batch_normalization(h, batch_stat=not test)
            # Residual -> Nonlinear
            h = act(F.add2(h, x, inplace=True))
            # Maxpooling
            if dn:
                h = F.max_pooling(h, kernel=(2, 2), stride=(2, 2))
            return h
    # Conv -> BN -> Nonlinear
    with nn.parameter_scope("conv1"):
        # Preprocess
        if not test:
            image = F.image_augmentation(image, contrast=1.0,
                                         angle=0.25,
                                         flip_lr=True)
            image.need_grad = False
        h = PF.convolution(image, nmaps, kernel=(3, 3),
                           pad=(1, 1), with_bias=False)
        h = PF.batch_normalization(h, batch_stat=not test)
        h = act(h)

    h = res_unit(h, "conv2", False)    # -> 32x32
    h = res_unit(h, "conv3", True)     # -> 16x16
    h = res_unit(h, "conv4", False)    # -> 16x16
    h = res_unit(h, "conv5", True)     # -> 8x8
    h = res_unit(h, "conv6", False)    # -> 8x8
    h = res_unit(h, "conv7", True)     # -> 4x4
    h = res_unit(h, "conv8", False)    # -> 4x4
    h = F.average_pooling(h, kernel=(4, 4))  # -> 1x1
    pred = PF.affine(h, ncls)

    return pred

# ---- cell 6
def loss_function(pred, label):
    loss = F.mean(F.softmax_cross_entropy(pred, label))
    return loss

# ---- cell 7
n_train_samples = 50000
batch_size = 16
bs_valid = 16 #batch size for validation
extension_module = 'cpu'
ctx = get_extension_context(
    extension_module)
nn.set_default_context(ctx)
prediction = functools.partial(
    resnet23_prediction, ncls=10, nmaps=16, act=F.relu)

# ---- cell 8
# Create training graphs
test = False
image_train = nn.Variable((batch_size, 3, 32, 32))
label_train = nn.Variable((batch_size, 1))
pred_train = prediction(image_train, test)
loss_train = loss_function(pred_train, label_train)
input_image_train = {"image": image_train, "label": label_train}

# Create validation graph
test = True
image_valid = nn.Variable((bs_valid, 3, 32, 32))
pred_valid = prediction(image_valid, test)
input_image_valid = {"image": image_valid}

# ---- cell 9
# Solvers
solver = S.Adam()
solver.set_parameters(nn.get_parameters())
start_point = 0

# If necessary, load weights and solver state info from specified checkpoint file.
# start_point = load_checkpoint(specified_checkpoint, solver)

# Create monitor
from nnabla.monitor import Monitor, MonitorSeries, MonitorTimeElapsed
monitor = Monitor('tmp.monitor')
monitor_loss = MonitorSeries("Training loss", monitor, interval=10)
monitor_err = MonitorSeries("Training error", monitor, interval=10)
monitor_time = MonitorTimeElapsed("Training time", monitor, interval=10)
monitor_verr = MonitorSeries("Test error", monitor, interval=1)

# ---- cell 10
# Data Iterator
tdata = data_iterator_cifar10(batch_size, True)
vdata = data_iterator_cifar10(batch_size, False)

# save intermediate weights if you need
#contents = save_nnp({'x': image_valid}, {'y': pred_valid}, batch_size)
#save.save(os.path.join('tmp.monitor',
#                       '{}_epoch0_result.nnp'.format('cifar10_resnet23')), contents)

# ---- cell 11
max_iter = 4
val_iter = 2
model_save_interval = 10000
model_save_path = 'tmp.monitor'
# Training-loop
for i in range(start_point, max_iter):
    # Validation
    if i % int(n_train_samples / batch_size) == 0:
        ve = 0.
        for j in range(val_iter):
            image, label = vdata.next()
            input_image_valid["image"].d = image
            pred_valid.forward()
            ve += categorical_error(pred_valid.d, label)
        ve /= val_iter
        monitor_verr.add(i, ve)
    if int(i % model_save_interval) == 0:
        # save checkpoint file
        save_checkpoint(model_save_path, i, solver)

    # Forward/Zerograd/Backward
    image, label = tdata.next()
    input_image_train["image"].d = image
    input_image_train["label"].d = label
    loss_train.forward()
    solver.zero_grad()
    loss_train.backward()

    # Solvers update
    solver.update()

    e = categorical_error(
        pred_train.d, input_image_train["label"].d)
    monitor_loss.add(i, loss_train.d.copy())
    monitor_err.add(i, e)
    monitor_time.add(i)

nn.save_parameters(os.path.join(model_save_path,
                                'params_%06d.h5' % (max_iter)))

# save_nnp_lastepoch
contents = save_nnp({'x': image_valid}, {'y': pred_valid}, batch_size)
save.save(os.path.join(model_save_path,
                       '{}_result.nnp'.format('cifar10_resnet23')), contents)

# ---- cell 12
# (added) The test error the monitor wrote (before training: F.image_augmentation draws from
# the framework's own generator) and the files the training wrote.
print(open(os.path.join(model_save_path, "Test-error.series.txt")).read())
print(sorted(os.listdir(model_save_path)))
