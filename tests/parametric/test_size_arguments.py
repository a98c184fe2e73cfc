"""Shapes and sizes given to a Variable or a parametric function: a dimension or unit count that
is not a positive (for shapes: non-negative) integer is one ShapeError naming it, never
truncated (``2.5`` -> 2) or passed on to torch or to an initialiser's maths."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
import stadyn.parametric_functions as PF


@pytest.mark.parametrize("shape, message", [
    ((2.5, 3), r"dimension 0 is 2.5, not an int"),
    ((2, 3.0), r"dimension 1 is 3.0, not an int"),
    ((-1, 3), r"dimension 0 is -1; dimensions must be >= 0"),
    ((True, 2), r"dimension 0 is True, not an int"),
    (("2", 3), r"dimension 0 is '2', not an int"),
    (None, r"a shape must be a sequence of ints"),
])
def test_a_bad_variable_shape_is_a_shape_error_naming_the_dimension(shape, message):
    with pytest.raises(sd.ShapeError, match=message):
        sd.Variable(shape)


def test_good_shapes_keep_working():
    assert sd.Variable((2, np.int64(3))).shape == (2, 3)
    assert sd.Variable(4).shape == (4,) and sd.Variable(()).shape == ()
    assert sd.Variable((0, 3)).shape == (0, 3)
    v = sd.Variable((2, 3))
    with pytest.raises(sd.ShapeError, match="dimension 1 is -3"):
        v.reset_shape((2, -3))


@pytest.mark.parametrize("build, message", [
    (lambda x: PF.affine(x, -3), r"PF.affine: n_outmaps must be a positive int .*got -3"),
    (lambda x: PF.affine(x, 0), r"PF.affine: n_outmaps must be a positive int .*got 0"),
    (lambda x: PF.affine(x, 2.5), r"PF.affine: n_outmaps .*got 2.5"),
    (lambda x: PF.affine(x, (4, -1)), r"PF.affine: n_outmaps .*got \(4, -1\)"),
    (lambda x: PF.affine(x, 4, base_axis=9), r"PF.affine: base_axis 9 does not fit"),
    (lambda x: PF.convolution(x, -2, (3, 3)), r"PF.convolution: outmaps must be a positive int"),
    (lambda x: PF.convolution(x, 2, (3, -3)), r"PF.convolution: kernel .*got \(3, -3\)"),
    (lambda x: PF.convolution(x, 2, (3, 3), group=0), r"PF.convolution: group must be"),
    (lambda x: PF.deconvolution(x, 0, (2, 2)), r"PF.deconvolution: outmaps must be"),
    (lambda x: PF.embed(sd.Variable((2,)), -5, 3), r"PF.embed: n_inputs must be"),
    (lambda x: PF.embed(sd.Variable((2,)), 5, 0), r"PF.embed: n_features must be"),
    (lambda x: PF.batch_normalization(x, axes=(7,)), r"PF.batch_normalization: axes \(7,\) do "
                                                     r"not fit an input of shape \(2, 3, 4, 4\)"),
])
def test_bad_sizes_of_parametric_functions_name_the_argument(build, message):
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        with pytest.raises(sd.ShapeError, match=message):
            build(sd.Variable((2, 3, 4, 4)))
    assert len(registry) == 0           # nothing was created


@pytest.mark.usefixtures("fresh_parameters")
def test_negative_axes_still_count_from_the_end():
    PF.batch_normalization(sd.Variable((2, 3, 4, 4)), axes=(-3,))
    assert sd.get_parameters()["bn/beta"].shape == (1, 3, 1, 1)
