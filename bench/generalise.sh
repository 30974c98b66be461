#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# How the learned policies generalise: held-out workloads
# far from what training saw, one factor at a time around a base point, and
# the random DAG family that training never sees.
#
#   base:   loom-gen --jobs 40 --load 0.9 --hosts 150 --bytes-scale 1
#           --weight-max 4, TPC-H DAG shapes
#   load:   0.5, 0.7, 0.95          jobs:   20, 100
#   hosts:  50, 300                 bytes:  0.1, 10
#   weights: max 1 (unweighted), 10
#   family: random layered DAGs (--dags random), at loads 0.7 and 0.9
#
# Each point is --seeds workloads (default 201, never used by training,
# validation or bench/learned.sh). Every heuristic, the shipped gnn,
# lookahead:base=gnn and the LP bound run on each in ideal mode; the table
# gives, per point, the best heuristic and each policy's avg weighted JCT as
# a ratio to it. Writes out/bench-generalise/tables.md and, with --readme,
# the "generalise" block of bench/README.md.
#
# Usage: bench/generalise.sh [--readme] [--seeds "201 202"] [--no-lookahead]
#                             [--jobs N] [--resume] [BUILD_DIR]
#   --jobs N   replays at once (default: the number of cores)
#   --resume   keep the points of a previous run that have a summary.csv
#              (same seeds and policies: replays are deterministic) and
#              replay only the others
set -euo pipefail
cd "$(dirname "$0")/.."

readme=0
seeds=201
lookahead=1
resume=0
ncores=$(nproc)
while [ $# -gt 0 ]; do
	case "$1" in
	--readme) readme=1 ;;
	--seeds)
		seeds=$2
		shift
		;;
	--no-lookahead) lookahead=0 ;;
	--resume) resume=1 ;;
	--jobs)
		ncores=$2
		case $ncores in '' | *[!0-9]* | 0)
			echo "generalise.sh: --jobs takes a whole number >= 1" >&2
			exit 2
			;;
		esac
		shift
		;;
	-h | --help)
		sed -n '3,26p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	-*)
		echo "generalise.sh: unknown option '$1' (see --help)" >&2
		exit 2
		;;
	*) break ;;
	esac
	shift
done
dir=${1:-build-release}
bash scripts/build.sh "$dir" -Dbuildtype=release >/dev/null
replay="$dir/controlplane/sim/loom-replay"
gen="$dir/controlplane/sim/loom-gen"
out=out/bench-generalise
[ "$resume" = 1 ] || rm -rf "$out"
mkdir -p "$out"

heuristics=fifo,scf,ncf,lcf,sebf,dclas,dclas-job,sincronia,cpf,wcpf,srjf,wsrjf
policies=$heuristics,gnn
[ "$lookahead" = 1 ] && policies+=,lookahead:base=gnn

# name|loom-gen arguments (the base point's, then the factor's)
base="--jobs 40 --load 0.9 --hosts 150 --bytes-scale 1 --weight-max 4"
points=(
	"base|"
	"load=0.5|--load 0.5"
	"load=0.7|--load 0.7"
	"load=0.95|--load 0.95"
	"jobs=20|--jobs 20"
	"jobs=100|--jobs 100"
	"hosts=50|--hosts 50"
	"hosts=300|--hosts 300"
	"bytes=0.1|--bytes-scale 0.1"
	"bytes=10|--bytes-scale 10"
	"weight-max=1|--weight-max 1"
	"weight-max=10|--weight-max 10"
	"random DAGs, load=0.7|--dags random --load 0.7"
	"random DAGs|--dags random"
)

. bench/lib.sh

{
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%d)"
	echo "build: $dir (release); model: data/models/gnn-default.lgw; commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
	echo "command: bench/generalise.sh$([ "$readme" = 1 ] && echo ' --readme') --seeds \"$seeds\"$([ "$lookahead" = 0 ] && echo ' --no-lookahead')"
} >"$out/machine.txt.new"
if [ "$resume" = 1 ] && [ -s "$out/machine.txt" ]; then
	# the points kept were replayed by the earlier run: say so
	grep -v -e '^wall:' -e '^earlier run: ' "$out/machine.txt" | sed 's/^/earlier run: /' >>"$out/machine.txt.new"
	grep '^earlier run: ' "$out/machine.txt" >>"$out/machine.txt.new" || true
fi
mv "$out/machine.txt.new" "$out/machine.txt"

start=$(date +%s)
i=0
for p in "${points[@]}"; do
	name=${p%%|*}
	args=${p#*|}
	for seed in $seeds; do
		d="$out/p$i-s$seed"
		if [ "$resume" = 1 ] && [ -s "$d/replay/summary.csv" ] &&
			[ "$(cat "$d/point.txt" 2>/dev/null)" = "$name" ]; then
			log "$name, seed $seed: kept from the earlier run"
			continue
		fi
		rm -rf "$d"
		mkdir -p "$d"
		echo "$name" >"$d/point.txt"
		# shellcheck disable=SC2086 # word splitting of the argument lists is intended
		if ! "$gen" --out "$d/trace.loom" $base $args --seed "$seed" >"$d/gen.log" 2>&1; then
			echo "generalise.sh: loom-gen failed for '$name':" >&2
			cat "$d/gen.log" >&2
			exit 1
		fi
		throttle
		log "$name, seed $seed"
		"$replay" --trace "$d/trace.loom" --policy "$policies" --mode ideal --no-progress \
			--out "$d/replay" >"$d/replay.log" 2>&1 &
	done
	i=$((i + 1))
done
wait
for d in "$out"/p*-s*; do
	if [ ! -s "$d/replay/summary.csv" ]; then
		echo "generalise.sh: $(cat "$d/point.txt") ($d) failed:" >&2
		tail -n 20 "$d/replay.log" >&2
		exit 1
	fi
done
echo "wall: $(($(date +%s) - start)) s" >>"$out/machine.txt"
log "replays done in $(($(date +%s) - start)) s"

args=(--out "$out")
[ "$readme" = 1 ] && args+=(--readme bench/README.md)
python3 bench/generalise_report.py "${args[@]}"
log "done: $out/tables.md$([ "$readme" = 1 ] && echo ' and bench/README.md')"
