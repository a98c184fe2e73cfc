"""``nnabla.models.utils``: where NNabla's pretrained models live.

``get_model_home()`` is ``<data home>/nnp_models`` (``~/nnabla_data/nnp_models``, made if
missing): a model class reads ``<model home>/imagenet/<file>.nnp`` from there, the path NNabla
1.39 downloads it to.  ``get_model_url_base()`` is where NNabla downloads from
(``NNABLA_MODELS_URL_BASE`` if set); Stadyn only names it in its error when a file is missing.

Example:
    >>> from stadyn.compat.nnabla.models.utils import get_model_home, get_model_url_base
    >>> get_model_home().endswith("nnp_models")
    True
    >>> get_model_url_base()
    'https://nnabla.org/pretrained-models/nnp_models/'
"""

from __future__ import annotations

import os

from ..logger import logger
from ..utils.download import get_data_home

__all__ = ["get_model_home", "get_model_url_base_from_env", "get_model_url_base"]


def get_model_home() -> str:
    """The folder of NNabla's pretrained models, ``<data home>/nnp_models`` (made if
    missing)."""
    folder = os.path.join(get_data_home(), "nnp_models")
    os.makedirs(folder, exist_ok=True)
    return folder


def get_model_url_base_from_env() -> str | None:
    """The environment variable ``NNABLA_MODELS_URL_BASE``, or None."""
    return os.environ.get("NNABLA_MODELS_URL_BASE", None)


def get_model_url_base() -> str:
    """Where NNabla downloads models from: ``NNABLA_MODELS_URL_BASE`` if set, else
    ``https://nnabla.org/pretrained-models/nnp_models/``."""
    base = get_model_url_base_from_env()
    if base is not None:
        logger.info("NNBLA_MODELS_URL_BASE is set as {}.".format(base))
        return base
    return "https://nnabla.org/pretrained-models/nnp_models/"
