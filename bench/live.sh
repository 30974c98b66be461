#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The live cluster against the simulator, by one command:
#
#   bench/live.sh [--readme] [--build DIR] [--policies LIST] [--scale X]
#                 [--switch-queues N] [--repeat N]
#
#  1. generates a workload with loom-gen: 20 TPC-H-shaped jobs on 8 hosts at
#     100 Mbit/s, load 0.7, weights 1..4, seed 1;
#  2. brings up a loom-cluster of 8 hosts (8 classes) once and plays the
#     workload on it with loom-run under each policy in turn (loomctl policy
#     set between runs), bytes and times scaled by --scale (default 0.002:
#     about 22 s a run); `fair` is plain TCP (one class for everything);
#     with --repeat N (odd, 1..9; default 1) each policy N times in a row,
#     the run with the median avg weighted JCT reported (every run's figure
#     listed under the tables): a single live run is one draw from a spread
#     of up to 20%;
#  3. reads loomd's /metrics around each run: table pushes (updates/s) and
#     loom_enforce_seconds (a change to its classes in force at every
#     affected agent);
#  4. replays the scaled trace that was played (loom-run's trace.loom and
#     topology.json) with loom-replay --mode classes --classes 8
#     --stats-ms 10 (the policy sees the bytes as of the agents' last
#     report, every 10 ms, as loomd does), every policy: the prediction;
#     and again with --start-latency-ms, the fixed cost of a coflow in a
#     live run, measured from these runs (the median live CCT of the
#     coflows the first prediction finishes within 1 ms, every policy but
#     fair); and again with --stats-ms 10, 20, .. 100: how firm the
#     prediction is (a policy whose order hinges on a near-tie changes its
#     schedule as the byte counts it sees age);
#  5. bench/live_report.py prints the table (live, predicted, ratio,
#     speed-up over plain TCP), writes it to OUT/tables.md and the JCT CDF
#     plot (live and predicted per policy) to OUT/live_jct_cdf.png; with
#     --readme also between the "live" markers of bench/README.md and the
#     plot into bench/results/.
#
# Needs root (namespaces, tc, BPF): without it, says so and exits 2.
# OUT is out/bench-live (git-ignored). About 2.5 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=build-release readme=0 scale=0.002 swq=32 repeat=1
stats_ms=10 # the agents' --stats-interval, and the prediction's --stats-ms
ages_ms="10 20 30 40 50 60 70 80 90 100" # the report ages of the firmness replays
policies=fair,sebf,sincronia,gnn,lookahead:base=gnn
jobs=20 hosts=8 rate=100000000 load=0.7 seed=1
while [ $# -gt 0 ]; do
	case $1 in
	--readme) readme=1; shift ;;
	--build) dir=$2; shift 2 ;;
	--policies) policies=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--switch-queues) swq=$2; shift 2 ;;
	--repeat) repeat=$2; shift 2 ;;
	-h | --help)
		sed -n '3,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "live.sh: unknown argument '$1' (try --help)" >&2
		exit 2
		;;
	esac
done
case "$repeat" in
1 | 3 | 5 | 7 | 9) ;;
*)
	echo "live.sh: --repeat '$repeat': an odd number of runs per policy, 1 to 9" >&2
	exit 2
	;;
esac
case ",$policies," in
*,fair,*) ;;
*)
	echo "live.sh: --policies must include fair (plain TCP: the speed-ups are against it)" >&2
	exit 2
	;;
esac
if [ "$(id -u)" != 0 ]; then
	echo "live.sh: the live cluster needs root (network namespaces, tc, BPF); not run" >&2
	exit 2
fi

. bench/lib.sh
ncores=$(nproc)
bash scripts/build.sh "$dir" -Dbuildtype=release >/dev/null
bin=$dir/controlplane
out=out/bench-live
rm -rf "$out"
mkdir -p "$out/live"
{
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%d)"
	echo "build: $dir"
	echo "command: bench/live.sh$([ "$scale" = 0.002 ] || echo " --scale $scale")$([ "$swq" = 32 ] || echo " --switch-queues $swq")$([ "$repeat" = 1 ] || echo " --repeat $repeat")"
	echo "workload: loom-gen --jobs $jobs --hosts $hosts --rate-bps $rate --load $load --seed $seed --weight-max 4"
	echo "cluster: $hosts hosts at $((rate / 1000000)) Mbit/s, 8 classes, $swq flow queues per class on each switch port; bytes and times x $scale; TCP cubic on every flow (loom-run's --congestion)"
} >"$out/machine.txt"

"$bin/sim/loom-gen" --out "$out/workload.loom" --jobs "$jobs" --hosts "$hosts" \
	--rate-bps "$rate" --load "$load" --seed "$seed" --weight-max 4 >"$out/gen.log"
log "$(sed -n 's/.*wrote [^:]*: //p' "$out/gen.log")"

