#!/usr/bin/env python3
"""Records torchtitan's job TOML keys, model converters and llama3 flavors.

Reads, from a torchtitan git repository at a tag, the syntax trees of
(nothing of torchtitan is imported or run):
  torchtitan/config/job_config.py       JobConfig's dataclasses: every TOML
                                        section (nested dataclasses as dotted
                                        sections, e.g. quantize.linear.float8)
                                        and key, with its annotation, its
                                        Literal choices and its default;
  torchtitan/components/**/*.py         register_model_converter(..., "name"):
                                        the names model.converters accepts;
  torchtitan/models/llama3/__init__.py  llama3_args: each flavor's
                                        TransformerModelArgs keywords;
  torchtitan/models/llama3/model/args.py  the defaults of TransformerModelArgs
                                        and RoPEScalingArgs.

  python3 record_job_config.py /path/to/torchtitan v0.2.2 > job_config.json
"""
import ast
import json
import subprocess
import sys


def show(repo, tag, path):
    return subprocess.run(["git", "-C", repo, "show", f"{tag}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def files(repo, tag, under):
    out = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", tag, under],
                         check=True, capture_output=True, text=True).stdout
    return [f for f in out.split() if f.endswith(".py")]


def literal(node):
    try:
        return ast.literal_eval(node)
    except Exception:
        return {"source": ast.unparse(node)}


def choices(annotation):
    """The values of a Literal[...] in the annotation (also inside X | None)."""
    found = []
    for node in ast.walk(annotation):
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "Literal":
            s = node.slice
            elts = s.elts if isinstance(s, ast.Tuple) else [s]
            found += [literal(e) for e in elts]
    return found


def main():
    repo, tag = sys.argv[1], sys.argv[2]
    commit = subprocess.run(["git", "-C", repo, "rev-list", "-n1", tag], check=True,
                            capture_output=True, text=True).stdout.strip()
    tree = ast.parse(show(repo, tag, "torchtitan/config/job_config.py"))
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def fields(cls):
        for node in cls.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                yield node.target.id, node

    sections = {}

    def walk(cls, prefix):
        keys = {}
        for name, node in fields(cls):
            ann = ast.unparse(node.annotation)
            if ann in classes:
                walk(classes[ann], f"{prefix}.{name}" if prefix else name)
                continue
            entry = {"type": ann}
            c = choices(node.annotation)
            if c:
                entry["choices"] = c
            if node.value is not None:
                v = node.value
                if isinstance(v, ast.Call) and ast.unparse(v.func) == "field":
                    for kw in v.keywords:
                        if kw.arg == "default_factory":
                            f = kw.value
                            entry["default"] = (literal(f.body) if isinstance(f, ast.Lambda)
                                                else {"source": ast.unparse(f) + "()"})
                else:
                    entry["default"] = literal(v)
            keys[name] = entry
        if prefix and keys:
            sections[prefix] = keys

    walk(classes["JobConfig"], "")

    converters = []
    for path in files(repo, tag, "torchtitan/components"):
        for node in ast.walk(ast.parse(show(repo, tag, path))):
            if (isinstance(node, ast.Call) and ast.unparse(node.func) == "register_model_converter"
                    and len(node.args) == 2):
                converters.append(literal(node.args[1]))

    flavors = {}
    llama = ast.parse(show(repo, tag, "torchtitan/models/llama3/__init__.py"))
    for node in llama.body:
        if (isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "llama3_args"):
            for k, v in zip(node.value.keys, node.value.values):
                flavors[literal(k)] = {kw.arg: literal(kw.value) for kw in v.keywords}

    defaults = {}
    args = ast.parse(show(repo, tag, "torchtitan/models/llama3/model/args.py"))
    for cls in args.body:
        if isinstance(cls, ast.ClassDef) and cls.name in ("TransformerModelArgs",
                                                          "RoPEScalingArgs"):
            defaults[cls.name] = {
                name: literal(node.value) for name, node in fields(cls)
                if node.value is not None and not isinstance(node.value, ast.Call)}

    json.dump({
        "torchtitan_version": tag,
        "commit": commit,
        "files": ["torchtitan/config/job_config.py", "torchtitan/components/**/*.py",
                  "torchtitan/models/llama3/__init__.py",
                  "torchtitan/models/llama3/model/args.py"],
        "recorded_by": "test/data/torchtitan/record_job_config.py",
        "sections": dict(sorted(sections.items())),
        "converters": sorted(converters),
        "llama3_flavors": flavors,
        "llama3_defaults": defaults,
    }, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
