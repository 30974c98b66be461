#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The tc enforcer's eBPF program: ns per packet through BPF_PROG_TEST_RUN
# (repeat) for a hit and a miss with 64K flows in its map, against an empty
# tc program built the same way; plus the time to load such a table. The
# program is compiled by clang -O2 whatever the build type, so any build
# folder with ebpf/ in it will do. Needs root. Prints Markdown for
# bench/README.md.
#
#   bash bench/ebpf.sh [BUILD_DIR] [loom_ebpf_bench options]   # default: build
#
# Environment: REPEAT (default 1000000), RUNS (default 5).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
shift || true
args=("$@")
case $build in /*) ;; *) build=$src/$build ;; esac
bench=$build/bench/loom_ebpf_bench
if [ ! -x "$bench" ]; then
	echo "ebpf.sh: $bench is not built (meson setup $build && ninja -C $build;" \
		"it needs libbpf, libnl-route-3, clang and bpftool)" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "ebpf.sh: BPF_PROG_TEST_RUN needs root" >&2
	exit 1
fi
# one core, not the first (where interrupts and the shell tend to run)
pin=()
if command -v taskset >/dev/null; then
	pin=(taskset -c "$(($(nproc) - 1))")
fi

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r), $(date -u +%Y-%m-%d)"
echo "command: bash bench/ebpf.sh ${build#"$src"/} ${args[*]:-} (REPEAT=${REPEAT:-1000000} RUNS=${RUNS:-5}; pinned to one core)"
echo
"${pin[@]}" "$bench" --repeat "${REPEAT:-1000000}" --runs "${RUNS:-5}" "${args[@]}"
