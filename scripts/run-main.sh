#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Loom's main job on bundled data: installs what is missing, builds, then
# replays the Facebook coflow trace and a generated multi-stage (TPC-H
# shaped) workload through the simulator, in ideal-order and 8-class modes
# (the classes loomd gives the agents), and prints the comparison tables
# with the lower-bound rows; CSV files and plots go under out/.
#
#   scripts/run-main.sh            the main policies (fair, sebf, sincronia,
#                                  gnn; wsrjf and lookahead:base=gnn on the
#                                  multi-stage jobs): about 3 minutes on 2 cores
#                                  after the build
#   scripts/run-main.sh --full     every policy, and 50 jobs instead of 30
#
# Each replay runs its policies one per core at once (loom-replay --jobs 0)
# and logs a line as each policy ends.
set -euo pipefail
cd "$(dirname "$0")/.."

full=0
case ${1:-} in
'') ;;
--full) full=1 ;;
-h | --help)
	sed -n '3,15p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
*)
	echo "run-main.sh: unknown argument '$1' (try --help)" >&2
	exit 2
	;;
esac

bash scripts/install-deps.sh
bash scripts/build.sh build-release -Dbuildtype=release
bin=build-release/controlplane/sim
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
