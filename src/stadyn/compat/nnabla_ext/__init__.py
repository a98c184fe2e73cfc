"""NNabla's extension packages, ``nnabla_ext.cpu`` (and ``nnabla_ext.cuda`` / ``.cudnn``), on
Stadyn.

NNabla ships its CPU extension as the top-level package ``nnabla_ext`` beside ``nnabla`` (the
CUDA extensions come in another wheel); programs pick their device with it::

    import nnabla_ext.cpu
    nn.set_default_context(nnabla_ext.cpu.context())

(nnabla-examples' ``image-classification/cifar10-100/classification.py`` does).  Under
``examples/nnabla/on_stadyn.py`` ``import nnabla_ext...`` loads these modules; a program whose
imports are edited by hand imports ``stadyn.compat.nnabla_ext.cpu``.  Each module is the
extension :func:`stadyn.compat.nnabla.ext_utils.import_extension_module` gives, as a module:
``cuda`` and ``cudnn`` run on the CPU with a warning where torch has no CUDA, as
``get_extension_context`` does.

Example:
    >>> import stadyn.compat.nnabla_ext.cpu as cpu
    >>> cpu.context()
    Context(backend=['cpu:float'], array_class='CpuCachedArray', device_id='')
"""

__all__: list = []     # the extensions are its modules: cpu, cuda, cudnn
