"""NNabla 1.39 where Stadyn differed (ninth round, the known differences left):

* ``NnpLoader.get_network``'s network: NNabla names every Variable by the file
  (``v.name``), ``variables`` holds every variable of the file's network (inputs, the
  functions' outputs, then the parameters, in file order), and a function output's parent is
  named by NNabla's type (``'Affine'``); Stadyn's were unnamed Stadyn Variables, ``variables``
  held the inputs, outputs and parameters only, ``parent.name`` was Stadyn's op (``'affine'``);
* ``data_iterator_cache``'s ``variables``: NNabla's iterator shows its source's list (the
  ``.h5`` cache's keys, sorted by name, or ``cache_info.csv``'s rows); Stadyn's made a tuple;
* ``F.image_augmentation`` drew torch's numbers; NNabla's kernel draws from its
  ``std::mt19937`` (the function's own ``seed=`` or the global one), image by image.
"""

import os

import numpy as np

from compat_harness import nnabla_case

FN = "nnabla.functions."
G = "nnabla.utils.nnp_graph."
EXACT = dict(rtol=0.0, atol=0.0)
HERE = os.path.dirname(os.path.abspath(__file__))
NAMES_NNTXT = os.path.join(HERE, "..", "..", "fixtures", "nnp_names", "networks.nntxt")


def _named(v):
    parent = v.parent
    return [v.name, None if parent is None else parent.name,
            None if parent is None else [i.name for i in parent.inputs]]


@nnabla_case(names=[G + "NnpLoader", G + "NnpLoader.get_network", G + "NnpNetwork"], **EXACT,
             note="the networks of tests/fixtures/nnp_names/networks.nntxt (written by NNabla "
                  "1.39's save; a convolution, ReLU, Add2 of one input twice, Split into two, "
                  "Mul2, Affine): each Variable's name, its parent's name and the names of "
                  "the parent's inputs, the keys of inputs, outputs and variables in order")
def nnp_graph__variable_names(nn, F, r):
    NG = r.module("nnabla.utils.nnp_graph")
    res = {}
    r.touch(G + "NnpLoader.get_network", G + "NnpNetwork")
    loader = NG.NnpLoader(NAMES_NNTXT)
    for name in loader.get_network_names():
        net = loader.get_network(name, batch_size=2)
        res[name + " inputs"] = [[k] + _named(v) for k, v in net.inputs.items()]
        res[name + " outputs"] = [[k] + _named(v) for k, v in net.outputs.items()]
        res[name + " variables"] = [[k] + _named(v) for k, v in net.variables.items()]
        net.inputs["x"].d = r.randn(*net.inputs["x"].shape)
        for k, v in net.outputs.items():
            v.forward()
            res[name + " " + k] = v.d.copy()
        res[name + " split_out_1"] = [k for k in net.variables if k.endswith("Split_out_1")]
    return res


@nnabla_case(names=["nnabla.utils.data_iterator.data_iterator_cache",
                    "nnabla.utils.data_iterator.DataIterator.variables",
                    "nnabla.utils.create_cache.CreateCache"], **EXACT,
             note="a CSV of columns z, b__0, b__1, a written as a cache by CreateCache in "
                  ".npy and .h5 (nnabla_config's cache_file_format) and read back with "
                  "data_iterator_cache: the variables' type and order (an .h5 file's keys "
                  "sorted by name) and the first batch")
def data_iterator_cache__variables_list(nn, F, r):
    CC = r.module("nnabla.utils.create_cache")
    DI = r.module("nnabla.utils.data_iterator")
    config = r.module("nnabla.config").nnabla_config
    res = {}
    old = config.get("DATA_ITERATOR", "cache_file_format")
    with r.tempdir() as folder:
        path = os.path.join(folder, "t.csv")
        with open(path, "w") as f:
            f.write("z,b__0,b__1,a\n1,2,3,0\n4,5,6,1\n7,8,9,0\n")
        try:
            for fmt in (".npy", ".h5"):
                config.set("DATA_ITERATOR", "cache_file_format", fmt)
                out = os.path.join(folder, "cache" + fmt)
                os.makedirs(out)
                cache = CC.CreateCache(path)
                res[fmt + " CreateCache"] = [type(cache.variables).__name__,
                                             list(cache.variables)]
                cache.create(out)
                it = DI.data_iterator_cache(out, 2)
                r.touch("nnabla.utils.data_iterator.DataIterator.variables")
                res[fmt + " iterator"] = [type(it.variables).__name__, list(it.variables)]
                for k, b in zip(it.variables, it.next()):
                    res[fmt + " batch " + k] = b
                it.close()
        finally:
            config.set("DATA_ITERATOR", "cache_file_format", old)
    return res


_AUGMENTATIONS = (
    ("geo", dict(shape=(2, 4, 5), pad=(1, 2), min_scale=0.8, max_scale=1.3, angle=0.4,
                 aspect_ratio=1.3, flip_lr=True, flip_ud=True)),
    ("color", dict(brightness=0.3, brightness_each=True, contrast=1.5, contrast_each=True,
                   contrast_center=0.2)),
    ("color_global", dict(brightness=0.3, contrast=1.5)),
    ("distortion", dict(distortion=0.3, angle=0.2)),
    ("noise", dict(noise=0.5, brightness=0.1)),
)


@nnabla_case(names=[FN + "image_augmentation"], rtol=0.0, atol=1e-5,
             note="seeded F.image_augmentation gives NNabla 1.39's values: the draws of its "
                  "std::mt19937 in the CPU kernel's order (nine steps per image, per-channel "
                  "brightness/contrast, a normal_distribution<double> per pixel for noise) -- "
                  "with seed= (a dynamic call twice, a static graph's two forwards) and from "
                  "the global generator after nn.seed(5) (two calls, the second going on with "
                  "the stream); geometry, colour, distortion, noise.  One image per call: "
                  "NNabla's kernel shares its generator between the OpenMP threads of its "
                  "loop over the images, so several images' draws follow the threads (the "
                  "reference check regenerates with the default threads); atol 1e-5: float32 "
                  "rounding of the sampling coordinates")
def image_augmentation__nnabla_draws(nn, F, r):
    res = {}
    x = nn.Variable.from_numpy_array(r.randn(1, 2, 5, 6).astype(np.float32))
    for name, kw in _AUGMENTATIONS:
        with nn.auto_forward():
            res[name + " seed"] = F.image_augmentation(x, seed=17, **kw).d.copy()
            res[name + " seed again"] = F.image_augmentation(x, seed=17, **kw).d.copy()
        nn.seed(5)
        with nn.auto_forward():
            res[name + " global"] = F.image_augmentation(x, **kw).d.copy()
            res[name + " global next"] = F.image_augmentation(x, **kw).d.copy()
        y = F.image_augmentation(x, seed=4, **kw)
        y.forward()
        res[name + " static"] = y.d.copy()
        y.forward()
        res[name + " static next"] = y.d.copy()
    return res
