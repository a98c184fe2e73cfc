"""``python -m stadyn.distributed.run [--nproc N] [--timeout S] script.py args...``: start N
local data-parallel workers (see :func:`stadyn.distributed.run_workers`)."""

from ._launch import main

if __name__ == "__main__":
    raise SystemExit(main())
