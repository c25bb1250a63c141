#!/usr/bin/env python3
"""FP8 against bf16 on real text: the data and the report of fp8_loss_curve.sh.

  fp8_loss_curve.py data OUT.jsonl --plan PLAN.json [--steps N] [--sources DIR[:DIR...]]
      Writes steps x global_batch_size samples of exactly sequence_length
      tokens (the plan's), no sample twice: text files found on this machine
      (the installed torch and transformers packages' *.py, then the Python
      standard library's, then /usr/share/doc), each read once (duplicates by
      content skipped; a long file's first 32 KiB), in a shuffled (seeded)
      order, tokenized byte-level (token = UTF-8 byte + 3; BOS 1 before and
      EOS 2 after each file), concatenated and cut into windows. Every window is one full sample, so
      packing (docs/runtime.md) puts one sample in each window, no padding.
  fp8_loss_curve.py report FP8.jsonl BF16.jsonl [--last 20]
      Two swift-run --metrics files: the mean loss of the last 20 steps of
      each and their relative difference (target: within 1%), the median
      tokens/s (steps after the first), the loss along the run.

Standard library only.
"""
import argparse, gzip, hashlib, importlib.util, json, os, random, statistics, sys, sysconfig

BOS, EOS, OFFSET = 1, 2, 3


def default_sources():
    dirs = []
    for pkg in ("torch", "transformers"):  # without importing them
        spec = importlib.util.find_spec(pkg)
        if spec and spec.submodule_search_locations:
            dirs += list(spec.submodule_search_locations)
    dirs.append(sysconfig.get_paths()["stdlib"])
    dirs.append("/usr/share/doc")
    return dirs


def files_of(d):
    """Text files under d, sorted: *.py under package trees, anything (gz
    unpacked) under a doc tree."""
    docs = "share/doc" in d
    out = []
    for root, subdirs, names in os.walk(d):
        subdirs.sort()
        for n in sorted(names):
            if docs or n.endswith(".py"):
                p = os.path.join(root, n)
                if os.path.isfile(p) and not os.path.islink(p):
                    out.append(p)
    return out


def read_text(p, cap):
    try:
        if p.endswith(".gz"):
            with gzip.open(p, "rb") as f:
                b = f.read(cap)
        else:
            with open(p, "rb") as f:
                b = f.read(cap)
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    if len(b) == cap and b"\n" in b:  # a long file: its first `cap` bytes, whole lines
        b = b[:b.rindex(b"\n") + 1]
    if not b.strip() or b"\0" in b:
        return None
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return b


def build(args):
    plan = json.load(open(args.plan))
    t = plan["training"]
    S, G, V = t["sequence_length"], t["global_batch_size"], plan["model"]["vocab_size"]
    if OFFSET + 255 >= V:
        sys.exit(f"vocab_size {V} is too small for byte tokens")
    need = args.steps * G
    sources = args.sources.split(":") if args.sources else default_sources()
    paths = []
    for d in sources:
        if os.path.isdir(d):
            got = files_of(d)
            print(f"source {d}: {len(got)} files")
            paths += got
    rng = random.Random(args.seed)
    rng.shuffle(paths)
    seen, stream, samples, used, nbytes = set(), [], [], 0, 0
    with open(args.out, "w") as out:
        for p in paths:
            b = read_text(p, args.max_file_bytes)
            if b is None:
                continue
            h = hashlib.sha1(b).digest()
            if h in seen:
                continue
            seen.add(h)
            used += 1
            nbytes += len(b)
            stream.append(BOS)
            stream.extend(x + OFFSET for x in b)
            stream.append(EOS)
            while len(stream) >= S and len(samples) < need:
                sample, stream = stream[:S], stream[S:]
                samples.append(hashlib.sha1(bytes(str(sample), "ascii")).digest())
                out.write(json.dumps({"input_ids": sample}, separators=(",", ":")) + "\n")
            if len(samples) >= need:
                break
    distinct = len(set(samples))
    print(f"{args.out}: {len(samples)} samples of {S} tokens ({len(samples) * S:,} tokens, "
          f"{distinct} distinct) from {used} files ({nbytes:,} bytes); "
          f"{args.steps} steps x {G} samples need {need}")
    if len(samples) < need:
        sys.exit(f"only {len(samples)} of {need} samples: not enough text (--sources)")


def load(path):
    rows = []
    for line in open(path):
        if line.strip():
            rows.append(json.loads(line))
    return rows


