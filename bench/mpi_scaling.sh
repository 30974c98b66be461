#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# How loom-train scales over MPI ranks (issue 19, part 4) and, for
# comparison, over threads in one process.
#
# One fixed training job, reinforcement only (no imitation, no validation):
#   --iters ITERS --imitate-iters 0 --rollouts ROLLOUTS --jobs-min JOBS
#   --jobs-max JOBS --eval-every 0 --seed 1
# run as `mpirun -np R loom-train --mpi --threads 1` for each R in RANKS,
# and as one process with --threads T for each T in THREADS. Every run does
# the same work (ROLLOUTS rollouts of the same episodes per iteration), so
# speed-up(R) = wall(1 rank) / wall(R ranks) and efficiency = speed-up / R.
# Wall is loom-train's own wall_s of its last iteration (learning.csv:
# training time, without process start-up), and the command's wall clock
# is printed beside it.
#
# It also checks the property docs/learning.md promises: R ranks x 1
# thread train the same model, to the byte, as one process with R threads
# (final.lgw compared for the largest R in both lists).
#
# Usage: bench/mpi_scaling.sh [BUILD_DIR]
#   environment: RANKS (default "1 2 4 8 16", capped at the cores),
#   THREADS (default: the largest rank count), ITERS (3), ROLLOUTS (16),
#   JOBS (20), MPIRUN (mpirun), LOOM_TRAIN (BUILD_DIR's loom-train),
#   MPIRUN_ARGS (extra mpirun arguments), OUT_DIR (out/bench-mpi).
# Writes OUT_DIR/scaling.csv (mode,workers,wall_s,cmd_wall_s,speedup,efficiency).
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
ncores=$(nproc)
iters=${ITERS:-3}
rollouts=${ROLLOUTS:-16}
jobs=${JOBS:-20}
out=${OUT_DIR:-out/bench-mpi}
ranks=${RANKS:-1 2 4 8 16}
if [ ! -x "$train" ]; then
	echo "mpi_scaling: no loom-train at $train (build first, or set LOOM_TRAIN)" >&2
	exit 1
fi
if ! command -v "$mpirun" > /dev/null; then
	echo "mpi_scaling: no $mpirun (apt-get install openmpi-bin, or set MPIRUN)" >&2
	exit 1
fi
# shellcheck disable=SC2086 # RANKS and THREADS are lists
for v in "ITERS=$iters" "ROLLOUTS=$rollouts" "JOBS=$jobs" $(printf 'RANKS=%s ' $ranks) \
	$(printf 'THREADS=%s ' ${THREADS:-1}); do
	case "${v#*=}" in
	'' | *[!0-9]* | 0)
		echo "mpi_scaling: ${v%%=*} takes whole numbers >= 1, not '${v#*=}'" >&2
		exit 2
		;;
	esac
done
capped=""
for r in $ranks; do
	if [ "$r" -le "$ncores" ]; then capped="$capped $r"; fi
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
threads=${THREADS:-$max}
as_root=()
if [ "$(id -u)" = 0 ]; then as_root=(--allow-run-as-root); fi

common=(--iters "$iters" --imitate-iters 0 --rollouts "$rollouts" --jobs-min "$jobs"
	--jobs-max "$jobs" --eval-every 0 --seed 1 --no-progress)
mkdir -p "$out"
csv=$out/scaling.csv
echo "mode,workers,wall_s,cmd_wall_s" > "$csv.raw"

# last_wall DIR: the wall_s of DIR/learning.csv's last row
last_wall() { tail -n 1 "$1/learning.csv" | awk -F, '{print $NF}'; }

for r in $ranks; do
	d=$out/mpi-$r
	rm -rf "$d"
	log "mpirun -np $r (1 thread each)"
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086
	"$mpirun" "${as_root[@]}" ${MPIRUN_ARGS:-} -np "$r" "$train" --mpi --threads 1 \
		--out "$d" "${common[@]}" > "$d.log" 2>&1 || {
		tail -n 20 "$d.log" >&2
		exit 1
	}
	t1=$(date +%s.%N)
	echo "mpi,$r,$(last_wall "$d"),$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" >> "$csv.raw"
done
for t in $threads; do
	d=$out/threads-$t
	rm -rf "$d"
	log "one process, --threads $t"
	t0=$(date +%s.%N)
	"$train" --threads "$t" --out "$d" "${common[@]}" > "$d.log" 2>&1 || {
		tail -n 20 "$d.log" >&2
		exit 1
	}
	t1=$(date +%s.%N)
	echo "threads,$t,$(last_wall "$d"),$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" >> "$csv.raw"
done

awk -F, 'NR == 1 { print $0 ",speedup,efficiency"; next }
	NR == 2 { base = $3 }
	{ s = base / $3; printf "%s,%.2f,%.2f\n", $0, s, s / $2 }' "$csv.raw" > "$csv"
rm -f "$csv.raw"

same="not compared"
if [ -f "$out/mpi-$max/final.lgw" ] && [ -f "$out/threads-$max/final.lgw" ]; then
	if cmp -s "$out/mpi-$max/final.lgw" "$out/threads-$max/final.lgw"; then
		same="identical"
	else
		same="DIFFERENT"
	fi
fi
echo "mpi_scaling: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))," \
	"$iters iterations x $rollouts rollouts of $jobs-job episodes; base = 1 rank"
column -s, -t "$csv" 2> /dev/null || cat "$csv"
echo "mpi_scaling: final.lgw of $max ranks x 1 thread vs 1 process x $max threads: $same"
[ "$same" != DIFFERENT ]
