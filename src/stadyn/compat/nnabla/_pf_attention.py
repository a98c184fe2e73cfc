"""NNabla's attention layers: ``PF.multi_head_attention``, ``PF.transformer``,
``PF.transformer_encode`` and ``PF.transformer_decode``, with NNabla 1.39's parameter names,
shapes and initialisers, over ``F.multi_head_attention`` (``_composed.py``) and Stadyn's
``affine`` and ``layer_normalization`` layers.  Arrays are sequence-first, ``(L, B, E)``.

Example:
    >>> import stadyn as sd
    >>> import stadyn.compat.nnabla.parametric_functions as PF
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     y = PF.transformer_encode(sd.Variable((5, 2, 8)), 8, 2, dim_feedforward=16)
    ...     y.shape, len(sd.get_parameters())
    ((5, 2, 8), 16)
"""

import contextlib

from ... import functions as _F
from ...parametric import get_parameter_or_create, parameter_scope
from ...parametric_functions import affine
from ...parametric_functions import layer_normalization as _layer_normalization
from ._composed import multi_head_attention as _mha
from ._refusals import check_dropout_p
from .initializer import ConstantInitializer, UniformInitializer, calc_uniform_lim_glorot

__all__ = ["multi_head_attention", "transformer", "transformer_encode", "transformer_decode"]


@contextlib.contextmanager
def _scope(name, own):
    """NNabla's two-level scope of a parametric function: ``name`` (if given) above ``own``."""
    with contextlib.ExitStack() as scopes:
        if name is not None:
            scopes.enter_context(parameter_scope(name))
        scopes.enter_context(parameter_scope(own))
        yield


def layer_normalization(*args, **kwargs):
    """Stadyn's ``PF.layer_normalization`` with NNabla 1.39's one-pass variance
    (``rule="nnabla"``), as NNabla's transformer layers normalise."""
    return _layer_normalization(*args, rule="nnabla", **kwargs)


def multi_head_attention(query, key, value, num_heads=12, dropout=0.0, k_embed_dim=None,
                         v_embed_dim=None, out_dim=None, rng=None, with_bias=True,
                         add_attn_bias=False, additive_mask=None, key_padding_mask=None,
                         fix_parameters=False, param_init=None, name=None):
    """NNabla's ``PF.multi_head_attention``: ``F.multi_head_attention`` with its parameters in
    scope ``multi_head_attention``: ``q_weight`` ``(D_q, E)``, ``k_weight`` ``(D_k, E)``,
    ``v_weight`` ``(D_v, E_v)``, ``out_weight`` ``(E_v, E_out)`` (Glorot uniform), with
    ``with_bias`` the biases ``q_bias``, ``k_bias``, ``v_bias``, ``out_bias`` (zeros), with
    ``add_attn_bias`` ``attn_bias_k`` ``(1, 1, E)`` and ``attn_bias_v`` ``(1, 1, E_v)``.
    ``E`` is ``k_embed_dim`` (default ``D_q``), ``E_v`` ``v_embed_dim`` (default ``D_v``),
    ``E_out`` ``out_dim`` (default ``E_v``); ``param_init`` maps these names to initialisers
    or arrays.  Returns the output ``(L_T, B, E_out)`` and the attention weights
    ``(B * num_heads, L_T, L_S)``.

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     q, kv = sd.Variable((3, 2, 4)), sd.Variable((5, 2, 6))
        ...     y, w = PF.multi_head_attention(q, kv, kv, num_heads=2)
        ...     y.shape, sd.get_parameters()["multi_head_attention/k_weight"].shape
        ((3, 2, 6), (6, 4))
    """
    q_in, k_in, v_in = query.shape[2], key.shape[2], value.shape[2]
    embed = q_in if k_embed_dim is None else k_embed_dim
    v_embed = v_in if v_embed_dim is None else v_embed_dim
    out_dim = v_embed if out_dim is None else out_dim
    init = dict(param_init or {})

    def glorot(inmaps, outmaps):
        return UniformInitializer(calc_uniform_lim_glorot(inmaps, outmaps), rng)

    def param(pname, shape, default):
        # as the PF functions' ``parameter()``: NNabla truncates a dimension to an int
        # (k_embed_dim=4.5 makes a (D_q, 4) weight)
        return get_parameter_or_create(pname, tuple(int(s) for s in shape),
                                       init.get(pname, default), True, not fix_parameters,
                                       overwrite_need_grad=True)
    with _scope(name, "multi_head_attention"):
        qw = param("q_weight", (q_in, embed), glorot(q_in, embed))
        kw = param("k_weight", (k_in, embed), glorot(k_in, embed))
        vw = param("v_weight", (v_in, v_embed), glorot(v_in, v_embed))
        ow = param("out_weight", (v_embed, out_dim), glorot(v_embed, out_dim))
        qb = kb = vb = ob = None
        if with_bias:
            qb = param("q_bias", (embed,), ConstantInitializer())
            kb = param("k_bias", (embed,), ConstantInitializer())
            vb = param("v_bias", (v_embed,), ConstantInitializer())
            ob = param("out_bias", (out_dim,), ConstantInitializer())
        abk = abv = None
        if add_attn_bias:
            abk = param("attn_bias_k", (1, 1, embed), glorot(embed, 1))
            abv = param("attn_bias_v", (1, 1, v_embed), glorot(v_embed, 1))
    return _mha(query, key, value, num_heads, qw, kw, vw, ow, qb, kb, vb, ob, abk, abv, dropout,
                additive_mask=additive_mask, key_padding_mask=key_padding_mask)


