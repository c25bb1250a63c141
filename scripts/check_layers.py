#!/usr/bin/env python3
"""Checks the include rules of the layers (docs/design.md, "Layers").

usage: check_layers.py [REPO_ROOT]   (default: the repository this script is in)

Walks the C/C++/CUDA sources and headers and the TableGen files of the tree,
gives every file and every include a layer, and prints one line per violation,
`file:line: layer A includes layer B header H`, then exits 1. Exit 0: none.

Layers, bottom to top:  plan < html < data < job < cost < dialect < passes <
emit < tools. A layer may include its own headers and those of any layer below
it, except that the dialect owns the IR's views: emit includes nothing of
passes, and tools only the pipelines and the pass registration of passes
(swift/Passes/Pipelines.h, swift/Passes/Passes.h).
runtime stands aside: it may include runtime, plan, html and data headers
only, and
no layer includes runtime. test/ and benchmarks/ are exempt.

Inside runtime, every file lives in a room (docs/runtime.md): headers in
runtime/include/swift/Runtime/<room>/, sources in runtime/lib/<room>/, the
tools in runtime/tools/. Rooms, bottom to top: core < model < io < dist <
engine < run < tools; a room may include its own and lower rooms' headers
only (swift/Runtime/<room>/..., or a quoted path into runtime/lib/<room>/). A source file in any other
top-level folder is a violation: a new folder must be classified here.

Includes are given a layer by their `swift/<Dir>/` prefix (generated
`*.h.inc` included: they belong to the layer whose .td produced them) or,
for a quoted path that exists relative to the including file, by the folder
it resolves into. Third-party includes are checked too: plan, job and cost
are plain C++ (no MLIR/LLVM, no LibTorch/CUDA), the compiler layers do not
use LibTorch/CUDA, and the runtime never uses MLIR/LLVM.

Banned calls: a few library calls are wrong in this tree whatever the
layer (BANNED_CALLS: the call, and what to use instead). A line whose code
(comments aside) calls one is a violation.
"""

import os
import re
import sys

# Top-level folder -> layer. The order of ORDER is the include order.
ORDER = ["plan", "html", "data", "job", "cost", "dialect", "passes", "emit", "tools"]
LAYERS = {name: name for name in ORDER + ["runtime"]}
# runtime/'s rooms, bottom to top: the include order inside the runtime.
RUNTIME_ROOMS = ["core", "model", "io", "dist", "engine", "run", "tools"]

# Top-level folders whose sources may include anything.
EXEMPT = {"test", "benchmarks"}

# Calls no layer makes: (pattern, why and what instead).
BANNED_CALLS = [
    (re.compile(r"\bremove_all\s*\("),
     "std::filesystem::remove_all crashes in LibTorch binaries (the torch "
     "wheels export a copy that jumps through a null pointer); use "
     "swift::plan::removeTree (swift/Plan/Files.h)"),
]

# (layer, lower layer) -> the only headers of the lower layer it may include,
# narrowing may_include(): emitters read the IR through the dialect's views,
# and tools run pipelines (and register passes) but never reach into a pass.
ONLY_HEADERS = {
    ("emit", "passes"): (),
    ("tools", "passes"): ("swift/Passes/Pipelines.h", "swift/Passes/Passes.h"),
}

# swift/<Dir>/... -> the layer that owns that header directory.
HEADER_DIRS = {
    "Plan": "plan",
    "Html": "html",
    "Data": "data",
    "Job": "job",
    "Cost": "cost",
    "Dialect": "dialect",
    "Passes": "passes",
    "Emit": "emit",
    "Runtime": "runtime",
}

# Third-party include prefixes, grouped by what they pull in.
EXTERNAL = {
    "MLIR/LLVM": ("mlir/", "mlir-c/", "llvm/", "llvm-c/"),
    "LibTorch/CUDA": ("torch/", "ATen/", "c10/", "caffe2/", "cuda", "cublas",
                      "cudnn", "nccl", "nvToolsExt"),
}
FORBIDDEN_EXTERNAL = {
    "plan": {"MLIR/LLVM", "LibTorch/CUDA"},
    "html": {"MLIR/LLVM", "LibTorch/CUDA"},
    "data": {"MLIR/LLVM", "LibTorch/CUDA"},
    "job": {"MLIR/LLVM", "LibTorch/CUDA"},
    "cost": {"MLIR/LLVM", "LibTorch/CUDA"},
    "dialect": {"LibTorch/CUDA"},
    "passes": {"LibTorch/CUDA"},
    "emit": {"LibTorch/CUDA"},
    "tools": {"LibTorch/CUDA"},
    "runtime": {"MLIR/LLVM"},
}

