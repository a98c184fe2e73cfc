"""File formats: parameter files (Stadyn safetensors, NNabla .h5)."""

from ._parameters import load_parameters, read_parameter_file, save_parameters

__all__ = ["save_parameters", "load_parameters", "read_parameter_file"]
