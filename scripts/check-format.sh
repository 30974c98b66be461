#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Checks that every C source and header is formatted as .clang-format says.
#
#   scripts/check-format.sh [SRCDIR]
#
# Files: those git knows in SRCDIR (tracked, plus new ones not yet added and
# not ignored), or every .c/.h outside build and hidden folders when SRCDIR is
# not a git checkout. Exits 0 when all are formatted, 1 listing those that are
# not, and 77 (meson: SKIP) when clang-format is not installed. Set
# CLANG_FORMAT to use another binary; .clang-format targets version 14.
set -u

srcdir=${1:-$(dirname "$0")/..}
cd "$srcdir" || exit 1
clang_format=${CLANG_FORMAT:-clang-format}

if ! command -v "$clang_format" >/dev/null 2>&1; then
	echo "check-format: $clang_format not found; skipping"
	exit 77
fi

list_files() {
	if command -v git >/dev/null 2>&1 && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files --cached --others --exclude-standard -- '*.c' '*.h'
	else
		find . \( -path './build*' -o -path './.*' -o -path './subprojects' \) -prune -o \
			-type f \( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||'
	fi
}

bad=0
checked=0
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
list_files | sort -u > "$tmp.list"
trap 'rm -f "$tmp" "$tmp.list"' EXIT
while IFS= read -r f; do
	[ -f "$f" ] || continue # tracked but deleted in the working tree
	checked=$((checked + 1))
	if ! "$clang_format" --dry-run -Werror "$f" > /dev/null 2> "$tmp"; then
		if [ "$bad" -eq 0 ]; then
			echo "check-format: not formatted as .clang-format says (fix: clang-format -i FILE):"
		fi
		bad=$((bad + 1))
		echo "  $f"
		head -n 6 "$tmp" | sed 's/^/      /'
	fi
done < "$tmp.list"

if [ "$bad" -ne 0 ]; then
	echo "check-format: $bad of $checked files need formatting ($("$clang_format" --version))"
	exit 1
fi
echo "check-format: $checked files OK"
exit 0