SOURCE_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".inc", ".def", ".c", ".cc",
                   ".cpp", ".cxx", ".cu", ".cuh", ".td")

CPP_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
TD_INCLUDE = re.compile(r'^\s*include\s+"([^"]+)"')


def may_include(src, dst):
    """Whether layer `src` may include a header of layer `dst`."""
    if src == dst:
        return True
    if src == "runtime":
        return dst in ("plan", "html", "data")
    if dst == "runtime":
        return False
    return ORDER.index(dst) < ORDER.index(src)


def narrowed(src, dst, header):
    """Why `header` of `dst` is off limits to `src` despite the layer order,
    or None. `header` is the swift/<Dir>/... spelling, or None for a quoted
    path that does not spell it."""
    only = ONLY_HEADERS.get((src, dst))
    if only is None or header in only:
        return None
    if not only:
        return "%s may include nothing of %s" % (src, dst)
    return "%s may include only %s of %s" % (src, " and ".join(only), dst)


def allowed_text(src):
    if src == "runtime":
        return "runtime may include runtime, plan and data only"
    below = ORDER[:ORDER.index(src)]
    if not below:
        return "%s may include only itself" % src
    return "%s may include %s and itself" % (src, ", ".join(below))


def runtime_room(rel):
    """The room of a file under runtime/ (None: outside every room)."""
    parts = rel.split(os.sep)
    if len(parts) > 2 and parts[1] == "tools":
        return "tools"
    if len(parts) > 3 and parts[1] == "lib":
        room = parts[2]
    elif len(parts) > 5 and parts[1:4] == ["include", "swift", "Runtime"]:
        room = parts[4]
    else:
        return None
    return room if room in RUNTIME_ROOMS else None


def header_room(header):
    """The room of an include `swift/Runtime/<room>/...` (None: no room)."""
    sub = header.split("/")
    if len(sub) > 3 and sub[2] in RUNTIME_ROOMS and sub[2] != "tools":
        return sub[2]
    return None


def room_problem(rel, number, room, target_room, header):
    """A runtime file's include of another room's header, if not allowed."""
    if target_room is None:
        return ("%s:%d: room %s includes %s, a runtime header of no room "
                "(runtime/include/swift/Runtime/<room>/: %s)" %
                (rel, number, room, header, ", ".join(RUNTIME_ROOMS[:-1])))
    if RUNTIME_ROOMS.index(target_room) <= RUNTIME_ROOMS.index(room):
        return None
    below = RUNTIME_ROOMS[:RUNTIME_ROOMS.index(room)]
    allowed = ("%s and itself" % ", ".join(below)) if below else "only itself"
    return ("%s:%d: room %s includes room %s header %s (%s may include %s)" %
            (rel, number, room, target_room, header, room, allowed))


def is_build_dir(path):
    return os.path.exists(os.path.join(path, "CMakeCache.txt"))


def source_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        keep = []
        for d in sorted(dirnames):
            full = os.path.join(dirpath, d)
            if d.startswith(".") or d == "__pycache__" or is_build_dir(full):
                continue
            if rel_dir == "." and d.startswith("build"):
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            if f.endswith(SOURCE_SUFFIXES):
                yield os.path.normpath(os.path.join(rel_dir, f))


def top_folder(rel):
    parts = rel.split(os.sep)
    return parts[0] if len(parts) > 1 else ""


def banned_calls(path):
    """(line number, why) of each line whose code makes a banned call."""
    problems = []
    in_comment = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            code = line
            if in_comment:
                end = code.find("*/")
                if end < 0:
                    continue
                code, in_comment = code[end + 2:], False
            code = re.sub(r"/\*.*?\*/", "", code)
            start = code.find("/*")
            if start >= 0:
                code, in_comment = code[:start], True
            code = code.split("//", 1)[0]
            for pattern, why in BANNED_CALLS:
                if pattern.search(code):
                    problems.append((number, why))
    return problems


def includes(path):
    """(line number, quote char, included path) of each include line."""
    td = path.endswith(".td")
    in_comment = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            # Skip /* ... */ blocks that start a line (commented-out code).
            stripped = line.strip()
            if in_comment:
                if "*/" in stripped:
                    in_comment = False
                continue
            if stripped.startswith("/*") and "*/" not in stripped:
                in_comment = True
                continue
            m = CPP_INCLUDE.match(line)
            if m:
                yield number, m.group(1), m.group(2)
                continue
            if td:
                m = TD_INCLUDE.match(line)
                if m:
                    yield number, '"', m.group(1)


