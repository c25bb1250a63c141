#!/usr/bin/env python3
"""The GPU's SM clock and power draw while each benchmark phase runs.

The bf16 tensor peak of a Hopper GPU scales with its SM clock (989.4
TFLOP/s is 132 SMs x 4,096 FLOP per clock at 1,830 MHz). Under a power cap
the clock drops while the GEMMs run, and so does what any GEMM can reach;
this measures by how much.

  gpu_clocks.py sample CSV          append `epoch_s, sm_MHz, watts` every
                                    100 ms until killed (nvidia-smi)
  gpu_clocks.py mark PHASES NAME start|end
                                    append a phase boundary (epoch seconds)
  gpu_clocks.py summary CSV PHASES  per phase: median SM clock and power of
                                    the samples drawing over half the
                                    highest power seen (the busy ones), and
                                    the bf16 tensor peak at that clock

Standard library only.
"""
import statistics
import subprocess
import sys
import time

PEAK_TFLOPS, PEAK_MHZ = 989.4, 1830.0


def sample(csv):
    cmd = ["nvidia-smi", "--query-gpu=clocks.sm,power.draw",
           "--format=csv,noheader,nounits", "-lms", "100"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as p, \
            open(csv, "a", buffering=1) as f:
        for line in p.stdout:
            f.write(f"{time.time():.3f}, {line.strip()}\n")


def mark(phases, name, edge):
    with open(phases, "a") as f:
        f.write(f"{name}\t{edge}\t{time.time():.3f}\n")


def summary(csv, phases):
    samples = []
    for line in open(csv):
        try:
            t, mhz, watts = (float(x) for x in line.split(","))
            samples.append((t, mhz, watts))
        except ValueError:
            continue  # a partial last line, or nvidia-smi's "[N/A]"
    if not samples:
        sys.exit(f"gpu_clocks: {csv}: no samples")
    starts, rows = {}, []
    for line in open(phases):
        name, edge, t = line.rstrip("\n").split("\t")
        if edge == "start":
            starts[name] = float(t)
        elif name in starts:
            rows.append((name, starts.pop(name), float(t)))
    top = max(w for _, _, w in samples)
    print(f"{'phase':44} {'samples':>7} {'SM MHz':>7} {'watts':>6} {'bf16 peak at that clock':>24}")
    for name, t0, t1 in rows:
        busy = [(m, w) for t, m, w in samples if t0 <= t <= t1 and w > 0.5 * top]
        if not busy:
            print(f"{name:44} {0:7}")
            continue
        mhz = statistics.median(m for m, _ in busy)
        watts = statistics.median(w for _, w in busy)
        print(f"{name:44} {len(busy):7} {mhz:7.0f} {watts:6.0f} "
              f"{PEAK_TFLOPS * mhz / PEAK_MHZ:17.0f} TFLOP/s")


if __name__ == "__main__":
    cmds = {"sample": sample, "mark": mark, "summary": summary}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    cmds[sys.argv[1]](*sys.argv[2:])
