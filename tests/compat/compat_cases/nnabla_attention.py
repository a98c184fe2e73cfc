"""NNabla's attention: ``F.multi_head_attention`` (outputs and gradients w.r.t. every input),
``PF.multi_head_attention`` and the transformer layers (``PF.transformer``,
``PF.transformer_encode``, ``PF.transformer_decode``): the parameters they create (names and
shapes), then with the parameters set from their names, the outputs and the gradients w.r.t.
the inputs and every parameter.  Dropout is off (``dropout=0.0``) so the values compare."""

import numpy as np

from compat_harness import nnabla_case

LT, LS, B = 3, 4, 2
P = "nnabla.parametric_functions."


def _outputs(nn, F, r, ys, wrt):
    """Forward ``ys``, then backward of ``sum_k sum(y_k * w_k)``: the outputs and the gradients
    of every Variable of ``wrt`` (a dict name -> Variable)."""
    loss = None
    for y in ys:
        term = F.sum(y * nn.Variable.from_numpy_array(r.weights_like(y.d)))
        loss = term if loss is None else loss + term
    loss.forward()
    res = {}
    for k, y in enumerate(ys):
        res["out%d" % k] = y.d.copy()
    for v in wrt.values():
        v.g = 0
    loss.backward()
    for name, v in sorted(wrt.items()):
        res["grad " + name] = v.g.copy()
    return res


def _masks(nn, r, lt, ls):
    """An additive mask ``(lt, ls)`` (random values, one ``-inf``) and a key padding mask
    ``(B, ls)`` (1 on the last key of the first sample, the last two of the second)."""
    add = r.randn(lt, ls) * 0.5
    add[0, 1] = -np.inf
    pad = np.zeros((B, ls), np.float32)
    pad[0, -1] = 1
    pad[1, -2:] = 1
    V = nn.Variable.from_numpy_array
    return V(add), V(pad)


def fn_mha_case(name, dq=4, dk=6, dv=8, embed=4, v_embed=6, out_dim=5, heads=2, bias=True,
                attn_bias=False, masks=False):
    def fn(nn, F, r):
        V = nn.Variable.from_numpy_array
        xs = {"query": V(r.randn(LT, B, dq), need_grad=True),
              "key": V(r.randn(LS, B, dk), need_grad=True),
              "value": V(r.randn(LS, B, dv), need_grad=True),
              "q_weight": V(r.randn(dq, embed) * 0.5, need_grad=True),
              "k_weight": V(r.randn(dk, embed) * 0.5, need_grad=True),
              "v_weight": V(r.randn(dv, v_embed) * 0.5, need_grad=True),
              "out_weight": V(r.randn(v_embed, out_dim) * 0.5, need_grad=True)}
        kw = {}
        if bias:
            for k, n in (("q_bias", embed), ("k_bias", embed), ("v_bias", v_embed),
                         ("out_bias", out_dim)):
                xs[k] = kw[k] = V(r.randn(n) * 0.5, need_grad=True)
        if attn_bias:
            xs["attn_bias_k"] = kw["attn_bias_k"] = V(r.randn(embed), need_grad=True)
            xs["attn_bias_v"] = kw["attn_bias_v"] = V(r.randn(v_embed), need_grad=True)
        if masks:
            kw["additive_mask"], kw["key_padding_mask"] = _masks(nn, r, LT, LS)
        ys = F.multi_head_attention(xs["query"], xs["key"], xs["value"], heads, xs["q_weight"],
                                    xs["k_weight"], xs["v_weight"], xs["out_weight"], **kw)
        return _outputs(nn, F, r, ys, xs)
    fn.__name__ = name
    nnabla_case(name=name, names=["nnabla.functions.multi_head_attention"], rtol=1e-5,
                atol=1e-5)(fn)


fn_mha_case("multi_head_attention")
fn_mha_case("multi_head_attention__no_bias_one_head", bias=False, heads=1)
fn_mha_case("multi_head_attention__masks_attn_bias", attn_bias=True, masks=True)


