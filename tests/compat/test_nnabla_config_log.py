"""``nnabla.conf``'s ``LOG`` section sets up the ``nnabla`` logger as NNabla 1.39's does: the
console level and format, and a log file with its own level and format (checked on NNabla
1.39 with the same file: the console line ``CONSOLE WARNING a warning``, the file
``FILE WARNING nnabla a warning``, the info and debug messages dropped)."""

import os
import subprocess
import sys

import pytest

_SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")

_CONF = """[LOG]
log_console_level = WARNING
log_console_format = CONSOLE %(levelname)s %(message)s
log_file_name = {log}
log_file_level = DEBUG
log_file_format = FILE %(levelname)s %(name)s %(message)s
"""

_PROGRAM = """
from stadyn.compat.nnabla.logger import logger
logger.info('an info'); logger.warning('a warning'); logger.debug('a debug')
"""


def _run(tmp_path, conf):
    path = tmp_path / "my.conf"
    path.write_text(conf)
    env = dict(os.environ, NNABLA_CONFIG_FILE_PATH=str(path),
               PYTHONPATH=os.path.abspath(_SRC), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", _PROGRAM], env=env, cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=300)


def test_the_log_section_sets_the_level_the_format_and_a_log_file(tmp_path):
    log = tmp_path / "nn.log"
    done = _run(tmp_path, _CONF.format(log=log))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["CONSOLE WARNING a warning"]
    assert log.read_text().splitlines() == ["FILE WARNING nnabla a warning"]


def test_a_level_that_is_none_is_refused_naming_the_option(tmp_path):
    done = _run(tmp_path, "[LOG]\nlog_console_level = LOUD\n")
    assert done.returncode != 0
    assert "[LOG] log_console_level = 'LOUD': not a level" in done.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
