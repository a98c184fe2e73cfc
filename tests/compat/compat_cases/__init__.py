"""The case definitions, one module per area; importing a module registers its cases.

Parses under Python 3.6 (CNTK 2.7's interpreter): no walrus, no ``f"{x=}"``, no
positional-only parameters, no dataclasses, no ``from __future__ import annotations``.
"""

import importlib

MODULES = {
    "cntk": ["cntk_ops", "cntk_ops_more", "cntk_function", "cntk_graph", "cntk_layers",
             "cntk_layers_more", "cntk_learners", "cntk_train", "cntk_session",
             "cntk_examples",  # (before cntk_distributed, whose last case ends MPI)
             "cntk_detection",
             "cntk_io", "cntk_io_formats", "cntk_misc", "cntk_names",
             "cntk_sequence",
             "cntk_sequence_axes", "cntk_sequence_shape", "cntk_sequence_layers",
             "cntk_sequence_models", "cntk_model_files",
             "cntk_blind_spots", "cntk_random", "cntk_state", "cntk_crop", "cntk_signature",
             "cntk_ranking", "cntk_user_source", "cntk_user_deserializer", "cntk_sampling",
             "cntk_ctc", "cntk_tutorials", "cntk_train_sequence", "cntk_randomization",
             "cntk_image_notebooks", "cntk_seq_notebooks", "cntk_decoding",
             "cntk_sequence_begin", "cntk_dtypes", "cntk_function_misuse",
             "cntk_slice_strides", "cntk_function_roots", "cntk_top_k_ties",
             "cntk_runs_state", "cntk_loaded_model", "cntk_graph_fidelity",
             "cntk_recurrent_constants", "cntk_user_programs", "cntk_docstring_fixes",
             "cntk_review_mends", "cntk_loop_mends", "cntk_graph_after_run", "cntk_op_edges",
             "cntk_schedules", "cntk_fidelity_fixes", "cntk_modules", "cntk_nan", "cntk_nan_2",
             "cntk_fidelity_6", "cntk_manuals", "cntk_fidelity_7", "cntk_debugging",
             "cntk_debugger",
             "cntk_fidelity_8", "cntk_checked_mode", "cntk_function_fidelity",
             "cntk_examples_3", "cntk_truncated_bptt", "cntk_function_fidelity_2",
             "cntk_graph_walks", "cntk_examples_4", "cntk_partitions",
             "cntk_fidelity_11", "cntk_fidelity_12", "cntk_examples_5",
             "cntk_workers_2", "cntk_window_skip", "cntk_fidelity_13",
             "cntk_loop_reads", "cntk_fidelity_14", "cntk_deferred_calls",
             "cntk_fidelity_15", "cntk_fidelity_16", "cntk_fidelity_17", "cntk_fidelity_18",
             "cntk_fidelity_20", "cntk_trainer_sequences", "cntk_review_mends_2",
             "cntk_reader_positions", "cntk_graph_views", "cntk_placeholder_binding",
             "cntk_eval_refusals", "cntk_no_dynamic_axes", "cntk_fidelity_21",
             "cntk_argument_errors", "cntk_free_dimension", "cntk_random_values",
             "cntk_fidelity_22", "cntk_review_mends_3", "cntk_fidelity_23",
             "cntk_multi_output_blocks", "cntk_fidelity_24", "cntk_review_mends_4",
             "cntk_review_mends_5", "cntk_review_mends_6", "cntk_run_refusals",
             "cntk_untyped_functions", "cntk_fidelity_25", "cntk_legacy_models",
             "cntk_user_functions", "cntk_netopt", "cntk_fidelity_26", "cntk_review_mends_7",
             "cntk_files_16", "cntk_blocks_2", "cntk_fidelity_28", "cntk_fidelity_29",
             "cntk_review_mends_8", "cntk_trainer_31", "cntk_fidelity_30",
             "cntk_fidelity_31", "cntk_mend_c31", "cntk_review_mends_31",
             "cntk_review_mends_31d", "cntk_cleanup_32", "cntk_blocks_3",
             "cntk_recurrence_2", "cntk_recurrence_in_sequential", "cntk_fidelity_27",
             "cntk_mend_a33", "cntk_user_28", "cntk_clone_28",
             "cntk_sparse_learners_35", "cntk_user_35", "cntk_ops_35", "cntk_layers_35",
             "cntk_stabilized_steps_35", "cntk_clone_after_eval_35",
             "cntk_user_36", "cntk_ops_36", "cntk_recurrence_steps_36",
             "cntk_recurrence_37", "cntk_user_37", "cntk_sparse_37",
             "cntk_io_38", "cntk_user_38", "cntk_user_38b", "cntk_user_38c", "cntk_rec_38",
             "cntk_review_f38",
             "cntk_io_errors_38",
             # (last: its distributed_one_worker finalizes MPI in the CNTK 2.7 process that
             # regenerates the references, after which no distributed learner can be made)
             "cntk_distributed"],
    "nnabla": ["nnabla_functions", "nnabla_functions_more", "nnabla_parametric", "nnabla_solvers",
               "nnabla_misc", "nnabla_utils", "nnabla_data", "nnabla_rnn", "nnabla_save",
               "nnabla_augment", "nnabla_functions_extra", "nnabla_solvers_more",
               "nnabla_binary", "nnabla_ndarray", "nnabla_quantized", "nnabla_functions_2026",
               "nnabla_attention", "nnabla_lowrank", "nnabla_toplevel",
               "nnabla_signal", "nnabla_vision", "nnabla_sampling", "nnabla_values",
               "nnabla_conv", "nnabla_inq", "nnabla_functions_rare", "nnabla_examples",
               "nnabla_graph_debug", "nnabla_examples_more", "nnabla_graph_grads",
               "nnabla_variable_dtypes", "nnabla_inspection_tools", "nnabla_examples_gan",
               "nnabla_internals", "nnabla_loading", "nnabla_load_params",
               "nnabla_load_schedulers", "nnabla_examples_vqvae", "nnabla_load_sections",
               "nnabla_parameter_views", "nnabla_load_info", "nnabla_top_k_ties",
               "nnabla_views_train", "nnabla_solver_module",
               "nnabla_graph_reruns", "nnabla_fidelity_2", "nnabla_solver_fidelity",
               "nnabla_kept_arrays", "nnabla_object_model", "nnabla_fuzz_found",
               "nnabla_refusals", "nnabla_fidelity_3", "nnabla_fidelity_4",
               "nnabla_modules", "nnabla_nan", "nnabla_fidelity_5",
               "nnabla_modules_2", "nnabla_fidelity_6", "nnabla_fidelity_7",
               "nnabla_examples_4", "nnabla_tutorials_2", "nnabla_indexing_2",
               "nnabla_random", "nnabla_random_2", "nnabla_examples_6",
               "nnabla_examples_5", "nnabla_fidelity_8", "nnabla_examples_7",
               "nnabla_fidelity_9", "nnabla_fidelity_10", "nnabla_fidelity_11",
               "nnabla_fidelity_12", "nnabla_fidelity_13", "nnabla_fidelity_14",
               "nnabla_fidelity_15", "nnabla_fidelity_16", "nnabla_fidelity_17",
               "nnabla_fidelity_18", "nnabla_graph_converters", "nnabla_fidelity_19",
               "nnabla_remove_function", "nnabla_function_references",
               "nnabla_review_mends_28", "nnabla_cache_prefetch", "nnabla_qnn",
               "nnabla_fidelity_20", "nnabla_graph_editing", "nnabla_extension_readers",
               "nnabla_review_mends_29", "nnabla_fidelity_22",
               "nnabla_fidelity_23", "nnabla_fidelity_24", "nnabla_review_mends_30",
               "nnabla_examples_12", "nnabla_fidelity_25", "nnabla_examples_13",
               "nnabla_review_mends_31", "nnabla_simplify_31", "nnabla_fidelity_26",
               "nnabla_fill_values", "nnabla_param_dtypes", "nnabla_fidelity_27b",
               "nnabla_fidelity_27c", "nnabla_fidelity_27", "nnabla_user_28",
               "nnabla_late_28", "nnabla_dtypes_28", "nnabla_user_28b", "nnabla_pyfunc_35",
               "nnabla_io_35", "nnabla_user_35", "nnabla_views_35", "nnabla_spectral_u_35",
               "nnabla_pyfunc_36", "nnabla_user_36", "nnabla_spectral_u_36", "nnabla_views_36",
               "nnabla_user_37", "nnabla_review_mends_37", "nnabla_static_mix_37",
               "nnabla_user_38", "nnabla_user_38b", "nnabla_user_38c", "nnabla_fix_38"],
}


def load(framework):
    """Import every case module of ``framework``; returns the case registry."""
    from compat_harness import CASES
    for name in MODULES[framework]:
        importlib.import_module("compat_cases." + name)
    return CASES[framework]
