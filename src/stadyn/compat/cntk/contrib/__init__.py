"""CNTK 2.7's contributed packages (``cntk.contrib``): the network optimisations of
``cntk.contrib.netopt`` (factoring dense layers, binarising convolutions).

Example:
    >>> import stadyn.compat.cntk.contrib.netopt.factorization as nc
    >>> nc.svd_subprojection([[3.0, 0.0], [0.0, 1.0]], 1)[0].tolist()
    [[1.0], [0.0]]
"""

__all__: list = []
