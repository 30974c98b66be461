#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Packs Loom's offline programs into one folder that runs on another x86-64
# Linux host without Loom's packages (a training box where nothing can be
# installed): the programs, every shared library they load beyond the C
# library itself, the cuda module when it was built, and data/. Run them
# through the folder's wrapper (docs/learning.md, "Training on another
# machine"):
#   scripts/bundle.sh [--build DIR] OUT
#   OUT/loom loom-train --threads 16 ...
# The other host needs a C library at least as new as this one's; --cuda
# there needs the CUDA toolkit's libraries (cudart, cuBLAS) on its library
# path. MPI runs need the same Open MPI release installed there (its
# libraries are packed, its mpirun and components are not).
set -euo pipefail

usage() {
	echo "usage: scripts/bundle.sh [--build DIR] OUT   (DIR: a built folder, default build-release)" >&2
	exit 2
}

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-release
out=
while [ $# -gt 0 ]; do
	case $1 in
	--build)
		[ $# -ge 2 ] || usage
		build=$2
		case $build in /*) ;; *) build=$PWD/$build ;; esac
		shift 2
		;;
	-h | --help) usage ;;
	-*)
		echo "bundle: unknown option '$1'" >&2
		usage
		;;
	*)
		[ -z "$out" ] || usage
		out=$1
		shift
		;;
	esac
done
[ -n "$out" ] || usage

# name: path in the build folder (the first three are required)
progs=(
	"loom-train:controlplane/learn/loom-train"
	"loom-replay:controlplane/sim/loom-replay"
	"loom-gen:controlplane/sim/loom-gen"
	"loom_policy_latency:bench/loom_policy_latency"
	"loom_gnn_bench:bench/loom_gnn_bench"
)
for p in "${progs[@]:0:3}"; do
	if [ ! -x "$build/${p#*:}" ]; then
		echo "bundle: $build/${p#*:}: not built (scripts/build.sh build-release -Dbuildtype=release)" >&2
		exit 1
	fi
done
if [ -e "$out" ] && [ ! -f "$out/.loom-bundle" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
	echo "bundle: $out exists and is not a bundle: refusing to write into it" >&2
	exit 1
fi
rm -rf "$out/bin" "$out/lib" "$out/data"
mkdir -p "$out/bin" "$out/lib"
touch "$out/.loom-bundle"

# Left to the other host: the C library's own objects, and (for the cuda
# module) the CUDA toolkit's and driver's libraries.
is_host_lib() {
	case $(basename "$1") in
	ld-linux*.so* | libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | \
		libresolv.so* | libutil.so* | libmvec.so* | libcuda.so* | libcudart.so* | \
		libcublas*.so*) return 0 ;;
	esac
	return 1
}

# The dynamic loader the programs name (ldd's line without '=>').
interp=

# Copies every library $1 loads (as ldd resolves it) into lib/, once.
pack_libs() {
	local libs line name path
	if ! libs=$(ldd "$1"); then
		echo "bundle: ldd $1 failed" >&2
		exit 1
	fi
	while read -r line; do
		case $line in
		*"=> not found"*)
			is_host_lib "${line%% =>*}" && continue
			echo "bundle: $1: ${line%% =>*} not found on this machine" >&2
			exit 1
			;;
		*"=> "?*" ("*)
			name=${line%% =>*}
			path=${line#*=> }
			path=${path%% (*}
			;;
		/*" ("*)
			[ -n "$interp" ] || interp=${line%% (*}
			continue
			;;
		*) continue ;;
		esac
		is_host_lib "$name" && continue
		[ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
	done <<<"$libs"
}

n=0
for p in "${progs[@]}"; do
	name=${p%%:*}
	src=$build/${p#*:}
	[ -x "$src" ] || continue
	cp "$src" "$out/bin/$name"
	pack_libs "$src"
	n=$((n + 1))
done
mod=$build/gnn/libloom_gnn_cuda.so
if [ -f "$mod" ]; then
	cp "$mod" "$out/lib/"
	pack_libs "$mod"
fi
cp -r "$root/data" "$out/data"
if [ -z "$interp" ]; then
	echo "bundle: ldd named no dynamic loader for the programs" >&2
	exit 1
fi

# The wrapper starts a program through the dynamic loader with the bundle's
# library path, so that what the program starts in turn (gnuplot) does not
# inherit that path and keeps the other host's own libraries.
{
	echo '#!/bin/sh'
	echo "# Runs one of this bundle's programs (ls bin/) with its libraries and data."
	echo "interp='$interp'"
	cat <<'WRAPPER'
d=$(cd "$(dirname "$0")" && pwd)
case ${1:-} in
"" | . | .. | */*) prog= ;;
*) prog=$1 ;;
esac
if [ -z "$prog" ] || [ ! -f "$d/bin/$prog" ] || [ ! -x "$d/bin/$prog" ]; then
	echo "usage: $0 PROGRAM [ARGS...]; PROGRAM one of: $(ls "$d/bin" | tr '\n' ' ')" >&2
	exit 2
fi
shift
LOOM_DATA=${LOOM_DATA:-$d/data}
export LOOM_DATA
if [ -z "${LOOM_GNN_CUDA_MODULE:-}" ] && [ -f "$d/lib/libloom_gnn_cuda.so" ]; then
	LOOM_GNN_CUDA_MODULE=$d/lib/libloom_gnn_cuda.so
	export LOOM_GNN_CUDA_MODULE
fi
exec "$interp" --library-path "$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" --argv0 "$prog" \
	"$d/bin/$prog" "$@"
WRAPPER
} >"$out/loom"
chmod +x "$out/loom"
echo "bundle: $out: $n programs, $(ls "$out/lib" | wc -l) libraries, $(du -sh "$out" | cut -f1); run them as $out/loom PROGRAM ..."
