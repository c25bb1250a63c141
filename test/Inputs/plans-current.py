"""plans-current.py PLANS_DIR OUT_DIR: every committed plan in PLANS_DIR
(made by a make_plans.sh from PLANS_DIR/jobs) against OUT_DIR/NAME.json, the
same job planned again by this build's swift-plan. Fails, naming the plans,
when a prediction or the strategy differs: the committed plans, which the
benchmarks print next to their measurements, are stale (rerun make_plans.sh)."""
import glob
import json
import os
import sys

plans_dir, out_dir = sys.argv[1], sys.argv[2]
stale, count = [], 0
for path in sorted(glob.glob(os.path.join(plans_dir, "*.json"))):
    name = os.path.basename(path)
    committed, fresh = json.load(open(path)), json.load(open(os.path.join(out_dir, name)))
    count += 1
    for key in ("predicted", "strategy", "training"):
        if committed.get(key) != fresh.get(key):
            stale.append(f"{name}: {key}: committed {committed.get(key)} != now {fresh.get(key)}")
if stale:
    sys.exit("stale plans (rerun make_plans.sh):\n  " + "\n  ".join(stale))
print(f"{count} plans current")
