#!/usr/bin/env python3
"""Checks swift-plan --html's page, as Chromium renders it, against --json.

    python3 check_html.py REPORT.json DOM.json

DOM.json is test/report_dom.py's reading of the page. Prints one line per
check that holds; exits 1 at the first that does not.
"""
import json
import sys

GIB = float(1 << 30)
report = json.load(open(sys.argv[1]))
dom = json.load(open(sys.argv[2]))


def near(got, want, what, rel=1e-7, abs_=1e-9):
    if abs(got - want) > max(abs_, rel * abs(want)):
        sys.exit(f"{what}: the page shows {got}, --json says {want}")


if dom["external"] or dom["scripts"]:
    sys.exit(f"not self-contained: {dom['external']}, {dom['scripts']} scripts")
print("self-contained ok")

charts = {c["title"]: c for c in dom["charts"]}
bars = charts["memory at each strategy's peak"]
memory = report["memory"]
chosen = bars["bars"][0]
if not chosen["chosen"]:
    sys.exit("the first bar is not the chosen strategy")
# The chosen strategy's parts are the report's breakdown, and they sum to
# its peak.
if set(chosen["parts"]) != set(memory["breakdown"]):
    sys.exit(f"parts {sorted(chosen['parts'])} != {sorted(memory['breakdown'])}")
for name, bytes_ in memory["breakdown"].items():
    near(chosen["parts"][name], bytes_ / GIB, "part " + name)
near(chosen["total"], memory["peak_bytes"] / GIB, "chosen total", rel=1e-6)
# One bar per alternative, in the report's order, each at its peak.
alternatives = report["alternatives"]
if len(bars["bars"]) != 1 + len(alternatives):
    sys.exit(f"{len(bars['bars'])} bars for {len(alternatives)} alternatives")
for bar, alt in zip(bars["bars"][1:], alternatives):
    near(bar["total"], alt["peak_bytes"] / GIB, "alternative " + bar["label"], rel=1e-6)
near(bars["limit"], memory["usable_bytes"] / GIB, "usable line")
print(f"bars {len(bars['bars'])} ok")

timeline = charts["allocated memory through the step"]
values = timeline["series"]["allocated"]["values"]
near(max(values), memory["peak_bytes"] / GIB, "the timeline's highest point")
near(timeline["marker"][1], memory["peak_bytes"] / GIB, "the peak marker")
print("timeline peak ok")

time = report["time"]
step = charts["step time"]["bars"][0]
near(step["total"], time["step_seconds"], "step time", rel=1e-6)
near(step["parts"]["recompute"], time["recompute_seconds"], "recompute")
near(step["parts"]["optimizer"], time["optimizer_seconds"], "optimizer")
print("time ok")
