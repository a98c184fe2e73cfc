"""File formats: parameter files (Stadyn safetensors, NNabla .h5), Stadyn model files (network
and parameters in one zip, :func:`save` / :func:`load`), ONNX (:func:`export_onnx`,
:func:`import_onnx`) and, decoded but not yet mapped onto Stadyn ops, NNabla's and CNTK's own
model files (:func:`read_legacy_model`), and CNTK v2 and v1 model files written
(:func:`save_cntk_v2`, :func:`save_cntk_v1`).  How each op is written to and read from a format is
registered against the op in the op rules (:func:`register_rules`, :func:`rules_for`).  See
``docs/model-files.md``."""

from ._cntk_checkpoint import LEARNER_SLOTS as CNTK_CHECKPOINT_LEARNERS
from ._cntk_checkpoint import is_cntk_checkpoint, read_cntk_checkpoint, write_cntk_checkpoint
from ._cntk_checkpoint import learner_entry as cntk_learner_entry
from ._cntk_checkpoint import block_momentum_entry as cntk_block_momentum_entry
from ._cntk_checkpoint import distributed_entry as cntk_distributed_entry
from ._cntk_checkpoint import checkpoint_dictionary as cntk_checkpoint_dictionary
from ._cntk_schedule import cntk_schedule, schedule_from_cntk
from ._cntk_checkpoint import learner_states as cntk_learner_states
from ._cntk_checkpoint import training_function_bytes as cntk_training_function_bytes
from ._cntk_write import ATTRIBUTE_BLOCKS as CNTK_ATTRIBUTE_BLOCKS, \
    ATTRIBUTE_OPS as CNTK_ATTRIBUTE_OPS, ONE_OP_BLOCKS as CNTK_ONE_OP_BLOCKS
from ._cntk_write import CntkWriteUnsupported, save_cntk_v2
from ._cntk_v1_format import cntk_v1_roots
from ._cntk_v1_save import save_cntk_v1
from ._cntk_v1_uids import cntk_v1_op_name, cntk_v1_uids
from ._legacy import read_legacy_model
from ._cntk_format import is_cntk_v2_file
from ._legacy_import_flat import cntk_leaf_order, shown_block_order
from ._legacy_load import is_legacy_model_file, legacy_model_head, load_cntk, load_nnp
from ._load import load, model_info
from ._legacy_ir import (LegacyFunction, LegacyModel, LegacyNetwork, LegacyOrigin,
                         LegacyParameter, LegacyVariable)
from ._model import is_model_file
from ._model import load as load_model_file
from ._nnabla_schedulers import nnabla_scheduler
from ._nnabla_solver_states import optimizer_states, read_nnabla_optimizer_states
from ._model_save import save
from ._nnp_save import SOLVER_FIELDS, NnpWriter, save_nnp, write_with_parameters
from ._network import ModelInfo, Network
from ._onnx_api import Emitter, ExportError, ImportedNode, OnnxUnsupported
from ._onnx_export import (DEFAULT_OPSET, SUPPORTED_OPSETS, export_onnx, inference_outputs,
                           to_onnx_model)
from ._onnx_import import UnsupportedModelError, import_onnx, import_table, onnx_mapping_table
from ._parameters import load_parameters, read_parameter_file, save_parameters
from .op_rules import (OpRules, Unmapped, register_rules, register_user_function_loader,
                       rules_for)
from .op_rules._cntk_read_others import RANDOM_DISTRIBUTIONS as CNTK_RANDOM_DISTRIBUTIONS

def nnabla_messages() -> dict:
    """Message classes of NNabla's parameter and solver-state protobuf: ``NNablaProtoBuf``,
    ``Parameter``, ``Shape``, ``Optimizer`` (the ``protobuf`` package, a core dependency, is
    imported only when they are asked for: ``import stadyn`` does not load it).

    Example:
        >>> from stadyn.serialize import nnabla_messages
        >>> P = nnabla_messages()["NNablaProtoBuf"]
        >>> [f.name for f in P.DESCRIPTOR.fields]
        ['version', 'parameter', 'optimizer']
    """
    try:
        from .._proto_schemas import nnabla_messages as messages
    except ImportError as err:
        raise ImportError("NNabla's protobuf files need the protobuf package (a dependency "
                          "of Stadyn's): pip install protobuf") from err
    return messages()


__all__ = ["save_parameters", "load_parameters", "read_parameter_file", "nnabla_messages",
           "save", "load",
           "model_info", "is_model_file", "load_model_file", "Network", "ModelInfo", "export_onnx", "to_onnx_model",
           "inference_outputs", "DEFAULT_OPSET", "SUPPORTED_OPSETS", "OpRules", "Unmapped",
           "register_rules", "rules_for", "register_user_function_loader",
           "import_onnx", "import_table", "onnx_mapping_table", "Emitter", "ImportedNode", "ExportError",
           "OnnxUnsupported", "UnsupportedModelError", "read_legacy_model", "load_nnp",
           "load_cntk", "is_legacy_model_file", "legacy_model_head", "is_cntk_v2_file", "cntk_leaf_order", "shown_block_order", "cntk_v1_roots", "cntk_v1_uids", "cntk_v1_op_name", "save_cntk_v1",
           "save_nnp", "NnpWriter",
           "write_with_parameters", "SOLVER_FIELDS", "LegacyModel",
           "read_nnabla_optimizer_states", "optimizer_states", "nnabla_scheduler",
           "save_cntk_v2", "CntkWriteUnsupported", "CNTK_ONE_OP_BLOCKS", "CNTK_ATTRIBUTE_BLOCKS", "CNTK_ATTRIBUTE_OPS", "CNTK_RANDOM_DISTRIBUTIONS", "LegacyNetwork", "LegacyFunction", "LegacyVariable", "LegacyParameter", "LegacyOrigin",
           "is_cntk_checkpoint", "read_cntk_checkpoint", "write_cntk_checkpoint",
           "cntk_learner_entry", "cntk_learner_states", "CNTK_CHECKPOINT_LEARNERS",
           "cntk_training_function_bytes", "cntk_distributed_entry", "cntk_block_momentum_entry", "cntk_schedule",
           "schedule_from_cntk", "cntk_checkpoint_dictionary"]
