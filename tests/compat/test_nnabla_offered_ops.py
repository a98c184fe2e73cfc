"""NNabla's ``F`` leaves out the ops declared for other front ends only (``@op(...,
frameworks=("cntk",))``), read off their declarations rather than a hand-kept list."""

import stadyn.functions as F
from stadyn.compat.nnabla import functions as NF
from stadyn.graph import OpSpec
from stadyn.ops import CATALOG

# CNTK's random, sampling and ranking Functions, its reshape of a sample that keeps a
# sequence's axes, its max unpooling's gradient: not in NNabla 1.39's nnabla.functions
CNTK_ONLY = {"rand_like", "randn_like", "gumbel_like", "bernoulli_like", "random_sample",
             "random_sample_inclusion_frequency", "lambda_rank", "ndcg_at_1",
             "cntk_forward_backward", "cntk_edit_distance_error", "reshape_trailing",
             "cntk_log", "cntk_bin_max_pooling", "cntk_epoch_accumulator", "cntk_max_unpooled"}
# Stadyn's own (``frameworks=("stadyn",)``): the op NNabla's PythonFunction runs as, which
# NNabla 1.39's nnabla.functions has no name for
STADYN_ONLY = {"python_function"}
# Stadyn's own ops that NNabla 1.39's nnabla.functions lacks (checked: hasattr is False there,
# cases functions_nnabla_lacks and functions_nnabla_lacks__more); CNTK's compat layer builds on
# them
STADYN_AND_CNTK = {"take_along_axis", "stop_gradient", "cast", "classification_error",
                   "clip_by_value_scalar", "cross_entropy_with_softmax", "flatten", "grad",
                   "sqrt"}


def test_nnabla_functions_are_the_names_they_were():
    # the rule before declarations said it: cntk_* ops, the hand-kept list above, and the
    # sequence / debug / parameter categories left out
    expected = [n for n in F.__all__ if not n.startswith("cntk_") and n not in CNTK_ONLY
                and n not in STADYN_ONLY and n not in STADYN_AND_CNTK
                and CATALOG[n].category not in ("sequence", "debug", "parameter")]
    # (NNabla's F also has compositions of catalog ops, which are not catalog names)
    assert [n for n in NF.__all__ if n in CATALOG] == expected
    assert ({n for n in CATALOG if CATALOG[n].frameworks}
            == CNTK_ONLY | STADYN_ONLY | STADYN_AND_CNTK)
    assert all(CATALOG[n].frameworks == {"cntk"} for n in CNTK_ONLY)
    assert all(CATALOG[n].frameworks == {"stadyn"} and n not in NF.__all__ for n in STADYN_ONLY)
    assert all(CATALOG[n].frameworks == {"stadyn", "cntk"} for n in STADYN_AND_CNTK)


def test_an_op_declared_for_cntk_only_is_left_out_of_nnabla_functions():
    def shuffle_like(x, seed=-1):
        """A CNTK-only op of a test registry."""
        return x

    def twice(x):
        """An op of every front end."""
        return x * 2

    registry = {"shuffle_like": OpSpec.from_function(shuffle_like, 1, category="random",
                                                     frameworks=("cntk",)),
                "twice": OpSpec.from_function(twice, 1, category="math")}
    assert NF._offered(["shuffle_like", "twice"], registry) == ["twice"]
    assert registry["shuffle_like"].offered_by("cntk")
    assert not registry["shuffle_like"].offered_by("nnabla")
