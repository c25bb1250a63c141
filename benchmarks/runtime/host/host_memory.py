#!/usr/bin/env python3
"""Host memory of swift-run under offload against swift-plan's host
prediction (device machine).

  python3 benchmarks/runtime/host/host_memory.py OUTDIR [SWIFT_RUN]

For each plan here (benchmarks/runtime/host/*.json, written by swift-plan
from the .yaml beside it; host_bytes.json holds swift-plan's
host_bytes_per_node for each), runs 3 steps on the GPU and reads the
process's peak resident set (getrusage ru_maxrss of the child, pinned
buffers included). Prints measured, planned and the ratio."""
import json
import os
import subprocess
import sys

OUT = sys.argv[1]
RUN = sys.argv[2] if len(sys.argv) > 2 else "build-gpu/bin/swift-run"
HERE = os.path.dirname(os.path.abspath(__file__))
planned = json.load(open(os.path.join(HERE, "host_bytes.json")))
os.makedirs(OUT, exist_ok=True)
rows = {}
for name, host_bytes in sorted(planned.items()):
    log = open(os.path.join(OUT, f"{name}.log"), "w")
    p = subprocess.Popen([RUN, os.path.join(HERE, f"{name}.json"), "--device", "cuda",
                          "--steps", "3"], stdout=log, stderr=subprocess.STDOUT)
    _, status, usage = os.wait4(p.pid, 0)
    measured = usage.ru_maxrss * 1024
    rows[name] = dict(exit=os.waitstatus_to_exitcode(status), vmhwm_bytes=measured,
                      planned_bytes=host_bytes, ratio=measured / host_bytes)
    print(f"{name}: exit {rows[name]['exit']}, VmHWM {measured / 2**30:.2f} GiB, "
          f"planned {host_bytes / 2**30:.2f} GiB, measured/planned {measured / host_bytes:.3f}")
json.dump(rows, open(os.path.join(OUT, "host-memory.json"), "w"), indent=1)
