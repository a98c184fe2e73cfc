"""``import nnabla.solver as S`` (NNabla's VAE, siamese and VAT tutorials) gives the solvers:
through the import hook here; which solvers the module holds is compared with NNabla 1.39 in
compat_cases/nnabla_solver_module.py."""

import os
import subprocess
import sys


def test_import_nnabla_solver_runs_through_the_import_hook(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import nnabla as nn\nimport nnabla.solver as S\n"
                      "x = nn.Variable((2,), need_grad=True)\n"
                      "s = S.Adam(1e-3)\ns.set_parameters({'x': x})\nprint(type(s).__name__)\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.path.join(root, "src"))
    proc = subprocess.run([sys.executable, os.path.join(root, "examples", "nnabla",
                                                        "on_stadyn.py"), str(script)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "Adam"
