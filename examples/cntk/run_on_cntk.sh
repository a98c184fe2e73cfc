#!/bin/sh
# Runs one program of this folder on CNTK itself: a copy beside it (.cntk_PROGRAM, removed
# afterwards) with its one changed line put back (import stadyn.compat.cntk as C -> import cntk
# as C), run by the Python that has CNTK (CNTK_PYTHON, default: python).
#
#   CNTK_PYTHON=/path/to/python3.6 ./run_on_cntk.sh 103D_convolutional/mnist_conv.py --sweeps 10
set -e
here=$(cd "$(dirname "$0")" && pwd)
program=$1
shift
copy="$here/$(dirname "$program")/.cntk_$(basename "$program")"
trap 'rm -f "$copy"' EXIT
sed 's/^import stadyn\.compat\.cntk as C$/import cntk as C/' "$here/$program" > "$copy"
grep -q '^import cntk as C$' "$copy"
"${CNTK_PYTHON:-python}" -W ignore "$copy" "$@"
