# The code cells of NNabla's tutorial notebook tutorial/dynamic_and_static_nn.ipynb
# (https://github.com/sony/nnabla, Copyright Sony Corporation, Apache License 2.0),
# extracted by extract.py beside this file: plots and magics dropped, and the edits
#   "get_extension_context('cudnn'" -> "get_extension_context('cpu'"
#   'range(10):  # unnecessarily deep' -> 'range(2):  # unnecessarily deep'
#   '(h, 128, (3, 3)' -> '(h, 16, (3, 3)'
#   '(h, 512, (3, 3)' -> '(h, 32, (3, 3)'
#   '(x, 64, (3, 3)' -> '(x, 16, (3, 3)'
#   'PF.affine(h, 1024)' -> 'PF.affine(h, 64)'
#   'range(30)' -> 'range(2)'

# ---- cell 0
# May show warnings for newly imported packages if run in Colab default python environment.
# Please click the `RESTART RUNTIME` to run the following script correctly.
# The error message of conflicts is acceptable.

# ---- cell 1


# ---- cell 2
import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S

import numpy as np
np.random.seed(0)

GPU = 0  # ID of GPU that we will use
batch_size = 64  # Reduce to fit your device memory

# ---- cell 3
from tiny_digits import *

digits = load_digits()
data = data_iterator_tiny_digits(digits, batch_size=batch_size, shuffle=True)

# ---- cell 4
img, label = data.next()
print(img.shape, label.shape)

# ---- cell 5
def cnn(x):
    """Unnecessarily Deep CNN.
    
    Args:
        x : Variable, shape (B, 1, 8, 8)
        
    Returns:
        y : Variable, shape (B, 10)
    """
    with nn.parameter_scope("cnn"):  # Parameter scope can be nested
        with nn.parameter_scope("conv1"):
            h = F.tanh(PF.batch_normalization(
                PF.convolution(x, 16, (3, 3), pad=(1, 1))))
        for i in range(2):  # unnecessarily deep
            with nn.parameter_scope("conv{}".format(i + 2)):
                h = F.tanh(PF.batch_normalization(
                    PF.convolution(h, 16, (3, 3), pad=(1, 1))))
        with nn.parameter_scope("conv_last"):
            h = F.tanh(PF.batch_normalization(
                PF.convolution(h, 32, (3, 3), pad=(1, 1))))
            h = F.average_pooling(h, (2, 2))
        with nn.parameter_scope("fc"):
            h = F.tanh(PF.affine(h, 64))
        with nn.parameter_scope("classifier"):
            y = PF.affine(h, 10)
    return y

# ---- cell 6
from nnabla.ext_utils import get_extension_context

# setup cuda extension
ctx_cuda = get_extension_context('cpu', device_id=GPU)  # replace 'cudnn' by 'cpu' if you want to run the example on the CPU
nn.set_default_context(ctx_cuda)

# create variables for network input and label
x = nn.Variable(img.shape)
t = nn.Variable(label.shape)

# create network
static_y = cnn(x)
static_y.persistent = True

# define loss function for training
static_l = F.mean(F.softmax_cross_entropy(static_y, t))

# ---- cell 7
solver = S.Adam(alpha=1e-3)
solver.set_parameters(nn.get_parameters())

# ---- cell 8
loss = []
def epoch_end_callback(epoch):
    global loss
    print("[", epoch, np.mean(loss), itr, "]", end='\n')
    loss = []

data = data_iterator_tiny_digits(digits, batch_size=batch_size, shuffle=True)
data.register_epoch_end_callback(epoch_end_callback)

# ---- cell 9
for epoch in range(2):
    itr = 0
    while data.epoch == epoch:
        x.d, t.d = data.next()
        static_l.forward(clear_no_need_grad=True)
        solver.zero_grad()
        static_l.backward(clear_buffer=True)
        solver.update()
        loss.append(static_l.d.copy())
        itr += 1
print('')

# ---- cell 10
nn.clear_parameters()
solver = S.Adam(alpha=1e-3)
solver.set_parameters(nn.get_parameters())

loss = []
def epoch_end_callback(epoch):
    global loss
    print("[", epoch, np.mean(loss), itr, "]", end='\n')
    loss = []
data = data_iterator_tiny_digits(digits, batch_size=batch_size, shuffle=True)
data.register_epoch_end_callback(epoch_end_callback)

# ---- cell 11
for epoch in range(2):
    itr = 0
    while data.epoch == epoch:
        x.d, t.d = data.next()
        with nn.auto_forward():
            dynamic_y = cnn(x)
            dynamic_l = F.mean(F.softmax_cross_entropy(dynamic_y, t))
        solver.set_parameters(nn.get_parameters(), reset=False, retain_state=True) # this can be done dynamically
        solver.zero_grad()
        dynamic_l.backward(clear_buffer=True)
        solver.update()
        loss.append(dynamic_l.d.copy())
        itr += 1
print('')
