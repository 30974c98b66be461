#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# How loom-train scales over MPI ranks (issue 19, part 4) and, for
# comparison, over threads in one process.
#
# One fixed training job, reinforcement only (no imitation, no validation):
#   --iters ITERS --imitate-iters 0 --rollouts ROLLOUTS --jobs-min JOBS
#   --jobs-max JOBS --eval-every 0 --seed 1
# run as `mpirun -np N loom-train --mpi --threads 1` for each N in RANKS,
# then as one process with --threads T for each T in THREADS. Every run
# does the same work (ROLLOUTS rollouts of the same episodes per
# iteration). The first run is the base: speed-up = its wall / a run's
# wall, efficiency = speed-up x its workers / the run's workers (with
# RANKS starting at 1, as by default: speed-up / N). Wall is loom-train's
# own wall_s on the last row of learning.csv: seconds since training
# started (model and workers set up included, process start-up not),
# printed to 0.1 s, so give runs of some seconds. The command's wall
# clock is printed beside it.
#
# It also checks what docs/learning.md promises: N ranks x 1 thread train
# the same model, to the byte, as one process with N threads (final.lgw,
# for the largest N that is in both RANKS and THREADS).
#
# Usage: bench/mpi_scaling.sh [BUILD_DIR]
#   environment: RANKS (default "1 2 4 8 16"; counts above the cores are
#   skipped, with a message, unless MPIRUN_ARGS has --oversubscribe),
#   THREADS (default: the largest rank count, at most 16), ITERS (3),
#   ROLLOUTS (16; 2..64), JOBS (20), MPIRUN (mpirun), LOOM_TRAIN
#   (BUILD_DIR's loom-train), MPIRUN_ARGS (extra mpirun arguments),
#   OUT_DIR (out/bench-mpi).
# Writes OUT_DIR/scaling.csv (mode,workers,wall_s,cmd_wall_s,speedup,efficiency).
# Exit status: 0; 1 if a run fails or the two models differ; 2 for bad settings.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

case "${1:-}" in
-h | --help)
	sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
-*)
	echo "mpi_scaling: unknown option '$1' (see --help)" >&2
	exit 2
	;;
esac
build=${1:-build-release}
train=${LOOM_TRAIN:-$build/controlplane/learn/loom-train}
mpirun=${MPIRUN:-mpirun}
ncores=$(nproc --all)
iters=${ITERS:-3}
rollouts=${ROLLOUTS:-16}
jobs=${JOBS:-20}
out=${OUT_DIR:-out/bench-mpi}
ranks=${RANKS:-1 2 4 8 16}

# whole MIN MAX NAME VALUE...: each VALUE a whole number in MIN..MAX (MAX empty: none)
whole() {
	local min=$1 max=$2 name=$3 v
	shift 3
	[ $# -gt 0 ] || {
		echo "mpi_scaling: $name is empty" >&2
		exit 2
	}
	for v in "$@"; do
		case "$v" in
		'' | *[!0-9]* | 0*)
			echo "mpi_scaling: $name takes whole numbers >= 1, not '$v'" >&2
			exit 2
			;;
		esac
		if [ "$v" -lt "$min" ] || { [ -n "$max" ] && [ "$v" -gt "$max" ]; }; then
			echo "mpi_scaling: $name must be in $min..${max:-}, not $v" >&2
			exit 2
		fi
	done
}
# shellcheck disable=SC2086 # RANKS and THREADS are lists
{
	whole 1 "" ITERS $iters
	whole 2 64 ROLLOUTS $rollouts
	whole 1 "" JOBS $jobs
	whole 1 64 RANKS $ranks
	if [ -n "${THREADS:-}" ]; then whole 1 16 THREADS $THREADS; fi
}
if [ ! -x "$train" ]; then
	echo "mpi_scaling: no loom-train at $train (build first, or set LOOM_TRAIN)" >&2
	exit 1
fi
if ! command -v "$mpirun" > /dev/null; then
	echo "mpi_scaling: no $mpirun (apt-get install openmpi-bin, or set MPIRUN)" >&2
	exit 1