def _dropped(x, dropout):
    if dropout <= 0:
        return x
    check_dropout_p(dropout)            # (NNabla's F.dropout is set up at the call)
    return _F.dropout(x, dropout)


def _feed_forward(x, embed_dim, dim_feedforward, dropout, activation, prefix):
    """``x + affine2(dropout(activation(affine1(x))))`` (the block of both layer kinds)."""
    hidden = activation(affine(x, dim_feedforward, base_axis=2, name=prefix + "_affine1"))
    out = affine(_dropped(hidden, dropout), embed_dim, base_axis=2, name=prefix + "_affine2")
    return _F.add2(x, _dropped(out, dropout))


def transformer_encode(src, embed_dim, num_heads, dim_feedforward=2048, dropout=0.1,
                       activation=None, src_additive_mask=None, src_key_padding_mask=None,
                       rng=None, add_attn_bias=False, fix_parameters=False, name=None):
    """One transformer encoder layer (NNabla's ``PF.transformer_encode``, post-norm): self
    attention ``src_self_attn``, then ``enc_layer_norm1``, the feed-forward ``enc_affine1``
    (``dim_feedforward`` units, ``activation``, default ReLU) and ``enc_affine2``, then
    ``enc_layer_norm2``, all in scope ``transformer_encode``.  ``dropout`` applies after the
    attention and each affine (turn it off to compare values).  ``rng`` is accepted and, as in
    NNabla 1.39, not passed on.  ``fix_parameters`` freezes every parameter of the layer (NNabla
    1.39 accepts it here and ignores it: its sublayers are called without it).

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     PF.transformer_encode(sd.Variable((5, 2, 8)), 8, 2, dropout=0.0).shape
        (5, 2, 8)
    """
    activation = _F.relu if activation is None else activation
    with _scope(name, "transformer_encode"):
        attn = multi_head_attention(src, src, src, num_heads=num_heads,
                                    add_attn_bias=add_attn_bias,
                                    additive_mask=src_additive_mask,
                                    key_padding_mask=src_key_padding_mask,
                                    fix_parameters=fix_parameters, name="src_self_attn")[0]
        src = layer_normalization(_F.add2(src, _dropped(attn, dropout)), batch_axis=(0, 1),
                                  fix_parameters=fix_parameters, name="enc_layer_norm1")
        out = _feed_forward(src, embed_dim, dim_feedforward, dropout, activation, "enc")
        return layer_normalization(out, batch_axis=(0, 1), fix_parameters=fix_parameters,
                                   name="enc_layer_norm2")


