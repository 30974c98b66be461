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
# path. MPI runs need Open MPI installed there (mpirun is not packed).
set -euo pipefail

usage() {
	echo "usage: scripts/bundle.sh [--build DIR] OUT   (DIR: a built folder, default build-release)" >&2
	exit 2
}

build=build-release
out=
while [ $# -gt 0 ]; do
	case $1 in
	--build)
		[ $# -ge 2 ] || usage
		build=$2
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
root=$(cd "$(dirname "$0")/.." && pwd)
case $build in /*) ;; *) build=$root/$build ;; esac

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

# The C library's own objects: the other host's are used.
is_libc() {
	case $(basename "$1") in
	ld-linux*.so* | libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | \
		libresolv.so* | libutil.so* | libmvec.so*) return 0 ;;
	esac
	return 1
}

# Copies every library $1 loads (ldd's resolved paths) into lib/, once.
pack_libs() {
	local line name path
	while read -r line; do
		case $line in
		*"=> not found"*)
			echo "bundle: $1: ${line%% =>*} not found on this machine" >&2
			exit 1
			;;
		*"=> /"*)
			name=${line%% =>*}
			path=${line#*=> }
			path=${path%% (*}
			;;
		*) continue ;;
		esac
		is_libc "$name" && continue
		[ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
	done < <(ldd "$1")
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
fi
cp -r "$root/data" "$out/data"

cat >"$out/loom" <<'EOF'
#!/bin/sh
# Runs one of this bundle's programs (ls bin/) with its libraries and data.
d=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 1 ] || [ ! -x "$d/bin/$1" ] || [ "$1" != "$(basename "$1")" ]; then
	echo "usage: $0 PROGRAM [ARGS...]; PROGRAM one of: $(ls "$d/bin" | tr '\n' ' ')" >&2
	exit 2
fi
prog=$1
shift
LD_LIBRARY_PATH=$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
LOOM_DATA=${LOOM_DATA:-$d/data}
export LD_LIBRARY_PATH LOOM_DATA
if [ -z "${LOOM_GNN_CUDA_MODULE:-}" ] && [ -f "$d/lib/libloom_gnn_cuda.so" ]; then
	LOOM_GNN_CUDA_MODULE=$d/lib/libloom_gnn_cuda.so
	export LOOM_GNN_CUDA_MODULE
fi
exec "$d/bin/$prog" "$@"
EOF
chmod +x "$out/loom"
echo "bundle: $out: $n programs, $(ls "$out/lib" | wc -l) libraries, $(du -sh "$out" | cut -f1); run them as $out/loom PROGRAM ..."
