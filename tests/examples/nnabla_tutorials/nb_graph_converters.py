# The code cells of NNabla's tutorial notebook tutorial/graph_converters.ipynb
# (https://github.com/sony/nnabla, Copyright Sony Corporation, Apache License 2.0),
# extracted by extract.py beside this file: plots and magics dropped, and the edits
#   'model = ResNet50()' -> 'import tiny_imagenet; tiny_imagenet.install()  # a stand-in Resnet-50.nnp\nmodel = ResNet50()'

# ---- cell 0
# ResNet-50 for inference
import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import numpy as np
from nnabla.utils.inspection import pprint
from nnabla.models.imagenet import ResNet50

import tiny_imagenet; tiny_imagenet.install()  # a stand-in Resnet-50.nnp
model = ResNet50()

batch_size = 1
x = nn.Variable((batch_size,) + model.input_shape)
y = model(x, training=False)

# ---- cell 1
pprint(y)

# ---- cell 2
import nnabla.experimental.graph_converters as GC

modifiers = [GC.BatchNormalizationFoldingModifier()]
gc = GC.GraphConverter(modifiers)
yy = gc.convert(y)

# ---- cell 3
pprint(yy)

# ---- cell 4
import nnabla.experimental.graph_converters as GC

modifiers = [GC.ChannelLastModifier([x])]
gc = GC.GraphConverter(modifiers)
yy = gc.convert(y)

# ---- cell 5
pprint(yy)

# ---- cell 6
x_cl = modifiers[0].inputs_cl[0]
print(x_cl)

# ---- cell 7
# (added) On NNabla 1.39 the conversions above fail on a loaded model built for inference:
# its parameters need no gradient, so nn.get_parameters() leaves them out, the folding finds
# no scope for them and names every folded weight "w-folded" in no scope (the second
# convolution's shape clashes); and ChannelLastModifier hands the first function, a
# convolution reading x, x alone (IndexError).  Built for training (parameters that need
# gradients) and put in test mode, the network folds, and the folded graphs compute what it
# does.
y_train = model(x, training=True)
x.d = np.random.RandomState(1).rand(*x.shape)
y_test = GC.GraphConverter(GC.TestModeModifier()).convert(y_train)
folded = GC.GraphConverter([GC.BatchNormalizationFoldingModifier()]).convert(y_test)
self_folded = GC.GraphConverter([GC.BatchNormalizationSelfFoldingModifier()]).convert(y_test)
for v in (y_test, folded, self_folded):
    v.forward()
print(y_test.d)
print(np.abs(folded.d - y_test.d).max() < 1e-4, np.abs(self_folded.d - y_test.d).max() < 1e-4)
pprint(folded)
