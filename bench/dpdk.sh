#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The DPDK enforcer against dpdk-testpmd on the same vdevs:
#
#   bash bench/dpdk.sh [BUILD_DIR]     # default: build-release; about 100 s
#
# Alternates, ROUNDS times each (never two at once: both use lcores 0-1),
#   loom      build/bench/loom_dpdk_bench: the "dpdk" enforcer, rx net_null0
#             -> classify (65,536 flows, 8 classes) -> DSCP -> strict-priority
#             queues (shaper off) -> tx net_null1, burst 32, 64-byte frames; an
#             RX callback writes each frame's Ethernet/IPv4/UDP header (charged
#             to loom); then the same with 10% unknown flows; then the table
#             update latency (20 full tables of 64K flows, 20 of 16 flows);
#   testpmd   dpdk-testpmd --forward-mode=io --nb-cores=1 on the same EAL
#             arguments: io forwarding, which touches no packet data, on two
#             streams (0->1, 1->0) served by the one forwarding lcore; its
#             Mpps is the sum of both ports' Rx-pps, averaged over the
#             stats periods of the measured window;
#   macswap   the same with --forward-mode=macswap, which reads and writes
#             each frame's Ethernet header: a reference that touches packet
#             data, as loom must (the target, loom / io >= 0.70, is against
#             io).
# Prints each run, then the medians and the ratio loom / testpmd. Raw output
# is left in out/bench-dpdk/.
#
# Environment: ROUNDS (default 3), DURATION seconds per window (default 5),
# WARMUP seconds (default 1), FLOWS (default 65536), TESTPMD (default
# dpdk-testpmd; Debian's package dpdk-dev has it), BENCH (a prebuilt
# loom_dpdk_bench: then nothing is built), EAL_EXTRA (more EAL arguments for
# both, e.g. "-d DIR" for PMDs outside DPDK's plugin path).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"
build=${1:-build-release}
rounds=${ROUNDS:-3}
dur=${DURATION:-5}
warm=${WARMUP:-1}
flows=${FLOWS:-65536}
testpmd=${TESTPMD:-dpdk-testpmd}
bench=${BENCH:-$build/bench/loom_dpdk_bench}
out=out/bench-dpdk

if [ -z "${BENCH:-}" ]; then
	if [ ! -f "$build/build.ninja" ]; then
		meson setup "$build" --buildtype=release >/dev/null
	fi
	ninja -C "$build" bench/loom_dpdk_bench >/dev/null || {
		echo "dpdk.sh: cannot build $bench (is DPDK found? see meson's summary)" >&2
		exit 1
	}
fi
if ! command -v "$testpmd" >/dev/null; then
	echo "dpdk.sh: $testpmd not found (Debian: apt-get install dpdk-dev)" >&2
	exit 1
fi
rm -rf "$out"
mkdir -p "$out"

prefix=loom-bench-dpdk-$$
eal="--no-huge --no-pci --no-shconf -m 512 -l 0-1 --vdev net_null0 --vdev net_null1 --file-prefix $prefix ${EAL_EXTRA:-}"
. "$src/bench/lib.sh"

tp_pid=
cleanup() {
	if [ -n "$tp_pid" ]; then
		kill -INT "$tp_pid" 2>/dev/null || true
		wait "$tp_pid" 2>/dev/null || true
	fi
	rm -rf "/var/run/dpdk/$prefix" "${XDG_RUNTIME_DIR:-/tmp}/dpdk/$prefix" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

{
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%d)"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "EAL: $eal"
	echo "DPDK: $(pkg-config --modversion libdpdk 2>/dev/null || echo '?')"
} | tee "$out/machine.txt"

# run_testpmd MODE I: dpdk-testpmd --forward-mode=MODE until it has printed 2 + WARMUP + DURATION stats periods
# (the first is at start-up, all zero), stopped with SIGINT. stdout line-buffered into a
# file, polled once a second: nothing else runs on the two cores meanwhile.
run_testpmd() {
	local f=$out/testpmd-$1.$2.log want=$((2 + ${warm%.*} + ${dur%.*})) t=0
	# shellcheck disable=SC2086 # eal is a word list
	stdbuf -oL "$testpmd" $eal -- --forward-mode="$1" --nb-cores=1 --auto-start \
		--stats-period 1 --total-num-mbufs=20480 --burst=32 >"$f" 2>&1 </dev/null &
	tp_pid=$!
	while [ "$(grep -c 'Rx-pps' "$f" || true)" -lt $((2 * want)) ] && [ $t -lt $((want + 30)) ]; do
		if ! kill -0 "$tp_pid" 2>/dev/null; then
			break
		fi
		sleep 1
		t=$((t + 1))
	done
	kill -INT "$tp_pid" 2>/dev/null || true
	wait "$tp_pid" || true
	tp_pid=
}

