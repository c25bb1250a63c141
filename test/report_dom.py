#!/usr/bin/env python3
"""Renders an HTML report in headless Chromium and prints what it shows.

    python3 report_dom.py FILE.html [--screenshot FILE.png]

Chromium (Debian's `chromium`) loads the page from disk with the network
off and dumps the DOM it built; this script parses that DOM and prints one
JSON object:
    {"title": ..., "external": [URLs the page would fetch],
     "scripts": N,
     "charts": [{"kind": "line"|"bars", "title": ...,
                 "series": {NAME: {"values": [...], "steps": [...]}},
                 "reference": V, "marker": [x, y],
                 "bars": [{"label", "total", "chosen", "parts": {NAME: V}}],
                 "limit": V}],
     "tables": [[[cell, ...], ...]]}
Exit 1 when Chromium fails or the DOM has no <html>.
"""
import json
import os
import subprocess
import sys
import tempfile
from html.parser import HTMLParser


def chromium(args):
    for name in ("chromium", "chromium-browser", "google-chrome"):
        for d in os.environ.get("PATH", "").split(os.pathsep):
            if os.access(os.path.join(d, name), os.X_OK):
                profile = tempfile.mkdtemp(prefix="swift-chromium-")
                return subprocess.run(
                    [name, "--headless", "--no-sandbox", "--disable-gpu",
                     "--hide-scrollbars", "--no-first-run",
                     "--user-data-dir=" + profile,
                     # The page must need nothing from outside.
                     "--host-resolver-rules=MAP * ~NOTFOUND",
                     "--window-size=1200,3000"] + args,
                    capture_output=True, text=True, timeout=120)
    sys.exit("no chromium on PATH (apt install chromium)")


class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.title, self.charts, self.tables, self.external = "", [], [], []
        self.scripts = 0
        self.row = self.cell = self.text = None
        self.in_title = False
        self.bar = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("src", "href"):
            if a.get(key, "").startswith(("http:", "https:", "//")):
                self.external.append(a[key])
        cls = a.get("class", "").split()
        if tag == "script":
            self.scripts += 1
        elif tag == "title" and not self.charts:
            self.in_title = True
        elif tag == "svg" and "chart" in cls:
            self.charts.append({"kind": "line" if "line" in cls else "bars",
                                "title": a.get("data-title", ""), "series": {},
                                "bars": []})
        elif tag == "polyline" and "series" in cls:
            floats = lambda s: [float(v) for v in s.split()] if s else []
            self.charts[-1]["series"][a["data-series"]] = {
                "values": floats(a.get("data-values", "")),
                "steps": floats(a.get("data-steps", ""))}
        elif tag == "line" and "reference" in cls:
            self.charts[-1]["reference"] = float(a["data-value"])
        elif tag == "line" and "limit" in cls:
            self.charts[-1]["limit"] = float(a["data-value"])
        elif tag == "circle" and "marker" in cls:
            self.charts[-1]["marker"] = [float(a["data-x"]), float(a["data-y"])]
        elif tag == "g" and "bar" in cls:
            self.bar = {"label": a["data-label"], "total": float(a["data-total"]),
                        "chosen": "chosen" in cls, "parts": {}}
            self.charts[-1]["bars"].append(self.bar)
        elif tag == "rect" and "part" in cls and self.bar is not None:
            self.bar["parts"][a["data-part"]] = float(a["data-value"])
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.row = []
            self.tables[-1].append(self.row)
        elif tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
        elif tag in ("td", "th") and self.row is not None:
            self.row.append(self.cell)
            self.cell = None
        elif tag == "g":
            self.bar = None

    def handle_data(self, data):
        if self.in_title:
            self.title += data
        if self.cell is not None:
            self.cell += data


def main():
    path = os.path.abspath(sys.argv[1])
    url = "file://" + path
    if "--screenshot" in sys.argv:
        shot = os.path.abspath(sys.argv[sys.argv.index("--screenshot") + 1])
        r = chromium(["--screenshot=" + shot, url])
        if r.returncode != 0 or not os.path.exists(shot):
            sys.exit("chromium --screenshot failed: " + r.stderr[-2000:])
    r = chromium(["--dump-dom", url])
    if r.returncode != 0 or "<html" not in r.stdout:
        sys.exit("chromium --dump-dom failed: " + r.stderr[-2000:])
    dom = Dom()
    dom.feed(r.stdout)
    print(json.dumps({"title": dom.title, "external": dom.external,
                      "scripts": dom.scripts, "charts": dom.charts,
                      "tables": dom.tables}))


if __name__ == "__main__":
    main()
