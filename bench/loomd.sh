#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The live control plane under load: starts loomd from a build directory in a
# private temporary directory (a fresh one for every run: its own sockets and
# journal), runs loom-bench-loomd against it, stops it, prints a summary and
# writes bench/results/loomd.csv (bench,config,metric,value,unit).
#
#   bash bench/loomd.sh [BUILD_DIR]        # default: build; about 2 minutes
#
#   announce   8 connections announcing flows, 1 and 64 per request, with the
#              journal at journal_sync=full (the default), normal, and off;
#              once with every connection's job accumulating flows for the
#              whole run, once with each connection replacing its job every
#              ROTATE flows (unregister + register), as when flows finish
#   agents     1,000 fake agents; 300 coflows registered one every 10-20 ms;
#              RegisterJob -> every source host's agent has the class
#              (journal full, then off)
#   rss        loomd's RSS idle, with 1,000 agents, with 10,000 flows
#
# Environment: SECONDS_PER_RUN (default 5), CONNS (default 8), ROTATE
# (default 1024).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$src/$build ;; esac
loomd=$build/controlplane/loomd/loomd
bench=$build/bench/loom-bench-loomd
secs=${SECONDS_PER_RUN:-5}
conns=${CONNS:-8}
rotate=${ROTATE:-1024}
csv=$src/bench/results/loomd.csv

for f in "$loomd" "$bench"; do
	if [ ! -x "$f" ]; then
		echo "loomd.sh: $f is not built (meson setup $build && ninja -C $build)" >&2
		exit 1
	fi
done
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" -lt 2200 ]; then
	echo "loomd.sh: 1,000 agents need about 2,100 file descriptors; ulimit -n is $(ulimit -n)" >&2
	exit 1
fi

tmp=$(mktemp -d /tmp/loom-bench-loomd-XXXXXX)
pid=
stop_loomd() {
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "loomd.sh: loomd (pid $pid) ignored SIGTERM for 10 s; killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
	pid=
}
cleanup() {
	stop_loomd
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

run=0
dir=
# start_loomd KEY=VALUE...: a fresh loomd in its own directory; sets pid and dir.
start_loomd() {
	run=$((run + 1))
	dir=$tmp/run$run
	mkdir -p "$dir"
	"$loomd" -f -c /dev/null \
		-o "listen_unix=$dir/loomd.sock" -o "admin_socket=$dir/admin.sock" \
		-o "journal=$dir/journal.db" -o listen_tcp= -o metrics= -o log_level=warn \
		$(for kv in "$@"; do printf -- '-o %s ' "$kv"; done) \
		>"$dir/loomd.log" 2>&1 &
	pid=$!
	if ! "$bench" ready --admin "$dir/admin.sock" --pid "$pid" --timeout-ms 15000; then
		echo "loomd.sh: loomd did not start ($*); its log:" >&2
		cat "$dir/loomd.log" >&2
		exit 1
	fi
}

# b COMMAND OPTIONS...: runs the benchmark against the current loomd.
b() {
	local cmd=$1
	shift
	"$bench" "$cmd" --socket "$dir/loomd.sock" --admin "$dir/admin.sock" --pid "$pid" \
		--csv "$csv" "$@"
}

mkdir -p "$(dirname "$csv")"
echo "bench,config,metric,value,unit" >"$csv"
fail=0
t0=$(date +%s)
{
	echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1)," \
		"$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(date +%F)," \
		"load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
	echo "loomd: $loomd (buildtype $(python3 -c 'import json, sys
print(next((o["value"] for o in json.load(open(sys.argv[1])) if o["name"] == "buildtype"), "?"))' \
		"$build/meson-info/intro-buildoptions.json" 2>/dev/null || echo '?'))"
} | tee "$tmp/header.txt"

echo
echo "## Announcement throughput ($conns connections, ${secs} s per run)"
for mode in accumulate rotate; do
	for journal in full normal off; do
		for batch in 1 64; do
			label="journal=$journal B=$batch"
			extra=()
			if [ $mode = rotate ]; then
				label="$label rotate=$rotate"
				extra=(--rotate "$rotate")
			fi
			if [ $journal = off ]; then
				start_loomd journal= max_flows=2000000
			else
				start_loomd journal_sync=$journal max_flows=2000000
			fi
			b announce --conns "$conns" --batch "$batch" --seconds "$secs" \
				--label "$label" "${extra[@]}" || fail=1
			stop_loomd
		done
	done