def report(args):
    runs = {}
    for label, path in (("fp8", args.fp8), ("bf16", args.bf16)):
        try:
            runs[label] = load(path)
        except FileNotFoundError:
            print(f"{label}: no metrics ({path})")
    for label, rows in runs.items():
        bad = sum(1 for r in rows if r.get("loss") is None)
        tps = [r["tokens_per_second"] for r in rows[1:]] or [r["tokens_per_second"] for r in rows]
        step_s = [r["step_seconds"] for r in rows[1:]] or [r["step_seconds"] for r in rows]
        last = [r["loss"] for r in rows[-args.last:] if r.get("loss") is not None]
        peak = max((r.get("peak_memory_bytes") or 0) for r in rows) if rows else 0
        runs[label] = dict(rows=rows, last_mean=statistics.fmean(last) if last else None,
                           tps_median=statistics.median(tps) if tps else None,
                           step_s_median=statistics.median(step_s) if step_s else None,
                           peak=peak, nonfinite=bad)
        r = runs[label]
        print(f"{label:5} {len(rows):4} steps  mean loss of the last {args.last}: "
              f"{r['last_mean'] if r['last_mean'] is None else format(r['last_mean'], '.4f')}  "
              f"median {r['tps_median'] or 0:,.0f} tokens/s ({r['step_s_median'] or 0:.3f} s/step)  "
              f"peak {peak / 2**30:.2f} GiB  non-finite losses: {bad}")
    if "fp8" in runs and "bf16" in runs and runs["fp8"]["last_mean"] and runs["bf16"]["last_mean"]:
        a, b = runs["fp8"], runs["bf16"]
        rel = (a["last_mean"] - b["last_mean"]) / b["last_mean"]
        speed = a["tps_median"] / b["tps_median"] if b["tps_median"] else None
        a["rel_diff_vs_bf16"], a["tokens_ratio_vs_bf16"] = rel, speed
        print(f"fp8 vs bf16: mean loss of the last {args.last} steps {a['last_mean']:.4f} vs "
              f"{b['last_mean']:.4f}: relative difference {100 * rel:+.2f}% "
              f"({'within' if abs(rel) <= 0.01 else 'NOT within'} 1%); median tokens/s "
              + (f"{speed:.2f}x bf16's" if speed else "-"))
        # the curves, averaged over windows of 10 steps
        n = min(len(a["rows"]), len(b["rows"]))
        print(f"{'steps':>9} {'fp8 loss':>9} {'bf16 loss':>9} {'rel diff':>8}")
        for s in range(0, n, max(10, n // 15)):
            wa = [r["loss"] for r in a["rows"][s:s + 10] if r.get("loss") is not None]
            wb = [r["loss"] for r in b["rows"][s:s + 10] if r.get("loss") is not None]
            if wa and wb:
                ma, mb = statistics.fmean(wa), statistics.fmean(wb)
                print(f"{s + 1:4}-{min(s + 10, n):<4} {ma:9.4f} {mb:9.4f} {100 * (ma - mb) / mb:+7.2f}%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({k: {kk: vv for kk, vv in v.items() if kk != "rows"} for k, v in runs.items()},
                      f, indent=1)


def seeds(args):
    """Per seed, FP8's mean loss of the last N steps against bf16's of the
    same seed, and their mean over seeds; the spread of bf16 across seeds is
    printed beside it as the scale the difference has to be read against."""
    import glob, re
    pairs = {}
    for path in glob.glob(os.path.join(args.dir, "*-s*-metrics.jsonl")):
        m = re.match(r"(fp8|bf16)-s(\d+)-metrics\.jsonl$", os.path.basename(path))
        if m:
            rows = [r for r in load(path) if r.get("loss") is not None]
            if len(rows) >= args.last:
                pairs.setdefault(int(m.group(2)), {})[m.group(1)] = statistics.fmean(
                    r["loss"] for r in rows[-args.last:])
    rels = []
    for seed in sorted(pairs):
        p = pairs[seed]
        if "fp8" in p and "bf16" in p:
            rels.append((p["fp8"] - p["bf16"]) / p["bf16"])
            print(f"seed {seed}: last {args.last} fp8 {p['fp8']:.4f} bf16 {p['bf16']:.4f} "
                  f"{100 * rels[-1]:+.2f}%")
    if rels:
        bf = [pairs[s]["bf16"] for s in pairs if "bf16" in pairs[s]]
        spread = (max(bf) - min(bf)) / statistics.fmean(bf) if len(bf) > 1 else float("nan")
        print(f"over {len(rels)} seed(s): fp8 vs bf16 {100 * statistics.fmean(rels):+.2f}% "
              f"(target within 1%); bf16 across seeds spans {100 * spread:.2f}%")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("data")
    d.add_argument("out")
    d.add_argument("--plan", required=True)
    d.add_argument("--steps", type=int, default=300)
    d.add_argument("--sources", default="")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--max-file-bytes", type=int, default=32 << 10)
    r = sub.add_parser("report")
    r.add_argument("fp8")
    r.add_argument("bf16")
    r.add_argument("--last", type=int, default=20)
    r.add_argument("--json", default="")
    sd = sub.add_parser("seeds")
    sd.add_argument("dir")
    sd.add_argument("--last", type=int, default=20)
    args = ap.parse_args()
    {"data": build, "report": report, "seeds": seeds}[args.cmd](args)


if __name__ == "__main__":
    main()