def transformer_decode(tgt, memory, embed_dim, num_heads, dim_feedforward=2048, dropout=0.1,
                       activation=None, tgt_additive_mask=None, memory_additive_mask=None,
                       tgt_key_padding_mask=None, memory_key_padding_mask=None, rng=None,
                       add_attn_bias=False, fix_parameters=False, name=None):
    """One transformer decoder layer (NNabla's ``PF.transformer_decode``, post-norm): self
    attention ``tgt_self_attn``, ``dec_layer_norm1``, attention over ``memory``
    ``tgt_memory_attn``, ``dec_layer_norm2``, the feed-forward ``dec_affine1``/``dec_affine2``,
    ``dec_layer_norm3``, all in scope ``transformer_decode``.

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     tgt, memory = sd.Variable((3, 2, 8)), sd.Variable((5, 2, 8))
        ...     PF.transformer_decode(tgt, memory, 8, 2, dim_feedforward=16).shape
        (3, 2, 8)
    """
    activation = _F.relu if activation is None else activation
    with _scope(name, "transformer_decode"):
        attn = multi_head_attention(tgt, tgt, tgt, num_heads=num_heads,
                                    add_attn_bias=add_attn_bias,
                                    additive_mask=tgt_additive_mask,
                                    key_padding_mask=tgt_key_padding_mask,
                                    fix_parameters=fix_parameters, name="tgt_self_attn")[0]
        tgt = layer_normalization(_F.add2(tgt, _dropped(attn, dropout)), batch_axis=(0, 1),
                                  fix_parameters=fix_parameters, name="dec_layer_norm1")
        attn = multi_head_attention(tgt, memory, memory, num_heads=num_heads,
                                    add_attn_bias=add_attn_bias,
                                    additive_mask=memory_additive_mask,
                                    key_padding_mask=memory_key_padding_mask,
                                    fix_parameters=fix_parameters, name="tgt_memory_attn")[0]
        tgt = layer_normalization(_F.add2(tgt, _dropped(attn, dropout)), batch_axis=(0, 1),
                                  fix_parameters=fix_parameters, name="dec_layer_norm2")
        out = _feed_forward(tgt, embed_dim, dim_feedforward, dropout, activation, "dec")
        return layer_normalization(out, batch_axis=(0, 1), fix_parameters=fix_parameters,
                                   name="dec_layer_norm3")


def transformer(src, tgt, embed_dim=512, num_heads=8, num_encoder_layers=6,
                num_decoder_layers=6, dim_feedforward=2048, dropout=0.1, activation=None,
                src_additive_mask=None, tgt_additive_mask=None, memory_additive_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, rng=None, add_attn_bias=False,
                fix_parameters=False, name=None):
    """NNabla's ``PF.transformer``: ``num_encoder_layers`` :func:`transformer_encode` layers
    (``encoder00``, ``encoder01``, ...) over ``src`` ``(L_S, B, E)``, then
    ``num_decoder_layers`` :func:`transformer_decode` layers (``decoder00``, ...) over ``tgt``
    ``(L_T, B, E)`` attending to the encoders' output, in scope ``transformer``.

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = PF.transformer(sd.Variable((5, 2, 8)), sd.Variable((3, 2, 8)), embed_dim=8,
        ...                        num_heads=2, num_encoder_layers=1, num_decoder_layers=1,
        ...                        dim_feedforward=16)
        ...     y.shape
        (3, 2, 8)
    """
    if src.shape[1] != tgt.shape[1] or src.shape[2] != embed_dim or tgt.shape[2] != embed_dim:
        raise ValueError(f"PF.transformer: src {tuple(src.shape)} and tgt {tuple(tgt.shape)} "
                         f"must be (L, B, embed_dim={embed_dim}) with the same B")
    common = dict(embed_dim=embed_dim, num_heads=num_heads, dim_feedforward=dim_feedforward,
                  dropout=dropout, activation=activation, rng=rng, add_attn_bias=add_attn_bias,
                  fix_parameters=fix_parameters)
    with _scope(name, "transformer"):
        memory = src
        for i in range(num_encoder_layers):
            memory = transformer_encode(memory, src_additive_mask=src_additive_mask,
                                        src_key_padding_mask=src_key_padding_mask,
                                        name=f"encoder{i:02d}", **common)
        out = tgt
        for i in range(num_decoder_layers):
            out = transformer_decode(out, memory, tgt_additive_mask=tgt_additive_mask,
                                     memory_additive_mask=memory_additive_mask,
                                     tgt_key_padding_mask=tgt_key_padding_mask,
                                     memory_key_padding_mask=memory_key_padding_mask,
                                     name=f"decoder{i:02d}", **common)
        return out
