#!/usr/bin/env python3
"""Records every command-line flag of Megatron-LM's megatron/training/arguments.py.

Reads the file's syntax tree (nothing of Megatron is imported or run): each
`<group>.add_argument('--flag', ...)` call with literal option strings gives
one entry per option string, with its dest, action, type, nargs, choices and
default (literals evaluated, anything else as its source text).

  git -C Megatron-LM show core_v0.15.3:megatron/training/arguments.py > arguments.py
  python3 record_arguments.py arguments.py --tag core_v0.15.3 \
      --commit 309ffca6a40553362d44fd17efc56b772fa1aa44 > arguments.json
"""
import argparse
import ast
import json
import sys


def value(node):
    try:
        return ast.literal_eval(node)
    except Exception:
        return {"source": ast.unparse(node)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("file")
    p.add_argument("--tag", required=True)
    p.add_argument("--commit", required=True)
    a = p.parse_args()
    tree = ast.parse(open(a.file, encoding="utf-8").read())
    flags = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        names = [x.value for x in node.args
                 if isinstance(x, ast.Constant) and isinstance(x.value, str)]
        names = [n for n in names if n.startswith("-")]
        if not names:
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        action = value(kw["action"]) if "action" in kw else "store"
        entry = {"action": action}
        dest = value(kw["dest"]) if "dest" in kw else \
            next(n for n in names if n.startswith("--"))[2:].replace("-", "_")
        entry["dest"] = dest
        if "type" in kw:
            entry["type"] = ast.unparse(kw["type"])
        for key in ("nargs", "choices", "default", "const"):
            if key in kw:
                entry[key] = value(kw[key])
        entry["line"] = node.lineno
        for n in names:
            if n in flags:
                print(f"{n}: defined twice (lines {flags[n]['line']}, {node.lineno})",
                      file=sys.stderr)
            flags[n] = entry
    out = {
        "megatron_version": a.tag,
        "commit": a.commit,
        "file": "megatron/training/arguments.py",
        "recorded_by": "test/data/megatron/record_arguments.py",
        "flags": dict(sorted(flags.items())),
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