fi
capped=""
for r in $ranks; do
	if [ "$r" -le "$ncores" ] || [[ " ${MPIRUN_ARGS:-} " == *" --oversubscribe "* ]]; then
		capped="$capped $r"
	else
		log "skipping $r ranks: more than the $ncores cores (add --oversubscribe to MPIRUN_ARGS to run them)"
	fi
done
ranks=${capped# }
if [ -z "$ranks" ]; then
	echo "mpi_scaling: no rank count in RANKS fits the $ncores cores" >&2
	exit 2
fi
max=0
for r in $ranks; do
	if [ "$r" -gt "$max" ]; then max=$r; fi
done
threads=${THREADS:-$((max > 16 ? 16 : max))}
# shellcheck disable=SC2086
whole 1 16 THREADS $threads
as_root=()
if [ "$(id -u)" = 0 ]; then as_root=(--allow-run-as-root); fi

common=(--iters "$iters" --imitate-iters 0 --rollouts "$rollouts" --jobs-min "$jobs"
	--jobs-max "$jobs" --eval-every 0 --seed 1 --no-progress)
mkdir -p "$out"
rm -rf "$out"/mpi-* "$out"/threads-*
csv=$out/scaling.csv
echo "mode,workers,wall_s,cmd_wall_s" > "$csv.raw"

# last_wall DIR: the wall_s of DIR/learning.csv's last row
last_wall() { tail -n 1 "$1/learning.csv" | awk -F, '{print $NF}'; }

# timed MODE WORKERS DIR CMD...: runs CMD into DIR and appends its row
timed() {
	local mode=$1 n=$2 d=$3 t0 t1
	shift 3
	t0=$(date +%s.%N)
	"$@" --out "$d" "${common[@]}" > "$d.log" 2>&1 || {
		tail -n 20 "$d.log" >&2
		rm -f "$csv.raw"
		exit 1
	}
	t1=$(date +%s.%N)
	echo "$mode,$n,$(last_wall "$d"),$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" >> "$csv.raw"
}

for r in $ranks; do
	log "mpirun -np $r (1 thread each)"
	# shellcheck disable=SC2086 # MPIRUN_ARGS is a list of arguments
	timed mpi "$r" "$out/mpi-$r" "$mpirun" "${as_root[@]}" ${MPIRUN_ARGS:-} -np "$r" "$train" \
		--mpi --threads 1
done
for t in $threads; do
	log "one process, --threads $t"
	timed threads "$t" "$out/threads-$t" "$train" --threads "$t"
done

awk -F, 'NR == 1 { print $0 ",speedup,efficiency"; next }
	NR == 2 { base = $3; bw = $2 }
	!(base > 0) || !($3 > 0) { print $0 ",-,-"; next }
	{ s = base / $3; printf "%s,%.2f,%.2f\n", $0, s, s * bw / $2 }' "$csv.raw" > "$csv"
rm -f "$csv.raw"

same="not compared (no rank count is also in THREADS)"
cmp_n=0
for t in $threads; do
	if [ -f "$out/mpi-$t/final.lgw" ] && [ "$t" -gt "$cmp_n" ]; then cmp_n=$t; fi
done
if [ "$cmp_n" -gt 0 ]; then
	if cmp -s "$out/mpi-$cmp_n/final.lgw" "$out/threads-$cmp_n/final.lgw"; then
		same="$cmp_n ranks x 1 thread and 1 process x $cmp_n threads: identical"
	else
		same="$cmp_n ranks x 1 thread and 1 process x $cmp_n threads: DIFFERENT"
	fi
fi
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
echo "mpi_scaling: $ncores cores ($cpu), $iters iterations x $rollouts rollouts of" \
	"$jobs-job episodes; base: the first row"
column -s, -t "$csv" 2> /dev/null || cat "$csv"
echo "mpi_scaling: final.lgw of $same"
case "$same" in
*DIFFERENT) exit 1 ;;
esac