# run_loom I
run_loom() {
	"$bench" --eal "$eal" --duration "$dur" --warmup "$warm" --flows "$flows" \
		>"$out/loom.$1.log" 2>&1 || {
		echo "dpdk.sh: loom_dpdk_bench failed:" >&2
		tail -n 20 "$out/loom.$1.log" >&2
		exit 1
	}
}

for i in $(seq 1 "$rounds"); do
	log "round $i/$rounds: loom"
	run_loom "$i"
	grep -E 'Mpps|table update' "$out/loom.$i.log" | sed 's/^/  /' >&2
	log "round $i/$rounds: testpmd io"
	run_testpmd io "$i"
	log "round $i/$rounds: testpmd macswap"
	run_testpmd macswap "$i"
done

python3 - "$out" "$rounds" "$warm" "$dur" <<'EOF'
import json, re, statistics, sys

out, rounds, warm, dur = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
def testpmd_mpps(path):
    with open(path) as f:
        text = f.read()
    pps = [int(x) for x in re.findall(r"Rx-pps:\s+(\d+)", text)]
    periods = [pps[j] + pps[j + 1] for j in range(0, len(pps) - 1, 2)]
    # skip the start-up period and the warm-up; keep DURATION periods
    skip = 1 + int(round(warm))
    window = periods[skip:skip + int(round(dur))]
    if not window:
        sys.exit(f"dpdk.sh: no testpmd stats periods in {path}")
    return sum(window) / len(window) / 1e6

loom, tp, ms = [], [], []
for i in range(1, rounds + 1):
    with open(f"{out}/loom.{i}.log") as f:
        lines = [l for l in f if l.startswith('{"bench":"dpdk"')]
    if not lines:
        sys.exit(f"dpdk.sh: no JSON line in {out}/loom.{i}.log")
    loom.append(json.loads(lines[-1]))
    tp.append(testpmd_mpps(f"{out}/testpmd-io.{i}.log"))
    ms.append(testpmd_mpps(f"{out}/testpmd-macswap.{i}.log"))

def med(key):
    return statistics.median(r[key] for r in loom)

print()
print("run  loom Mpps  (worker on CPU)  loom 10%-unknown Mpps  testpmd io Mpps  testpmd macswap Mpps  loom/io")
for i, (r, t, m) in enumerate(zip(loom, tp, ms), 1):
    print(f"{i:3}  {r['mpps']:9.3f}  {r['worker_cpu_share'] * 100:14.1f}%  "
          f"{r['mpps_unknown_mix']:21.3f}  {t:15.3f}  {m:20.3f}  {r['mpps'] / t:7.3f}")
m_loom, m_unk = med("mpps"), med("mpps_unknown_mix")
m_tp, m_ms = statistics.median(tp), statistics.median(ms)
print(f"median: loom {m_loom:.3f} Mpps ({loom[0]['flows']} flows, {loom[0]['classes']} classes, "
      f"burst {loom[0]['burst']}), with {loom[0]['unknown_share'] * 100:.0f}% unknown flows "
      f"{m_unk:.3f} Mpps; testpmd io {m_tp:.3f} Mpps, macswap {m_ms:.3f} Mpps")
print(f"ratio loom / testpmd io: {m_loom / m_tp:.3f} (target >= 0.70); with unknown flows "
      f"{m_unk / m_tp:.3f}; loom / testpmd macswap: {m_loom / m_ms:.3f}")
us = lambda k: med(k) / 1e3
mx = lambda k: max(r[k] for r in loom) / 1e3
print(f"table update, {loom[0]['flows']} flows: build median {us('full_build_ns_median'):.1f} us "
      f"(max {mx('full_build_ns_max'):.1f}), swap median {us('full_swap_ns_median'):.2f} us "
      f"(max {mx('full_swap_ns_max'):.2f}); agent snapshot median {us('full_snapshot_ns_median'):.1f} us")
print(f"table update, {loom[0]['small_flows']} flows: build median {us('small_build_ns_median'):.1f} us "
      f"(max {mx('small_build_ns_max'):.1f}), swap median {us('small_swap_ns_median'):.2f} us "
      f"(max {mx('small_swap_ns_max'):.2f})")
print("(medians of the runs' medians; max over all runs)")
print(json.dumps({"bench": "dpdk.sh", "rounds": rounds, "loom_mpps": round(m_loom, 4),
                  "loom_unknown_mix_mpps": round(m_unk, 4), "testpmd_io_mpps": round(m_tp, 4),
                  "testpmd_macswap_mpps": round(m_ms, 4), "ratio": round(m_loom / m_tp, 4),
                  "loom_runs": [r["mpps"] for r in loom],
                  "testpmd_io_runs": [round(t, 4) for t in tp],
                  "testpmd_macswap_runs": [round(m, 4) for m in ms],
                  "full_build_ns_median": med("full_build_ns_median"),
                  "full_swap_ns_median": med("full_swap_ns_median"),
                  "small_build_ns_median": med("small_build_ns_median"),
                  "small_swap_ns_median": med("small_swap_ns_median")}))
EOF
