#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks Loom's layering: which folder may #include which (docs/style.md,
"Layout and who may use whom"; the same table is in docs/architecture.md).

    scripts/check-layering.py [SRCDIR]      check the tree at SRCDIR (default: ..)
    scripts/check-layering.py --self-test   check the checker on a synthetic tree

Scans every .c/.h (and .cu/.cuh) file under the folders of ALLOWED, takes each
`#include "a/b.h"`, maps it to the folder it lives in (the longest matching
folder of ALLOWED) and reports "file:line: <folder> may not include <target>"
for every edge the table does not allow. Quoted includes without a folder
("x.h", generated headers) and headers outside our folders are not checked.
The pure layers may also not include the system headers in FORBIDDEN_SYSTEM.
Exits 0 when clean, 1 listing the violations. Python 3 standard library only.
"""

import os
import re
import sys
import tempfile

# folder -> folders of ours it may include (besides itself). Keep in step with
# the tables of docs/style.md and docs/architecture.md. Nested folders (dataplane/dpdk) are their own entry.
ALLOWED = {
    "common": set(),
    "gnn": set(),  # not even common/, so it can be lifted out whole
    "proto": set(),
    "ebpf": set(),
    "topo": {"common"},
    "controlplane/model": {"common", "topo", "gnn"},
    "controlplane/policy": {"common", "topo", "gnn", "controlplane/model"},
    "controlplane/sim": {"controlplane/model", "controlplane/policy", "topo", "common"},
    "controlplane/learn": {
        "controlplane/model",
        "controlplane/policy",
        "topo",
        "common",
        "controlplane/sim",
        # the trainer of gnn/ models: backward, Adam, weights and checkpoints
        "gnn",
    },
    "controlplane/loomd": {"controlplane/model", "controlplane/policy", "proto", "topo", "common"},
    "controlplane/client": {"controlplane/model", "controlplane/policy", "proto", "topo", "common"},
    "controlplane/cli": {"controlplane/model", "controlplane/policy", "proto", "topo", "common"},
    "dataplane": {"common", "proto", "ebpf"},
    "dataplane/dpdk": {"common", "proto", "ebpf", "dataplane"},
}

_SOCKETS = {"sys/socket.h", "sys/un.h", "netinet/in.h", "arpa/inet.h", "netdb.h"}
_THREADS = {"pthread.h", "threads.h"}
# folder -> system headers it may not include: policies and the model are pure
# (no sockets, no threads); the simulator and trainer use no sockets.
FORBIDDEN_SYSTEM = {
    "controlplane/model": _SOCKETS | _THREADS,
    "controlplane/policy": _SOCKETS | _THREADS,
    "controlplane/sim": _SOCKETS,
    "controlplane/learn": _SOCKETS,
}

SOURCE_SUFFIXES = (".c", ".h", ".cu", ".cuh")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def folder_of(path):
    """Returns the folder of ALLOWED that path (relative, '/'-separated) lies in, or None."""
    best = None
    for folder in ALLOWED:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def source_files(root):
    """Yields the relative paths of the source files under the folders of ALLOWED."""
    tops = sorted({f.split("/")[0] for f in ALLOWED})
    for top in tops:
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if name.endswith(SOURCE_SUFFIXES):
                    full = os.path.join(dirpath, name)
                    yield os.path.relpath(full, root).replace(os.sep, "/")


def check_file(root, rel):
    """Returns the violations in one file as 'file:line: message' strings."""
    problems = []
    here = folder_of(rel)
    if here is None:
        # e.g. controlplane/newthing/x.c: the table must say what it may use.
        return ["%s:1: folder %s is not in the layering table (docs/style.md, %s)"
                % (rel, os.path.dirname(rel), os.path.basename(__file__))]
    allowed = ALLOWED[here] | {here}
    forbidden_sys = FORBIDDEN_SYSTEM.get(here, set())
    try:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError as e:
        return ["%s:1: cannot read: %s" % (rel, e.strerror)]
    for lineno, line in enumerate(lines, 1):
        m = INCLUDE_RE.match(line)
        if not m:
            continue
        kind, target = m.group(1), m.group(2).strip()
        if kind == "<":
            if target in forbidden_sys:
                problems.append("%s:%d: %s may not include <%s>" % (rel, lineno, here, target))
            continue
        if "/" not in target:
            continue  # same-folder or generated header
        first = target.split("/")[0]
        if first not in {f.split("/")[0] for f in ALLOWED}:
            continue  # not one of ours (e.g. a vendored or generated path)
        to = folder_of(target) or os.path.dirname(target)
        if to not in allowed:
            problems.append("%s:%d: %s may not include %s" % (rel, lineno, here, target))
    return problems


def check_tree(root):
    """Returns (number of files checked, list of violations) for the tree at root."""
    problems = []
    n = 0
    for rel in source_files(root):
        n += 1
        problems.extend(check_file(root, rel))
    return n, problems


def self_test():
    """Builds a tiny tree with known good and bad edges and checks what is reported."""
    files = {
        # allowed edges
        "topo/topo.c": '#include "topo/topo.h"\n#include "common/log.h"\n',
        "controlplane/policy/p.c": '#include "controlplane/model/model.h"\n#include <stdio.h>\n',
        "controlplane/sim/s.c": '#include "controlplane/sim/sim.h"\n#include <pthread.h>\n',
        "dataplane/dpdk/d.c": '#include "dataplane/agent.h"\n#include "gen.skel.h"\n',
        # one forbidden include of ours, one forbidden system header
        "controlplane/model/m.c": (
            "/* SPDX-License-Identifier: BSD-3-Clause */\n"
            '#include "common/errors.h"\n'
            '#include "controlplane/policy/policy.h"\n'
        ),
        "controlplane/policy/q.c": '#include "topo/topo.h"\n# include <pthread.h>\n',
        # not a source file: ignored
        "controlplane/model/notes.txt": '#include "controlplane/sim/sim.h"\n',
    }
    want = [
        "controlplane/model/m.c:3: controlplane/model may not include "
        "controlplane/policy/policy.h",
        "controlplane/policy/q.c:2: controlplane/policy may not include <pthread.h>",
    ]
    with tempfile.TemporaryDirectory(prefix="loom-layering-") as root:
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        n, got = check_tree(root)
    if sorted(got) != sorted(want) or n != 6:
        print("check-layering self-test: FAILED")
        print("  files checked: %d (want 6)" % n)
        print("  got:\n    " + "\n    ".join(got or ["(nothing)"]))
        print("  want:\n    " + "\n    ".join(want))
        return 1
    print("check-layering self-test: OK (%d files, %d violations found as expected)"
          % (n, len(want)))
    return 0


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    if not os.path.isdir(root):
        print("check-layering: %s: not a folder" % root, file=sys.stderr)
        return 2
    n, problems = check_tree(root)
    for p in problems:
        print(p)
    if problems:
        print("check-layering: %d forbidden include(s) in %d files; see docs/style.md, "
              "\"Layout and who may use whom\"" % (len(problems), n))
        return 1
    print("check-layering: %d files OK" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