def external_group(header):
    for group, prefixes in EXTERNAL.items():
        if header.startswith(prefixes):
            return group
    return None


def check(root):
    root = os.path.abspath(root)
    problems = []
    for rel in source_files(root):
        top = top_folder(rel)
        if top in EXEMPT:
            continue
        layer = LAYERS.get(top)
        if layer is None:
            where = "the repository root" if not top else "folder '%s/'" % top
            problems.append(
                "%s:1: file in %s, which is no layer; move it into a layer or "
                "classify the folder in scripts/check_layers.py" % (rel, where))
            continue

        # A header directory swift/<Dir>/ must belong to the layer it is in.
        problems_here = False
        parts = rel.split(os.sep)
        if len(parts) > 4 and parts[1] == "include" and parts[2] == "swift":
            owner = HEADER_DIRS.get(parts[3])
            if owner != layer:
                problems_here = True
                problems.append(
                    "%s:1: layer %s holds a header of %s; swift/%s/ belongs "
                    "in %s/include/swift/%s/" %
                    (rel, layer, "no layer" if owner is None else
                     "layer " + owner, parts[3],
                     owner or "<layer>", parts[3]))

        room = None
        if layer == "runtime" and not problems_here:
            room = runtime_room(rel)
            if room is None:
                problems.append(
                    "%s:1: runtime file outside a room; move it into "
                    "runtime/include/swift/Runtime/<room>/ or "
                    "runtime/lib/<room>/ (%s)" %
                    (rel, ", ".join(RUNTIME_ROOMS[:-1])))

        full = os.path.join(root, rel)
        problems.extend("%s:%d: banned call: %s" % (rel, number, why)
                        for number, why in banned_calls(full))
        for number, quote, header in includes(full):
            target = None
            target_room = None
            if header.startswith("swift/"):
                sub = header.split("/")
                target = HEADER_DIRS.get(sub[1]) if len(sub) > 2 else None
                if target == "runtime":
                    target_room = header_room(header)
                if target is None:
                    problems.append(
                        "%s:%d: layer %s includes %s, a header of no layer "
                        "(swift/%s/ is not classified in "
                        "scripts/check_layers.py)" %
                        (rel, number, layer, header,
                         sub[1] if len(sub) > 2 else ""))
                    continue
            elif quote == '"':
                resolved = os.path.normpath(
                    os.path.join(os.path.dirname(full), header))
                if os.path.isfile(resolved):
                    rel_target = os.path.relpath(resolved, root)
                    if rel_target.startswith(".."):
                        continue
                    target_top = top_folder(rel_target)
                    target = LAYERS.get(target_top)
                    if target == "runtime":
                        target_room = runtime_room(rel_target)
                    if target is None:
                        problems.append(
                            "%s:%d: layer %s includes %s, a file of %s, which "
                            "is no layer" %
                            (rel, number, layer, header,
                             ("folder '%s/'" % target_top) if target_top
                             else "the repository root"))
                        continue
            if target is not None:
                if not may_include(layer, target):
                    problems.append(
                        "%s:%d: layer %s includes layer %s header %s (%s)" %
                        (rel, number, layer, target, header,
                         allowed_text(layer)))
                elif layer == target == "runtime" and room is not None:
                    problem = room_problem(rel, number, room, target_room,
                                           header)
                    if problem:
                        problems.append(problem)
                else:
                    why = narrowed(layer, target,
                                   header if header.startswith("swift/")
                                   else None)
                    if why:
                        problems.append(
                            "%s:%d: layer %s includes layer %s header %s (%s)"
                            % (rel, number, layer, target, header, why))
                continue
            group = external_group(header)
            if group and group in FORBIDDEN_EXTERNAL.get(layer, ()):
                problems.append(
                    "%s:%d: layer %s includes %s header %s (%s does not "
                    "depend on %s)" % (rel, number, layer, group, header,
                                       layer, group))
    def where(problem):
        path, line = problem.split(":")[:2]
        return path, int(line)
    return sorted(problems, key=where)


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    root = argv[1] if len(argv) == 2 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    if not os.path.isdir(root):
        print("check_layers.py: %s: not a directory" % root, file=sys.stderr)
        return 2
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print("check_layers.py: %d layer violation(s); the rules are in "
              "docs/design.md (Layers)" % len(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
