#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fuzzing that has run: every libFuzzer target (ASan + UBSan) for
# a fixed number of executions, then a table of targets, executions,
# coverage, time and findings in bench/README.md (between its "fuzz" markers).
#
#   bench/fuzz.sh [--runs N] [--jobs J] [--targets a,b] [--time-cap S]
#                 [--build DIR] [--resume] [--no-readme]
#
#   --runs N       executions per target (default 10000000)
#   --jobs J       targets run at once (default 1)
#   --targets a,b  only these targets (default: every one the build has)
#   --time-cap S   stop a target after S seconds (libFuzzer -max_total_time);
#                  its row then shows the executions it did, fewer than asked
#   --build DIR    the fuzzing build (default build-fuzz; configured with
#                  CC=clang -Dfuzzing=true -Db_sanitize=address,undefined
#                  -Db_lundef=false -Dbuildtype=debugoptimized if missing)
#   --resume       carry on an earlier run in out/bench-fuzz (one stopped with
#                  the machine, say): a target that finished keeps its row; one
#                  cut short keeps its corpus and log (renamed log.1, log.2, ...)
#                  and runs the executions it still lacks; its row sums the
#                  executions and time of every part
#   --no-readme    print the table, leave bench/README.md alone
#
# The targets and their seeds come from the build: -Dfuzzing=true registers
# each target as a 'fuzz' test running tests/fuzz/libfuzzer.sh with the
# target's binary, its -max_len and its seeds (meson introspect --tests); this
# script runs those commands with its own -runs, -max_total_time and
# -artifact_prefix appended. Each target starts from a fresh working corpus
# copied from its seeds, in out/bench-fuzz/<target>/corpus (the repository's
# seed corpus is never written); its log is out/bench-fuzz/<target>/log and
# what it found (crash-, leak-, timeout-, oom- files) is in
# out/bench-fuzz/<target>/findings/ (slow-unit- files there are libFuzzer's
# notes of its slowest inputs, not findings). A target stops at its first
# finding. libFuzzer's timeouts are wall-clock: a fuzzer stopped (SIGSTOP)
# for longer than its -timeout reports the input it was on as a timeout
# when it continues; stop a campaign by killing it and carry on with --resume.
# Once a finding is fixed (its input added to the target's seeds as a
# regression case), move it to out/bench-fuzz/<target>/fixed/ with a
# one-line NOTE naming the commit and --resume: the target carries on from
# where it stopped, and the table lists the finding as fixed.
# Progress goes to stderr. Exits 1 if any target found something or failed
# to run, 0 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=10000000
jobs=1
targets=
cap=0
dir=build-fuzz
readme=1
resume=0
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--targets) targets=$2; shift 2 ;;
	--time-cap) cap=$2; shift 2 ;;
	--build) dir=$2; shift 2 ;;
	--no-readme) readme=0; shift ;;
	--resume) resume=1; shift ;;
	*)
		sed -n '/^#   bench/,/^#   --no-readme/p' "$0" | sed 's/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
done
for v in "$runs" "$jobs" "$cap"; do
	case $v in '' | *[!0-9]*)
		echo "fuzz.sh: --runs, --jobs and --time-cap take whole numbers" >&2
		exit 2
		;;
	esac
done
[ "$jobs" -ge 1 ] || jobs=1

log() { printf '[%s] fuzz: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [ ! -f "$dir/build.ninja" ]; then
	log "configuring $dir"
	CC=${CC:-clang} meson setup "$dir" -Dfuzzing=true -Db_sanitize=address,undefined \
		-Db_lundef=false -Dbuildtype=debugoptimized >/dev/null
fi
log "building $dir"
ninja -C "$dir" >/dev/null
out=out/bench-fuzz
if [ "$resume" = 1 ] && [ ! -f "$out/machine.txt" ]; then
	echo "fuzz.sh: --resume: no earlier run in $out" >&2
	exit 2
fi
mkdir -p "$out"

# name <TAB> argument <TAB> argument ... of each fuzz target's test command.
meson introspect --tests "$dir" | python3 -c '
import json, os, sys
want = [t for t in sys.argv[1].split(",") if t]
tests = {t["name"]: t["cmd"] for t in json.load(sys.stdin)
         if any(s.split(":")[-1] == "fuzz" for s in t["suite"])
         and t["name"].startswith("fuzz_")}
if not tests or not any(c[0].endswith("libfuzzer.sh") for c in tests.values()):
    sys.exit("fuzz.sh: no libFuzzer targets in the build (configured without -Dfuzzing=true?)")
for t in want:
    if t not in tests:
        sys.exit("fuzz.sh: no target %s in the build (it has: %s)" % (t, " ".join(sorted(tests))))
for name in sorted(tests):
    if not want or name in want:
        cmd = tests[name]
        # The binary is named relative to the build folder; runs happen elsewhere.
        cmd[1] = os.path.abspath(os.path.join(sys.argv[2], cmd[1]))
        print("\t".join([name] + cmd))
' "$targets" "$dir" >"$out/targets.tsv"
ntargets=$(wc -l <"$out/targets.tsv")
log "$ntargets targets, $runs runs each, $jobs at a time$([ "$cap" -gt 0 ] && echo ", capped at $cap s")"

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	commit="$commit (+ uncommitted changes)"
fi
cmdline="bench/fuzz.sh --runs $runs --jobs $jobs"
[ -n "$targets" ] && cmdline="$cmdline --targets $targets"
[ "$cap" -gt 0 ] && cmdline="$cmdline --time-cap $cap"
if [ "$resume" = 1 ]; then
	# The earlier run's lines stay (but its total); this run's are added.
	grep -v '^total:' "$out/machine.txt" >"$out/machine.txt.new" || true
	{
		echo "resumed: $(date -u +%Y-%m-%d) with $cmdline --resume"
		echo "commit: $commit"
	} >>"$out/machine.txt.new"
	mv "$out/machine.txt.new" "$out/machine.txt"
else
	{
		echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%d)"
		echo "build: $dir ($(clang --version 2>/dev/null | head -1), -fsanitize=fuzzer,address,undefined, UBSan halt_on_error)"
		echo "command: $cmdline"
		echo "commit: $commit"
	} >"$out/machine.txt"
