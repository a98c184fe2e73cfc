"""What nnabla-examples' seventh batch of programs needs (``tests/examples/nnabla_examples_7.py``):
StarGAN's discriminator (``image-translation/stargan/train.py``) trains on a WGAN-GP loss, whose
gradient penalty is differentiated through ``nn.grad``'s gradients with Adam; a convolution's
weight gets its gradient from that second backward."""

from compat_harness import nnabla_case


@nnabla_case(names=["nnabla.grad", "nnabla.solvers.Adam",
                    "nnabla.parametric_functions.convolution", "nnabla.functions.leaky_relu"],
             rtol=1e-4, atol=1e-6)
def examples_adam_after_a_gradient_penalty(nn, F, PF, S, r):
    """A StarGAN-shaped discriminator (a strided 4 x 4 convolution, leaky ReLU, a 3 x 3 one)
    trained two Adam steps (StarGAN's betas 0.5 and 0.999) on the WGAN-GP loss of a real and a
    fake batch: the parameters' gradients and values after each step.  Stadyn's fused Adam
    took the first convolution's weight gradient, which the penalty's second backward leaves
    transposed in memory, element by element in the wrong order: half its elements stepped the
    wrong way.  (The second backward sums in another order than NNabla's: a gradient may differ
    in its fifth digit, 1.8e-5 seen; every step is the learning rate, 1e-2, one way or the
    other.)"""
    x_real = nn.Variable.from_numpy_array(r.randn(2, 3, 8, 8))
    x_fake = nn.Variable.from_numpy_array(r.randn(2, 3, 8, 8), need_grad=True)
    alpha = nn.Variable.from_numpy_array(r.rand(2, 1, 1, 1))

    def discriminator(x):
        with nn.parameter_scope("dis"):
            h = PF.convolution(x, 4, (4, 4), pad=(1, 1), stride=(2, 2), name="c1")
            h = F.leaky_relu(h, alpha=0.01)
            return PF.convolution(h, 1, (3, 3), pad=(1, 1), with_bias=False, name="c2")

    x_hat = F.mul2(alpha, x_real) + F.mul2(F.r_sub_scalar(alpha, 1), x_fake)
    grads = nn.grad([discriminator(x_hat)], [x_hat])
    l2norm = F.sum(grads[0] ** 2.0, axis=(1, 2, 3)) ** 0.5
    gp = F.mean((l2norm - 1.0) ** 2.0)
    loss = -F.mean(discriminator(x_real)) + F.mean(discriminator(x_fake)) + 10 * gp
    res = {"params": r.set_params(nn.get_parameters())}
    solver = S.Adam(alpha=1e-2, beta1=0.5, beta2=0.999)
    with nn.parameter_scope("dis"):
        solver.set_parameters(nn.get_parameters())
    for step in range(2):
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        res["loss %d" % step] = loss.d.copy()
        for name, p in sorted(nn.get_parameters().items()):
            res["%s grad %d" % (name, step)] = p.g.copy()
        solver.update()
        for name, p in sorted(nn.get_parameters().items()):
            res["%s after %d" % (name, step)] = p.d.copy()
    return res
