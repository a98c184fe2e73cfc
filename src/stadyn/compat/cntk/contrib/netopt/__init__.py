"""CNTK 2.7's ``cntk.contrib.netopt``: a trained model made cheaper by replacing its layers --
``factorization.factor_dense`` (each ``Dense`` layer as two thinner matrices from a truncated
SVD) and ``quantization.binarize_convolution`` (convolutions on 1-bit weights and inputs).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> import stadyn.compat.cntk.contrib.netopt.factorization as nc
    >>> x = C.input_variable(4)
    >>> z = C.layers.Dense(3, init=C.glorot_uniform(seed=1))(x)
    >>> nz = nc.factor_dense(z, projection_function=lambda W: 3)
    >>> data = np.ones((1, 4), np.float32)
    >>> bool(np.allclose(nz.eval({x: data}), z.eval({x: data}), atol=1e-5))
    True
"""

__all__: list = []
