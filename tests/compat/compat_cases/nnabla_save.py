"""``nnabla.utils.save``: networks saved as ``.nnp`` and ``.nntxt`` files, read back with
``nnabla.utils.nnp_graph.NnpLoader`` on the same side; what a file holds and what it computes
is compared (each side's own variable names inside the file are not)."""

import os

from compat_harness import nnabla_case

S_ = "nnabla.utils.save."


@nnabla_case(names=[S_ + "save", S_ + "create_proto", S_ + "get_parameters", S_ + "save_files",
                    S_ + "get_default_file_savers", S_ + "FileHandlerContext"],
             note="an MLP with batch normalisation (running statistics): save() as .nnp with "
                  "parameter.h5 and .protobuf; create_proto(include_params=True) + save_files "
                  "as .nntxt; save(parameters=...) writing other values")
def nnp_save(nn, F, PF, r):
    SV = r.module("nnabla.utils.save")
    NG = r.module("nnabla.utils.nnp_graph")
    nn.clear_parameters()
    x = nn.Variable((2, 6))
    h = F.relu(PF.affine(x, 5, name="l1"))
    h = PF.batch_normalization(h, batch_stat=False, name="bn")
    y = F.softmax(PF.affine(h, 3, name="l2"))
    listing = r.set_params(SV.get_parameters(grad_only=False))
    variance = SV.get_parameters(grad_only=False)["bn/bn/var"]
    variance.d = abs(variance.d) + 0.5                 # a variance is positive
    contents = {"networks": [{"name": "mlp", "batch_size": 2, "outputs": {"y": y},
                              "names": {"x": x}}],
                "executors": [{"name": "runtime", "network": "mlp", "data": ["x"],
                               "output": ["y"]}]}
    xv = r.rand(2, 6)
    doubled = dict((k, nn.Variable.from_numpy_array(v.d * 2.0))
                   for k, v in SV.get_parameters(grad_only=False).items())
    out = {"params": listing, "savers": list(SV.get_default_file_savers())}
    with r.tempdir() as folder:
        SV.save(os.path.join(folder, "a.nnp"), contents)
        SV.save(os.path.join(folder, "b.nnp"), contents, parameter_format=".protobuf")
        ctx = SV.FileHandlerContext()
        ctx.proto = SV.create_proto(contents, include_params=True)
        ctx.parameters = None
        SV.save_files(ctx, SV.get_default_file_savers(), os.path.join(folder, "c.nntxt"))
        SV.save(os.path.join(folder, "d.nnp"), contents, parameters=doubled)
        for name in ("a.nnp", "b.nnp", "c.nntxt", "d.nnp"):
            nn.clear_parameters()
            nnp = NG.NnpLoader(os.path.join(folder, name))
            net = nnp.get_network("mlp", batch_size=2)
            net.inputs["x"].d = xv
            net.outputs["y"].forward()
            out[name] = net.outputs["y"].d.copy()
            out[name + "/networks"] = nnp.get_network_names()
            out[name + "/parameters"] = sorted(SV.get_parameters(grad_only=False))
    return out


@nnabla_case(names=[S_ + "save"],
             note="the members of a saved .nnp are stored, not deflated (NNabla 1.39's "
                  "zipfile.ZipFile(path, 'w'): Stadyn deflated them), with either parameter "
                  "format, and the files read back")
def nnp_save_members_stored(nn, F, PF, r):
    import zipfile
    SV = r.module("nnabla.utils.save")
    nn.clear_parameters()
    x = nn.Variable((2, 4))
    y = PF.affine(x, 3, name="fc")
    listing = r.set_params(SV.get_parameters(grad_only=False))
    contents = {"networks": [{"name": "net", "batch_size": 2, "outputs": {"y": y},
                              "names": {"x": x}}],
                "executors": [{"name": "runtime", "network": "net", "data": ["x"],
                               "output": ["y"]}]}
    out = {"params": listing}
    with r.tempdir() as folder:
        for name, fmt in (("h5.nnp", ".h5"), ("pb.nnp", ".protobuf")):
            path = os.path.join(folder, name)
            SV.save(path, contents, parameter_format=fmt)
            with zipfile.ZipFile(path) as z:
                out[name] = [[i.filename, i.compress_type, i.file_size == i.compress_size]
                             for i in z.infolist()]
    return out
