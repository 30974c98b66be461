#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Rejects cmocka's skip() in Loom's tests.

    scripts/check-no-skip.py [SRCDIR]      check SRCDIR/tests (default: ..)
    scripts/check-no-skip.py --self-test   check the checker on a synthetic tree

cmocka counts a test that calls skip() as neither failed nor errored, so the
binary exits 0 and meson shows PASS: a skip() reached because something broke
hides the breakage. The rule: a missing precondition of the
machine (no root, no BPF, no EAL, no GPU, no IPv6 loopback, ...) is decided in
main() before cmocka runs any test, which exits 77 (meson's SKIP) or leaves
the one test out of the group (tests/precond.h); anything after that point
is a failure.

Scans every .c/.h file under SRCDIR/tests with its comments, string and
character literals blanked out, and reports "file:line: calls cmocka's
skip()" for each call of skip() or _skip(). Exits 0 when clean, 1 listing
the calls. Python 3 standard library only.
"""

import os
import re
import sys
import tempfile

SOURCE_SUFFIXES = (".c", ".h")
# skip() (the macro) or _skip(...) (the function behind it), not some_skip() or skipped()
CALL_RE = re.compile(r"(?<![A-Za-z0-9_])_?skip\s*\(")


def blank_comments_and_literals(text):
    """Returns text with comments and string/char literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1 : j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def check_file(root, rel):
    """Returns the violations in the file at root/rel."""
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        code = blank_comments_and_literals(f.read())
    problems = []
    for lineno, line in enumerate(code.split("\n"), 1):
        if CALL_RE.search(line):
            problems.append("%s:%d: calls cmocka's skip()" % (rel, lineno))
    return problems


def check_tree(root):
    """Returns (number of files checked, list of violations) for root/tests."""
    problems = []
    n = 0
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, "tests")):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            n += 1
            problems.extend(check_file(root, rel))
    return n, problems


def self_test():
    """Builds a tiny tree with known calls and look-alikes and checks what is reported."""
    files = {
        "tests/unit/a/test_a.c": (
            "static void test_x(void **state)\n"
            "{\n"
            "\tif (!have_thing())\n"
            "\t\tskip();\n"  # line 4
            "\tassert_true(1);\n"
            "}\n"
        ),
        "tests/e2e/test_b.c": (
            "/* a comment that says skip() is not a call,\n"
            " * nor is this: skip ( ) */\n"
            "// nor skip(); here\n"
            'static const char *msg = "skip() in a string";\n'
            "static char c = '(';\n"
            "static void t(void) { cmocka_set_skip_filter(\"x\"); my_skip(); skipped(); }\n"
            "static void u(void) { _skip(__FILE__, __LINE__); }\n"  # line 7
            "static void v(void) { if (1) skip ( ); }\n"  # line 8
        ),
        "tests/lib.h": "#define SOMETHING 1 /* skip() */\n",
        # not a source file, or not under tests/: ignored
        "tests/notes.txt": "skip();\n",
        "common/x.c": "void f(void) { skip(); }\n",
    }
    want = [
        "tests/e2e/test_b.c:7: calls cmocka's skip()",
        "tests/e2e/test_b.c:8: calls cmocka's skip()",
        "tests/unit/a/test_a.c:4: calls cmocka's skip()",
    ]
    with tempfile.TemporaryDirectory(prefix="loom-no-skip-") as root:
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        n, got = check_tree(root)
    if sorted(got) != sorted(want) or n != 3:
        print("check-no-skip self-test: FAILED")
        print("  files checked: %d (want 3)" % n)
        print("  got:\n    " + "\n    ".join(got or ["(nothing)"]))
        print("  want:\n    " + "\n    ".join(want))
        return 1
    print("check-no-skip self-test: OK (%d files, %d calls found as expected)" % (n, len(want)))
    return 0


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    if not os.path.isdir(os.path.join(root, "tests")):
        print("check-no-skip: %s: no tests folder" % root, file=sys.stderr)
        return 2
    n, problems = check_tree(root)
    for p in problems:
        print(p)
    if problems:
        print("check-no-skip: %d call(s) of skip() in %d files: decide a missing precondition "
              "of the machine in main() (exit 77, or leave the test out with "
              "tests/precond.h); anything else must fail" % (len(problems), n))
        return 1
    print("check-no-skip: %d files OK" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
