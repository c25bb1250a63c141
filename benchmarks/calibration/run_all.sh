#!/bin/bash
# One device call: world-1 baseline (timing + memory), trace, then FSDP2 worlds 2/4/8.
# Usage on the GPU machine, from the repo root: bash benchmarks/calibration/run_all.sh
export PYTHONUNBUFFERED=1
O=${OUT:-/tmp/calib_out}; mkdir -p $O
cd benchmarks/calibration
L=$O/log.txt
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv >>$L 2>&1
python3 - >>$L 2>&1 <<'PY'
import torch,time
a=torch.randn(8192,8192,device="cuda",dtype=torch.bfloat16);b=torch.randn_like(a)
for _ in range(3): a@b
torch.cuda.synchronize();t=time.time()
for _ in range(10): a@b
torch.cuda.synchronize();dt=(time.time()-t)/10
print("matmul8192_tflops",2*8192**3/dt/1e12)
x=torch.empty(2**30,dtype=torch.uint8,device="cuda");y=torch.empty_like(x)
for _ in range(3): y.copy_(x)
torch.cuda.synchronize();t=time.time()
for _ in range(10): y.copy_(x)
torch.cuda.synchronize();dt=(time.time()-t)/10
print("copy_GBps_rw",2*2**30/dt/1e9)
PY
BUDGET_S=${B1:-170} python3 hf_baseline.py 1 $O/w1.jsonl ${F1:-new} >>$L 2>&1
BUDGET_S=${BT:-75} python3 hf_memory_trace.py $O >>$L 2>&1
BUDGET_S=${B2:-55} python3 hf_baseline.py 2 $O/w2.jsonl new >>$L 2>&1
BUDGET_S=${B4:-65} python3 hf_baseline.py 4 $O/w4.jsonl >>$L 2>&1
BUDGET_S=${B8:-45} python3 hf_baseline.py 8 $O/w8.jsonl >>$L 2>&1
grep -v '^{' $L | tail -40