name=bl$$
sw=loomc-$name-sw
cleanup() { scripts/loom-cluster down --name "$name" >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM
scripts/loom-cluster up --name "$name" --hosts "$hosts" --rate "${rate}bit" --classes 8 \
	--switch-queues "$swq" --stats-interval "$stats_ms" --build "$dir" --policy fair \
	>"$out/up.log" 2>&1 || {
	cat "$out/up.log" >&2
	exit 1
}
admin=/run/loom-cluster/$name/admin.sock
metrics() { # loomd's /metrics (in the switch's namespace) into $1
	sleep 0.6 # loomd republishes every 250 ms
	ip netns exec "$sw" python3 -c \
		'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:9464/metrics", timeout=5).read().decode(), end="")' >"$1"
}

: >"$out/policies.txt"
IFS=, read -ra plist <<<"$policies"
for p in "${plist[@]}"; do
	label=$(printf '%s' "$p" | tr ':=,' '---')
	printf '%s\t%s\n' "$label" "$p" >>"$out/policies.txt"
	"$bin/cli/loomctl" --socket "$admin" policy set "$p" >/dev/null
	: >"$out/live/$label.runs"
	for ((r = 1; r <= repeat; r++)); do
		run=$label.r$r
		metrics "$out/live/$run.metrics0"
		t0=$(date +%s%N)
		if ! scripts/loom-cluster run --name "$name" "$out/workload.loom" --bytes-scale "$scale" \
			--time-scale "$scale" --out "$out/live/$run" --label "$label" \
			>"$out/live/$run.log" 2>&1; then
			tail -n 20 "$out/live/$run.log" >&2
			exit 1
		fi
		echo $((($(date +%s%N) - t0) / 1000000)) >"$out/live/$run.wall_ms"
		metrics "$out/live/$run.metrics1"
		# loom-run's summary.csv (loom-replay's columns)
		wjct=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "avg_wjct_s") c = i }
			NR == 2 && c { printf "%.3f", $c }' "$out/live/$run/summary.csv")
		[ -n "$wjct" ] || { echo "live.sh: no avg_wjct_s in $out/live/$run/summary.csv" >&2; exit 1; }
		printf '%d %s\n' "$r" "$wjct" >>"$out/live/$label.runs"
		log "live $p$([ "$repeat" = 1 ] || echo " (run $r of $repeat)"): $(sed -n 's/^loom-run: \(.* in [0-9.]* s\);.*/\1/p' "$out/live/$run.log"), avg weighted JCT $wjct s"
	done
	# the run with the median avg weighted JCT is the policy's
	r=$(sort -k2,2g "$out/live/$label.runs" | sed -n "$(((repeat + 1) / 2))p" | cut -d' ' -f1)
	mv "$out/live/$label.r$r" "$out/live/$label"
	for x in log wall_ms metrics0 metrics1; do
		mv "$out/live/$label.r$r.$x" "$out/live/$label.$x"
	done
done
cleanup
trap - EXIT

# the prediction: the scaled trace loom-run played (the same for every policy)
first=$(head -n1 "$out/policies.txt" | cut -f1)
for l in $(cut -f1 "$out/policies.txt"); do
	cmp -s "$out/live/$first/trace.loom" "$out/live/$l/trace.loom" ||
		{ echo "live.sh: the runs played different traces" >&2; exit 1; }
done
"$bin/sim/loom-replay" --trace "$out/live/$first/trace.loom" --topo "$out/live/$first/topology.json" \
	--policy "$policies" --mode classes --classes 8 --stats-ms "$stats_ms" --jobs 0 \
	--no-progress --no-plots --out "$out/sim" >"$out/sim.txt" 2>"$out/sim.log" || { cat "$out/sim.log" >&2; exit 1; }
# the same with the fixed cost of a coflow in a live run (announcing, classes
# reaching the hosts, connecting) measured from these runs: see live_report.py
python3 bench/live_report.py --out "$out" --measure-latency >"$out/latency_ms"
"$bin/sim/loom-replay" --trace "$out/live/$first/trace.loom" --topo "$out/live/$first/topology.json" \
	--policy "$policies" --mode classes --classes 8 --stats-ms "$stats_ms" --jobs 0 \
	--no-progress --no-plots --start-latency-ms "$(cat "$out/latency_ms")" --out "$out/sim-lat" >"$out/sim-lat.txt" \
	2>"$out/sim-lat.log" || { cat "$out/sim-lat.log" >&2; exit 1; }
# how firm the prediction is: the same replay with the policy seeing older
# byte counts (a report every S ms), S = 10 .. 100; a policy whose order
# hinges on a near-tie changes its schedule within that range
mkdir -p "$out/sim-age"
for s in $ages_ms; do
	# the prediction's own period was replayed above
	if [ "$s" = "$stats_ms" ]; then
		cp -r "$out/sim" "$out/sim-age/$s"
		continue
	fi
	"$bin/sim/loom-replay" --trace "$out/live/$first/trace.loom" --topo "$out/live/$first/topology.json" \
		--policy "$policies" --mode classes --classes 8 --stats-ms "$s" --jobs 0 \
		--no-progress --no-plots --out "$out/sim-age/$s" >/dev/null 2>"$out/sim-age.log" ||
		{ cat "$out/sim-age.log" >&2; exit 1; }
done
log "replayed (and with a start latency of $(cat "$out/latency_ms") ms, and with byte counts reported every $(echo $ages_ms | tr ' ' ,) ms)"

args=(--out "$out")
[ "$readme" = 1 ] && args+=(--readme bench/README.md --plots bench/results)
python3 bench/live_report.py "${args[@]}"
