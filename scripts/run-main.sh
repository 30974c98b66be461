#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Loom's main job on bundled data: installs what is missing, builds, then,
# as root, plays a generated multi-stage workload live on a virtual cluster
# (bench/live.sh: 8 host namespaces at 100 Mbit/s, loomd, one agent per
# host; plain TCP, sebf, sincronia, gnn, lookahead:base=gnn) against
# loom-replay's prediction of it (about 2.5 minutes on 2 cores; without
# root it says why and skips it), then replays the Facebook coflow trace
# and a generated multi-stage (TPC-H shaped) workload through the
# simulator, in ideal-order and 8-class modes
# (the classes loomd gives the agents), and prints the comparison tables
# with the lower-bound rows; CSV files and plots go under out/.
#
#   scripts/run-main.sh            the main policies (fair, sebf, sincronia,
#                                  gnn; wsrjf and lookahead:base=gnn on the
#                                  multi-stage jobs): about 3 minutes on 2 cores
#                                  after the build
#   scripts/run-main.sh --full     every policy, and 50 jobs instead of 30
#   scripts/run-main.sh --no-live  the replays only
#
# Each replay runs its policies one per core at once (loom-replay --jobs 0)
# and logs a line as each policy ends.
set -euo pipefail
cd "$(dirname "$0")/.."

full=0 live=1
for arg in "$@"; do
	case $arg in
	--full) full=1 ;;
	--no-live) live=0 ;;
	-h | --help)
		sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "run-main.sh: unknown argument '$arg' (try --help)" >&2
		exit 2
		;;
	esac
done

bash scripts/install-deps.sh
bash scripts/build.sh build-release -Dbuildtype=release
bin=build-release/controlplane/sim

live_failed=0
if [ "$live" = 1 ]; then
	echo
	echo "== Live cluster against the simulator: 20 TPC-H-shaped jobs on 8 hosts at 100 Mbit/s, load 0.7, weights 1..4 =="
	if [ "$(id -u)" != 0 ]; then
		echo "(skipped: the virtual cluster needs root for its network namespaces, tc and BPF;"
		echo " run as root for it, or bench/live.sh alone; the replays follow)"
	else
		t0=$(date +%s)
		if bash bench/live.sh; then
			echo "Live comparison took $(($(date +%s) - t0)) s; CSV files, tables.md and live_jct_cdf.png in out/bench-live."
		else
			live_failed=1
			echo "run-main.sh: the live comparison failed (above); the replays follow" >&2
		fi
	fi
fi
start=$(date +%s)

if [ "$full" = 1 ]; then
	fb_policies=fair,all
	jobs=50
	multi_ideal=fair,all,lookahead:base=gnn
	multi_classes=fair,all
else
	fb_policies=fair,sebf,sincronia,gnn
	jobs=30
	multi_ideal=fair,sebf,sincronia,wsrjf,gnn,lookahead:base=gnn
	multi_classes=fair,sebf,sincronia,wsrjf,gnn
fi

# replay TITLE OUT ARGS...: one loom-replay, its table, its ensemble line.
replay() {
	local title=$1 out=$2
	shift 2
	mkdir -p "$out"
	echo
	echo "-- $title"
	# progress (a line per finished policy) to the terminal, the table after
	if ! "$bin/loom-replay" "$@" --jobs 0 --no-progress --out "$out" >"$out/table.txt" \
		2> >(tee "$out/log.txt" | sed -n 's/^loom-replay: \(.*: done in .*\)/   \1/p' >&2); then
		cat "$out/log.txt" >&2
		exit 1
	fi
	wait # for the progress filter
	cat "$out/table.txt"
	# the ensemble's choices: how often it switched, who was in charge
	sed -n 's/^loom-replay: \(ensemble.*switches; in charge.*\)/\1/p' "$out/log.txt"
}

fb=data/fb2010/FB2010-1Hr-150-0.txt
echo
echo "== Facebook coflow benchmark (FB2010): 526 coflows, 706,397 flows, 150 ports at 1 Gbit/s =="
replay "ideal order" out/fb2010/ideal --trace "$fb" --policy "$fb_policies" --mode ideal
replay "8 priority classes (what loomd gives the agents)" out/fb2010/classes \
	--trace "$fb" --policy "$fb_policies" --mode classes

echo
echo "== Multi-stage jobs: $jobs TPC-H-shaped DAGs, FB2010-sampled coflows, weights 1..4, load 0.7, 150 hosts =="
mkdir -p out/tpch
trace=out/tpch/jobs$jobs-l0.7-s1.loom
"$bin/loom-gen" --out "$trace" --jobs "$jobs" --load 0.7 --seed 1 --weight-max 4 >/dev/null
replay "ideal order" out/tpch/ideal --trace "$trace" --policy "$multi_ideal" --mode ideal
replay "8 priority classes (what loomd gives the agents)" out/tpch/classes \
	--trace "$trace" --policy "$multi_classes" --mode classes

echo
echo "Tables above: ratios to fair (per-flow max-min sharing) under its first row in seconds;"
echo "the bound rows are lower bounds no schedule can beat (docs/bounds.md). CSV files and"
echo "plots (PNG, SVG) in out/{fb2010,tpch}/{ideal,classes}. Replays took $(($(date +%s) - start)) s."
[ "$full" = 1 ] || echo "Every policy: scripts/run-main.sh --full. Three seeds per load: bench/policies.sh."
if [ "$live_failed" = 1 ]; then
	echo "run-main.sh: the live comparison failed (see above)" >&2
	exit 1
fi
