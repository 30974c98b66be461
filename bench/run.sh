#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Replay benchmark: the full FB2010 trace (526 coflows, 706,397 flows) under
# each policy and fabric mode, one process per run pinned to one core; wall
# time and peak RSS of each. Prints a Markdown table for bench/README.md.
#   bench/run.sh [BUILD_DIR]     (default build-release, configured if needed)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-release}
bash scripts/build.sh "$dir" -Dbuildtype=release >/dev/null
bin="$dir/controlplane/sim/loom-replay"
trace=data/fb2010/FB2010-1Hr-150-0.txt
pin=()
command -v taskset >/dev/null && pin=(taskset -c 0)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%d)"
echo "command: bench/run.sh ($bin, release build, one core)"
echo
echo "| run | process wall s | simulation wall s | peak RSS MiB | steps | policy decisions | avg CCT s |"
echo "|---|---|---|---|---|---|---|"
for run in fifo:ideal fair:ideal fifo:classes fair:classes; do
	pol=${run%%:*}
	mode=${run##*:}
	log="$out/$pol-$mode.log"
	t0=$(date +%s.%N)
	"${pin[@]}" "$bin" --trace "$trace" --policy "$pol" --mode "$mode" --no-plots \
		--no-progress --out "$out/$pol-$mode" >"$log" 2>&1
	t1=$(date +%s.%N)
	rss=$(sed -n 's/.*peak RSS \([0-9.]*\) MiB.*/\1/p' "$log")
	# summary.csv columns by name
	row=$(awk -F, 'NR==1{for(i=1;i<=NF;i++)c[$i]=i} NR==2{print $c["label"]","$c["wall_s"]","$c["steps"]","$c["decisions"]","$c["avg_cct_s"]}' "$out/$pol-$mode/summary.csv")
	IFS=, read -r label wall steps decisions cct <<<"$row"
	printf '| %s | %.2f | %.2f | %s | %s | %s | %.2f |\n' "$label" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" \
		"$wall" "$rss" "$steps" "$decisions" "$cct"
done
