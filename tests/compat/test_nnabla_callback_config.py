"""``nnabla.conf``'s ``[CALLBACK] util_callback_module`` names the callback modules
``nnabla.utils.callback`` asks, as NNabla 1.39's (checked on NNabla 1.39 with the same files:
``2 ['hooks_a', 'hooks_b'] reader of hooks_b: a.png 60 None``; with a module that does not
import, ``0 load_image None``)."""

import os
import subprocess
import sys

_SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")

_HOOKS_A = "def get_timelimit(args):\n    return 60\n"
_HOOKS_B = ("def get_load_image_func(ext):\n"
            "    return (lambda path, *a, **k: 'reader of hooks_b: ' + path) if ext == '.png' "
            "else None\n")

_PROGRAM = """
from stadyn.compat.nnabla.utils import callback, data_source_loader as loader
hooks = callback.callback_list
print(len(hooks), [m.__name__ for m in hooks], loader.load('.png')('a.png') if hooks else
      loader.load('.png').__name__, callback.get_timelimit(None) if hooks else
      callback.get_callback_version(), callback.get_best_from_status(None)[0] if hooks else '')
"""


def _run(tmp_path, modules):
    (tmp_path / "hooks_a.py").write_text(_HOOKS_A)
    (tmp_path / "hooks_b.py").write_text(_HOOKS_B)
    conf = tmp_path / "my.conf"
    conf.write_text(f"[CALLBACK]\nutil_callback_module = {modules}\n")
    env = dict(os.environ, NNABLA_CONFIG_FILE_PATH=str(conf), OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([os.path.abspath(_SRC), str(tmp_path)]))
    done = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n")[0]


def test_the_configured_modules_are_asked_in_order(tmp_path):
    got = _run(tmp_path, "[hooks_a, hooks_b]")
    assert got == "2 ['hooks_a', 'hooks_b'] reader of hooks_b: a.png 60 None"


def test_a_module_that_does_not_import_leaves_no_callbacks(tmp_path):
    assert _run(tmp_path, "[hooks_a, no_such_module]") == "0 [] load_image None "
