#!/usr/bin/env python3
"""bitsandbytes' NF4 of a fixed tensor, for the CI check of swift-run's NF4
(test/Runtime/Nf4Test.cpp, Nf4.EqualsBitsandbytes).

  python3 benchmarks/reference/make_nf4_reference.py [OUT]   (default
  test/data/peft/nf4.json)

Quantizes a fixed bf16 tensor (64 x 256, N(0, 0.02), seed 2) with
bitsandbytes.functional.quantize_4bit(blocksize=64, quant_type="nf4",
compress_statistics=True), QLoRA's setting, and records bitsandbytes' NF4
code, the packed bytes, the double-quantized absmax (its 8-bit codes,
offset, dynamic code and second-level absmax) and dequantize_4bit's bf16
output. Runs where bitsandbytes imports: on CPU tensors it uses its
pure-PyTorch backend (backends/default/ops.py), which needs no native
library, so a source checkout on PYTHONPATH is enough (the GPU machine has
no bitsandbytes package):
  CUDA_VISIBLE_DEVICES= PYTHONPATH=path/to/bitsandbytes-checkout python3 ...
"""
import json
import os
import sys

import torch

OUT = sys.argv[1] if len(sys.argv) > 1 else "test/data/peft/nf4.json"


def main():
    import bitsandbytes
    import bitsandbytes.functional as bnbf
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(2)
    w = (torch.randn(64, 256) * 0.02).to(torch.bfloat16)
    q, state = bnbf.quantize_4bit(w.to(device), blocksize=64, compress_statistics=True,
                                  quant_type="nf4")
    deq = bnbf.dequantize_4bit(q, state).float().cpu()
    nf4 = dict(code=state.code.float().cpu().tolist(),
               input=w.float().flatten().tolist(),
               packed=q.cpu().flatten().tolist(),
               absmax_u8=state.absmax.cpu().flatten().tolist(),
               absmax_offset=float(state.offset),
               absmax_code=state.state2.code.float().cpu().tolist(),
               absmax_absmax=state.state2.absmax.float().cpu().flatten().tolist(),
               dequantized=deq.flatten().tolist(),
               bitsandbytes=bitsandbytes.__version__,
               backend=device, torch=torch.__version__)
    os.makedirs(os.path.dirname(OUT) or ".", exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(nf4, f)
        f.write("\n")
    print(f"{OUT}: bitsandbytes {bitsandbytes.__version__} on {device}; "
          f"code {nf4['code']}")


if __name__ == "__main__":
    main()
