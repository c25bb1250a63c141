#!/usr/bin/env python3
"""Reads a TOML --emit torchtitan wrote with Python's TOML parser (tomllib,
as torchtitan v0.2.2's config manager does) and checks every section and key
against the recorded job_config.json: exits 1 naming each unknown one."""
import json
import sys
import tomllib

toml = tomllib.load(open(sys.argv[1], "rb"))
record = json.load(open(sys.argv[2]))["sections"]
problems = []


def walk(table, prefix):
    for key, value in table.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            walk(value, name)
        elif prefix not in record or key not in record[prefix]:
            problems.append(f"{name}: not a key torchtitan records")


walk(toml, "")
for p in problems:
    print(p)
print(f"{len(problems)} unknown keys")
sys.exit(1 if problems else 0)
