#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Loom's main job on bundled data: installs what is missing, builds, then
# replays the Facebook coflow trace and a generated multi-stage (TPC-H
# shaped) workload under every policy (heuristics, the learned gnn with the
# shipped model, and the run-time ensemble), in ideal-order and 8-class modes,
# printing the comparison tables and writing CSV + plots under out/.
# The two modes of each workload run side by side (one process each).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build-release -Dbuildtype=release
bin=build-release/controlplane/sim

# replay_both NAME TRACE: both modes in parallel, then both tables in order.
replay_both() {
	local name=$1 trace=$2 pids=() mode
	for mode in ideal classes; do
		"$bin/loom-replay" --trace "$trace" --policy fair,all --mode "$mode" --no-progress \
			--out "out/$name/$mode" >"out/$name/$mode.log" 2>&1 &
		pids+=($!)
	done
	for mode in 0 1; do
		if ! wait "${pids[$mode]}"; then
			cat "out/$name/$([ "$mode" = 0 ] && echo ideal || echo classes).log" >&2
			exit 1
		fi
	done
	for mode in ideal classes; do
		echo
		echo "-- $([ "$mode" = ideal ] && echo "ideal order" || echo "8 priority classes (what the datapath enforces)")"
		grep -v '^loom-replay: ' "out/$name/$mode.log" || true
		# the ensemble's choices: how often it switched, who was in charge
		sed -n 's/^loom-replay: \(ensemble.*switches; in charge.*\)/\1/p' "out/$name/$mode.log"
	done
}

mkdir -p out/fb2010 out/tpch
echo
echo "== Facebook coflow benchmark (FB2010): 526 coflows, 706,397 flows, 150 ports at 1 Gbit/s =="
echo "   every policy, ideal order and 8 classes side by side (about 10 minutes on 2 cores)"
replay_both fb2010 data/fb2010/FB2010-1Hr-150-0.txt

echo
echo "== Multi-stage jobs: 50 TPC-H-shaped DAGs, FB2010-sampled coflows, weights 1..4, load 0.7, 150 hosts =="
"$bin/loom-gen" --out out/tpch/jobs-l0.7-s1.loom --jobs 50 --load 0.7 --seed 1 --weight-max 4
replay_both tpch out/tpch/jobs-l0.7-s1.loom

echo
echo "Tables above (ratios to fair, per-flow max-min sharing); CSV files and plots (PNG, SVG) in"
echo "out/{fb2010,tpch}/{ideal,classes}. The full comparison normalised to fair, with"
echo "three seeds per load: bench/policies.sh (bench/README.md)."
