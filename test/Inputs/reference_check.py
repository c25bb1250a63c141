"""What the reference comparisons (hf-reference.py, peft-reference.py)
share: the tolerance, the per-step comparison of swift-run's metrics with a
reference's losses and grad norms, and the summary line the lit tests
check."""
import json
import sys

RELATIVE = 1e-5  # float32 on both sides


class Comparison:
    def __init__(self, reference):
        self.reference = reference  # "transformers", "peft"
        self.failures, self.checked = [], 0

    def value(self, tag, got, want):
        self.checked += 1
        if abs(got - want) > RELATIVE * abs(want):
            self.failures.append(f"{tag}: swift-run {got!r}, {self.reference} {want!r}")

    def steps(self, tag, metrics_file, want, steps):
        """swift-run's metrics against want["losses"] and want["grad_norms"]."""
        got = [json.loads(line) for line in open(metrics_file)]
        for key, ref in (("loss", want["losses"]), ("grad_norm", want["grad_norms"])):
            for step, (m, r) in enumerate(zip(got, ref), 1):
                self.value(f"{tag} step {step} {key}", m[key], r)
        if len(got) != steps:
            self.failures.append(f"{tag}: {len(got)} steps in the metrics")

    def finish(self):
        for f in self.failures:
            print("MISMATCH", f)
        print(f"{self.checked} values checked, {len(self.failures)} mismatches")
        sys.exit(1 if self.failures else 0)