done

echo
echo "## 1,000 agents: RegisterJob -> class at every source host"
for journal in full off; do
	if [ $journal = off ]; then
		start_loomd hosts=1000 max_connections=2000 journal=
	else
		start_loomd hosts=1000 max_connections=2000
	fi
	b agents --hosts 1000 --agents 1000 --coflows 300 --interval-ms 10-20 --sources 4-16 \
		--window 50 --timeout-ms 2000 --label "journal=$journal agents=1000" || fail=1
	grep -v -e 'agent .* connected' -e 'disconnected' -e 'listening on' -e 'restored' \
		-e 'shutting down' "$dir/loomd.log" | tail -5 >&2 || true
	stop_loomd
done

echo
echo "## RSS"
start_loomd hosts=1000 max_connections=2000
b rss --hosts 1000 --agents 1000 --flows 10000 --flows-per-coflow 100 \
	--label "agents=1000 flows=10000" || fail=1
stop_loomd
start_loomd hosts=1000 max_connections=2000
b rss --hosts 1000 --agents 0 --flows 10000 --flows-per-coflow 100 \
	--label "agents=0 flows=10000" | sed -n '3p' || fail=1
stop_loomd

echo
echo "## Summary ($(($(date +%s) - t0)) s; all rows in ${csv#"$src"/})"
awk -F, '
function v(b, c, m) { return val[b SUBSEP c SUBSEP m] }
NR > 1 { val[$1 SUBSEP $2 SUBSEP $3] = $4; if ($1 == "announce" && !seen[$2]++) cfg[n++] = $2 }
END {
	printf "| announce | flows/s | requests/s | reply p50 us | reply p99 us | flows/s 1st s | flows/s last s | flows | >= 50k flows/s |\n"
	printf "|---|---|---|---|---|---|---|---|---|\n"
	for (i = 0; i < n; i++) {
		c = cfg[i]
		printf "| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %s |\n", c,
			v("announce", c, "flows_per_s"), v("announce", c, "requests_per_s"),
			v("announce", c, "reply_p50_us"), v("announce", c, "reply_p99_us"),
			v("announce", c, "flows_per_s_first_second"),
			v("announce", c, "flows_per_s_last_second"), v("announce", c, "flows"),
			(v("announce", c, "flows_per_s") >= 50000 ? "yes" : "no")
	}
	printf "\n| 1,000 agents | RegisterJob -> class at all sources p50 us | p99 us | max us | p99 <= 10 ms | RegisterJob reply p99 us | loomd push_p99_us | loomd decision_p99_us | active coflows |\n"
	printf "|---|---|---|---|---|---|---|---|---|\n"
	for (j = 0; j < 2; j++) {
		c = j ? "journal=off agents=1000" : "journal=full agents=1000"
		printf "| %s | %.0f | %.0f | %.0f | %s | %.0f | %.0f | %.0f | %.0f |\n", c,
			v("agents", c, "table_p50_us"), v("agents", c, "table_p99_us"),
			v("agents", c, "table_max_us"),
			(v("agents", c, "table_p99_us") <= 10000 && v("agents", c, "coflows_missed") == 0 ? "yes" : "no"),
			v("agents", c, "register_reply_p99_us"),
			v("agents", c, "loomd_push_p99_us"), v("agents", c, "loomd_decision_p99_us"),
			v("agents", c, "active_coflows")
	}
	c = "agents=1000 flows=10000"
	printf "\n| loomd RSS | MiB |\n|---|---|\n"
	printf "| idle after start | %.1f |\n", v("rss", c, "rss_idle_bytes") / 1048576
	printf "| with 1,000 agents | %.1f |\n", v("rss", c, "rss_agents_bytes") / 1048576
	printf "| with 1,000 agents + 10,000 flows | %.1f |\n", v("rss", c, "rss_flows_bytes") / 1048576
	printf "| 10,000 flows, no agents | %.1f |\n", v("rss", "agents=0 flows=10000", "rss_flows_bytes") / 1048576
}' "$csv"
if [ $fail -ne 0 ]; then
	echo "loomd.sh: some runs failed (see above)" >&2
	exit 1
fi
