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

protobuf-c stops at the RPC edge (docs/style.md, convention 7): outside the
files of PROTO_ALLOWED, a file may not include "proto/wire.h", "loom.pb-c.h"
(with or without a folder) or <protobuf-c/protobuf-c.h>, and may not name a
protobuf-c type, function or constant (Loom__*, LOOM__*, loom__*,
ProtobufC*, protobuf_c_*) outside comments and strings, so that a header
that pulls them in indirectly cannot sneak them in either. proto/frame.h and
proto/tuple.h are the parts of proto/ without protobuf-c.
Exits 0 when clean, 1 listing the violations. Python 3 standard library only.
"""

import fnmatch
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
    # loom-run: the simulator's model, traces and CSV files, driven live through libloom
    "controlplane/run": {
        "controlplane/model",
        "controlplane/policy",
        "controlplane/sim",
        "controlplane/client",
        "topo",
        "common",
    },
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

# The RPC edge: the only files (fnmatch patterns, '*' crossing folders) that
# may include protobuf-c's headers and name its types. tests/ and bench/ are
# not scanned, and may. Keep in step with docs/architecture.md ("Layering").
PROTO_ALLOWED = (
    "proto/*",
    "controlplane/loomd/rpc_*.c",
    "controlplane/loomd/rpc*.h",  # rpc_wire.h: what loomd's rpc_*.c share
    "controlplane/client/rpc_*.c",
    "dataplane/rpc_loomd.c",
    "tests/*",
    "bench/*",
)
PROTO_HEADERS = {"proto/wire.h", "protobuf-c/protobuf-c.h"}
PROTO_NAME_RE = re.compile(r"\b(?:Loom__|LOOM__|loom__|ProtobufC|protobuf_c_)\w*")
PROTO_EDGE = ("proto/, controlplane/loomd/rpc_*.c and rpc*.h, controlplane/client/rpc_*.c, "
              "dataplane/rpc_loomd.c")

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


def proto_allowed(rel):
    """Whether rel (relative, '/'-separated) is part of the RPC edge (PROTO_ALLOWED)."""
    return any(fnmatch.fnmatchcase(rel, pat) for pat in PROTO_ALLOWED)


def is_proto_header(target):
    """Whether an include target is one of protobuf-c's or the generated loom.pb-c.h."""
    return target in PROTO_HEADERS or target.split("/")[-1] == "loom.pb-c.h"


