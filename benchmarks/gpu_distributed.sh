#!/usr/bin/env bash
# GPU check of stadyn.distributed on the device machine (one GPU): the data-parallel step with
# NCCL (world size 1 under the launcher), alone, and with synchronised batch normalisation.
# Usage: PYTHONPATH=src bash benchmarks/gpu_distributed.sh  (JSON lines on stdout)
set -u
export PYTHONPATH=${PYTHONPATH:-src}
python -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
for args in "--local-batch 16" "--local-batch 64" "--local-batch 16 --sync-bn" "--local-batch 64 --sync-bn"; do
  echo "## alone $args"
  timeout 120 python -m stadyn.bench._data_parallel --device cuda --iterations 50 $args
  echo "## launcher nproc 1 (NCCL) $args"
  timeout 120 python -m stadyn.distributed.run --nproc 1 --timeout 60 -m stadyn.bench._data_parallel --device cuda --iterations 50 $args
done