def pf_case(name, build, shapes, names, mask_lens=None):
    """A case for a parametric function of the arrays ``shapes`` (a dict name -> shape):
    ``build(nn, PF, xs, masks)`` returns the outputs; ``mask_lens`` ``(lt, ls)`` makes the
    masks it gets (else ``None``)."""
    def fn(nn, F, PF, r):
        V = nn.Variable.from_numpy_array
        xs = dict((k, V(r.randn(*s), need_grad=True)) for k, s in sorted(shapes.items()))
        masks = _masks(nn, r, *mask_lens) if mask_lens else None
        ys = build(nn, PF, xs, masks)
        params = nn.get_parameters(grad_only=False)
        res = {"params": r.set_params(params),
               "need_grad": sorted([k, bool(v.need_grad)] for k, v in params.items())}
        wrt = dict(xs)
        wrt.update(params)
        res.update(_outputs(nn, F, r, ys, wrt))
        return res
    fn.__name__ = name
    nnabla_case(name=name, names=[P + n for n in names], rtol=1e-4, atol=1e-5,
                note="layer normalisation and softmax of several layers: 1e-4")(fn)


pf_case("PF_multi_head_attention",
        lambda nn, PF, xs, m: PF.multi_head_attention(xs["q"], xs["k"], xs["v"], num_heads=2),
        {"q": (LT, B, 4), "k": (LS, B, 6), "v": (LS, B, 8)}, ["multi_head_attention"])
pf_case("PF_multi_head_attention__dims_masks",
        lambda nn, PF, xs, m: PF.multi_head_attention(
            xs["q"], xs["k"], xs["v"], num_heads=2, k_embed_dim=6, v_embed_dim=4, out_dim=10,
            add_attn_bias=True, additive_mask=m[0], key_padding_mask=m[1], name="att"),
        {"q": (LT, B, 4), "k": (LS, B, 6), "v": (LS, B, 8)}, ["multi_head_attention"],
        mask_lens=(LT, LS))
pf_case("PF_multi_head_attention__no_bias_fixed",
        lambda nn, PF, xs, m: PF.multi_head_attention(xs["q"], xs["q"], xs["q"], num_heads=1,
                                                      with_bias=False, fix_parameters=True),
        {"q": (LT, B, 4)}, ["multi_head_attention"])
pf_case("PF_transformer_encode",
        lambda nn, PF, xs, m: (PF.transformer_encode(
            xs["src"], 4, 2, dim_feedforward=6, dropout=0.0, src_additive_mask=m[0],
            src_key_padding_mask=m[1]),),
        {"src": (LS, B, 4)}, ["transformer_encode"], mask_lens=(LS, LS))
pf_case("PF_transformer_decode",
        lambda nn, PF, xs, m: (PF.transformer_decode(
            xs["tgt"], xs["mem"], 4, 2, dim_feedforward=6, dropout=0.0,
            activation=nn.functions.tanh, memory_additive_mask=m[0],
            memory_key_padding_mask=m[1], add_attn_bias=True, name="dec"),),
        {"tgt": (LT, B, 4), "mem": (LS, B, 4)}, ["transformer_decode"], mask_lens=(LT, LS))
pf_case("PF_transformer",
        lambda nn, PF, xs, m: (PF.transformer(
            xs["src"], xs["tgt"], embed_dim=4, num_heads=2, num_encoder_layers=2,
            num_decoder_layers=1, dim_feedforward=6, dropout=0.0, memory_key_padding_mask=m[1],
            src_key_padding_mask=m[1]),),
        {"src": (LS, B, 4), "tgt": (LT, B, 4)}, ["transformer"], mask_lens=(LT, LS))


@nnabla_case(names=[P + "multi_head_attention"],
             note="a non-integer k_embed_dim / v_embed_dim / out_dim: NNabla truncates each "
                  "parameter dimension to an int, as its other parametric functions do")
def PF_multi_head_attention_float_dims(nn, F, PF, r):
    res = {}
    for dims in ((4.0, 6.0, 5.0), (4.5, 6.9, 5.2)):
        nn.clear_parameters()
        x = nn.Variable.from_numpy_array(r.randn(LT, B, 4), need_grad=True)
        kv = nn.Variable.from_numpy_array(r.randn(LS, B, 6), need_grad=True)
        y, _ = PF.multi_head_attention(x, kv, kv, num_heads=2, k_embed_dim=dims[0],
                                       v_embed_dim=dims[1], out_dim=dims[2])
        key = "dims %s" % (dims,)
        res[key + " params"] = r.set_params(nn.get_parameters())
        y.forward()
        res[key + " out"] = y.d.copy()
    return res
