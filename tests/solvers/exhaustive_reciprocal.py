"""Every float32 ``a`` (all 2**32 bit patterns: zeros, subnormals, infinities, NaNs): ``1.0 / a``
worked out in double and rounded to float has the bits of ``1 / a`` worked out in float.  CNTK
2.7's float Adam takes ``(ElemType)(1.0 / (sqrt(v) + eps))`` (``CPUMatrixImpl.h``'s ``Adam``),
a double division; ``solvers/_cntk_cpu.py`` divides in float32, ~12x cheaper per block.  (Double
rounding is innocuous for a division when the wide format has at least 2p + 2 bits, 53 >= 50:
Figueroa, "When is double rounding innocuous?", 1995.)  Not collected by pytest (2.5 min
here); ``tests/solvers/test_block_packs.py`` checks a sample on every run.

    python tests/solvers/exhaustive_reciprocal.py
"""

import numpy as np


def main() -> None:
    step, differing = 1 << 24, 0
    with np.errstate(all="ignore"):
        for start in range(0, 1 << 32, step):
            a = np.arange(start, start + step, dtype=np.uint64).astype(np.uint32).view(np.float32)
            wide = (1.0 / a.astype(np.float64)).astype(np.float32)
            narrow = np.float32(1) / a
            differing += int((wide.view(np.uint32) != narrow.view(np.uint32)).sum())
    print("float32 values whose 1/a differs, double then float vs float:", differing)
    assert differing == 0


if __name__ == "__main__":
    main()
