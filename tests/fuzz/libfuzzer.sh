#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs one libFuzzer target (a -Dfuzzing=true build) over a working copy of
# its seeds, so that what libFuzzer adds to its corpus never lands in the
# repository's seed corpus. meson registers each target's test in the 'fuzz'
# suite as this script with the target's binary, flags and seeds; bench/fuzz.sh
# reads those commands back (meson introspect --tests) and runs them with
# flags of its own appended.
#
#   libfuzzer.sh [--corpus DIR] FUZZ_BINARY [-flag=value ...] SEED...
#
# Arguments that start with '-' go to libFuzzer (a later one overrides an
# earlier one of the same name); the others are seeds: files, or folders
# whose regular files are copied. --corpus DIR: the working corpus, made if
# missing and kept afterwards (seeds are copied into it; what is there
# stays); without it a temporary folder is used and removed. Crash, leak,
# timeout and OOM inputs go where -artifact_prefix says (default: the
# current folder, named fuzz-crash-<target>-...). UBSan reports abort the
# run (halt_on_error), so they count as crashes. Exits as libFuzzer does:
# 0 when it found nothing.
set -u

corpus=
if [ "${1:-}" = "--corpus" ]; then
	corpus=$2
	shift 2
fi
if [ $# -lt 1 ]; then
	echo "usage: libfuzzer.sh [--corpus DIR] FUZZ_BINARY [-flag=value ...] SEED..." >&2
	exit 2
fi
bin=$1
shift
name=$(basename "$bin")

tmp=
if [ -z "$corpus" ]; then
	tmp=$(mktemp -d) || exit 2
	trap 'rm -rf "$tmp"' EXIT
	trap 'exit 130' INT TERM
	corpus=$tmp
fi
mkdir -p "$corpus" || exit 2

# Seeds copied; flags kept in the order given (the last of a name wins).
for a in "$@"; do
	case $a in
	-*) ;;
	*)
		if [ -d "$a" ]; then
			n=0
			for f in "$a"/*; do
				[ -f "$f" ] || continue
				cp "$f" "$corpus/seed-$(basename "$a")-$(basename "$f")" || exit 2
				n=$((n + 1))
			done
			if [ "$n" -eq 0 ]; then
				echo "libfuzzer.sh: seed folder $a has no seed files" >&2
				exit 2
			fi
		elif [ -f "$a" ]; then
			cp "$a" "$corpus/seed-$(basename "$a")" || exit 2
		else
			echo "libfuzzer.sh: seed $a is not there" >&2
			exit 2
		fi
		;;
	esac
done

# Keep only the flags as positional parameters, in order.
for a in "$@"; do
	shift
	case $a in
	-*) set -- "$@" "$a" ;;
	esac
done

export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
"$bin" -artifact_prefix="fuzz-crash-$name-" "$@" "$corpus"