def blank_comments_and_strings(text):
    """Returns text with its comments and string and character literals blanked
    (newlines kept, so line numbers stay), for scanning the code's own names."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + text[j - 1:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def check_proto(rel, lines):
    """Returns the protobuf-c violations of one file outside the RPC edge."""
    if proto_allowed(rel):
        return []
    problems = []
    for lineno, line in enumerate(lines, 1):
        m = INCLUDE_RE.match(line)
        if m and is_proto_header(m.group(2).strip()):
            problems.append("%s:%d: includes %s%s%s, protobuf-c, outside the RPC edge (%s)"
                            % (rel, lineno, m.group(1), m.group(2).strip(),
                               ">" if m.group(1) == "<" else '"', PROTO_EDGE))
    code = blank_comments_and_strings("".join(lines))
    for lineno, line in enumerate(code.split("\n"), 1):
        if INCLUDE_RE.match(line):
            continue
        m = PROTO_NAME_RE.search(line)
        if m:
            problems.append("%s:%d: names %s, protobuf-c, outside the RPC edge (%s)"
                            % (rel, lineno, m.group(0), PROTO_EDGE))
    return problems


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
    problems.extend(check_proto(rel, lines))
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
        # protobuf-c at the RPC edge: allowed
        "proto/wire.h": '#include "loom.pb-c.h"\nint wire_x(Loom__Envelope *e);\n',
        "controlplane/loomd/rpc_agent.c": (
            '#include "controlplane/loomd/rpc_wire.h"\n'
            '#include "proto/wire.h"\n'
            "static void f(const Loom__Hello *h) { ProtobufCBinaryData d; (void)h; }\n"
        ),
        "controlplane/loomd/rpc_wire.h": '#include "proto/wire.h"\nvoid g(Loom__Envelope *e);\n',
        "controlplane/client/rpc_client.c": '#include "proto/wire.h"\nLoom__Reply *r;\n',
        "dataplane/rpc_loomd.c": (
            '#include "proto/wire.h"\n'
            "static Loom__Envelope env = LOOM__ENVELOPE__INIT;\n"
            "static void h(void) { loom__envelope__pack(&env, 0); }\n"
        ),
        # protobuf-c names only in comments and strings, and the headers without it: allowed
        "dataplane/table.h": (
            '#include "proto/tuple.h"\n'
            "/* as loom.proto's PriorityTable (Loom__PriorityTable) says */\n"
            'static const char *s = "Loom__Envelope \\" LOOM__X";\n'
            "// loom__envelope__pack()\n"
            "static const char c = '\"'; /* a quote in a char literal */\n"
        ),
        "controlplane/loomd/server.c": (
            '#include "controlplane/loomd/rpc.h"\n#include "proto/frame.h"\n'
        ),
        # protobuf-c outside the RPC edge: included, or named after an indirect include
        "dataplane/agent.c": (
            '#include "dataplane/agent.h"\n'
            '#include "proto/wire.h"\n'
            "static const char *q = \"'\"; static Loom__Envelope *e; /* Loom__Hello */\n"
        ),
        "controlplane/loomd/admin_cmds.c": '#include "loom.pb-c.h"\n',
        "controlplane/loomd/config.c": '#include "proto/loom.pb-c.h"\n',
        "controlplane/client/client.c": (
            '#include "controlplane/client/rpc_client.h"\n'
            "#include <protobuf-c/protobuf-c.h>\n"
            "int k = LOOM__ROLE__FRAMEWORK;\n"
            "void m(void) { protobuf_c_message_pack(0, 0); }\n"
        ),
        "controlplane/client/rpc_client.h": '#include "proto/wire.h"\n',
        "dataplane/rpc_other.c": "void z(loom__five_tuple x);\n",
    }
    edge = " outside the RPC edge (%s)" % PROTO_EDGE
    want = [
        "controlplane/model/m.c:3: controlplane/model may not include "
        "controlplane/policy/policy.h",
        "controlplane/policy/q.c:2: controlplane/policy may not include <pthread.h>",
        'dataplane/agent.c:2: includes "proto/wire.h", protobuf-c,' + edge,
        "dataplane/agent.c:3: names Loom__Envelope, protobuf-c," + edge,
        'controlplane/loomd/admin_cmds.c:1: includes "loom.pb-c.h", protobuf-c,' + edge,
        'controlplane/loomd/config.c:1: includes "proto/loom.pb-c.h", protobuf-c,' + edge,
        "controlplane/client/client.c:2: includes <protobuf-c/protobuf-c.h>, protobuf-c," + edge,
        "controlplane/client/client.c:3: names LOOM__ROLE__FRAMEWORK, protobuf-c," + edge,
        "controlplane/client/client.c:4: names protobuf_c_message_pack, protobuf-c," + edge,
        'controlplane/client/rpc_client.h:1: includes "proto/wire.h", protobuf-c,' + edge,
        "dataplane/rpc_other.c:1: names loom__five_tuple, protobuf-c," + edge,
    ]
    nfiles = len([f for f in files if f.endswith(SOURCE_SUFFIXES)])
    with tempfile.TemporaryDirectory(prefix="loom-layering-") as root:
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        n, got = check_tree(root)
    if sorted(got) != sorted(want) or n != nfiles:
        print("check-layering self-test: FAILED")
        print("  files checked: %d (want %d)" % (n, nfiles))
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
        print("check-layering: %d violation(s) in %d files; see docs/style.md, "
              "\"Layout and who may use whom\", and docs/architecture.md, \"Layering\""
              % (len(problems), n))
        return 1
    print("check-layering: %d files OK" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