fi
start_all=$(date +%s)

# execs_of LOG: the executions a libFuzzer log reports (its final stats, or
# its last status line when it was cut short); 0 when none.
execs_of() {
	local n
	n=$(grep -a -E '^stat::number_of_executed_units:' "$1" 2>/dev/null | tail -1 | awk '{ print $2 }')
	[ -n "$n" ] || n=$(grep -a -E '^#[0-9]+' "$1" 2>/dev/null | tail -1 | sed 's/^#\([0-9]*\).*/\1/')
	echo "${n:-0}"
}

# run_one NAME CMD...: one target; writes out/bench-fuzz/NAME/{log,status}.
# Under --resume, a target cut short keeps its corpus and earlier logs
# (log.1, ...) and runs what it lacks of --runs.
run_one() {
	local name=$1 t0 t1 rc todo=$runs done=0 i f
	shift
	local d="$PWD/$out/$name"
	if [ "$resume" = 1 ] && [ -f "$d/log" ]; then
		i=1
		while [ -e "$d/log.$i" ]; do i=$((i + 1)); done
		mv "$d/log" "$d/log.$i"
		[ -f "$d/status" ] && mv "$d/status" "$d/status.$i"
		for f in "$d"/log.*; do done=$((done + $(execs_of "$f"))); done
		todo=$((runs - done))
		[ "$todo" -ge 1 ] || todo=1
		log "$name: resuming, $done executions done, $todo to go"
	else
		rm -rf "$d"
	fi
	mkdir -p "$d/corpus" "$d/findings"
	t0=$(date +%s.%N)
	rc=0
	# "$1" is tests/fuzz/libfuzzer.sh: it copies the seeds into $d/corpus.
	(cd "$d" && exec "$1" --corpus "$d/corpus" "${@:2}" -runs="$todo" -max_total_time="$cap" -print_final_stats=1 \
		-artifact_prefix="$d/findings/") >"$d/log" 2>&1 </dev/null || rc=$?
	t1=$(date +%s.%N)
	# The script's own wall time; libFuzzer's includes no seed copying.
	printf "%s %s\n" "$rc" "$(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")" >"$d/status"
}

# progress: the newest libFuzzer status line of each running target.
progress() {
	local name
	for name in "$@"; do
		local l
		# none yet is no error: under set -e and pipefail it ended the campaign
		l=$(grep -a -E '^#[0-9]+' "$out/$name/log" 2>/dev/null | tail -1 | cut -c1-90 || true)
		[ -n "$l" ] && log "$name: $l"
	done
	return 0
}

# reap: notes the targets that finished; every 60 s, the others' progress.
declare -A pids=()
last_progress=$SECONDS
reap() {
	local n
	for n in "${!pids[@]}"; do
		if ! kill -0 "${pids[$n]}" 2>/dev/null; then
			wait "${pids[$n]}" || true
			log "$n: finished ($(cut -d' ' -f2 "$out/$n/status") s, exit $(cut -d' ' -f1 "$out/$n/status"))"
			unset "pids[$n]"
		fi
	done
	if [ "${#pids[@]}" -gt 0 ] && [ $((SECONDS - last_progress)) -ge 60 ]; then
		progress "${!pids[@]}"
		last_progress=$SECONDS
	fi
}
while IFS=$'\t' read -r -a row; do
	if [ "$resume" = 1 ] && [ -f "$out/${row[0]}/status" ] && [ "$(cut -d' ' -f1 "$out/${row[0]}/status")" = 0 ] &&
		[ -z "$(ls "$out/${row[0]}/findings" 2>/dev/null | grep -E '^(crash|leak|timeout|oom)-')" ]; then
		log "${row[0]}: finished in the earlier run, kept"
		continue
	fi
	while [ "${#pids[@]}" -ge "$jobs" ]; do
		sleep 1
		reap
	done
	log "${row[0]}: start"
	run_one "${row[@]}" </dev/null &
	pids[${row[0]}]=$!
done <"$out/targets.tsv"
while [ "${#pids[@]}" -gt 0 ]; do
	sleep 1
	reap
done
echo "total: $(($(date +%s) - start_all)) s" >>"$out/machine.txt"

args=("$out" "$runs")
[ "$readme" = 1 ] && args+=(--readme bench/README.md)
python3 bench/fuzz_report.py "${args[@]}"
